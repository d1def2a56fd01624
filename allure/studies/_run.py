"""Run a study: every arm over the same frozen items through the evaluator's runner, then compare.

A study is registered in the run store as a run of its own (``info.kind = "study"``) whose
iteration ``i`` is arm ``i``; every call goes through :class:`allure.evaluator.Evaluator`, so it is
stored as it returns and answered from the store on a re-run. A study's id is a hash of what it
measures (items, memory version, arms, evaluator), so the same command resumes a killed study:
stored calls are not sent again and verdict rows are replaced, never duplicated.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, Unpack, cast

from allure.audits._model import Arm, ArmResult, StudyKind, StudyRecord
from allure.audits._source import StudySource
from allure.errors import StoreError
from allure.evaluator import (
    FALLBACK_NOTE,
    NO_PROBS,
    PassOptions,
    calibrate_pass,
    debias_verdicts,
    swapped_item,
    swaps_positions,
)
from allure.labels import Label, label_list
from allure.memory import EpisodicMemory
from allure.metrics import compare_arms, compute_metrics, label_shares
from allure.models import IclExample, Item, stable_hash, utcnow
from allure.prompts import PromptSet, load_prompt_set
from allure.store import RunStore, project_db_path

if TYPE_CHECKING:
    from allure.config import Calibration, PositionDebias
    from allure.evaluator import EvalResult, Evaluator

Say = Callable[[str], None]
"""Receives status lines (the plan, one line per finished arm)."""

ArmProgress = Callable[[str, int, int], None]
"""Called with (arm name, done, total) as an arm's items are labelled."""

Finish = Callable[[StudyRecord, dict[str, list[Label | None]]], StudyRecord]
"""Given the record and each arm's labels (item order), returns the record with the kind's own results."""


class RunOptions(TypedDict, total=False):
    """How a study runs; every key may be left out."""

    name: str | None
    """A study id to use instead of the one derived from its definition."""
    alpha: float
    """Family-wise significance level (Holm); 0.05 when left out."""
    say: Say | None
    """Receives status lines."""
    arm_progress: ArmProgress | None
    """Receives (arm, done, total) while an arm runs."""


STUDIES = Path(".allure") / "studies"
"""Where studies are written, under the project folder."""


def study_id(kind: StudyKind, src: StudySource, memory_hash: str, arms: list[Arm], extra: object) -> str:
    """The id of a study: the same items, memory, arms and evaluator give the same id."""
    key = stable_hash(
        kind,
        src.source,
        [it.id for it in src.items],
        memory_hash,
        [a.model_dump(mode="json") for a in arms],
        src.spec.evaluator.model_dump(mode="json"),
        extra,
        length=8,
    )
    return f"{kind}-{key}"


def _examples_for(arm: Arm, memory: EpisodicMemory, items: list[Item]) -> dict[str, list[IclExample]]:
    if arm.example_ids is not None:
        by_id = {ex.id: ex for ex in memory.all()}
        fixed = [by_id[i] for i in arm.example_ids]
        return {it.id: fixed for it in items}
    assert arm.policy is not None
    return memory.retrieve_many(items, arm.policy)


def _prompts_for(arm: Arm, default: PromptSet, src: StudySource) -> PromptSet:
    if arm.prompt is None:
        return default
    ev = src.spec.evaluator
    return load_prompt_set(arm.prompt).with_context(labels=label_list(src.spec.label_set), rubric=ev.rubric)


def _block_key(table: dict[str, list[IclExample]], item: Item) -> tuple[str, ...]:
    return tuple(ex.id for ex in table[item.id])


def _lookup(table: dict[str, list[IclExample]]) -> Callable[[Item], list[IclExample]]:
    return lambda item: table[item.id]


def _arm_progress(cb: ArmProgress | None, name: str) -> Callable[[int, int], None] | None:
    if cb is None:
        return None
    return lambda done, total: cb(name, done, total)


def _debiased(
    ev: Evaluator,
    sid: str,
    index: int,
    src: StudySource,
    table: dict[str, list[IclExample]],
    res: EvalResult,
    mode: PositionDebias,
    say: Say | None,
    options: PassOptions,
) -> tuple[list[Label | None], PositionDebias, int]:
    """Label the arm's pairs again with the two responses swapped (same examples, stored under
    the same arm; its costs added to ``res``) and keep one debiased label per item: (labels, mode
    used, undecided items)."""
    first, second = src.spec.label_set[0], src.spec.label_set[1]
    swapped = [swapped_item(it, first, second) for it in src.items]
    back = {sw.id: it.id for sw, it in zip(swapped, src.items, strict=True)}
    ordered = sorted(swapped, key=lambda sw: tuple(ex.id for ex in table[back[sw.id]]))
    again = ev.evaluate(sid, index, ordered, lambda sw: table[back[sw.id]], options=options)
    res.stats.add(again.stats)
    d, used = debias_verdicts(
        [res.verdicts.get(it.id) for it in src.items],
        [again.verdicts.get(sw.id) for sw in swapped],
        labels=src.spec.label_set,
        mode=mode,
    )
    if used != mode and say:
        say(f"  {FALLBACK_NOTE}")
    return [cast("Label | None", x) for x in d.labels], used, d.status.count("inconsistent")


