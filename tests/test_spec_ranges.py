"""Cross-field and out-of-range spec values: a SpecError naming line, field and fix (exit 2), never a traceback.

Groups 1 and 2 of issue 27: a bad ``label_set`` once crashed the code that finds the TOML line
(``ValueError: not enough values to unpack``) and exited 1, which a scheduled re-audit reads as
a regression; ``concurrency = 0`` and ``base_url = "file:///..."`` were accepted. Group 2 of issue
36: a string for a boolean, a blank label, ``positive_label = true``, one synonym under two labels,
a negative or NaN temperature, ``max_candidates = 0``, ``[evaluator.local]`` sizes of 0, an
``ftp://`` memory were accepted. Every case here also runs through ``allure validate`` in
``tests/cli/test_bad_input_table.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from allure.config import load_spec
from allure.errors import SpecError
from tests.cli_run import run_cli
from tests.test_config_strict import SPEC


def _loop(tables: str, field: str, words: str) -> tuple[str, str, str, str]:
    """A case that adds ``tables`` (TOML) after ``[loop]``'s ``max_iterations = 2``."""
    return ("max_iterations = 2", f"max_iterations = 2\n{tables}", field, words)


# (what to replace in SPEC, its replacement, the field named, a word of the fix)
CASES = [
    ("label_set = [0, 1]", "label_set = [0, 1, 1]", "label_set", "once"),
    ("label_set = [0, 1]", "label_set = []", "label_set", "label_set = [0, 1]"),
    ("label_set = [0, 1]", "label_set = [1]", "label_set", "label_set = [0, 1]"),
    ("label_set = [0, 1]", 'label_set = [0, "0"]', "label_set", "all integers or all strings"),
    ("label_set = [0, 1]", "label_set = [true, false]", "label_set", "true/false are not labels"),
    ("label_set = [0, 1]", 'label_set = ["yes", "Yes"]', "label_set", "label_synonyms"),
    ("label_set = [0, 1]", "label_set = [0, 1.5]", "label_set", "label_set = [0, 1]"),
    ("label_set = [0, 1]", "label_set = [0, 1]\npositive_label = 5", "positive_label", "one of 0, 1"),
    (
        "label_set = [0, 1]",
        'label_set = [0, 1]\n[label_synonyms]\n2 = ["two"]',
        "label_synonyms.2",
        "key each synonym list",
    ),
    (
        'kind = "replay"',
        'kind = "replay"\nconcurrency = 0',
        "evaluator.concurrency",
        "to 1 or more",
    ),
    ('kind = "replay"', 'kind = "replay"\nconcurrency = 100000', "evaluator.concurrency", "or less"),
    ('kind = "replay"', 'kind = "replay"\ntimeout_s = -1', "evaluator.timeout_s", "to above 0"),
    ('kind = "replay"', 'kind = "replay"\nmax_retries = -2', "evaluator.max_retries", "or more"),
    ('kind = "replay"', 'kind = "replay"\nmax_tokens = 0', "evaluator.max_tokens", "to 1 or more"),
    ('kind = "replay"', 'kind = "replay"\nbase_url = "file:///etc/passwd"', "evaluator.base_url", "http://"),
    ('kind = "replay"', 'kind = "replay"\nbase_url = "http://[::1"', "evaluator.base_url", "http://"),
    ('kind = "replay"', 'kind = "replay"\nbase_url = "localhost:8000"', "evaluator.base_url", "http://"),
    ('kind = "replay"', 'kind = "replay"\nbase_url = "http://"', "evaluator.base_url", "http://"),
]

