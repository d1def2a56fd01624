"""One pass of the evaluator, post-processed: evaluate -> swap -> debias -> calibrate -> read-out.

The audit loop (``graphs/``), a study's arms (``studies/_arm.py``), a re-audit (``reaudit/_passes.py``)
and an exported judge describe their pass as a :class:`PassPlan` and call :func:`run_pass`; none of
them swaps, debiases or calibrates itself, so the four cannot drift apart.

The one rule for what a pass's labels are (:attr:`PassOutcome.labels`): the parsed label of the
main order, replaced by each step that is on, in order. Position debiasing (a pairwise pass with
``position_debias`` set) gives one label per pair from its two orders; calibration re-labels the
main order's verdicts from their label probabilities (fitted and chosen here, or ``fixed``: values
fitted before); the read-out, last, maps the verdicts (and a swapped order's, when the pass ran it)
to labels (with ``polarity_prompt``, the reversed question's verdicts too: one more zero-shot call
per item, asked just before it); a verdict without label probabilities keeps its label through
calibration and read-out alike (an unparsed verdict stays unparsed). A read-out fitted in the pass
returns its typed record (:attr:`ReadoutOutcome.record`), which the loop stores. Debiasing and
calibration are never both on (the spec's validators refuse it, for a study arm's overrides too).
What each caller reads:

- the loop keeps the main order's verdicts (:attr:`PassOutcome.result`, calibrated and read out in
  place and stored beside the parsed labels) as its metrics' labels; a debiased label is reported beside them
  (:attr:`PassOutcome.debias`), never stored: "the loop's own metrics stay the raw verdicts'";
- a study arm and a re-audit score :attr:`PassOutcome.labels`.

:func:`~allure.passes.plan_from_spec` (``_plan_spec``) turns an audit spec into a plan, so the spec's rules live once: a replay is
never calibrated (:attr:`~allure.config.EvaluatorSpec.applied_calibration`), ``auto`` is off with
debiasing or without logprobs, and off where there is no dev split to choose on (a re-audit's
frozen set); a pass swaps when :func:`swaps_positions` says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, cast

from allure.evaluator import EvalResult, EvalStats, ExamplesFor, PassOptions
from allure.labels import Label
from allure.models import ExtraOrder, Item, Verdicts
from allure.passes import _calibrate as cal
from allure.passes._polarity import PolarityVariant
from allure.passes._swap import FALLBACK_NOTE, SWAPPED, debias_verdicts, swapped_order
from allure.passes.readout import PassReadout, probable_only

if TYPE_CHECKING:
    from allure.config import Calibration, PositionDebias
    from allure.evaluator import Evaluator
    from allure.metrics import ReadoutRecord

PassStats = EvalStats
"""What a whole pass cost: every call, the swapped order's and the content-free ones included."""

RECORDED = "recorded swapped verdicts"
"""Where a replay's position figures come from."""


class Readout(Protocol):
    """A learned read-out (issue 34): the verdicts' labels, replaced last in the pipeline."""

    name: str
    """What it is called in the pass's outcome."""

    def apply(
        self, items: list[Item], verdicts: Verdicts, swapped: ExtraOrder = None, back: ExtraOrder = None
    ) -> dict[str, Label | None]:
        """Item id -> the label it reads from the item's verdict (an item left out keeps its label);
        ``swapped``: item id -> its swapped order's verdict, given when the pass ran that order;
        ``back``: item id -> its verdict under the polarity variant read back in the judge's terms,
        given when the pass asked it."""
        ...


@dataclass(frozen=True)
class ReadoutOutcome:
    """What the read-out step did."""

    name: str
    changed: int
    """Items whose label the read-out changed."""
    record: ReadoutRecord | None = None
    """A read-out fitted in the pass (:class:`~allure.passes.readout.PassReadout`): what it decided and
    fitted, as the loop stores it (:meth:`allure.store.RunStore.record_readout`); ``None`` for a
    read-out applied as it was stored (a re-audit's, an exported judge's)."""


@dataclass(frozen=True)
class DebiasSummary:
    """What position debiasing did: one label per pair from its two orders."""

    mode: PositionDebias
    """The mode asked for."""
    used: PositionDebias
    """The mode used (``logprob_mean`` without label probabilities: ``consistent``)."""
    labels: dict[str, Label | None]
    """Item id -> the debiased label (``None``: undecided)."""
    inconsistent: int
    unparsed: int
    prob_fallback: int


