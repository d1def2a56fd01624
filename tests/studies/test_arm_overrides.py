"""A study arm's ``calibration`` and ``position_debias`` go through the spec's own validators
(:meth:`allure.config.EvaluatorSpec.overridden`): an arm cannot set what the spec refuses."""

from __future__ import annotations

from typing import Any

import pytest

from allure.config import AuditSpec, EvaluatorSpec
from allure.dataset import demo_spec
from allure.errors import SpecError
from allure.studies import ArmSpec
from allure.studies._arm import arm_spec


def _spec(**evaluator: Any) -> AuditSpec:
    return AuditSpec(dataset=demo_spec(), evaluator=EvaluatorSpec(**evaluator))


def test_a_study_arms_overrides_go_through_the_specs_validators() -> None:
    spec = _spec(position_debias="consistent")
    with pytest.raises(SpecError, match="cannot both be set") as err:
        arm_spec(spec, ArmSpec(name="cal", example_ids=[], calibration="contextual"))
    assert "study arm 'cal': evaluator.calibration" in str(err.value)
    with pytest.raises(SpecError, match="needs label probabilities"):
        arm_spec(_spec(logprobs=False), ArmSpec(name="lp", example_ids=[], position_debias="logprob_mean"))
    changed = arm_spec(spec, ArmSpec(name="off", example_ids=[], position_debias="none", calibration="prior"))
    assert (changed.evaluator.position_debias, changed.evaluator.calibration) == ("none", "prior")
    assert arm_spec(spec, ArmSpec(name="same", example_ids=[])) is spec


def test_a_study_arm_sets_its_own_read_out_and_an_unknown_one_is_refused() -> None:
    spec = _spec(readout="logistic")
    assert arm_spec(spec, ArmSpec(name="off", example_ids=[], readout="none")).evaluator.readout == "none"
    assert arm_spec(spec, ArmSpec(name="same", example_ids=[])).evaluator.readout == "logistic"
    with pytest.raises(ValueError, match="readout"):
        ArmSpec.model_validate({"name": "bad", "example_ids": [], "readout": "svm"})
