"""Label vocabularies: integer and string label sets, synonyms, the default pattern, the load-time check."""

from __future__ import annotations

from pathlib import Path

import pytest

from allure.config import AuditSpec, label_pattern_for, load_spec, parse_spec
from allure.errors import SpecError
from allure.labels import LabelParser, LabelVocabulary, decode_label, default_label_pattern, encode_label
from allure.models import Item, Verdict
from allure.prompts import load_prompt_set
from allure.store import RunStore
from tests.cli_run import allure

AB = {"A": ["Output (a)", "Response A", "first"], "B": ["Output (b)", "Response B", "second"]}


def _spec(**kw: object) -> AuditSpec:
    return parse_spec({"dataset": {"path": "x.jsonl"}, **kw})


def test_string_label_set_with_synonyms_parses_every_form() -> None:
    spec = _spec(label_set=["A", "B"], label_synonyms=AB, evaluator={"prompt": "pairwise"})
    pattern = label_pattern_for(spec, load_prompt_set("pairwise").assistant)
    parser = LabelParser(pattern, spec.vocabulary())
    forms = {
        "A": [
            "preference: A",
            "Preference: a",
            "preference: **A**",
            'preference: "A".',
            "preference: Output (a)",
        ],
        "B": ["preference: B", "PREFERENCE:B", "preference: Response B", "preference: second"],
    }
    for label, texts in forms.items():
        for text in texts:
            assert parser.parse(text) == label, text
    # a bare answer that is, as a whole, a label or a synonym
    assert parser.parse("Output (b)") == "B"
    assert parser.parse(" a ") == "A"
    # the last match wins; anything else is unparsed, never coerced
    assert parser.parse("preference: A ... on reflection preference: B") == "B"
    assert parser.parse("preference: C") is None
    assert parser.parse("I like both") is None


def test_default_pattern_for_integer_scores_matches_the_old_grader_pattern() -> None:
    vocab = LabelVocabulary([0, 1])
    parser = LabelParser(default_label_pattern("score: {label}", vocab), vocab)
    assert parser.parse("score: 1") == 1
    assert parser.parse("Score:0") == 0
    assert parser.parse("score: 10") is None  # not a label, and not followed by a word boundary
    assert parser.parse("score: 0 ... score: 1") == 1


def test_vocabulary_resolves_cells() -> None:
    v = LabelVocabulary(["yes", "no"], {"yes": ["hallucinated"]})
    assert v.resolve("Yes") == "yes" and v.resolve(" NO. ") == "no" and v.resolve("hallucinated") == "yes"
    assert v.resolve("maybe") is None
    ints = LabelVocabulary([1, 2])
    assert ints.resolve("2") == 2 and ints.resolve(1.0) == 1 and ints.resolve("2.0") == 2
    assert ints.resolve(3) is None and ints.resolve("x") is None


def test_positive_label_defaults() -> None:
    assert _spec().positive_label == 1
    assert _spec(label_set=["yes", "no"]).positive_label == "yes"
    assert _spec(label_set=["A", "B"]).positive_label is None
    assert _spec(label_set=["A", "B"], positive_label="a").positive_label == "A"
    assert _spec(label_set=["entailment", "neutral", "contradiction"]).positive_label is None
    spec = _spec(label_set=["incorrect", "correct"])
    # the regex gold check's labels follow the spec's positive label
    assert (spec.gold_check.positive_label, spec.gold_check.negative_label) == ("correct", "incorrect")
    with pytest.raises(SpecError, match="positive_label"):
        _spec(label_set=["A", "B"], positive_label="C")
    with pytest.raises(SpecError, match="mixes integers and strings"):
        _spec(label_set=[1, "B"])
    with pytest.raises(SpecError, match="label_synonyms"):
        _spec(label_set=["A", "B"], label_synonyms={"C": ["c"]})


@pytest.mark.integration
def test_a_pattern_that_cannot_parse_a_label_fails_at_load_naming_it(tmp_path: Path) -> None:
    spec = tmp_path / "audit.toml"
    spec.write_text(
        'label_set = ["A", "B", "tie"]\n[dataset]\npath = "x.jsonl"\n'
        "[evaluator]\nprompt = \"pairwise\"\nlabel_pattern = 'preference:\\s*([AB])'\n"
    )
    with pytest.raises(SpecError) as err:
        load_spec(spec)
    text = err.value.render()
    assert "'tie'" in text and "label_pattern" in text and "preference: tie" in text
    # the command line: exit 2, the label and the fix named, nothing written
    res = allure("validate", str(spec), cwd=tmp_path, timeout=120)
    assert res.returncode == 2 and "'tie'" in res.stderr and "fix:" in res.stderr
    assert "Traceback" not in res.stderr and not (tmp_path / ".allure").exists()
    # the default pattern, built from the label set, reads all three
    spec.write_text(
        'label_set = ["A", "B", "tie"]\n[dataset]\npath = "x.jsonl"\n[evaluator]\nprompt = "pairwise"\n'
    )
    assert load_spec(spec).label_set == ["A", "B", "tie"]


