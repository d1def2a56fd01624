"""What an export reads from a finished run: which pass is the judge, its examples and its
fitted calibration, all from the run store (and the memory the run wrote to)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from allure.errors import JudgeError
from allure.judge._fixed import FittedValues, apply_fitted, block_name, probability_row
from allure.models import IclExample, Item, Verdict

if TYPE_CHECKING:
    from allure.config import AuditSpec
    from allure.evaluator import Readout
    from allure.memory import RetrievalPolicy
    from allure.store import RunRecord, RunStore


@dataclass(frozen=True)
class JudgeSource:
    """The pass of a run an export writes as a judge."""

    run: RunRecord
    spec: AuditSpec
    iteration: int
    zero_shot: bool
    """True when the pass ran without examples (the zero-shot judge)."""
    active: int
    """The run's adopted pass (the loop's judge)."""
    zero_iteration: int | None


def pick_source(store: RunStore, run_id: str | None, iteration: int | None, zero_shot: bool) -> JudgeSource:
    """The run's judge to export: the adopted pass, ``--iteration N``, or ``--zero-shot``.

    Raises:
        JudgeError: No such run or pass; a run still running, unfinished, or a replay.
    """
    from allure.config import parse_spec

    run = store.get_run(run_id) if run_id else store.latest_run("done")
    if run is None:
        raise JudgeError(
            "the project has no finished run", where=str(store.where), fix="run `allure audit` first"
        )
    where = f"run {run.id}"
    if run.status == "running":
        raise JudgeError(
            "the run is still running: its judge is not settled yet",
            where=where,
            fix="wait until it is done (`allure runs` shows its status), then export",
        )
    spec = parse_spec(run.spec, source=f"{where} spec")
    if spec.evaluator.is_replay:
        raise JudgeError(
            "the run is a replay of recorded labels: recorded labels cannot label new data",
            where=f"{where}, field 'evaluator.kind'",
            fix='audit a live evaluator (kind = "openai" or "local") and export that run',
        )
    metrics = store.metrics(run.id)
    if run.status != "done" or not metrics:
        raise JudgeError(
            f"the run has no finished pass to export (status {run.status})",
            where=where,
            fix=f"finish it with `allure resume {run.id}`, then export",
        )
    active = int(run.info.get("active_iteration") or max(metrics))
    zero = run.info.get("zero_shot_iteration")
    it = iteration if iteration is not None else (zero if zero_shot else active)
    if zero_shot and zero is None:
        raise JudgeError("the run has no zero-shot pass", where=where, fix="export without --zero-shot")
    if it not in metrics:
        raise JudgeError(
            f"the run has no finished pass {it}",
            where=f"{where}, option '--iteration'",
            fix=f"use one of: {', '.join(map(str, sorted(metrics)))}",
        )
    return JudgeSource(run, spec, int(it), it == zero, active, zero)


def resolved_policy(store: RunStore, src: JudgeSource) -> RetrievalPolicy:
    """The retrieval rule the pass used (a ``label_prior`` rule with its prior filled in as the loop
    fills it: the audit split's reference label shares)."""
    policy = src.spec.memory.retrieval
    if policy.kind == "top_k":
        raise JudgeError(
            "a top_k retrieval rule needs the memory's vector index, which a bundle does not carry",
            where=f"run {src.run.id}, field 'memory.retrieval.kind'",
            fix="audit with another rule (nearest, same_group, sample, label_prior, ...) to export the judge",
        )
    if policy.kind != "label_prior" or policy.prior is not None:
        return policy
    return policy.model_copy(update={"prior": audit_shares(store, src.run.id)})


def audit_shares(store: RunStore, run_id: str, without: Collection[str] = ()) -> dict[str, float] | None:
    """The audit split's reference label shares (string form), the items of ``without`` left out, as
    the loop computes them (the retrieval prior: every audit item; ``prior`` calibration: dev left out)."""
    refs, splits = store.reference_labels(run_id), store.splits(run_id)
    known = [
        str(r) for i, r in refs.items() if r is not None and splits.get(i) == "audit" and i not in without
    ]
    return {lab: known.count(lab) / len(known) for lab in sorted(set(known))} if known else None


def pass_examples(store: RunStore, src: JudgeSource, project: Path) -> list[IclExample]:
    """The examples of the pass's memory version, read from the run's memory and checked against
    the version's content hash (a memory changed since the run is refused)."""
    from allure.memory import EpisodicMemory, content_hash

    digest, ids = store.memory_versions(src.run.id).get(src.iteration, ("", []))
    if not ids or src.zero_shot:
        return []
    mem = src.spec.memory
    memory = EpisodicMemory.open_at(mem.location, project_dir=project, collection=mem.collection, lazy=True)
    have = {ex.id: ex for ex in memory.all()}
    missing = [i for i in ids if i not in have]
    examples = [have[i] for i in ids if i in have]
    if missing or content_hash(examples) != digest:
        raise JudgeError(
            f"the memory no longer holds pass {src.iteration}'s examples as they were "
            + (f"({len(missing)} missing, e.g. {missing[0]})" if missing else "(an example was edited)"),
            where=f"memory {memory.location}, run {src.run.id}",
            fix="export from the project whose memory the run used, before examples are deleted or edited",
        )
    return sorted(examples, key=lambda ex: ex.id)


def _report_calibration(src: JudgeSource) -> dict[str, Any] | None:
    from allure.report import read_report

    data = read_report(Path(src.run.run_dir))
    entry = next((x for x in data.iterations if x.iteration == src.iteration), None)
    return None if entry is None or entry.calibration is None else entry.calibration.model_dump()


def fitted_calibration(store: RunStore, src: JudgeSource, verdicts: dict[str, Verdict]) -> FittedValues:
    """The calibration the pass applied, with its values recomputed from the stored calls exactly
    as the pass computed them (``p_cf`` from its content-free calls, ``pi`` and ``b`` from the
    references of the audit split outside dev)."""
    from allure.evaluator import CF_PREFIX
    from allure.metrics import CONTENT_FREE, content_free_mean

    spec = src.spec
    cal = _report_calibration(src) if spec.evaluator.applied_calibration != "none" else None
    mode = "none" if not cal or cal.get("off") else str(cal.get("chosen") or cal.get("mode"))
    labels = spec.label_set
    if mode == "none":
        return FittedValues()
    p_cf: dict[str, list[float]] = {}
    for name in sorted({block_name(v.icl_ids) for i, v in verdicts.items() if not i.startswith("#")}):
        rows = [
            r
            for k in range(len(CONTENT_FREE))
            if (v := verdicts.get(f"{CF_PREFIX}{name}-{k}")) is not None
            and (r := probability_row(v.label_probs, labels)) is not None
        ]
        if rows:
            p_cf[name] = [float(x) for x in content_free_mean(rows)]
    shares = audit_shares(store, src.run.id, without=_dev(store, src)) if mode == "prior" else None
    prior = [float(shares.get(str(lab), 0.0)) for lab in labels] if shares else None
    offset = None
    if mode == "offset":
        offset = _offset(store, src, verdicts)
    return FittedValues(
        mode=mode,
        p_cf=p_cf if mode != "offset" else {},
        prior=prior if mode == "prior" else None,
        offset=offset,
    )


def _dev(store: RunStore, src: JudgeSource) -> set[str]:
    """The run's dev split, as the loop carved it (empty when it cross-fits)."""
    from allure.dataset import dev_split

    loop = src.spec.loop
    return dev_split(
        store.items(src.run.id), store.splits(src.run.id), loop.dev_fraction, loop.seed, loop.folds
    )


def _offset(store: RunStore, src: JudgeSource, verdicts: dict[str, Verdict]) -> float | None:
    """``b`` fitted as the pass fitted it: on the audit items outside dev with a reference label."""
    from allure.metrics import fit_offset

    spec = src.spec
    labels, positive = spec.label_set, spec.positive_label
    if positive is None or len(labels) != 2:
        return None
    splits, refs = store.splits(src.run.id), store.reference_labels(src.run.id)
    dev = _dev(store, src)
    pos = list(labels).index(positive)
    p = {
        i: row[pos] / sum(row)
        for i, v in verdicts.items()
        if not i.startswith("#") and (row := probability_row(v.label_probs, labels)) is not None
    }
    fit = [
        i for i, r in refs.items() if r is not None and splits.get(i) == "audit" and i not in dev and i in p
    ]
    if not fit:
        return None
    share = sum(str(refs[i]) == str(positive) for i in fit) / len(fit)
    return float(fit_offset([p[i] for i in fit], share))


def check_reproduces(
    src: JudgeSource, fitted: FittedValues, verdicts: dict[str, Verdict], readout: Readout | None = None
) -> None:
    """Refuse to export values that would not give the pass's own stored labels back (``readout``:
    the carried read-out, applied last to the calibrated verdicts as the pass applied it)."""
    from allure.evaluator import SWAPPED

    items = {i: v for i, v in verdicts.items() if not i.startswith("#")}
    if src.spec.evaluator.position_debias != "none":
        return  # debiased labels are recomputed from both orders, not stored
    got = apply_fitted(fitted, items, src.spec.label_set, src.spec.positive_label)
    if readout is not None:  # applied to the main order, the swapped order's verdicts beside it
        main = {
            i: v.model_copy(update={"label": got[i]}) for i, v in items.items() if not i.endswith(SWAPPED)
        }
        swapped = {i.removesuffix(SWAPPED): v for i, v in items.items() if i.endswith(SWAPPED)}
        more = {"swapped": swapped} if swapped else {}
        got.update(readout.apply([Item(id=i, task="", response="") for i in main], main, **more))
    differ = sorted(i for i, v in items.items() if got[i] != v.label)
    if differ:
        raise JudgeError(
            f"the fitted calibration ({fitted.mode}) does not give {len(differ)} of the pass's stored "
            f"labels back (e.g. item {differ[0]})",
            where=f"run {src.run.id}, iteration {src.iteration}",
            fix="report this; export --iteration with another pass meanwhile",
        )
