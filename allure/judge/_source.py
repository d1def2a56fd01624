"""What an export reads from a finished run: which pass is the judge, its examples and the
calibration values the pass stored (no refit), all from the run store (and the memory the run
wrote to); and the export's check that they give the pass's labels back, by the pass pipeline."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from allure.errors import JudgeError
from allure.judge._fixed import FittedValues, fixed_calibration, parsed_label
from allure.models import IclExample, Verdict

if TYPE_CHECKING:
    from allure.config import AuditSpec
    from allure.evaluator import Evaluator
    from allure.memory import RetrievalPolicy
    from allure.metrics import CalibrationValues
    from allure.passes import Readout
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


def stored_calibration(store: RunStore, src: JudgeSource) -> CalibrationValues:
    """The calibration values the pass applied, as the pass stored them (no refit): run info
    ``calibration_<it>`` (:meth:`allure.store.RunStore.calibration_values`); a pass stored before
    them has the same values in its report entry (``CalibrationOutcome.as_dict``), read back
    through :meth:`CalibrationOutcome.fitted`."""
    from allure.metrics import CalibrationValues
    from allure.passes import CalibrationOutcome

    values = store.calibration_values(src.run.id, src.iteration)
    if values is not None:
        return values
    cal = _report_calibration(src) if src.spec.evaluator.applied_calibration != "none" else None
    if not cal:
        return CalibrationValues()
    known = {k: v for k, v in cal.items() if k in CalibrationOutcome.__dataclass_fields__}
    return CalibrationOutcome(**known).fitted()


def fitted_calibration(store: RunStore, src: JudgeSource) -> FittedValues:
    """The calibration the pass applied with the values it stored (:func:`stored_calibration`), as a
    bundle keeps them (``judge.toml``'s ``[calibration]``, the prior in label-set order)."""
    values = stored_calibration(store, src)
    labels = src.spec.label_set
    prior = [float(values.prior.get(str(lab), 0.0)) for lab in labels] if values.prior else None
    own = dict(values.model_extra or {})
    return FittedValues(mode=values.mode, p_cf=values.p_cf, prior=prior, offset=values.offset, values=own)


def check_reproduces(
    store: RunStore,
    src: JudgeSource,
    fitted: FittedValues,
    verdicts: dict[str, Verdict],
    readout: Readout | None = None,
) -> None:
    """Refuse to export values that would not give the pass's own stored labels back: the pass
    pipeline's own steps (:func:`allure.passes.run_pass` with ``fixed_calibration`` and the
    carried ``readout``) run over the pass's stored verdicts as parsed, nothing asked, nothing written
    to the pass."""
    from allure.evaluator import EvalResult
    from allure.passes import SWAPPED, PassPlan, run_pass

    if src.spec.evaluator.position_debias != "none":
        return  # debiased labels are recomputed from both orders, not stored
    labels = src.spec.label_set
    stored = {i: v for i, v in verdicts.items() if "#" not in i}
    main = {i: v.model_copy(update={"label": parsed_label(v), "raw_label": None}) for i, v in stored.items()}
    swapped = {i: v for i, v in verdicts.items() if i.endswith(SWAPPED)}
    both = bool(readout is not None and getattr(readout, "reads_swapped", False) and swapped)
    items = [it for it in store.items(src.run.id) if it.id in main]
    plan = PassPlan(
        run_id=f"{src.run.id}#export-check",  # no verdict is linked to it: the check writes nothing
        iteration=src.iteration,
        items=items,
        examples_for=lambda item: [],
        labels=tuple(labels),
        swap=both,
        fixed_calibration=fixed_calibration(fitted, labels, {}) if fitted.mode != "none" else None,
        readout=readout,
    )
    ev = _scratch_evaluator(store, src)
    out = run_pass(
        ev, plan, main=EvalResult(verdicts=main), swapped=EvalResult(verdicts=swapped) if both else None
    )
    differ = sorted(i for i, v in stored.items() if out.labels.get(i) != v.label)
    if differ:
        raise JudgeError(
            f"the fitted calibration ({fitted.mode}) does not give {len(differ)} of the pass's stored "
            f"labels back (e.g. item {differ[0]})",
            where=f"run {src.run.id}, iteration {src.iteration}",
            fix="report this; export --iteration with another pass meanwhile",
        )


def _scratch_evaluator(store: RunStore, src: JudgeSource) -> Evaluator:
    """An evaluator with the pass's options over its store and no backend: the check's pass sends no
    call (its verdicts are given) and writes no label (its run id links no verdict)."""
    from allure.evaluator import Evaluator, backend_kind

    return Evaluator(backend_kind(src.spec.evaluator.kind).options(src.spec), store=store)
