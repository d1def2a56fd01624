"""Cross-field and out-of-range spec values: a SpecError naming line, field and fix (exit 2), never a traceback.

Groups 1 and 2 of issue 27: a bad ``label_set`` once crashed the code that finds the TOML line
(``ValueError: not enough values to unpack``) and exited 1, which a scheduled re-audit reads as
a regression; ``concurrency = 0`` and ``base_url = "file:///..."`` were accepted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from allure.config import load_spec
from allure.errors import SpecError
from tests.cli_run import run_cli
from tests.test_config_strict import SPEC

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