# issue 36 group 2: values that cannot work, each refused at load with the field and the allowed range
CASES += [
    ("label_set = [0, 1]", 'label_set = [0, 1]\nauto_approve = "yes"', "auto_approve", "true or false"),
    ("label_set = [0, 1]", 'label_set = ["", "x"]', "label_set", "give every label a name"),
    (
        "label_set = [0, 1]",
        "label_set = [0, 1]\npositive_label = true",
        "positive_label",
        "one of the labels",
    ),
    (
        "label_set = [0, 1]",
        'label_set = ["yes", "no"]\n[label_synonyms]\nyes = ["hallucination"]\nno = ["Hallucination"]',
        "label_synonyms.no",
        "under one label only",
    ),
    (
        "label_set = [0, 1]",
        'label_set = ["yes", "no"]\n[label_synonyms]\nyes = ["No"]',
        "label_synonyms.yes",
        "under one label only",
    ),
    (
        "label_set = [0, 1]",
        'label_set = ["yes", "no"]\n[label_synonyms]\nyes = [" "]',
        "label_synonyms.yes",
        "remove it",
    ),
    ('kind = "replay"', 'kind = "replay"\ntemperature = -0.5', "evaluator.temperature", "0.0 to 2.0"),
    ('kind = "replay"', 'kind = "replay"\ntemperature = nan', "evaluator.temperature", "a finite number"),
    ('kind = "replay"', 'kind = "replay"\ntemperature = 7', "evaluator.temperature", "0.0 to 2.0"),
    ('kind = "replay"', 'kind = "replay"\ntimeout_s = inf', "evaluator.timeout_s", "a finite number"),
    ('kind = "replay"', 'kind = "replay"\nlogprobs = 1', "evaluator.logprobs", "true or false"),
    ('kind = "replay"', 'kind = "replay"\napi_key_env = "MY KEY"', "evaluator.api_key_env", "OPENAI_API_KEY"),
    ('kind = "replay"', 'kind = "replay"\nprompt = ""', "evaluator.prompt", "1 character"),
    _loop("max_candidates = 0", "loop.max_candidates", "1 or more"),
    _loop('guard = "no"', "loop.guard", "true or false"),
    _loop("stop_when_no_gain = 0", "loop.stop_when_no_gain", "true or false"),
    _loop("[evaluator.local]\nctx_size = 0", "evaluator.local.ctx_size", "256 to 1048576"),
    _loop("[evaluator.local]\nthreads = 0", "evaluator.local.threads", "1 to 4096"),
    _loop("[evaluator.local]\nparallel = 0", "evaluator.local.parallel", "1 to 256"),
    _loop('[evaluator.local]\ncache_prompt = "off"', "evaluator.local.cache_prompt", "true or false"),
    ('location = "mem"', 'location = "ftp://host/mem"', "memory.location", "http://"),
    ('location = "mem"', 'location = "mem"\ncollection = "a"', "memory.collection", "3 to 63"),
    ("k = 3", "k = 3\nmin_similarity = 2", "memory.retrieval.min_similarity", "-1.0 to 1.0"),
    (
        'path = "items.jsonl"',
        'path = "items.jsonl"\n[dataset.gold_score]\ncolumn = "s"\nthreshold = nan',
        "dataset.gold_score.threshold",
        "a finite number",
    ),
    (
        'path = "items.jsonl"',
        'path = "items.jsonl"\n[dataset.gold_score]\ncolumn = "s"\nthreshold = 1\nlabels = [false, true]',
        "dataset.gold_score.labels",
        "correct",
    ),
    ('path = "items.jsonl"', 'path = ""', "dataset.path", "1 character"),
    _loop("[gold_check]\npositive_label = true", "gold_check.positive_label", "correct"),
    _loop("[gold_check]\nwhole_max_chars = -1", "gold_check.whole_max_chars", "0 or more"),
    _loop("[gate]\nalpha = nan", "gate.alpha", "a finite number"),
    # a boolean where a number goes was read as 1 or 0
    ("max_iterations = 2", "max_iterations = true", "loop.max_iterations", "write a number"),
    ('kind = "replay"', 'kind = "replay"\nconcurrency = false', "evaluator.concurrency", "1 to 1024"),
    _loop("[gate.min]\naccuracy = true", "gate.min.accuracy", "write a number"),
    _loop("heldout_fraction = true", "loop.heldout_fraction", "below 1.0"),
]


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith(needle))


