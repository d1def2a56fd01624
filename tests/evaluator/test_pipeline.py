"""The pass pipeline (:func:`allure.passes.run_pass`) with a toy backend whose label probabilities
lean to ``1``: it answers ``score: 1`` to every item, P(1) = 0.9 for the responses it grades 1 and
0.6 for those it grades 0, and 0.8 for a content-free input. Contextual calibration (``p / p_cf``)
gives its grades back; so do the fitted values applied as they are (an exported judge), with no
content-free call; a read-out is applied last; the spec's rules live in :func:`plan_from_spec`."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from allure.config import AuditSpec, EvaluatorSpec, LoopSpec, decision_family
from allure.dataset import demo_spec
from allure.evaluator import ChatBackend, Evaluator, Reply, Usage
from allure.labels import Label
from allure.models import Item, Verdict
from allure.passes import CalibrationTarget, FittedCalibration, PassPlan, plan_from_spec, run_pass
from allure.store import RunStore
from tests.evaluator.options import grader_options


class LeaningJudge(ChatBackend):
    """``score: 1`` always; P(1) 0.9 (right room), 0.6 (wrong room), 0.8 (no room: content-free)."""

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, messages: Sequence[Any], **settings: Any) -> Reply:
        self.calls += 1
        text = str(messages[-1].content)
        p1 = 0.9 if "Answer: room 1" in text else 0.6 if "Answer: room" in text else 0.8
        top = [{"token": " 1", "logprob": math.log(p1)}, {"token": " 0", "logprob": math.log(1 - p1)}]
        lp = {
            "content": [
                {"token": "score:", "logprob": 0.0},
                {"token": " 1", "logprob": math.log(p1), "top_logprobs": top},
            ]
        }
        return Reply(text="score: 1", logprobs=lp, usage=Usage(prompt_tokens=10, completion_tokens=2))

    async def aclose(self) -> None:
        return None


GRADES = {"i0": 0, "i1": 1, "i2": 0, "i3": 0, "i4": 1, "i5": 0}
"""Item id -> the judge's own grade (``room 1`` is right)."""


def _items() -> list[Item]:
    return [
        Item(
            id=i,
            task="which room?",
            response=f"Answer: room {1 if g else 2}, item {k}",
            gold_answers=["room 1"],
        )
        for k, (i, g) in enumerate(GRADES.items())
    ]


def _evaluator(tmp: Path, name: str = "a.db") -> tuple[Evaluator, LeaningJudge]:
    judge = LeaningJudge()
    ev = Evaluator(grader_options(logprobs=True), store=RunStore(tmp / name), backend=judge)
    return ev, judge


def _plan(items: list[Item], **kw: Any) -> PassPlan:
    return PassPlan(run_id="r", iteration=1, items=items, examples_for=lambda item: [], labels=(0, 1), **kw)


def test_calibration_gives_the_grades_back_and_exposes_what_it_fitted(tmp_path: Path) -> None:
    ev, judge = _evaluator(tmp_path)
    items = _items()
    out = run_pass(ev, _plan(items, calibration="contextual"))
    assert out.raw_labels == {i: 1 for i in GRADES}  # parsed: the lean
    assert out.labels == GRADES
    assert out.calibration is not None and out.calibration.cf_calls == 3 and judge.calls == len(items) + 3
    assert out.stats.calls == len(items) + 3  # the content-free calls are the pass's cost too
    fitted = out.calibration.fitted()
    assert fitted.mode == "contextual" and list(fitted.p_cf) == ["zero-shot"]
    assert fitted.p_cf["zero-shot"] == pytest.approx([0.2, 0.8])


def test_fixed_calibration_applies_fitted_values_with_no_content_free_call(tmp_path: Path) -> None:
    first, _ = _evaluator(tmp_path)
    fitted = run_pass(first, _plan(_items(), calibration="contextual")).calibration
    assert fitted is not None
    ev, judge = _evaluator(tmp_path, "new.db")  # new data: nothing stored, no dev split
    out = run_pass(ev, _plan(_items(), fixed_calibration=fitted.fitted()))
    assert out.labels == GRADES and judge.calls == len(GRADES)
    assert out.calibration is not None and out.calibration.cf_calls == 0
    assert out.calibration.changed == sum(g == 0 for g in GRADES.values())
    # a block the fitted values do not know keeps its parsed labels
    other = FittedCalibration(mode="contextual", p_cf={"another-block": (0.2, 0.8)})
    kept = run_pass(ev, _plan(_items(), fixed_calibration=other))
    assert kept.labels == kept.raw_labels == {i: 1 for i in GRADES}


