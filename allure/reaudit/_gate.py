"""The regression gate: absolute minimums, drops against a baseline, per-problem-type checks.

A check fails when:

* ``min``: the metric on the set is below its minimum (or undefined on the set);
* ``max_drop``: ``baseline - current`` on the items both re-audits scored exceeds the allowed
  drop *and* McNemar's exact test of per-item correctness on those paired items gives
  ``p < alpha``. Where several items share a task (responses to one prompt), ``p`` is the larger
  of McNemar's and the test that swaps whole tasks (``mcnemar_test(groups=)``): a prompt change
  moves a task's responses together, and counting them as independent would fail the gate on
  noise;
* ``problem_type``: the accuracy of one problem type (unparsed counts as wrong) dropped by more
  than ``max_drop.accuracy`` (0 when not set) and McNemar's p for that type, Holm-adjusted
  over the types, is below ``alpha``.

The gate passes when every check passes. Items that flipped from right to wrong against the
baseline are listed with the failure mode of their response.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Literal

from pydantic import BaseModel

from allure.config import GateSpec
from allure.gold_check import GoldCheckConfig
from allure.labels import Label
from allure.metrics import SplitMetrics
from allure.models import FailureMode, Item

GateStatus = Literal["pass", "regression"]
"""``pass``: every check passed; ``regression``: at least one failed."""

CheckKind = Literal["min", "max_drop", "problem_type"]
"""``min``: an absolute minimum; ``max_drop``: a drop against the baseline; ``problem_type``: one type's accuracy."""


class GateCheck(BaseModel):
    """One check of the gate (one JUnit test case)."""

    name: str
    """``min accuracy``, ``max_drop f1``, ``problem_type 2stepPath``."""
    kind: CheckKind
    """What kind of check it is."""
    metric: str
    """The metric checked."""
    passed: bool
    """Whether it passed."""
    value: float | None = None
    """The metric now (on the paired items for drops and problem types)."""
    baseline_value: float | None = None
    """The metric of the baseline on the same items."""
    threshold: float | None = None
    """The minimum, or the largest allowed drop."""
    n: int = 0
    """Items compared (paired items for drops)."""
    b: int = 0
    """Items right in the baseline and wrong now."""
    c: int = 0
    """Items wrong in the baseline and right now."""
    p_value: float | None = None
    """McNemar's exact p (Holm-adjusted for problem types); None when there is no baseline. Where
    several items share a task, the larger of that and the test that swaps whole tasks."""
    groups: int | None = None
    """The paired items' tasks, where several items share one (``None``: tested item by item)."""
    message: str = ""
    """One line saying why it passed or failed."""


def _metric_check(kind: CheckKind, metric: str, **figures: Any) -> GateCheck:
    """The check ``KIND METRIC`` (``min accuracy``, ``max_drop f1``) with its ``figures``."""
    return GateCheck(name=f"{kind} {metric}", kind=kind, metric=metric, **figures)


class Flip(BaseModel):
    """An item the baseline labelled right and this re-audit labels wrong."""

    item_id: str
    """The item."""
    problem_type: str
    """Its problem type."""
    reference_label: Label
    """The reference label."""
    baseline_label: Label | None
    """The baseline's label (right)."""
    label: Label | None
    """This re-audit's label (wrong; ``None``: unparsed)."""
    failure_mode: FailureMode
    """The failure mode of the response (the rules of :func:`allure.memory.failure_modes.classify_failure`)."""
    failure_reason: str
    """Why that mode."""


class GateResult(BaseModel):
    """The gate's verdict."""

    status: GateStatus
    """``pass`` or ``regression``."""
    baseline_id: str
    """The re-audit compared with (empty: none yet)."""
    alpha: float
    """The significance level used."""
    checks: list[GateCheck]
    """Every check, in order: minimums, drops, problem types."""
    flips_to_wrong: list[Flip]
    """Items right in the baseline and wrong now."""
    flips_to_right: int
    """Items wrong in the baseline and right now."""

    @property
    def failed(self) -> list[GateCheck]:
        """The checks that failed."""
        return [c for c in self.checks if not c.passed]


def metric_value(metrics: SplitMetrics, name: str) -> float | None:
    """A metric (one of :data:`allure.config.GATE_METRICS`) out of :func:`allure.metrics.compute_metrics`'s result."""
    v = getattr(metrics, name, None)
    return None if v is None else float(v)


def _metrics(refs: list[Label | None], labels: list[Label | None], label_set: list[Label]) -> SplitMetrics:
    from allure.metrics import compute_metrics

    return compute_metrics(refs, labels, labels=tuple(label_set), pos_label=label_set[-1], n_resamples=100)


