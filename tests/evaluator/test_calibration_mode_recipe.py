"""The recipe *Add a calibration mode* (docs/ARCHITECTURE.md) in the files it names: a mode defined and
registered in this test alone (``threshold``: the positive label where its probability is over a
threshold it fits, a fixed 0.75 here) is a value the spec accepts, a candidate ``auto`` tests and
adopts, and values a pass stores and an exported judge carries and applies again, with nothing else
in allure told about it. The judge is :mod:`tests.evaluator.test_pipeline`'s leaning one (P(1) 0.9
for the items it grades 1, 0.6 for the others): a threshold of 0.75 gives its grades back."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from allure import calibrations
from allure.config import EvaluatorSpec
from allure.errors import SpecError
from allure.evaluator import Evaluator, Reply
from allure.judge._fixed import FittedValues, fixed_calibration
from allure.judge._toml import dumps_toml, read_toml
from allure.labels import Label
from allure.metrics import CalibrationValues
from allure.passes import CalibrationInput, CalibrationTarget, Calibrator, register_calibration, run_pass
from allure.store import RunStore
from tests.evaluator.options import grader_options
from tests.evaluator.test_pipeline import GRADES, LeaningJudge, _evaluator, _items, _plan


class Threshold(Calibrator):
    """The toy mode: the positive label where P(positive) is over the fitted ``threshold``."""

    keys = ("threshold",)
    formula = "label = positive_label when P(positive) > threshold, else the other label."

    def fit(self, data: CalibrationInput) -> dict[str, Any] | None:
        return {"threshold": 0.75}

    def labels(self, values: Mapping[str, Any], data: CalibrationInput) -> dict[str, Label | None]:
        t = values.get("threshold")
        if t is None or data.positive is None:
            return {}
        pos = list(data.labels).index(data.positive)
        other = data.labels[1 - pos]
        return {i: data.positive if row[pos] / sum(row) > t else other for i, (_, row) in data.rows.items()}


@pytest.fixture
def threshold() -> Iterator[type[Threshold]]:
    """``threshold`` registered for one test (``auto`` tries every registered mode: it must not
    outlive the test)."""
    registered = register_calibration("threshold")(Threshold)
    try:
        yield registered
    finally:
        calibrations._REGISTERED.pop("threshold", None)


class NoContentFreeLogprobs(LeaningJudge):
    """The leaning judge, with no logprobs for a content-free input: no ``p_cf``, so ``contextual``
    and ``prior`` have nothing to label with."""

    async def complete(self, messages: Sequence[Any], **settings: Any) -> Reply:
        reply = await super().complete(messages, **settings)
        return (
            reply
            if "Answer: room" in str(messages[-1].content)
            else Reply(text=reply.text, logprobs=None, usage=reply.usage)
        )


def test_a_spec_takes_a_registered_modes_name_by_the_rules_of_the_others(threshold: type[Threshold]) -> None:
    assert calibrations.calibration_names() == ["none", "contextual", "prior", "offset", "threshold", "auto"]
    ev = EvaluatorSpec(kind="openai", base_url="http://127.0.0.1:1/v1", calibration="threshold")
    assert (ev.calibration, ev.applied_calibration) == ("threshold", "threshold")
    with pytest.raises(SpecError, match="'offset', 'threshold' or 'auto'"):
        ev.overridden("arm x", calibration="thresold")
    with pytest.raises(SpecError, match="calibration = 'threshold' needs label probabilities"):
        ev.overridden("arm y", logprobs=False)


def test_unregistered_the_name_is_refused_as_before() -> None:
    assert "threshold" not in calibrations.calibration_names()
    with pytest.raises(SpecError, match="Input should be 'none', 'contextual', 'prior', 'offset' or 'auto'"):
        EvaluatorSpec().overridden("arm x", calibration="threshold")


def test_auto_tests_a_registered_mode_with_the_others(tmp_path: Path, threshold: type[Threshold]) -> None:
    ev, _ = _evaluator(tmp_path)
    target = CalibrationTarget(dev=dict(GRADES), positive=1, alpha=0.25, min_per_label=2)
    out = run_pass(ev, _plan(_items(), calibration="auto", target=target, prior={"0": 0.5, "1": 0.5}))
    cal = out.calibration
    assert cal is not None and cal.choice is not None
    # each gives the grades back on dev; a tie goes to the earlier mode (the built-ins come first)
    assert sorted(cal.choice["p_holm"]) == ["contextual", "prior", "threshold"]
    assert cal.choice["scores"]["threshold"] == cal.choice["scores"]["contextual"] == 1.0
    assert cal.chosen == "contextual" and "over 3 modes" in cal.choice["line"]


def test_auto_adopts_a_registered_mode_and_a_judge_applies_its_stored_values(
    tmp_path: Path, threshold: type[Threshold]
) -> None:
    ev = Evaluator(
        grader_options(logprobs=True), store=RunStore(tmp_path / "a.db"), backend=NoContentFreeLogprobs()
    )
    target = CalibrationTarget(dev=dict(GRADES), positive=1, alpha=0.25, min_per_label=2)
    out = run_pass(ev, _plan(_items(), calibration="auto", target=target, prior={"0": 0.5, "1": 0.5}))
    cal = out.calibration
    assert cal is not None and cal.choice is not None and cal.p_cf == {}
    assert sorted(cal.choice["p_holm"]) == ["threshold"]
    assert cal.chosen == "threshold" and out.labels == GRADES and out.raw_labels == {i: 1 for i in GRADES}
    assert cal.as_dict()["values"] == {"threshold": 0.75}  # the report entry says what it fitted
    # what the pass stores (run info ``calibration_<it>``): the built-in keys as ever, its value beside them
    stored = json.loads(json.dumps(cal.fitted().model_dump(mode="json")))
    assert stored == {"mode": "threshold", "p_cf": {}, "prior": None, "offset": None, "threshold": 0.75}
    # what a bundle carries (judge.toml's [calibration]) and applies again: no choice, no reference
    bundle = FittedValues(mode="threshold", values=CalibrationValues.model_validate(stored).model_extra or {})
    table = read_toml(dumps_toml({"calibration": {"configured": "auto", **bundle.as_toml()}}))["calibration"]
    carried = FittedValues.from_toml(table)
    assert carried.values == {"threshold": 0.75} and not carried.needs_p_cf
    again = Evaluator(
        grader_options(logprobs=True), store=RunStore(tmp_path / "new.db"), backend=LeaningJudge()
    )
    fixed = fixed_calibration(carried, [0, 1], {})
    applied = run_pass(again, _plan(_items(), fixed_calibration=fixed))
    assert applied.labels == GRADES and applied.calibration is not None and applied.calibration.cf_calls == 0
