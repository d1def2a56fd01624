"""Graph state: small, JSON-able (ids, counters, metric summaries). Datasets and verdicts live in the run store."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypedDict

if TYPE_CHECKING:
    from allure.config import AuditSpec
    from allure.graphs.prepare import PreparedAudit
    from allure.labels import Label
    from allure.memory import EpisodicMemory
    from allure.models import Item, Split, Verdict
    from allure.store import RunStore


class LoopState(TypedDict, total=False):
    """The loop's state, checkpointed after every node."""

    run_id: str
    """The run (also the checkpoint thread id)."""
    iteration: int
    """The current iteration, from 1."""
    memory_version: str
    """Content hash of the memory the last evaluation used."""
    memory_size: int
    """Examples in memory when the last evaluation ran."""
    proposed: int
    """Candidates proposed in this iteration."""
    new_approved: int
    """Examples the last commit added to memory."""
    stop_reason: str
    """Why the loop stops; empty while it goes on. Set by ``should_continue`` (or by ``commit``
    when nothing new entered memory); with ``auto_approve`` the last pass's candidates are still
    reviewed and committed before the loop stops."""
    active_iteration: int
    """The iteration whose memory version the loop has adopted (the guard's reference); 0 is the
    zero-shot baseline pass run when the memory is not empty at the start."""
    zero_shot_iteration: int
    """The iteration evaluated without examples (1, or 0 for the baseline pass); absent when none was."""
    guard_previous: int
    """The version the guard compared the last pass with (the stop rule reads it)."""
    history: Annotated[list[dict[str, Any]], operator.add]
    """One summary per iteration: ``iteration``, ``stats`` (costs), ``memory_size``, ``memory_version``."""