def test_the_old_integer_pattern_with_a_string_label_set_fails_at_load() -> None:
    with pytest.raises(SpecError, match="cannot read label 'yes'"):
        _spec(label_set=["yes", "no"], evaluator={"label_pattern": r"score:\s*([01])\b"})


def test_labels_keep_their_type_in_the_store(tmp_path: Path) -> None:
    assert decode_label(encode_label("1")) == "1" and decode_label(encode_label(1)) == 1
    store = RunStore(tmp_path / "a.db")
    run = store.create_run({"x": 1})
    items = [
        Item(id="a", task="t", response="r"),
        Item(id="b", task="t", response="r"),
        Item(id="c", task="t", response="r"),
    ]
    store.add_items(run, items, dict.fromkeys(["a", "b", "c"], "audit"), {"a": "1", "b": 2, "c": None})
    assert store.reference_labels(run) == {"a": "1", "b": 2, "c": None}
    ids = store.record_calls(
        [
            Verdict(item_id="a", label="1", prompt_hash="h1"),
            Verdict(item_id="b", label="B", prompt_hash="h2"),
        ],
        {},
    )
    store.record_verdicts(run, 1, [(ids[0], "a", False), (ids[1], "b", False)])
    got = store.verdicts(run, 1)
    assert got["a"].label == "1" and got["b"].label == "B"
    store.close()


def test_a_parser_remembers_short_outputs_and_reads_them_the_same() -> None:
    parser = LabelParser(r"(?i)score:\s*(1|0)(?!\w)", [0, 1])
    parser.MAX_REMEMBERED = 3
    outputs = [
        "score: 1",
        "score: 0",
        "Score:1.",
        "no idea",
        "score: 1",
        "x" * 300 + " score: 0",
        "",
        "score: 10",
    ]
    fresh = LabelParser(r"(?i)score:\s*(1|0)(?!\w)", [0, 1])
    for text in outputs * 3:
        assert parser.parse(text) == fresh._parse(text)
        assert len(parser._seen) <= 3
    assert all(len(t) <= parser.SHORT for t in parser._seen)  # a long output is never kept
    assert parser._seen  # and the short ones are


def test_halueval_synonyms_no_hallucination_parses_to_no_and_prob_positive_reads_yes_no_tokens() -> None:
    """Issue 34 item 1: ``no = ["faithful", "no hallucination"]`` holds ``yes``'s ``hallucination``.
    The alternation is longest first, so "no hallucination" is ``no`` wherever it is written, and
    ``hallucination`` alone is ``yes``; the label probability reads the ``yes``/``no`` tokens only."""
    from allure.evaluator._parse import label_probs, prob_positive

    vocab = LabelVocabulary(
        ["yes", "no"], {"yes": ["hallucinated", "hallucination"], "no": ["faithful", "no hallucination"]}
    )
    parser = LabelParser(default_label_pattern("label: {label}", vocab), vocab)
    assert parser.parse("label: no hallucination") == "no"
    assert parser.parse("no hallucination") == "no"
    assert parser.parse("label: hallucination") == "yes"
    assert parser.parse("label: No Hallucination.") == "no"
    lp = {
        "content": [
            {"token": "label", "logprob": -0.01, "top_logprobs": []},
            {"token": ":", "logprob": -0.01, "top_logprobs": []},
            {
                "token": " no",
                "logprob": -0.5,
                "top_logprobs": [
                    {"token": " no", "logprob": -0.5},
                    {"token": " hall", "logprob": -1.0},  # the start of a synonym: not counted
                    {"token": " yes", "logprob": -2.0},
                ],
            },
        ]
    }
    p = prob_positive(lp, "no", "yes", "no")
    assert p is not None and abs(p - 1 / (1 + 2.718281828459045**1.5)) < 1e-9
    probs = label_probs(lp, "no", ["yes", "no"])
    assert probs is not None and abs(probs["yes"] - p) < 1e-9
