"""Contextual calibration (Zhao et al. 2021) on hand values."""

from __future__ import annotations

import numpy as np
import pytest

from allure.metrics import MetricsError, apply_offset, binary_rows, calibrate, content_free_mean, fit_offset


def test_plain_calibration_makes_the_content_free_input_uniform() -> None:
    p_cf = content_free_mean([[0.2, 0.8], [0.4, 0.6], [0.3, 0.7]])
    assert p_cf == pytest.approx([0.3, 0.7])
    q = calibrate([p_cf], p_cf)
    assert q[0] == pytest.approx([0.5, 0.5])


def test_plain_calibration_by_hand() -> None:
    # p = [0.4, 0.6], p_cf = [0.3, 0.7]: q ~ [0.4/0.3, 0.6/0.7] = [1.3333, 0.8571] -> [0.6087, 0.3913]
    q = calibrate([[0.4, 0.6]], [0.3, 0.7])
    assert q[0] == pytest.approx([0.608696, 0.391304], abs=1e-6)
    assert int(np.argmax(q[0])) == 0  # the raw argmax (1) flips


def test_prior_corrected_calibration_by_hand() -> None:
    # q ~ p * pi / p_cf = [0.4*0.8/0.3, 0.6*0.2/0.7] = [1.06667, 0.171429] -> [0.861538, 0.138462]
    q = calibrate([[0.4, 0.6]], [0.3, 0.7], prior=[0.8, 0.2])
    assert q[0] == pytest.approx([0.861538, 0.138462], abs=1e-6)


def test_three_labels_and_rows_sum_to_one() -> None:
    q = calibrate([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]], [0.5, 0.25, 0.25])
    assert q.sum(axis=1) == pytest.approx([1.0, 1.0])
    # row 1: [0.2/0.5, 0.3/0.25, 0.5/0.25] = [0.4, 1.2, 2.0] / 3.6
    assert q[0] == pytest.approx([0.4 / 3.6, 1.2 / 3.6, 2.0 / 3.6])


def test_a_label_missing_from_the_top_logprobs_does_not_divide_by_zero() -> None:
    q = calibrate([[0.0, 1.0]], [1.0, 0.0])
    assert np.isfinite(q).all()


def test_offset_matches_the_reference_share() -> None:
    p = [0.95, 0.9, 0.85, 0.8, 0.7, 0.6, 0.55, 0.3, 0.2, 0.1]  # 7 of 10 above 0.5
    b = fit_offset(p, 0.2)
    said = apply_offset(p, b) > 0.5
    assert said.sum() == 2 and said[:2].all()
    assert (apply_offset(p, fit_offset(p, 0.0)) > 0.5).sum() == 0
    assert (apply_offset(p, fit_offset(p, 1.0)) > 0.5).sum() == 10


def test_binary_rows_and_bad_input() -> None:
    assert binary_rows([0.25]).tolist() == [[0.75, 0.25]]
    with pytest.raises(MetricsError):
        calibrate([[0.5, 0.5]], [0.2, 0.3, 0.5])
    with pytest.raises(MetricsError):
        fit_offset([0.5], 1.5)
