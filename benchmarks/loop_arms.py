"""The exploratory arms of ``bench_loop.py`` (issue 43, item 4), from a draw's finished run: what each
of the loop's mechanisms does alone for this judge, on the run's held-out items, and how many
approvals the read-out needs. Every figure comes from the product (its stored verdicts, its studies,
its paired test); nothing here fits or decides.

- **memory alone**: the memory pass's labels parsed from the judge's output (before any calibration
  or read-out) against the zero-shot pass's parsed labels, on the held-out items
  (:func:`allure.metrics.objective_difference`, two-sided);
- **read-out alone**: the loop's read-out refitted on every mined audit item and applied to the
  zero-shot pass (the product's ``learning-curve`` study at the pool's size; no call);
- **calibration alone**: each calibration mode the task's labels allow, applied to the zero-shot
  prompts of the held-out items (the product's ``arms`` study; the content-free calls are the
  loop's, stored);
- **learning curve**: the read-out refitted on the first 25, 50, 100, 200 approvals of three review
  orders (the ``learning-curve`` study; Holm over its sizes, as the study adjusts them).

The arms' raw p-values are Holm-adjusted together, per draw (exploratory: the pre-registered test is
the primary line alone).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench_readout import _f, _p  # the figures written as the other loop benches write them

CURVE_SIZES = "25,50,100,200"
CURVE_REPEATS = 3


def _comparison(name: str, c: Any, **extra: Any) -> dict[str, Any]:
    """An arm's figures from an :class:`allure.metrics.ObjectiveComparison`."""
    return {
        "arm": name,
        "value_a": c.value_a,
        "value_b": c.value_b,
        "delta": c.delta,
        "ci_low": c.ci_low,
        "ci_high": c.ci_high,
        "p": c.p_value,
        "n": c.n,
        **extra,
    }


def memory_alone(project: Path, run_id: str, report: dict[str, Any], objective: str) -> dict[str, Any]:
    """The last pass with examples in its prompts against the zero-shot pass, both as parsed."""
    import allure
    from allure.metrics import objective_difference
    from allure.store import open_project_store

    zero = report.get("zero_shot_iteration")
    with_memory = [it for it in report.get("iterations") or [] if int(it.get("memory_size") or 0) > 0]
    if zero is None or not with_memory:
        return {"arm": "memory alone", "note": "no pass with examples in its prompts (nothing approved)"}
    last = with_memory[-1]
    spec = allure.open_project(project).run(run_id).spec
    store = open_project_store(project)
    try:
        splits, refs = store.splits(run_id), store.reference_labels(run_id)
        first, memory = store.verdicts(run_id, int(zero)), store.verdicts(run_id, int(last["iteration"]))
    finally:
        store.close()
    held = [i for i, s in splits.items() if s == "heldout" and i in first and i in memory]

    def parsed(v: Any) -> Any:
        return v.raw_label if v.raw_label is not None else v.label

    c = objective_difference(
        [refs.get(i) for i in held],
        [parsed(first[i]) for i in held],
        [parsed(memory[i]) for i in held],
        objective=objective,  # type: ignore[arg-type]
        labels=list(spec.label_set),
        random_state=spec.loop.seed,
    )
    return _comparison("memory alone", c, examples=int(last["memory_size"]), iteration=int(last["iteration"]))


def _curve_point(p: Any) -> dict[str, Any]:
    return {
        "size": p.size,
        "draws": p.draws,
        "mean": p.mean,
        "ci_low": p.ci_low,
        "ci_high": p.ci_high,
        "zero_shot": p.zero_shot,
        "delta": p.delta,
        "delta_low": p.delta_low,
        "delta_high": p.delta_high,
        "p": p.p_value,
        "p_holm": p.p_holm,
        "n": p.n,
    }