def test_offset_exposes_its_fitted_offset_and_applies_again(tmp_path: Path) -> None:
    ev, _ = _evaluator(tmp_path)
    target = CalibrationTarget(fit={"i0": 0, "i1": 1, "i2": 0}, positive=1)
    out = run_pass(ev, _plan(_items(), calibration="offset", target=target))
    assert out.labels == GRADES
    assert out.calibration is not None and out.calibration.offset is not None
    b = out.calibration.offset
    assert math.log(0.6 / 0.4) + b < 0 < math.log(0.9 / 0.1) + b  # between the two graded logits
    fitted = out.calibration.fitted()
    assert (fitted.mode, fitted.offset) == ("offset", b)
    again, judge = _evaluator(tmp_path, "new.db")
    assert run_pass(again, _plan(_items(), fixed_calibration=fitted)).labels == GRADES
    assert judge.calls == len(GRADES)
    assert run_pass(
        again, _plan(_items(), fixed_calibration=FittedCalibration("offset", offset=-9.0))
    ).labels == {i: 0 for i in GRADES}


class AllZero:
    """A toy read-out: every verdict read as ``0``, and what it was shown."""

    name = "all-zero"

    def __init__(self) -> None:
        self.seen: dict[str, Label | None] = {}

    def apply(self, items: list[Item], verdicts: Mapping[str, Verdict]) -> dict[str, Label | None]:
        self.seen = {x.id: verdicts[x.id].label for x in items}
        return {x.id: 0 for x in items}


def test_the_readout_is_applied_last(tmp_path: Path) -> None:
    ev, _ = _evaluator(tmp_path)
    readout = AllZero()
    out = run_pass(ev, _plan(_items(), calibration="contextual", readout=readout))
    assert readout.seen == GRADES  # it read the calibrated verdicts
    assert out.labels == {i: 0 for i in GRADES}
    assert out.readout is not None and out.readout.changed == sum(GRADES.values())
    assert out.raw_labels == {i: 1 for i in GRADES}


class MuteOnFive(LeaningJudge):
    """As :class:`LeaningJudge`, but item ``i5``'s answer parses to no label and carries no logprobs."""

    async def complete(self, messages: Sequence[Any], **settings: Any) -> Reply:
        if "item 5" not in str(messages[-1].content):
            return await super().complete(messages, **settings)
        self.calls += 1
        return Reply(text="I cannot tell", logprobs=None, usage=Usage(prompt_tokens=10, completion_tokens=3))


def test_no_readout_labels_a_verdict_without_label_probabilities(tmp_path: Path) -> None:
    ev = Evaluator(grader_options(logprobs=True), store=RunStore(tmp_path / "a.db"), backend=MuteOnFive())
    out = run_pass(ev, _plan(_items(), readout=AllZero()))
    assert out.raw_labels["i5"] is None and out.result.verdicts["i5"].status == "unparsed"
    assert out.labels["i5"] is None  # unparsed stays unparsed, though the read-out answered 0 for it
    assert {i: lab for i, lab in out.labels.items() if i != "i5"} == {i: 0 for i in GRADES if i != "i5"}
    assert out.readout is not None and out.readout.changed == len(GRADES) - 1


def test_a_replay_never_reads_out_as_it_never_calibrates() -> None:
    for readout in ("auto", "logistic", "knn"):
        replay = _spec(kind="replay", readout=readout).evaluator
        assert (replay.applied_readout, replay.applied_calibration) == ("none", "none")
        assert _spec(readout=readout).evaluator.applied_readout == readout  # a live judge keeps it
    assert _spec(readout="auto", logprobs=False).evaluator.applied_readout == "none"


def _spec(**evaluator: Any) -> AuditSpec:
    return AuditSpec(dataset=demo_spec(), evaluator=EvaluatorSpec(**evaluator))


def _from_spec(spec: AuditSpec, items: list[Item] | None = None, **kw: Any) -> PassPlan:
    """The plan of pass 1 of run ``r`` over ``items`` (:func:`_items` unless given), no examples."""
    items = _items() if items is None else items
    return plan_from_spec(spec, run_id="r", iteration=1, items=items, examples_for=lambda item: [], **kw)


def test_the_specs_rules_live_in_plan_from_spec() -> None:
    refs: dict[str, Label | None] = {"i0": 0, "i1": 1, "i2": 0, "i3": None}
    splits = {"i0": "audit", "i1": "audit", "i2": "heldout", "i3": "audit"}
    auto = _from_spec(_spec(), pairwise=False, references=refs, splits=splits, dev={"i1"})
    # the shares of the audit split outside dev (i1, dev, is where auto scores prior)
    assert auto.calibration == "auto" and auto.prior == {"0": 1.0}
    assert (
        auto.target is not None and dict(auto.target.dev) == {"i1": 1} and dict(auto.target.fit) == {"i0": 0}
    )
    # no dev split (a re-audit's frozen set): auto has nothing to choose on
    assert _from_spec(_spec(), pairwise=False, references=refs).calibration == "none"
    assert _from_spec(_spec(kind="replay"), pairwise=False, dev=set()).calibration == "none"
    assert _from_spec(_spec(logprobs=False), pairwise=False, dev=set()).calibration == "none"
    # a pairwise pass swaps to debias, and to report position figures only when asked
    pairs = [x.model_copy(update={"response_b": "Answer: room 9"}) for x in _items()]
    debias = _spec(position_debias="consistent")
    plan = _from_spec(debias, pairs, pairwise=True)
    assert (plan.swap, plan.position_debias, plan.calibration) == (True, "consistent", "none")
    plain = _from_spec(_spec(), pairs, pairwise=True)
    assert not plain.swap
    loop = _from_spec(_spec(), pairs, pairwise=True, positions=True)
    assert loop.swap and loop.position_debias == "none"