def _calibrated(
    ev: Evaluator,
    sid: str,
    index: int,
    src: StudySource,
    table: dict[str, list[IclExample]],
    res: EvalResult,
    mode: Calibration,
    say: Say | None,
    options: PassOptions,
) -> dict[str, Any] | None:
    """Calibrate the arm's verdicts in ``res`` (:func:`allure.evaluator.calibrate_pass`); ``prior``
    takes the label shares of the study's audit-split items, and without any is ``contextual``."""
    known = [r for i, r in src.reference.items() if r is not None and src.splits.get(i) == "audit"]
    prior = label_shares(known, src.spec.label_set) or None
    if mode == "prior" and prior is None:
        mode = "contextual"
        if say:
            say(
                "  calibration: no audit-split item among the study's items to take label shares from: contextual"
            )
    out = calibrate_pass(
        ev,
        sid,
        index,
        src.items,
        res,
        _lookup(table),
        mode=mode,
        labels=src.spec.label_set,
        prior=prior,
        options=options,
    )
    if say:
        say(f"  {NO_PROBS}" if out.off else f"  calibration ({out.mode}): {out.changed} labels changed")
    return None if out.off else {"mode": out.mode, "changed": out.changed, "cf_calls": out.cf_calls}


def run_study(
    project: Path,
    src: StudySource,
    memory: EpisodicMemory,
    *,
    kind: StudyKind,
    arms: list[Arm],
    reference_arm: str,
    record: dict[str, object],
    finish: Finish | None = None,
    **options: Unpack[RunOptions],
) -> StudyRecord:
    """Evaluate every arm on ``src.items`` (stored, cached), compare each with the reference arm, write outputs.

    Args:
        project: Project folder holding ``.allure/``.
        src: The frozen items and the spec they run with.
        memory: The memory the arms draw their examples from.
        kind: The study kind.
        arms: The arms, in the order they run.
        reference_arm: Name of the arm the others are compared with.
        record: Extra :class:`StudyRecord` fields (clusters, sizes...).
        options: :class:`RunOptions` (``name``, ``alpha``, ``say``, ``arm_progress``).
        finish: Adds the study kind's own results to the record before it is written.

    Returns:
        The finished :class:`StudyRecord` (also written to ``.allure/studies/ID/``).
    """
    from allure.audits._write import write_study
    from allure.evaluator import open_evaluator

    name, alpha = options.get("name"), options.get("alpha", 0.05)
    say, arm_progress = options.get("say"), options.get("arm_progress")
    t0 = time.perf_counter()
    version = memory.version()
    if name is not None:
        from allure.errors import StudyError
        from allure.names import check_name

        check_name(name, what="study name", where="--name", error=StudyError)
    sid = name or study_id(kind, src, version.content_hash, arms, record)
    out_dir = project / STUDIES / sid
    store = RunStore(project_db_path(project))
    try:
        try:
            run = store.get_run(sid)
            created = run.created_at
        except StoreError:
            store.create_run(src.spec.model_dump(mode="json"), run_id=sid, run_dir=str(out_dir))
            created = store.get_run(sid).created_at
        store.update_run(
            sid, status="running", info={"kind": "study", "study_kind": kind, "pid": os.getpid()}
        )
        store.add_items(sid, src.items, src.splits, src.reference)
        chosen = {a.name: _examples_for(a, memory, src.items) for a in arms}
        results: list[ArmResult] = []
        labels: dict[str, list[Label | None]] = {}
        with open_evaluator(src.spec, store, src.items) as ev:
            prompts = {a.name: _prompts_for(a, ev.prompts, src) for a in arms}
            pass_opts = {a.name: PassOptions(prompts=prompts[a.name], sample=a.sample) for a in arms}
            plans = {a.name: ev.plan(src.items, _lookup(chosen[a.name]), pass_opts[a.name]) for a in arms}
            uncached = sum(p.uncached for p in plans.values())
            lat = [p.cached_latency_s for p in plans.values() if p.cached_latency_s]
            eta = f"~{uncached * sum(lat) / len(lat) / 60:.1f} min" if lat and uncached else "unknown"
            if say:
                say(
                    f"study {sid}: {len(arms)} arms x {len(src.items)} items = {len(arms) * len(src.items)} "
                    f"prompts, {uncached} not yet stored (estimated time {eta if uncached else '0 min'})"
                )
                for a in arms:
                    n_ex = sum(len(v) for v in chosen[a.name].values()) / max(len(src.items), 1)
                    say(f"  arm {a.name}: {n_ex:.1f} examples per prompt, {plans[a.name].uncached} new calls")
            for i, a in enumerate(arms, start=1):
                table = chosen[a.name]
                # items sharing an ICL block are sent one after another: the server's prefix cache computes it once
                ordered = sorted(src.items, key=partial(_block_key, table))
                res = ev.evaluate(
                    sid,
                    i,
                    ordered,
                    _lookup(table),
                    progress=_arm_progress(arm_progress, a.name),
                    options=pass_opts[a.name],
                )
                calibration = a.calibration or src.spec.evaluator.calibration
                calibrated = None
                if calibration != "none" and src.spec.evaluator.kind != "replay":
                    calibrated = _calibrated(ev, sid, i, src, table, res, calibration, say, pass_opts[a.name])
                vs = [res.verdicts.get(it.id) for it in src.items]
                arm_labels: list[Label | None] = [v.label if v else None for v in vs]
                probs = [v.prob_positive if v else None for v in vs]
                mode = a.position_debias or src.spec.evaluator.position_debias
                debiased, undecided = None, 0
                if mode != "none" and swaps_positions(src.spec, prompts[a.name].pairwise, src.items):
                    arm_labels, debiased, undecided = _debiased(
                        ev, sid, i, src, table, res, mode, say, pass_opts[a.name]
                    )
                    probs = [None] * len(vs)
                labels[a.name] = arm_labels
                metrics = compute_metrics(
                    [src.reference.get(it.id) for it in src.items],
                    arm_labels,
                    prob_positive=probs,
                    problem_types=[it.problem_type for it in src.items],
                    generators=[it.generator for it in src.items],
                    labels=tuple(src.spec.label_set),
                    pos_label=src.spec.positive_label,
                    n_resamples=src.spec.loop.bootstrap_resamples,
                    random_state=src.spec.loop.seed,
                )
                used = sorted({i for v in vs if v for i in v.icl_ids})
                s = res.stats
                results.append(
                    ArmResult(
                        arm=a,
                        index=i,
                        example_ids=used,
                        mean_examples=sum(len(v.icl_ids) for v in vs if v) / max(len(vs), 1),
                        dropped=s.icl_dropped,
                        prompts_with_drops=len(res.dropped),
                        dropped_by_item=res.dropped,
                        calls=s.calls,
                        cache_hits=s.cache_hits,
                        wall_s=s.wall_s,
                        metrics=metrics,
                        position_debias=debiased,
                        undecided=undecided,
                        calibration=calibrated,
                    )
                )
                if say:
                    acc = metrics.accuracy
                    say(
                        f"  arm {a.name}: accuracy {acc if acc is None else f'{acc:.3f}'}, "
                        f"{s.calls} calls, {s.cache_hits} stored, {s.unparsed} unparsed, "
                        f"{s.icl_dropped} examples dropped by the context budget, {s.wall_s:.1f}s"
                    )
            budget = ev.max_prompt_tokens
            counter = ev.token_counter.method if ev.token_counter is not None else ""
            evaluator_info = {"model": ev.model_name, "params": ev.params}
        y = [src.reference.get(it.id) for it in src.items]
        comparisons = compare_arms(
            y,
            (reference_arm, labels[reference_arm]),
            {k: v for k, v in labels.items() if k != reference_arm},
            alpha=alpha,
            pos_label=src.spec.positive_label,
            n_resamples=src.spec.loop.bootstrap_resamples,
            random_state=src.spec.loop.seed,
            labels=list(src.spec.label_set),
        )
        by_arm = {c.arm: c for c in comparisons}
        results = [r.model_copy(update={"comparison": by_arm.get(r.arm.name)}) for r in results]
        study = StudyRecord(
            id=sid,
            kind=kind,
            status="done",
            created_at=created,
            finished_at=utcnow(),
            source=src.source,
            n_items=len(src.items),
            item_ids_hash=stable_hash([it.id for it in src.items]),
            evaluator=evaluator_info,
            prompt=src.spec.evaluator.prompt,
            memory_location=src.memory_location,
            memory_version=version.content_hash,
            memory_size=version.size,
            max_prompt_tokens=budget,
            token_counter=counter,
            reference_arm=reference_arm,
            alpha=alpha,
            arms=results,
            findings=[c.statement for c in comparisons],
            calls=sum(r.calls for r in results),
            wall_s=time.perf_counter() - t0,
            **record,  # type: ignore[arg-type]
        )
        from allure.audits._sweep_stats import summarise_sweep

        if kind == "sweep":
            study = study.model_copy(update={"sweep": summarise_sweep(study.arms)})
        if finish is not None:
            study = finish(study, labels)
        write_study(study, out_dir)
        store.update_run(sid, status="done", info={"kind": "study", "study_kind": kind})
        return study
    except BaseException:  # Ctrl-C, a failed evaluator: the study is interrupted, not running
        with contextlib.suppress(Exception):
            store.update_run(sid, status="interrupted", info={"kind": "study", "study_kind": kind})
        raise
    finally:
        store.close()