def _right(label: Label | None, ref: Label | None) -> bool:
    return label is not None and ref is not None and label == ref


def _in_tasks(groups: int | None) -> str:
    """`` in N tasks`` where the test swapped whole tasks, else nothing."""
    return "" if groups is None else f" in {groups} tasks"


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def evaluate_gate(
    gate: GateSpec,
    *,
    items: list[Item],
    references: dict[str, Label | None],
    labels: dict[str, Label | None],
    metrics: SplitMetrics,
    label_set: list[Label],
    baseline_id: str = "",
    baseline_labels: dict[str, Label | None] | None = None,
    gold_check: GoldCheckConfig | None = None,
) -> GateResult:
    """Run every check of ``gate`` on a re-audit's labels.

    Args:
        gate: The thresholds.
        items: The frozen set's items.
        references: Item id -> reference label.
        labels: Item id -> this re-audit's label (``None``: unparsed).
        metrics: :func:`allure.metrics.compute_metrics` over the whole set (for the minimums).
        label_set: The label set (last = positive).
        baseline_id: The baseline re-audit's id (empty: none).
        baseline_labels: The baseline's labels by item id (``None``: no baseline).
        gold_check: The gold check, to extract answers for the failure modes of flipped items.

    Returns:
        A :class:`GateResult`.
    """
    from allure.dataset import task_groups

    checks = _minimums(gate, metrics, len(items))
    tasks = task_groups(items)
    paired = [
        it
        for it in items
        if baseline_labels is not None and it.id in baseline_labels and references.get(it.id) is not None
    ]
    flips: list[Flip] = []
    to_right = 0
    if baseline_labels is None:
        checks += [
            _metric_check(
                "max_drop",
                name,
                passed=True,
                threshold=allowed,
                message="no baseline yet: this re-audit becomes the baseline if it passes",
            )
            for name, allowed in gate.max_drop.items()
        ]
    else:
        refs = [references[it.id] for it in paired]
        now = [labels.get(it.id) for it in paired]
        before = [baseline_labels.get(it.id) for it in paired]
        checks += _drops(gate, refs, before, now, label_set, [tasks[it.id] for it in paired])
        flips, to_right = _flips(paired, refs, before, now, gold_check)
    checks.extend(_by_type(gate, items, references, labels, baseline_labels, paired, tasks))
    return GateResult(
        status="pass" if all(c.passed for c in checks) else "regression",
        baseline_id=baseline_id,
        alpha=gate.alpha,
        checks=checks,
        flips_to_wrong=flips,
        flips_to_right=to_right,
    )


def _minimums(gate: GateSpec, metrics: SplitMetrics, n: int) -> list[GateCheck]:
    """Each ``[gate.min]`` metric against its minimum on the whole set."""
    checks = []
    for name, minimum in gate.min.items():
        v = metric_value(metrics, name)
        ok = v is not None and v >= minimum
        checks.append(
            _metric_check(
                "min",
                name,
                passed=ok,
                value=v,
                threshold=minimum,
                n=n,
                message=f"{name} {_fmt(v)} {'>=' if ok else '<'} minimum {minimum:.3f}"
                if v is not None
                else f"{name} is undefined on this set (minimum {minimum:.3f})",
            )
        )
    return checks


def _drops(
    gate: GateSpec,
    refs: list[Label | None],
    before: list[Label | None],
    now: list[Label | None],
    label_set: list[Label],
    tasks: list[str],
) -> list[GateCheck]:
    """Each ``[gate.max_drop]`` metric against the baseline on the paired items: a drop beyond the
    allowed one fails only when McNemar's test (whole tasks swapped where items share one) finds the
    change significant."""
    from allure.metrics import mcnemar_test

    test = mcnemar_test(refs, before, now, groups=tasks)
    m_now, m_before = _metrics(refs, now, label_set), _metrics(refs, before, label_set)
    checks = []
    for name, allowed in gate.max_drop.items():
        v, bv = metric_value(m_now, name), metric_value(m_before, name)
        drop = None if v is None or bv is None else bv - v
        significant = test.p_value < gate.alpha
        ok = drop is None or drop <= allowed or not significant
        why = (
            f"{name} {_fmt(bv)} -> {_fmt(v)} on {test.n} paired items{_in_tasks(test.groups)} "
            f"(drop {_fmt(drop)}, allowed {allowed:.3f}); McNemar b={test.b} c={test.c} p={test.p_value:.4g}"
        )
        if drop is not None and drop > allowed and not significant:
            why += f" (not significant at n = {test.n}, alpha {gate.alpha})"
        checks.append(
            _metric_check(
                "max_drop",
                name,
                passed=ok,
                value=v,
                baseline_value=bv,
                threshold=allowed,
                message=why,
                n=test.n,
                b=test.b,
                c=test.c,
                p_value=test.p_value,
                groups=test.groups,
            )
        )
    return checks