@dataclass
class AuditContext:
    """What the nodes need and the checkpoint must not hold (passed as LangGraph runtime context)."""

    spec: AuditSpec
    """The run's audit spec."""
    store: RunStore
    """The project's run store."""
    memory: EpisodicMemory
    """The episodic memory the prompts draw from and approved examples enter."""
    project_dir: Path
    """The project folder."""
    run_dir: Path
    """The run's folder (report files)."""
    progress: Callable[[str], None] | None = None
    """Called with each status line, or None."""
    eval_progress: Callable[[int, int], None] | None = None
    """Called with (done, total) while the evaluator works, or None."""
    lease_token: str = ""
    """The run's lease held by this process (claims on in-flight prompts name it); empty: none."""
    _items: dict[str, list[Item]] = field(default_factory=dict, repr=False)
    _verdicts: dict[tuple[str, int], dict[str, Verdict]] = field(default_factory=dict, repr=False)
    _dev: dict[str, set[str]] = field(default_factory=dict, repr=False)
    _folds: dict[str, dict[str, int]] = field(default_factory=dict, repr=False)
    _groups: dict[str, dict[str, str]] = field(default_factory=dict, repr=False)
    _splits: dict[str, dict[str, Split]] = field(default_factory=dict, repr=False)
    _refs: dict[str, dict[str, Label | None]] = field(default_factory=dict, repr=False)

    def items(self, run_id: str) -> list[Item]:
        """The run's items (read once per process: they never change during a run)."""
        if run_id not in self._items:
            self._items[run_id] = self.store.items(run_id)
        return self._items[run_id]

    def remember_prepared(self, run_id: str, prepared: PreparedAudit) -> None:
        """A new run's items, splits and reference labels as just stored from ``prepared`` (a new run
        stores them as they are), so that they are not read back."""
        self._items[run_id] = list(prepared.items)
        self._splits[run_id] = dict(prepared.splits)
        self._refs[run_id] = dict(prepared.references)

    def splits(self, run_id: str) -> dict[str, Split]:
        """Item id -> split (read once per process once the run's items are stored: a stored item's
        row never changes)."""
        if run_id not in self._splits and (got := self.store.splits(run_id)):
            self._splits[run_id] = got
        return self._splits.get(run_id, {})

    def references(self, run_id: str) -> dict[str, Label | None]:
        """Item id -> reference label (read once per process, as :meth:`splits`)."""
        if run_id not in self._refs and (got := self.store.reference_labels(run_id)):
            self._refs[run_id] = got
        return self._refs.get(run_id, {})

    def dev_ids(self, run_id: str) -> set[str]:
        """The audit items carved out as the dev split (derived from the run's items, split and seed;
        empty when the loop cross-fits: ``[loop] folds >= 2``)."""
        if run_id not in self._dev:
            from allure.dataset import dev_split

            self._dev[run_id] = dev_split(
                self.items(run_id),
                self.splits(run_id),
                self.spec.loop.dev_fraction,
                self.spec.loop.seed,
                self.spec.loop.folds,
            )
        return self._dev[run_id]

    def folds(self, run_id: str) -> dict[str, int]:
        """Audit item id -> its cross-fitting fold (:func:`allure.dataset.cross_folds`, the items that
        share a task text in one fold; empty with ``folds = 0``). Derived from the run's items, splits,
        reference labels and seed, so a process that resumes the run deals the same folds; the first
        process records their digest (run info ``folds``) and a later one that derives other folds is
        refused. A run whose recorded folds were dealt item by item (before folds kept tasks
        together) keeps them."""
        if run_id not in self._folds:
            from allure.dataset import cross_folds, folds_digest
            from allure.errors import StoreError

            loop = self.spec.loop
            refs, splits = self.references(run_id), self.splits(run_id)
            folds = cross_folds(refs, splits, loop.folds, loop.seed, self.groups(run_id))
            if folds:
                mine = {"k": loop.folds, "n": len(folds), "digest": folds_digest(folds)}
                stored = (self.store.get_run(run_id).info or {}).get("folds")
                if stored is not None and stored != mine:
                    older = cross_folds(refs, splits, loop.folds, loop.seed)
                    if stored == {**mine, "digest": folds_digest(older)}:
                        folds, mine = older, stored
                if stored is None:
                    self.store.update_run(run_id, info={"folds": mine})
                elif stored != mine:
                    raise StoreError(
                        f"the cross-fitting folds derived now ({mine}) differ from the run's ({stored})",
                        where=f"run {run_id}, run info 'folds'",
                        fix="resume the run with the spec and data it started with",
                    )
            self._folds[run_id] = folds
        return self._folds[run_id]

    def groups(self, run_id: str) -> dict[str, str]:
        """Item id -> its task (:func:`allure.dataset.task_groups`): the decisions' tests swap the
        responses to one task together (:func:`allure.metrics.better_p`)."""
        if run_id not in self._groups:
            from allure.dataset import task_groups

            self._groups[run_id] = task_groups(self.items(run_id))
        return self._groups[run_id]

    def decision_ids(self, run_id: str) -> set[str]:
        """The items every loop decision reads (the guard, the stop rule, ``auto``): every audit item
        when the loop cross-fits, else the dev split."""
        folds = self.folds(run_id)
        return set(folds) if folds else self.dev_ids(run_id)

    def verdicts(self, run_id: str, iteration: int) -> dict[str, Verdict]:
        """Item id -> verdict of an iteration (read once per process)."""
        key = (run_id, iteration)
        if key not in self._verdicts:
            self._verdicts[key] = self.store.verdicts(run_id, iteration)
            for old in [k for k in self._verdicts if k != key][:-1]:  # keep this and one other pass
                del self._verdicts[old]
        return self._verdicts[key]

    def remember_verdicts(self, run_id: str, iteration: int, verdicts: dict[str, Verdict]) -> None:
        """Keep an iteration's verdicts just written, so later nodes need not read them back."""
        self._verdicts[(run_id, iteration)] = verdicts
        for old in [k for k in self._verdicts if k != (run_id, iteration)][:-1]:
            del self._verdicts[old]

    def say(self, line: str) -> None:
        """Send a status line to the caller, if it listens."""
        if self.progress:
            self.progress(line)
