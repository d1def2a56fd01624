"""The learning curve's measurement: the arms' labels read from stored verdicts (zero-shot's, and
each read-out's fitted on the first ``n`` items of a review order), and the curve over them."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from allure.labels import Label
from allure.metrics import CurvePoint, curve_point, curve_points
from allure.studies._arm import arm_metrics
from allure.studies._learning_curve_record import CurveData, CurveFit, CurvePlan, LearningCurveRecord
from allure.studies._options import Say
from allure.studies._protocol import ArmLabels, as_kind
from allure.studies._record import ArmResult, ArmSpec, StudyRecord
from allure.studies._source import StudySource

if TYPE_CHECKING:
    from allure.memory import EpisodicMemory


def curve_arms(plan: CurvePlan) -> list[ArmSpec]:
    """``zero-shot`` and, per size ``n`` and review order ``r``, the arm ``n=N #R``."""
    out = [ArmSpec(name="zero-shot", example_ids=[])]
    for n in plan.sizes:
        out += [ArmSpec(name=f"n={n} #{r}", example_ids=[], size=n, repeat=r) for r in range(plan.repeats)]
    return out


def _arm_result(
    src: StudySource, arm: ArmSpec, index: int, labels: list[Label | None], probs: list[float | None]
) -> ArmResult:
    """An arm read from stored verdicts: no call, every item answered from the store."""
    metrics = arm_metrics(src, labels, probs)
    return ArmResult(
        arm=arm,
        index=index,
        example_ids=[],
        mean_examples=0.0,
        dropped=0,
        prompts_with_drops=0,
        calls=0,
        cache_hits=len(src.items),
        wall_s=0.0,
        metrics=metrics,
    )


def measure_curve(
    src: StudySource, data: CurveData, plan: CurvePlan, memory: EpisodicMemory, say: Say | None
) -> tuple[list[ArmResult], ArmLabels, dict[str, Any]]:
    """Every arm's labels and result from the source run's stored zero-shot verdicts (0 calls): a
    draw whose read-out cannot be fitted keeps zero-shot's labels, as the loop does."""
    from allure.passes.readout import memory_vote_source, readout_curve

    t0 = time.perf_counter()
    spec = src.spec
    label_set = tuple(spec.label_set)
    if say:
        say(
            f"learning curve: 0 calls (features from pass {data.zero_iteration} of run {src.source['run']}); "
            f"pool {len(data.pool)} mined audit items; sizes {plan.sizes or '-'}, {plan.repeats} draw(s) each"
            + (f"; skipped (above the pool): {plan.skipped}" if plan.skipped else "")
        )
    vote = memory_vote_source(memory) if "vote" in plan.features else None
    draws = readout_curve(
        data.pool,
        src.items,
        data.verdicts,
        data.references,
        sizes=plan.sizes,
        repeats=plan.repeats,
        labels=label_set,
        positive=spec.positive_label if len(label_set) == 2 else None,
        vote=vote,
        objective=spec.loop.objective,
        seed=spec.loop.seed,
    )
    plan.fits = [
        CurveFit(size=d.size, repeat=d.repeat, fit_ids=list(d.fit_ids), describe=d.describe) for d in draws
    ]
    zero = [v.label if (v := data.verdicts.get(it.id)) else None for it in src.items]
    probs = [
        v.positive_score(src.spec.label_set, src.spec.positive_label)
        if (v := data.verdicts.get(it.id))
        else None
        for it in src.items
    ]
    arms = curve_arms(plan)
    labels: ArmLabels = {"zero-shot": zero}
    results = [_arm_result(src, arms[0], 1, zero, probs)]
    by_arm = {(d.size, d.repeat): d for d in draws}
    for index, arm in enumerate(arms[1:], start=2):
        d = by_arm[(arm.size or 0, arm.repeat or 0)]
        got = [d.labels.get(it.id) for it in src.items] if d.fitted else zero
        scores = [d.probs.get(it.id) for it in src.items] if d.fitted else probs
        labels[arm.name] = got
        results.append(_arm_result(src, arm, index, got, scores))
    wall = time.perf_counter() - t0
    results = [r.model_copy(update={"wall_s": wall / len(results)}) for r in results]
    facts = {
        "max_prompt_tokens": None,
        "token_counter": "",
        "evaluator": {"model": spec.evaluator.model, "params": spec.evaluator.params()},
    }
    return results, labels, facts


