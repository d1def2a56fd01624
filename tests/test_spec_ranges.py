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


def _field(toml: str, table: str) -> str:
    """The dotted name of ``toml``'s last key: in the last ``[table]`` it opens, else in ``table``."""
    lines = toml.splitlines()
    table = next((line.strip("[]") for line in reversed(lines) if line.startswith("[")), table)
    key = lines[-1].split(" =")[0]
    return f"{table}.{key}" if table else key


def _after(anchor: str, table: str, added: str, words: str) -> tuple[str, str, str, str]:
    """A case that adds ``added`` (TOML) after SPEC's line ``anchor`` of ``[table]``: its last key is named."""
    return (anchor, f"{anchor}\n{added}", _field(added, table), words)


def _evaluator(added: str, words: str) -> tuple[str, str, str, str]:
    return _after('kind = "replay"', "evaluator", added, words)


def _loop(added: str, words: str) -> tuple[str, str, str, str]:
    return _after("max_iterations = 2", "loop", added, words)


def _labels(toml: str, words: str) -> tuple[str, str, str, str]:
    """A case that writes ``toml`` in place of ``label_set = [0, 1]``: its last key is named."""
    return ("label_set = [0, 1]", toml, _field(toml, ""), words)


# (what to replace in SPEC, its replacement, the field named, a word of the fix)
CASES = [
    _labels("label_set = [0, 1, 1]", "once"),
    _labels("label_set = []", "label_set = [0, 1]"),
    _labels("label_set = [1]", "label_set = [0, 1]"),
    _labels('label_set = [0, "0"]', "all integers or all strings"),
    _labels("label_set = [true, false]", "true/false are not labels"),
    _labels('label_set = ["yes", "Yes"]', "label_synonyms"),
    _labels("label_set = [0, 1.5]", "label_set = [0, 1]"),
    _labels("label_set = [0, 1]\npositive_label = 5", "one of 0, 1"),
    _labels('label_set = [0, 1]\n[label_synonyms]\n2 = ["two"]', "key each synonym list"),
    _evaluator("concurrency = 0", "to 1 or more"),
    _evaluator("concurrency = 100000", "or less"),
    _evaluator("timeout_s = -1", "to above 0"),
    _evaluator("max_retries = -2", "or more"),
    _evaluator("max_tokens = 0", "to 1 or more"),
    _evaluator('base_url = "file:///etc/passwd"', "http://"),
    _evaluator('base_url = "http://[::1"', "http://"),
    _evaluator('base_url = "localhost:8000"', "http://"),
    _evaluator('base_url = "http://"', "http://"),
]

# issue 36 group 2: values that cannot work, each refused at load with the field and the allowed range
YES_NO = 'label_set = ["yes", "no"]\n[label_synonyms]\n'
GOLD_SCORE = '[dataset.gold_score]\ncolumn = "s"\n'
CASES += [
    _labels('label_set = [0, 1]\nauto_approve = "yes"', "true or false"),
    _labels('label_set = ["", "x"]', "give every label a name"),
    _labels("label_set = [0, 1]\npositive_label = true", "one of the labels"),
    _labels(YES_NO + 'yes = ["hallucination"]\nno = ["Hallucination"]', "under one label only"),
    _labels(YES_NO + 'yes = ["No"]', "under one label only"),
    _labels(YES_NO + 'yes = [" "]', "remove it"),
    _labels(YES_NO + 'yes = "hallucinated"', 'write "yes" = ["hallucinated"]'),  # one string, not a list
    _labels(YES_NO + 'hallucinated = "yes"', 'write "yes" = ["hallucinated"]'),  # written form -> label
    _evaluator("temperature = -0.5", "0.0 to 2.0"),
    _evaluator("temperature = nan", "a finite number"),
    _evaluator("temperature = 7", "0.0 to 2.0"),
    _evaluator("timeout_s = inf", "a finite number"),
    _evaluator("logprobs = 1", "true or false"),
    _evaluator('api_key_env = "MY KEY"', "OPENAI_API_KEY"),
    _evaluator('prompt = ""', "1 character"),
    _loop("max_candidates = 0", "1 or more"),
    _loop('guard = "no"', "true or false"),
    _loop("stop_when_no_gain = 0", "true or false"),
    _loop("[evaluator.local]\nctx_size = 0", "256 to 1048576"),
    _loop("[evaluator.local]\nthreads = 0", "1 to 4096"),
    _loop("[evaluator.local]\nparallel = 0", "1 to 256"),
    _loop('[evaluator.local]\ncache_prompt = "off"', "true or false"),
    ('location = "mem"', 'location = "ftp://host/mem"', "memory.location", "http://"),
    _after('location = "mem"', "memory", 'collection = "a"', "3 to 63"),
    _after("k = 3", "memory.retrieval", "min_similarity = 2", "-1.0 to 1.0"),
    _after('path = "items.jsonl"', "dataset", GOLD_SCORE + "threshold = nan", "a finite number"),
    _after(
        'path = "items.jsonl"', "dataset", GOLD_SCORE + "threshold = 1\nlabels = [false, true]", "correct"
    ),
    ('path = "items.jsonl"', 'path = ""', "dataset.path", "1 character"),
    _loop("[gold_check]\npositive_label = true", "correct"),
    _loop("[gold_check]\nwhole_max_chars = -1", "0 or more"),
    _loop("[gate]\nalpha = nan", "a finite number"),
    # a boolean where a number goes was read as 1 or 0
    ("max_iterations = 2", "max_iterations = true", "loop.max_iterations", "write a number"),
    _evaluator("concurrency = false", "1 to 1024"),
    _loop("[gate.min]\naccuracy = true", "write a number"),
    _loop("heldout_fraction = true", "below 1.0"),
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


def test_a_quoted_key_is_found_on_its_line(tmp_path: Path) -> None:
    """A synonym table keyed by a quoted form with a colon (``"Verdict: X" = "yes"``): the error names
    its line, as it does a bare key's."""
    text = SPEC.replace("label_set = [0, 1]", YES_NO + '"Verdict: X" = "yes"', 1)
    path = tmp_path / "audit.toml"
    path.write_text(text)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    line = _line_of(text, '"Verdict: X" =')
    assert f"audit.toml:{line}, field 'label_synonyms.Verdict: X'" in (info.value.where or ""), (
        info.value.render()
    )


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