def _flips(
    paired: list[Item],
    refs: list[Label | None],
    before: list[Label | None],
    now: list[Label | None],
    gold_check: GoldCheckConfig | None,
) -> tuple[list[Flip], int]:
    """The items right in the baseline and wrong now (with their failure mode), and how many went
    the other way."""
    from allure.gold_check import GoldCheck
    from allure.memory.failure_modes import classify_failure

    flips: list[Flip] = []
    to_right = 0
    check = GoldCheck(gold_check)
    for it, ref, b_lab, lab in zip(paired, refs, before, now, strict=True):
        if ref is not None and _right(b_lab, ref) and not _right(lab, ref):
            fa = classify_failure(
                response=it.response,
                task=it.task,
                gold_answers=it.gold_answers,
                extracted=check.extract(it.response),
            )
            flips.append(
                Flip(
                    item_id=it.id,
                    problem_type=it.problem_type,
                    reference_label=ref,
                    baseline_label=b_lab,
                    label=lab,
                    failure_mode=fa.mode,
                    failure_reason=fa.reason,
                )
            )
        elif _right(lab, ref) and not _right(b_lab, ref):
            to_right += 1
    return flips, to_right


def _by_type(
    gate: GateSpec,
    items: list[Item],
    references: dict[str, Label | None],
    labels: dict[str, Label | None],
    baseline_labels: dict[str, Label | None] | None,
    paired: list[Item],
    tasks: dict[str, str],
) -> list[GateCheck]:
    from allure.metrics import holm_adjust, mcnemar_test

    scored: dict[str, list[Item]] = defaultdict(list)
    for it in items:
        if references.get(it.id) is not None:
            scored[it.problem_type or "(none)"].append(it)
    types = sorted(scored)
    allowed = gate.max_drop.get("accuracy", 0.0)
    if baseline_labels is None:
        out = []
        for t in types:
            group = scored[t]
            acc = sum(_right(labels.get(it.id), references[it.id]) for it in group) / len(group)
            out.append(
                GateCheck(
                    name=f"problem_type {t}",
                    kind="problem_type",
                    metric="accuracy",
                    passed=True,
                    value=acc,
                    n=len(group),
                    message=f"accuracy {acc:.3f} on {len(group)} item{'' if len(group) == 1 else 's'}; no baseline yet",
                )
            )
        return out
    by_type: dict[str, list[Item]] = defaultdict(list)
    for it in paired:
        by_type[it.problem_type or "(none)"].append(it)
    tests = []
    for t in types:
        group = by_type.get(t, [])
        refs = [references[it.id] for it in group]
        tests.append(
            mcnemar_test(
                refs,
                [baseline_labels.get(it.id) for it in group],
                [labels.get(it.id) for it in group],
                groups=[tasks[it.id] for it in group],
            )
        )
    adjusted = holm_adjust([x.p_value for x in tests]) if tests else []
    out = []
    for t, test, p_adj in zip(types, tests, adjusted, strict=True):
        group = by_type.get(t, [])
        n = len(group)
        acc_before = (
            None if n == 0 else sum(_right(baseline_labels.get(it.id), references[it.id]) for it in group) / n
        )
        acc_now = None if n == 0 else sum(_right(labels.get(it.id), references[it.id]) for it in group) / n
        drop = None if acc_now is None or acc_before is None else acc_before - acc_now
        failed = drop is not None and drop > allowed and p_adj < gate.alpha
        out.append(
            GateCheck(
                name=f"problem_type {t}",
                kind="problem_type",
                metric="accuracy",
                passed=not failed,
                value=acc_now,
                baseline_value=acc_before,
                threshold=allowed,
                n=n,
                b=test.b,
                c=test.c,
                p_value=p_adj,
                groups=test.groups,
                message=(
                    f"{t}: accuracy {_fmt(acc_before)} -> {_fmt(acc_now)} on {n} paired items{_in_tasks(test.groups)}, "
                    f"{test.b} right->wrong, {test.c} wrong->right, Holm-adjusted McNemar p={p_adj:.4g}"
                ),
            )
        )
    return out