@pytest.mark.parametrize(("good", "bad", "field", "fix"), CASES, ids=[c[1].split("\n")[-1] for c in CASES])
def test_bad_value_names_line_field_and_fix(
    tmp_path: Path, good: str, bad: str, field: str, fix: str
) -> None:
    text = SPEC.replace(good, bad, 1)
    path = tmp_path / "audit.toml"
    path.write_text(text)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    err = info.value
    assert err.exit_code == 2
    assert f"field '{field}'" in (err.where or ""), err.render()
    key = field.split(".")[-1]
    line = _line_of(text, f"{key} =") if key not in ("label_synonyms", "2") else _line_of(text, "2 =")
    assert f"audit.toml:{line}," in (err.where or ""), err.render()
    assert fix in (err.fix or ""), err.render()


def test_a_secret_in_a_bad_base_url_is_not_echoed(tmp_path: Path) -> None:
    path = tmp_path / "audit.toml"
    path.write_text(SPEC.replace('kind = "replay"', 'kind = "replay"\nbase_url = "ftp://bob:hunter22@h/x"'))
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert "hunter22" not in info.value.render()
    assert "[redacted]@h" in info.value.render()


@pytest.mark.integration
@pytest.mark.parametrize("bad", ["label_set = [0, 1, 1]", "label_set = [0, 1]\n[evaluator]\nconcurrency = 0"])
def test_validate_exits_2_without_traceback(tmp_path: Path, bad: str) -> None:
    (tmp_path / "items.jsonl").write_text('{"answer": "x"}\n')
    text = SPEC.replace("label_set = [0, 1]", bad, 1)
    if "concurrency" in bad:  # one [evaluator] table: move the key into the existing one
        text = SPEC.replace('kind = "replay"', 'kind = "replay"\nconcurrency = 0', 1)
    (tmp_path / "audit.toml").write_text(text)
    res = run_cli(tmp_path, "validate", "audit.toml", project=False)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    field = "label_set" if "1, 1" in bad else "evaluator.concurrency"
    assert f"field '{field}'" in res.stderr and "fix:" in res.stderr, res.stderr


SYNONYMS = '[label_synonyms]\nyes = ["hallucination"]\nno = ["no hallucination"]\n'


def test_a_synonym_holding_another_reads_as_the_longest_form(tmp_path: Path) -> None:
    # "no hallucination" holds "hallucination" (a synonym of yes): the longest form that matches wins
    from allure.config import label_pattern_for
    from allure.labels import LabelParser
    from allure.prompts import load_prompt_set

    path = tmp_path / "audit.toml"
    path.write_text(
        SPEC.replace("label_set = [0, 1]", 'label_set = ["yes", "no"]\n' + SYNONYMS, 1).replace(
            "label_pattern = 'score: ([01])'\n", ""
        )
    )
    spec = load_spec(path)
    parser = LabelParser(label_pattern_for(spec, load_prompt_set("grader").assistant), spec.vocabulary())
    assert [
        parser.parse(t) for t in ("score: no hallucination", "score: hallucination", "no hallucination")
    ] == [
        "no",
        "yes",
        "no",
    ]


def test_a_label_pattern_that_cuts_a_synonym_short_is_refused(tmp_path: Path) -> None:
    text = SPEC.replace("label_set = [0, 1]", 'label_set = ["yes", "no"]\n' + SYNONYMS, 1)
    path = tmp_path / "audit.toml"
    path.write_text(text.replace("label_pattern = 'score: ([01])'", r"label_pattern = '(\w+)\s*$'"))
    with pytest.raises(SpecError) as info:
        load_spec(path)
    err = info.value
    assert err.exit_code == 2 and "field 'label_synonyms.no'" in (err.where or ""), err.render()
    assert "'no hallucination'" in err.message and "as 'yes'" in err.message, err.render()


def test_the_shipped_examples_still_validate() -> None:
    examples = sorted((Path(__file__).parents[1] / "examples").glob("*.toml"))
    assert len(examples) >= 5
    for path in examples:
        assert load_spec(path).label_set, path  # strict booleans and ranges refuse none of them
