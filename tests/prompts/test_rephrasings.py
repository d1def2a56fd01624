"""Rule-based rephrasings: deterministic, meaning-preserving, checked; a broken one is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from allure.errors import SpecError
from allure.prompts import (
    PROMPT_SETS,
    check_rephrasing,
    load_checked,
    load_prompt_set,
    prompt_set_hash,
    prompt_texts,
    rule_rephrasings,
    write_prompt_set,
)


@pytest.mark.parametrize("name", PROMPT_SETS)
def test_rephrasings_are_distinct_deterministic_and_keep_placeholders(name: str) -> None:
    base = load_prompt_set(name)
    first = rule_rephrasings(base, 3, seed=7)
    again = rule_rephrasings(base, 3, seed=7)
    assert [r.texts for r in first] == [r.texts for r in again]
    hashes = {prompt_set_hash(prompt_texts(base))} | {prompt_set_hash(r.texts) for r in first}
    assert len(hashes) == 4
    for r in first:
        assert r.texts["assistant.txt"] == base.assistant
        assert r.texts["user.txt"].count("{task}") == base.user.count("{task}")
    assert [r.texts for r in rule_rephrasings(base, 3, seed=8)] != [r.texts for r in first]


def test_rules_never_touch_quoted_answers_or_placeholders() -> None:
    base = load_prompt_set("grader")
    for r in rule_rephrasings(base, 6, seed=0):
        for s in ('"score: 1"', '"score: 0"', "{task}", "{gold_answers}", "{response}"):
            assert s in r.texts["user.txt"]
        assert '"room"' in r.texts["system.txt"]


def test_written_set_loads_as_a_prompt_set(tmp_path: Path) -> None:
    base = load_prompt_set("grader")
    r = rule_rephrasings(base, 1)[0]
    folder = write_prompt_set(tmp_path / r.name, r)
    loaded = load_checked(folder, base, (0, 1))
    assert prompt_set_hash(prompt_texts(loaded)) == prompt_set_hash(r.texts)
    assert (folder / "rephrasing.json").is_file()


@pytest.mark.parametrize(
    ("file", "old", "new", "needle"),
    [
        ("user.txt", "{response}", "the response", "lost placeholder(s) ['{response}']"),
        ("user.txt", '"score: 1" or "score: 0"', "one or zero", "lost the label instruction"),
        ("assistant.txt", "score: {label}", "grade: {label}", "answer format must not change"),
        ("system.txt", "strict grader", "strict {grader}", "added placeholder(s) ['{grader}']"),
    ],
)
def test_a_broken_rephrasing_is_refused(file: str, old: str, new: str, needle: str) -> None:
    texts = prompt_texts(load_prompt_set("grader"))
    bad = dict(texts)
    assert old in bad[file]
    bad[file] = bad[file].replace(old, new)
    with pytest.raises(SpecError) as err:
        check_rephrasing(texts, bad, (0, 1), where="mine")
    assert needle in err.value.message
    assert err.value.where == f"mine/{file}"
