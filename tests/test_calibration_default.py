"""The loop's default calibration is ``auto`` (the evidence: ``benchmarks/results/icl_strategies.md``),
and it is off exactly where it cannot work; fixed modes keep their strict checks."""

from __future__ import annotations

import pytest

from allure.config import EvaluatorSpec
from allure.errors import SpecError


def test_a_spec_without_calibration_gets_auto() -> None:
    ev = EvaluatorSpec.model_validate({"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:1/v1"})
    assert ev.calibration == "auto" and ev.applied_calibration == "auto"


@pytest.mark.parametrize(
    ("fields", "applied"),
    [
        ({"kind": "replay"}, "none"),
        ({"kind": "openai", "logprobs": False}, "none"),
        ({"kind": "openai", "position_debias": "consistent"}, "none"),
        ({"kind": "openai", "calibration": "prior"}, "prior"),
        ({"kind": "replay", "calibration": "contextual"}, "none"),
    ],
)
def test_auto_is_off_where_it_cannot_work_and_fixed_modes_stand(
    fields: dict[str, object], applied: str
) -> None:
    extra = {"model": "m", "base_url": "http://127.0.0.1:1/v1"} if fields["kind"] == "openai" else {}
    ev = EvaluatorSpec.model_validate({**extra, **fields})
    assert ev.applied_calibration == applied


@pytest.mark.parametrize(
    "fields",
    [
        {"calibration": "contextual", "logprobs": False},
        {"calibration": "offset", "position_debias": "consistent"},
    ],
)
def test_a_fixed_mode_that_cannot_work_is_still_refused(fields: dict[str, object]) -> None:
    with pytest.raises((SpecError, ValueError)):
        EvaluatorSpec.model_validate(
            {"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:1/v1", **fields}
        )
