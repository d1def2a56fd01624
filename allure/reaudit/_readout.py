"""The learned read-out in a re-audit (issue 34 item 5): the read-out stored with the memory version
being re-audited, applied as it was fitted (no refit at re-audit time, like fixed calibration values),
as the last step of the re-audit's pass, so that a re-audit's labels are the loop's on the same items.

The read-out applied is the memory version's current one (:meth:`allure.store.RunStore.readout_of_version`:
its latest refit after an approval, else what its pass fitted; the newest if several runs evaluated
with that version); an exported judge of that pass carries the same one. None is applied with ``readout = "none"``, or when no pass with that memory version fitted one (``auto`` kept the parsed labels).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from allure.config import AuditSpec
from allure.store import RunStore

if TYPE_CHECKING:
    from allure.passes.readout import LearnedReadout


@dataclass(frozen=True)
class StoredReadout:
    """The read-out a re-audit applies, and where it was stored."""

    readout: LearnedReadout
    run_id: str
    iteration: int
    fitted_at: str
    describe: str

    @property
    def tag(self) -> str:
        """What the fingerprint records: a changed (refitted) read-out is a change the gate reports."""
        return f"{self.run_id}:{self.iteration}:{self.fitted_at}"


def reaudit_readout(
    store: RunStore, spec: AuditSpec, memory_version: str, memory: Any, tell: Callable[[str], None]
) -> StoredReadout | None:
    """The stored read-out of ``memory_version`` (see the module), or ``None``."""
    from allure.passes.readout import memory_vote_source, stored_readout

    if spec.evaluator.applied_readout == "none":
        return None
    newest = store.readout_of_version(memory_version)
    if newest is None:
        return None
    rec = newest["record"]
    votes = any(f.startswith("vote") for f in rec.features)
    vote = memory_vote_source(memory) if votes and hasattr(memory, "embeddings") else None
    learned = stored_readout(rec, tuple(spec.label_set), spec.positive_label, vote)
    if learned is None:
        tell(
            f"the read-out stored with memory version {memory_version[:8]} needs the memory's vote; none applied"
        )
        return None
    out = StoredReadout(
        learned,
        newest["run_id"],
        newest["iteration"],
        rec.fitted_at,
        rec.describe,
    )
    tell(
        f"read-out stored with memory version {memory_version[:8]} (run {out.run_id}, iteration {out.iteration}): {out.describe}"
    )
    return out
