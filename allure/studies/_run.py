"""Run a study: every arm over the same frozen items through the evaluator's runner, then compare.

A study is registered in the run store as a run of its own (``info.kind = "study"``) whose
iteration ``i`` is arm ``i``; every call goes through :class:`allure.evaluator.Evaluator`, so it is
stored as it returns and answered from the store on a re-run. A study's id is a hash of what it
measures (items, memory version, arms, evaluator, the kind's definition), so the same command
resumes a killed study (the id's payload, named and versioned, and the ids older allure gave the
same study: :mod:`allure.studies._ids`): stored calls are not sent again and verdict rows are replaced, never
duplicated. What is particular to a kind (its arms, its result, its files) comes from its
:class:`~allure.studies.Study`.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from allure.errors import StoreError, StudyError
from allure.metrics import ArmComparison, compare_arms
from allure.models import stable_hash, utcnow
from allure.store import RunStore, open_project_store
from allure.studies._arm import ArmRun, Examples, arm_spec, examples_for, lookup, prompts_for
from allure.studies._ids import study_ids
from allure.studies._options import RunOptions, Say
from allure.studies._protocol import ArmLabels, StoredStudy, Study
from allure.studies._record import ArmResult, ArmSpec, StudyRecord
from allure.studies._source import StudySource

if TYPE_CHECKING:
    from allure.evaluator import Evaluator
    from allure.memory import EpisodicMemory, MemoryVersion

STUDIES = Path(".allure") / "studies"
"""Where studies are written, under the project folder."""


def resumed_id(project: Path, store: RunStore, ids: list[str]) -> str:
    """The first of ``ids`` (a study's ids, newest format first: :func:`~allure.studies._ids.study_ids`)
    that the project already holds (a run in the store or a folder under ``.allure/studies/``), so
    that a study started by an older allure resumes under its id; the newest when none is held."""
    return next((sid for sid in ids if _known(project, store, sid)), ids[0])


def _known(project: Path, store: RunStore, sid: str) -> bool:
    if (project / STUDIES / sid).is_dir():
        return True
    try:
        store.get_run(sid)
    except StoreError:
        return False
    return True


def _check_arms(arms: list[ArmSpec], reference: str, src: StudySource) -> None:
    for a in arms:  # an arm's calibration or position_debias: the spec's validators, before any call
        arm_spec(src.spec, a)
    names = [a.name for a in arms]
    if len(set(names)) != len(names) or reference not in names:
        raise StudyError(
            f"the arms {names} have a repeated name or lack the reference arm {reference!r}",
            where="the study's arms",
            fix="give every arm a unique name and compare with one of them",
        )


def _open_run(store: RunStore, sid: str, src: StudySource, out_dir: Path, kind: str) -> str:
    """Register (or find) the study's run in the store and mark it running; its creation time."""
    try:
        created = store.get_run(sid).created_at
    except StoreError:
        store.create_run(src.spec.model_dump(mode="json"), run_id=sid, run_dir=str(out_dir))
        created = store.get_run(sid).created_at
    store.update_run(sid, status="running", info={"kind": "study", "study_kind": kind, "pid": os.getpid()})
    store.add_items(sid, src.items, src.splits, src.reference)
    return created


def _announce(ev: Evaluator, sid: str, src: StudySource, runs: list[ArmRun], say: Say) -> None:
    """Say the plan: arms x items, the calls not yet stored, an estimate of the time."""
    plans = {r.arm.name: ev.plan(src.items, lookup(r.table), r.options) for r in runs}
    uncached = sum(p.uncached for p in plans.values())
    lat = [p.cached_latency_s for p in plans.values() if p.cached_latency_s]
    eta = f"~{uncached * sum(lat) / len(lat) / 60:.1f} min" if lat and uncached else "unknown"
    n = len(src.items)
    say(
        f"study {sid}: {len(runs)} arms x {n} items = {len(runs) * n} "
        f"prompts, {uncached} not yet stored (estimated time {eta if uncached else '0 min'})"
    )
    for r in runs:
        n_ex = sum(len(v) for v in r.table.values()) / max(n, 1)
        say(f"  arm {r.arm.name}: {n_ex:.1f} examples per prompt, {plans[r.arm.name].uncached} new calls")


def _evaluate_arms(
    sid: str,
    src: StudySource,
    chosen: dict[str, Examples],
    arms: list[ArmSpec],
    store: RunStore,
    options: RunOptions,
    memory: EpisodicMemory | None = None,
) -> tuple[list[ArmResult], ArmLabels, dict[str, Any]]:
    """Every arm's pass: the results (without comparisons), the labels, and the evaluator's facts."""
    from allure.evaluator import open_evaluator

    say, progress = options.get("say"), options.get("arm_progress")
    results: list[ArmResult] = []
    labels: ArmLabels = {}
    # lazy: a study whose every call is stored starts no server (the embedded one starts on a miss)
    with open_evaluator(src.spec, store, src.items, lazy_start=True) as ev:
        runs = [
            ArmRun(ev, sid, i, src, a, chosen[a.name], prompts_for(a, ev.prompts, src), say, memory)
            for i, a in enumerate(arms, start=1)
        ]
        if say:
            _announce(ev, sid, src, runs, say)
        for r in runs:
            result, labels[r.arm.name] = r.run(progress)
            results.append(result)
        facts = {
            "max_prompt_tokens": ev.max_prompt_tokens,
            "token_counter": ev.token_counter.method if ev.token_counter is not None else "",
            "evaluator": {"model": ev.model_name, "params": ev.params},
        }
    return results, labels, facts


def _compare(src: StudySource, labels: ArmLabels, reference: str, alpha: float) -> list[ArmComparison]:
    """Each arm against the reference arm (McNemar exact, Holm, paired bootstrap), a task's responses
    tested and resampled as one unit."""
    from allure.dataset import task_groups

    tasks = task_groups(src.items)
    return compare_arms(
        [src.reference.get(it.id) for it in src.items],
        (reference, labels[reference]),
        {k: v for k, v in labels.items() if k != reference},
        alpha=alpha,
        pos_label=src.spec.positive_label,
        n_resamples=src.spec.loop.bootstrap_resamples,
        random_state=src.spec.loop.seed,
        labels=list(src.spec.label_set),
        groups=[tasks[it.id] for it in src.items],
    )


def _record(
    study: Study,
    sid: str,
    created: str,
    src: StudySource,
    version: MemoryVersion,
    results: list[ArmResult],
    comparisons: list[ArmComparison],
    facts: dict[str, Any],
    alpha: float,
    wall_s: float,
) -> StudyRecord:
    """The shared record of a finished study (every kind's fields)."""
    by_arm = {c.arm: c for c in comparisons}
    arms = [r.model_copy(update={"comparison": by_arm.get(r.arm.name)}) for r in results]
    return StudyRecord(
        id=sid,
        kind=study.kind,
        status="done",
        created_at=created,
        finished_at=utcnow(),
        source=src.source,
        n_items=len(src.items),
        item_ids_hash=stable_hash([it.id for it in src.items]),
        prompt=src.spec.evaluator.prompt,
        memory_location=src.memory_location,
        memory_version=version.content_hash,
        memory_size=version.size,
        reference_arm=study.reference_arm(),
        alpha=alpha,
        arms=arms,
        findings=[c.statement for c in comparisons],
        calls=sum(r.calls for r in arms),
        wall_s=wall_s,
        **facts,
    )


def _derived_id(project: Path, store: RunStore, study: Study, src: StudySource, memory_hash: str) -> str:
    """The study's id from its definition (its older id when it was started under that)."""
    return resumed_id(
        project, store, study_ids(study.kind, src, memory_hash, study.arms(), study.definition())
    )


def run_study(
    project: Path, src: StudySource, memory: EpisodicMemory, study: Study, **options: Unpack[RunOptions]
) -> StudyRecord:
    """Evaluate every arm of ``study`` on ``src.items`` (stored, cached), compare each with its
    reference arm, and write the kind's result and files to ``.allure/studies/ID/``.

    Args:
        project: Project folder holding ``.allure/``.
        src: The frozen items and the spec they run with.
        memory: The memory the arms draw their examples from.
        study: The study kind's object (:class:`~allure.studies.Study`): arms, result, files.
        options: :class:`RunOptions` (``name``, ``alpha``, ``say``, ``arm_progress``).

    Returns:
        The finished record, of the kind's ``result`` type.

    Raises:
        StudyError: A bad ``name``, a repeated arm name or a missing reference arm.
        SpecError: An arm's ``calibration`` or ``position_debias`` is invalid with the spec's settings.
    """
    name, alpha = options.get("name"), options.get("alpha", 0.05)
    t0 = time.perf_counter()
    arms, reference = study.arms(), study.reference_arm()
    _check_arms(arms, reference, src)
    version = memory.version()
    if name is not None:
        from allure.names import check_name

        check_name(name, what="study name", where="--name", error=StudyError)
    store = open_project_store(project)
    sid = name or _derived_id(project, store, study, src, version.content_hash)
    out_dir = project / STUDIES / sid
    info = {"kind": "study", "study_kind": study.kind}
    try:
        created = _open_run(store, sid, src, out_dir, study.kind)
        if isinstance(study, StoredStudy):  # its arms are read from stored calls: no evaluator, no call
            results, labels, facts = study.measure(src, store, options.get("say"))
        else:
            chosen = {a.name: examples_for(a, memory, src.items) for a in arms}
            results, labels, facts = _evaluate_arms(sid, src, chosen, arms, store, options, memory)
        comparisons = _compare(src, labels, reference, alpha)
        wall_s = time.perf_counter() - t0
        record = _record(study, sid, created, src, version, results, comparisons, facts, alpha, wall_s)
        result = study.summarise(record, labels)
        study.write(result, out_dir)
        store.update_run(sid, status="done", info=info)
        return result
    except BaseException:  # Ctrl-C, a failed evaluator: the study is interrupted, not running
        with contextlib.suppress(Exception):
            store.update_run(sid, status="interrupted", info=info)
        raise
    finally:
        store.close()