@dataclass(frozen=True)
class PassPlan:
    """One pass: what to label with what, and which post-processing steps run (see the module)."""

    run_id: str
    """The run (study id, re-audit id, ...) the pass's calls are linked to."""
    iteration: int
    items: list[Item]
    examples_for: ExamplesFor
    """Item -> its ICL examples; items need not be sorted (the runner orders by block)."""
    labels: tuple[Label, ...]
    """The label set (the order of label probability rows)."""
    options: PassOptions | None = None
    swap: bool = False
    """A pairwise pass that also runs the swapped order (position figures, debiasing)."""
    position_debias: PositionDebias = "none"
    calibration: Calibration = "none"
    """The mode applied (the spec's rules already applied: :func:`plan_from_spec`)."""
    target: cal.CalibrationTarget | None = None
    """Dev references to choose on and audit references to fit on (never held-out ones)."""
    prior: Mapping[str, float] | None = None
    """``prior`` and ``auto``: label string -> reference share."""
    fixed_calibration: cal.FittedCalibration | None = None
    """Values fitted before, applied as they are (no content-free call, no choice); wins over ``calibration``."""
    readout: Readout | None = None
    progress: Callable[[int, int], None] | None = None
    claim_token: str | None = None
    replay: bool = False
    """The verdicts are recorded ones: the swapped order is replayed, not asked."""
    swapped_examples_for: ExamplesFor | None = None
    """The swapped item -> its examples; ``None``: its original's (the loop retrieves for the swapped text)."""
    polarity: PolarityVariant | None = None
    """The reversed question (``[evaluator] polarity_prompt``: :func:`~allure.passes.polarity_variant`),
    asked only when there is a read-out; set by a caller whose read-out fits on it (the loop)."""


@dataclass
class PassOutcome:
    """What one pass gave and what each step changed."""

    result: EvalResult
    """The main order's verdicts (calibrated in place); its stats: the main order's and content-free calls."""
    swapped: EvalResult | None
    """The swapped order's verdicts (``swap``)."""
    raw_labels: dict[str, Label | None]
    """Item id -> the parsed label of the main order (before any step)."""
    labels: dict[str, Label | None]
    """Item id -> the final label (see the module's rule)."""
    position: dict[str, Any] | None = None
    """Position consistency figures (``swap``): ``n``, ``consistent``, ``consistency``,
    ``first_position_rate``, ``position_bias``, ``source``, ``by_problem_type``."""
    debias: DebiasSummary | None = None
    calibration: cal.CalibrationOutcome | None = None
    """Includes the fitted values (``p_cf`` per block, ``prior``, ``offset``): :meth:`CalibrationOutcome.fitted`."""
    readout: ReadoutOutcome | None = None
    reversed: EvalResult | None = None
    """The polarity variant's verdicts (ids suffixed ``#reversed``), when the pass asked it."""
    stats: PassStats = field(default_factory=PassStats)
    """Every call of the pass, the swapped order's, the reversed question's and the content-free ones included."""


def _labels_of(items: list[Item], result: EvalResult) -> dict[str, Label | None]:
    return {x.id: v.label if (v := result.verdicts.get(x.id)) else None for x in items}


def run_pass(
    ev: Evaluator,
    plan: PassPlan,
    say: Callable[[str], None] | None = None,
    *,
    main: EvalResult | None = None,
    swapped: EvalResult | None = None,
) -> PassOutcome:
    """Run ``plan``'s pass through ``ev``: evaluate -> swap -> debias -> calibrate -> read-out.

    Args:
        ev: The evaluator (every call goes through it: stored, cached, linked to ``plan.run_id``).
        plan: The pass.
        say: Where the pass's notes go (the swapped order starting, a fallback, no probabilities).
        main: The main order's verdicts when the caller labelled them already (a re-audit reads
            them for its drift probe first): the pass then post-processes these.
        swapped: The swapped order's verdicts (ids suffixed ``#swapped``) when the caller has them
            already (an export's check of its stored pass): a ``swap`` plan reads these instead of asking.
    """
    tell = say or (lambda _msg: None)
    result = main
    if result is None:
        result = ev.evaluate(
            plan.run_id,
            plan.iteration,
            plan.items,
            plan.examples_for,
            progress=plan.progress,
            claim_token=plan.claim_token or "",
            options=plan.options,
        )
    out = PassOutcome(result=result, swapped=None, raw_labels=_labels_of(plan.items, result), labels={})
    if plan.swap:
        _swap(ev, plan, out, tell, swapped)
    if plan.fixed_calibration is not None or plan.calibration != "none":
        out.calibration = _calibrate(ev, plan, result)
        if out.calibration.off:
            tell(cal.NO_PROBS)
    out.labels = dict(out.debias.labels) if out.debias is not None else _labels_of(plan.items, result)
    if plan.readout is not None:
        _read_out(ev, plan, out, tell)
    out.stats = replace(result.stats)
    for other in (out.swapped, out.reversed):
        if other is not None:
            out.stats.add(other.stats)
    return out


