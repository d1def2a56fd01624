"""The held-out claim by the objective: the HaluEval case that once printed "+0.28 helped".

METHODS.md section 12: 100 held-out items, 16 "yes". Zero-shot confusion [[34, 50], [3, 13]] (rows:
reference no / yes); with the examples [[73, 11], [14, 2]]. Accuracy rises 0.47 -> 0.75 while
balanced accuracy falls 0.609 -> 0.497: the claim must not say the examples helped.
"""

from __future__ import annotations

from allure.metrics import icl_effect
from allure.report import helped_sentence
from allure.report._markdown import render_markdown
from tests.report.test_report_files import build_report


def _halueval() -> tuple[list[str], list[str], list[str]]:
    ref = ["no"] * 84 + ["yes"] * 16
    # zero-shot: 34 of the 84 "no" right, 13 of the 16 "yes" right
    first = ["no"] * 34 + ["yes"] * 50 + ["yes"] * 13 + ["no"] * 3
    # with the examples: 73 of 84 "no" right (the 34 stay right), 2 of 16 "yes" right
    last = ["no"] * 73 + ["yes"] * 11 + ["yes"] * 2 + ["no"] * 14
    return ref, first, last


def _report(active: int) -> object:
    ref, first, last = _halueval()
    effect = icl_effect(ref, first, last, labels=["yes", "no"], pos_label="yes", n_resamples=500)
    data = build_report(2)
    update = {"objective": "balanced_accuracy", "zero_shot_iteration": 0}
    if active == 1:
        update |= {"active_iteration": 1, "effect": effect}
    else:
        update |= {"active_iteration": 0, "refused_effect": effect}
    return data.model_copy(update=update)


def test_accuracy_gain_from_a_prior_shift_is_never_called_help() -> None:
    ref, first, last = _halueval()
    e = icl_effect(ref, first, last, labels=["yes", "no"], pos_label="yes", n_resamples=500)
    assert round(e.accuracy.delta or 0, 2) == 0.28
    assert e.objective.value_a is not None and round(e.objective.value_a, 3) == 0.609
    assert e.objective.value_b is not None and round(e.objective.value_b, 3) == 0.497
    assert e.objective.helped != "yes"
    sentence = helped_sentence(_report(1))  # type: ignore[arg-type]
    assert sentence is not None
    assert "ICL examples did not help" in sentence and "scored worse" in sentence
    assert "balanced accuracy 0.609 -> 0.497" in sentence
    assert "shifted the label prior" in sentence


def test_a_refused_version_is_reported_for_the_record_and_zero_shot_kept(tmp_path: object) -> None:
    data = _report(0)
    sentence = helped_sentence(data)  # type: ignore[arg-type]
    assert sentence is not None and sentence.startswith("The loop kept the zero-shot judge")
    assert "refused memory version" in sentence and "shifted the label prior" in sentence
    md = render_markdown(data)  # type: ignore[arg-type]
    assert "## Label shares on the held-out split" in md
    assert "Always answering the majority label `no` scores accuracy 0.840" in md


def test_the_primary_comparison_is_stated_against_the_parsed_zero_shot_labels() -> None:
    """The loop kept the zero-shot prompt but its read-out changed the labels: the summary still says
    the ICL examples did not help, and the pre-registered primary comparison (the active judge against
    the zero-shot judge's parsed labels) gives the read-out's held-out effect, significant or not."""
    ref = ["no"] * 84 + ["yes"] * 16
    parsed = ["yes"] * 84 + ["yes"] * 16  # the yes-biased judge as parsed: chance
    read = ["no"] * 70 + ["yes"] * 14 + ["yes"] * 13 + ["no"] * 3  # the read-out undoes the bias
    primary = icl_effect(ref, parsed, read, labels=["yes", "no"], pos_label="yes", n_resamples=500)
    data = build_report(3).model_copy(  # pass 2 tried a memory version, which the guard refused
        update={
            "objective": "balanced_accuracy",
            "zero_shot_iteration": 1,
            "active_iteration": 1,
            "primary": primary,
        }
    )
    sentence = helped_sentence(data)  # type: ignore[arg-type]
    assert sentence is not None and sentence.startswith("The loop kept the zero-shot judge")
    assert (
        "Primary comparison (pre-registered): the loop's judge (pass 1) against the zero-shot judge's parsed"
        in sentence
    )
    assert "balanced accuracy 0.500 -> 0.823" in sentence and sentence.endswith("; significantly better.")
    same = data.model_copy(
        update={
            "primary": icl_effect(ref, parsed, parsed, labels=["yes", "no"], pos_label="yes", n_resamples=500)
        }
    )
    assert "not significant at alpha 0.05 (n = 100)" in (helped_sentence(same) or "")  # type: ignore[arg-type]


def test_a_one_pass_run_never_says_the_examples_did_not_help() -> None:
    """Issue 41 item 2: a run that evaluated the zero-shot judge only (one pass, e.g. a full replay)
    tried no memory version, so the summary says so; it never says the ICL examples did not help.
    The same run with a second pass that had examples in memory does say that no version beat it."""
    one = build_report(1).model_copy(
        update={"objective": "balanced_accuracy", "zero_shot_iteration": 0, "active_iteration": 0}
    )
    sentence = helped_sentence(one) or ""  # type: ignore[arg-type]
    assert sentence.startswith("The run tried no memory version: it evaluated the zero-shot judge only")
    assert "did not help" not in sentence and "beat it" not in sentence
    assert "did not help" not in render_markdown(one)  # type: ignore[arg-type]
    two = build_report(2).model_copy(
        update={"objective": "balanced_accuracy", "zero_shot_iteration": 0, "active_iteration": 0}
    )
    assert "no memory version beat it" in (helped_sentence(two) or "")  # type: ignore[arg-type]


def test_an_interval_off_zero_beside_a_test_that_does_not_reject_is_explained_per_label() -> None:
    """Seen in the pairwise bench: the examples turn most items of one label right and most of the
    other wrong; the label-stratified interval lies above 0 while the exact test does not reject. The
    summary says unclear and why, with the changes per reference label."""
    ref = ["no"] * 100 + ["yes"] * 100
    first = ["yes"] * 200
    last = ["no"] * 95 + ["yes"] * 5 + ["no"] * 85 + ["yes"] * 15
    effect = icl_effect(ref, first, last, labels=["yes", "no"], pos_label="yes", n_resamples=2000)
    data = build_report(2).model_copy(
        update={
            "objective": "balanced_accuracy",
            "zero_shot_iteration": 0,
            "active_iteration": 1,
            "effect": effect,
        }
    )
    sentence = helped_sentence(data) or ""  # type: ignore[arg-type]
    assert (
        "Unclear whether ICL examples helped on the held-out split (not significant at n = 200)" in sentence
    )
    assert "the interval excludes 0 but the exact test does not reject" in sentence
    assert (
        "reference 'yes': right on 0, wrong on 85 of 100; reference 'no': right on 95, wrong on 0 of 100"
        in sentence
    )