def _finding(p: CurvePoint, alpha: float) -> str:
    """One size of the curve in a sentence."""
    what = p.objective.replace("_", " ")

    def f(v: float | None, sign: bool = False) -> str:
        return "-" if v is None else (f"{v:+.3f}" if sign else f"{v:.3f}")

    spread = f" (draws {f(p.low)} to {f(p.high)})" if p.draws > 1 else ""
    verdict = (
        "significantly better than zero-shot"
        if p.p_holm is not None and p.p_holm < alpha and (p.delta or 0) > 0
        else "significantly worse than zero-shot"
        if p.p_holm is not None and p.p_holm < alpha
        else "not significantly different from zero-shot"
    )
    p_text = "-" if p.p_value is None else f"{p.p_value:.3g}"
    holm = "-" if p.p_holm is None else f"{p.p_holm:.3g}"
    return (
        f"n = {p.size} approved items ({p.draws} draw(s)): held-out {what} {f(p.mean)} [{f(p.ci_low)}, "
        f"{f(p.ci_high)}]{spread} vs zero-shot {f(p.zero_shot)}: delta {f(p.delta, True)} "
        f"[{f(p.delta_low, True)}, {f(p.delta_high, True)}], p = {p_text} (Holm over the sizes "
        f"{holm}; exploratory): {verdict} (n = {p.n} held-out items)."
    )


def curve_findings(points: list[CurvePoint], skipped: list[int], pool: int, alpha: float) -> list[str]:
    """The curve's sentences: each size, when to stop reviewing, and the sizes skipped."""
    out = [_finding(p, alpha) for p in points]
    better = [p.size for p in points if p.p_holm is not None and p.p_holm < alpha and (p.delta or 0) > 0]
    out.append(
        f"The read-out is significantly better than zero-shot from n = {better[0]} approved items on."
        if better
        else "No size measured makes the read-out significantly better than zero-shot on held-out."
    )
    if skipped:
        out.append(f"Sizes {', '.join(map(str, skipped))} skipped: the pool holds {pool} mined audit items.")
    return out


def summarise_curve(
    src: StudySource, data: CurveData, plan: CurvePlan, record: StudyRecord, labels: ArmLabels
) -> LearningCurveRecord:
    """The curve's record: one point per size (its draws' labels), its findings first."""
    from allure.dataset import task_groups

    spec = src.spec
    refs = [src.reference.get(it.id) for it in src.items]
    tasks = task_groups(src.items)  # a task's responses: one unit of the intervals and tests
    points = curve_points(
        [
            curve_point(
                refs,
                labels["zero-shot"],
                [labels[f"n={n} #{r}"] for r in range(plan.repeats)],
                size=n,
                objective=spec.loop.objective,
                labels=list(spec.label_set),
                n_resamples=spec.loop.bootstrap_resamples,
                random_state=spec.loop.seed,
                groups=[tasks[it.id] for it in src.items],
            )
            for n in plan.sizes
        ]
    )
    return as_kind(
        LearningCurveRecord,
        record,
        sizes=plan.sizes,
        skipped=plan.skipped,
        repeats=plan.repeats,
        features=plan.features,
        objective=spec.loop.objective,
        pool=len(data.pool),
        zero_shot_iteration=data.zero_iteration,
        curve=points,
        fits=plan.fits,
        findings=curve_findings(points, plan.skipped, len(data.pool), record.alpha) + record.findings,
    )