def _read_out(ev: Evaluator, plan: PassPlan, out: PassOutcome, tell: Callable[[str], None]) -> None:
    """The read-out step, last: the reversed question first when the plan asks it; a read-out fitted
    in the pass (:class:`~allure.passes.readout.PassReadout`) fits, decides and gives its record, one applied
    as stored only labels. Its labels replace the pass's (a verdict without label probabilities keeps
    its own: unparsed stays unparsed) and, as calibration's, are written into the main order's
    verdicts (``raw_label`` keeps the parsed one) and stored beside the parsed labels."""
    step, result = plan.readout, out.result
    assert step is not None
    extra: dict[str, Any] = _swapped_of(plan.items, out.swapped)
    if plan.polarity is not None:
        tell(f"asking the reversed question of {len(plan.items)} items (polarity variant)")
        out.reversed, extra["back"] = plan.polarity.ask(
            ev,
            plan.run_id,
            plan.iteration,
            plan.items,
            options=plan.options,
            claim_token=plan.claim_token or "",
        )
    got = step.read(plan.items, result.verdicts, **extra) if isinstance(step, PassReadout) else None
    read = probable_only(
        got.labels if got is not None else step.apply(plan.items, result.verdicts, **extra), result.verdicts
    )
    changed = {i: lab for i, lab in read.items() if i in out.labels and out.labels[i] != lab}
    out.labels.update(changed)
    relabelled: dict[str, Label | None] = {}
    for i, lab in read.items():
        if (v := result.verdicts.get(i)) is not None and v.label != lab:
            raw = v.label if v.raw_label is None else v.raw_label
            result.verdicts[i] = v.model_copy(update={"label": lab, "raw_label": raw})
            relabelled[i] = lab
    if relabelled:
        ev.store.set_verdict_labels(plan.run_id, plan.iteration, relabelled)
    record = got.record(len(relabelled)) if got is not None else None
    out.readout = ReadoutOutcome(step.name, len(changed), record)


def _swapped_of(items: list[Item], swapped: EvalResult | None) -> dict[str, Any]:
    """The read-out's ``swapped`` argument: item id -> its swapped order's verdict, when the pass ran
    that order (nothing otherwise, so a read-out of the main order alone need not take it)."""
    if swapped is None:
        return {}
    got = {x.id: v for x in items if (v := swapped.verdicts.get(x.id + SWAPPED)) is not None}
    return {"swapped": got}


def _swap(
    ev: Evaluator, plan: PassPlan, out: PassOutcome, tell: Callable[[str], None], given: EvalResult | None
) -> None:
    """The swapped order: its verdicts (``given``: the caller's), the position figures and
    (``position_debias``) one label per pair."""
    from allure.metrics import position_by_group, position_consistency

    items, labels = plan.items, plan.labels
    first, second = labels[0], labels[1]
    swapped = swapped_order(items, labels)
    original = {sw.id: x for sw, x in zip(swapped, items, strict=True)}
    examples = plan.swapped_examples_for or (lambda sw: plan.examples_for(original[sw.id]))
    if given is None:
        tell(
            f"replaying the verdicts recorded with the two responses swapped ({len(swapped)} items)"
            if plan.replay
            else f"evaluating {len(swapped)} items with the two responses swapped"
        )
    again = (
        given
        if given is not None
        else ev.evaluate(
            plan.run_id,
            plan.iteration,
            swapped,
            examples,
            progress=plan.progress,
            claim_token=plan.claim_token or "",
            options=plan.options,
        )
    )
    out.swapped = again
    orig = [out.raw_labels[x.id] for x in items]
    swap = [v.label if (v := again.verdicts.get(x.id)) else None for x in swapped]
    position = position_consistency(orig, swap, first=first, second=second)
    position["source"] = RECORDED if plan.replay else "live"
    groups = [x.problem_type for x in items]
    position["by_problem_type"] = (
        position_by_group(orig, swap, groups, first=first, second=second) if len(set(groups)) > 1 else None
    )
    out.position = position
    if plan.position_debias == "none":
        return
    d, used = debias_verdicts(
        [out.result.verdicts.get(x.id) for x in items],
        [again.verdicts.get(sw.id) for sw in swapped],
        labels=labels,
        mode=plan.position_debias,
    )
    if used != plan.position_debias:
        tell(FALLBACK_NOTE)
    out.debias = DebiasSummary(
        mode=plan.position_debias,
        used=used,
        labels={x.id: cast("Label | None", lab) for x, lab in zip(items, d.labels, strict=True)},
        inconsistent=d.status.count("inconsistent"),
        unparsed=d.status.count("unparsed"),
        prob_fallback=d.prob_fallback,
    )


def _calibrate(ev: Evaluator, plan: PassPlan, result: EvalResult) -> cal.CalibrationOutcome:
    if plan.fixed_calibration is not None:
        return cal.apply_fitted(
            ev, plan.run_id, plan.iteration, plan.items, result, plan.fixed_calibration, labels=plan.labels
        )
    return cal.calibrate_pass(
        ev,
        plan.run_id,
        plan.iteration,
        plan.items,
        result,
        plan.examples_for,
        mode=plan.calibration,
        labels=plan.labels,
        prior=plan.prior,
        options=plan.options,
        target=plan.target,
    )
