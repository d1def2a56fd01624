"""One re-audit's record (``reaudit.json``) and the exit codes of ``allure reaudit``."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from allure.labels import Label
from allure.metrics import SplitMetrics
from allure.reaudit._fingerprint import Fingerprint
from allure.reaudit._gate import GateResult, GateStatus
from allure.reaudit._probe import ProbeResult

EXIT_PASS = 0
"""The gate passed (or ``--if-changed`` found nothing changed since a passing re-audit)."""
EXIT_REGRESSION = 1
"""A gate check failed: a significant drop beyond its threshold, or a minimum broken."""
EXIT_BAD_INPUT = 2
"""Bad input: unknown set, invalid gate, baseline of another set, bad spec (nothing written)."""
EXIT_UNAVAILABLE = 3
"""The evaluator could not be reached or started, or calls failed (nothing recorded)."""
EXIT_BUSY = 4
"""``--no-wait`` and another re-audit of the project holds the lock."""

REAUDITS_DIR = Path(".allure") / "reaudits"
"""Per re-audit files (``summary.md``, ``reaudit.json``), relative to the project."""


class ReauditStats(BaseModel):
    """What the evaluation pass cost."""

    items: int
    """Items in the set."""
    calls: int
    """Evaluator calls sent (not answered by the run store)."""
    cache_hits: int
    """Items answered by the run store."""
    unparsed: int
    """Items whose output held no label."""
    evaluator_started: bool
    """Whether the evaluator was started or connected (the embedded server starts only for a call)."""
    wall_s: float
    """Wall time of the evaluation pass."""


class ReauditRecord(BaseModel):
    """One re-audit, as stored in the run store and written to ``reaudit.json``."""

    schema_version: int = 1
    """Version of this record's format."""
    id: str
    """The re-audit id (also the run-store key of its verdicts)."""
    created_at: str
    """When it ran (ISO-8601 UTC)."""
    set_name: str
    """The frozen set."""
    set_version: int
    """Its version."""
    spec_source: str
    """The spec file, or ``set NAME`` when the set's stored spec was used."""
    fingerprint: Fingerprint
    """What was measured."""
    changes: list[str]
    """Fingerprint changes since the previous re-audit of the set (empty for the first)."""
    prompt_diff: list[str]
    """Prompt-set diff against the baseline's prompts, one line per changed template."""
    metrics: SplitMetrics
    """:func:`allure.metrics.compute_metrics` over the set (with 95% bootstrap intervals)."""
    labels: dict[str, Label | None]
    """Item id -> label (``None``: unparsed); the next re-audit pairs with these."""
    gate: GateResult
    """The gate's verdict."""
    stats: ReauditStats
    """The pass's cost."""
    set_change: str = ""
    """How the set's version differs from the previous version (when this is the first re-audit of it)."""
    generation: str = ""
    """Which calls the labels come from: empty for the run store's stored calls, ``fresh:ID`` for the
    fresh calls re-audit ID made (``--fresh``, or provider drift); later re-audits of the set read
    the newest generation."""
    fresh_reason: str = ""
    """Why this re-audit made its calls fresh: ``--fresh``, ``provider drift``, or empty."""
    probe: ProbeResult | None = None
    """The provider-drift probe (``None``: no probe, ``[reaudit] probe = 0`` or ``--fresh``)."""
    notify_error: str = ""
    """Why the ``--notify`` webhook POST failed after the re-audit was done (empty: sent, or none asked);
    it never changes the gate's exit status."""

    @property
    def status(self) -> GateStatus:
        """``pass`` or ``regression``."""
        return self.gate.status

    @property
    def exit_code(self) -> int:
        """0 for a pass, 1 for a regression."""
        return EXIT_PASS if self.gate.status == "pass" else EXIT_REGRESSION