def test_prior_shares_leave_the_dev_split_out_and_auto_tests_at_the_specs_guard_level() -> None:
    """Issue 34 review: with a dev split (``[loop] folds = 0``) ``prior``'s ``pi`` came from every audit
    item, dev included, and ``auto`` then scored ``prior`` on dev: dev's labels leaked into the mode
    chosen on them. Here dev holds only ``1``: left out, ``pi`` is the other audit items' 3:1."""
    refs: dict[str, Label | None] = {f"a{k}": 0 if k < 3 else 1 for k in range(4)}
    refs |= {f"d{k}": 1 for k in range(4)} | {"h0": 0}
    splits = {i: "heldout" if i == "h0" else "audit" for i in refs}
    dev = {f"d{k}" for k in range(4)}
    spec = _spec().model_copy(
        update={"loop": LoopSpec(folds=0, dev_fraction=0.5, guard_alpha=0.01, guard_min_per_label=3)}
    )
    plan = _from_spec(spec, pairwise=False, references=refs, splits=splits, dev=dev)
    assert plan.prior == {"0": 0.75, "1": 0.25}  # with dev: {"0": 0.375, "1": 0.625}
    # auto tests at calibration's share of the run's decision family (docs/DECISIONS.md), never above the spec's level
    level = decision_family(spec).level("calibration")
    assert 0 < level < 0.01
    assert plan.target is not None and (plan.target.alpha, plan.target.min_per_label) == (level, 3)
    # no dev split (cross-fitted, or a re-audit's frozen set): every audit item's shares
    assert _from_spec(spec, pairwise=False, references=refs, splits=splits, dev=set()).prior == {
        "0": 0.375,
        "1": 0.625,
    }


@pytest.mark.parametrize("folds", [{}, {"i0": 0, "i1": 0, "i2": 0, "i3": 1, "i4": 1, "i5": 1}])
def test_auto_tests_every_mode_at_the_targets_guard_level_on_dev_and_out_of_fold(
    tmp_path: Path, folds: dict[str, int]
) -> None:
    """``auto`` on the dev split (``folds = 0``) and cross-fitted: every mode that gives the judge's
    grades back rises from 0.5 to 1.0 on 4 changed items (one-sided p = 1/15), Holm-adjusted over the
    modes tested; the target's ``[loop] guard_alpha`` and ``guard_min_per_label`` decide (the
    defaults, 0.05 and 10, keep the parsed labels: 2 items of ``1``)."""
    grades: dict[str, Label] = dict(GRADES)
    # with a dev split, offset fits on the audit items outside it: none here
    shape = {"dev": {} if folds else grades, "fit": grades if folds else {}, "positive": 1, "folds": folds}
    ev, _ = _evaluator(tmp_path)
    loose = CalibrationTarget(**shape, alpha=0.25, min_per_label=2)  # type: ignore[arg-type]
    out = run_pass(ev, _plan(_items(), calibration="auto", target=loose, prior={"0": 0.5, "1": 0.5}))
    cal = out.calibration
    assert cal is not None and cal.choice is not None and cal.chosen == "contextual"
    assert out.labels == GRADES
    tested = sorted(cal.choice["p_holm"])
    assert tested == (["contextual", "offset", "prior"] if folds else ["contextual", "prior"])
    # the test of better (metrics.better_p) is the larger of the sign-flip p (1/16: 4 changed items) and
    # the exact label-permutation p (1 / C(6, 2): the 2 items of 1 among 6 are the only arrangement as good)
    one_sided = max(1 / 16, 1 / math.comb(6, 2))
    assert cal.choice["p_holm"]["contextual"] == pytest.approx(len(tested) * one_sided)
    assert "adopted contextual" in cal.choice["line"] and f"over {len(tested)} modes" in cal.choice["line"]
    strict, _ = _evaluator(tmp_path, "strict.db")
    kept = run_pass(
        strict,
        _plan(_items(), calibration="auto", target=CalibrationTarget(**shape), prior={"0": 0.5, "1": 0.5}),  # type: ignore[arg-type]
    )
    assert kept.calibration is not None and kept.calibration.chosen == "none"
    assert kept.labels == {i: 1 for i in GRADES}
    assert (
        "holds 2 '1' items, under [loop] guard_min_per_label = 10" in (kept.calibration.choice or {})["line"]
    )