def readout_curve(project: Path, run_id: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The learning curve, and the read-out alone (fitted on the whole pool: one review order)."""
    from allure.errors import AllureError
    from allure.studies import learning_curve

    curve = learning_curve(project, sizes=CURVE_SIZES, repeats=CURVE_REPEATS, from_run=run_id)
    out = {
        "pool": curve.pool,
        "skipped": curve.skipped,
        "repeats": curve.repeats,
        "points": [_curve_point(p) for p in curve.curve],
        "study": curve.id,
    }
    if curve.pool < 2:
        return out, None
    try:
        whole = learning_curve(project, sizes=str(curve.pool), repeats=1, from_run=run_id)
    except AllureError as exc:
        return out, {"arm": "read-out alone", "note": str(exc)}
    if not whole.curve:
        return out, {"arm": "read-out alone", "note": "the read-out could not be fitted on the pool"}
    p = whole.curve[0]
    return out, {
        "arm": "read-out alone",
        "value_a": p.zero_shot,
        "value_b": p.mean,
        "delta": p.delta,
        "ci_low": p.delta_low,
        "ci_high": p.delta_high,
        "p": p.p_value,
        "n": p.n,
        "fitted_on": p.size,
    }


def calibration_modes(n_labels: int, pairwise: bool) -> list[str]:
    """The modes a study arm may apply to this task (``offset``: two labels; none to a pairwise judge)."""
    if pairwise:
        return []
    return ["contextual", "prior", "offset"] if n_labels == 2 else ["contextual", "prior"]


def calibration_alone(project: Path, run_id: str) -> list[dict[str, Any]]:
    """Each calibration mode on the held-out items' zero-shot prompts against the parsed labels."""
    from allure.errors import AllureError
    from allure.studies import ArmSpec, ArmsStudy, open_source, run_study

    src, memory, run = open_source(project, {"from_run": run_id}, empty_memory=True)
    modes = calibration_modes(len(src.spec.label_set), src.spec.evaluator.prompt == "pairwise")
    if not modes:
        return [{"arm": "calibration alone", "note": "no calibration mode applies to this judge"}]
    arms = [ArmSpec(name="parsed", example_ids=[], calibration="none", readout="none")] + [
        ArmSpec(name=f"calibration {m}", example_ids=[], calibration=m, readout="none")  # type: ignore[arg-type]
        for m in modes
    ]
    try:
        record = run_study(
            project, src, memory, ArmsStudy(arms, reference="parsed", extra="bench_loop"), **run
        )
    except AllureError as exc:
        return [{"arm": "calibration alone", "note": str(exc)}]
    out = []
    for arm in record.arms:
        c = arm.comparison
        if c is None:
            continue
        applied = (arm.calibration or {}).get("mode")
        if (
            applied != arm.arm.calibration
        ):  # e.g. ``prior: none``: fitted on audit items, a held-out study has none
            out.append(
                {"arm": arm.arm.name, "note": f"not applied in a study of the held-out items ({applied})"}
            )
        elif c.objective is None:
            out.append({"arm": arm.arm.name, "note": "no objective comparison"})
        else:
            out.append(_comparison(arm.arm.name, c.objective, calls=arm.calls))
    return out


def holm(arms: list[dict[str, Any]]) -> None:
    """Each arm's p Holm-adjusted over the draw's arms that have one (in place)."""
    from allure.metrics import holm_adjust

    tested = [a for a in arms if a.get("p") is not None]
    for a, adjusted in zip(tested, holm_adjust([float(a["p"]) for a in tested]), strict=True):
        a["p_holm"] = adjusted


def exploratory(project: Path, run_id: str, report: dict[str, Any], objective: str) -> dict[str, Any]:
    """Every arm of a finished draw, and its learning curve."""
    arms = [memory_alone(project, run_id, report, objective)]
    curve, readout = readout_curve(project, run_id)
    if readout is not None:
        arms.append(readout)
    arms += calibration_alone(project, run_id)
    holm(arms)
    return {"objective": objective, "arms": arms, "curve": curve}


def arm_line(a: dict[str, Any]) -> str:
    if "note" in a:
        return f"{a['arm']}: {a['note']}"
    sig = " (significant after Holm)" if a.get("p_holm") is not None and a["p_holm"] < 0.05 else ""
    return (
        f"{a['arm']}: {_f(a.get('value_a'))} -> {_f(a.get('value_b'))}, delta {_f(a.get('delta'), '+.3f')} "
        f"[{_f(a.get('ci_low'), '+.3f')}, {_f(a.get('ci_high'), '+.3f')}], p = {_p(a.get('p'))}, "
        f"Holm p = {_p(a.get('p_holm'))}, n = {a.get('n')}{sig}"
    )


def curve_line(curve: dict[str, Any]) -> str:
    points = curve.get("points") or []
    if not points:
        return f"learning curve: no size measured (pool {curve.get('pool')})"
    zero = points[0].get("zero_shot")
    body = "; ".join(
        f"{p['size']}: {_f(p['mean'])} [{_f(p['ci_low'])}, {_f(p['ci_high'])}] "
        f"(delta {_f(p['delta'], '+.3f')}, Holm p {_p(p['p_holm'])})"
        for p in points
    )
    skipped = f"; sizes above the pool of {curve['pool']}: {curve['skipped']}" if curve.get("skipped") else ""
    return (
        f"learning curve (read-out refitted on the first n approvals, {curve.get('repeats')} review orders, "
        f"held-out; zero-shot {_f(zero)}): {body}{skipped}"
    )


def lines(ex: dict[str, Any]) -> list[str]:
    """The draw's exploratory lines for ``loop.md``."""
    return [
        f"- exploratory ({ex['objective'].replace('_', ' ')}, held-out, Holm over this draw's arms):",
        *[f"  - {arm_line(a)}" for a in ex["arms"]],
        f"- {curve_line(ex['curve'])}",
    ]
