"""The pass's fast cache keys (``PassKeys``) are the digits of ``prompt_hash`` (``stable_hash`` of the parts).

Stored calls are found by these keys: a key that changed would send every stored prompt again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from allure.evaluator import Evaluator, PassOptions
from allure.evaluator._prompting import PassKeys, build_jobs, prompt_hash
from allure.models import IclExample, Item, stable_hash
from allure.store import RunStore
from tests.evaluator.options import grader_options

ODD_TEXTS = [
    "plain",
    "",
    'quotes " and \\ backslashes \\" and /slashes/',
    "newlines\nand\ttabs\r\n and \x00 \x01 \x1f control \x7f characters",
    "unicode: ö é ß, Ελληνικά, 中文, emoji 🙂 and \u2028 \u2029 separators",
    "{braces} [brackets] , : ; the JSON separators",
]


def _evaluator(store: RunStore, **kw: Any) -> Evaluator:
    options = grader_options(
        model_name="judge-ö",
        params={"temperature": 0.0, "b": [1, 2.5, None], "a": {"z": 1, "y": "ü"}, "path": Path("/x")},
        **kw,
    )
    return Evaluator(options, store=store)


def _message_lists() -> list[list[BaseMessage]]:
    lists: list[list[BaseMessage]] = [[]]
    for text in ODD_TEXTS:
        lists.append([SystemMessage("You grade."), HumanMessage(text)])
        lists.append([SystemMessage(text), HumanMessage("u"), AIMessage(text), HumanMessage(text + "!")])
    # the same text as two roles, and content that is a list of parts (not a string)
    lists.append([SystemMessage("same"), HumanMessage("same"), AIMessage("same"), HumanMessage("x")])
    lists.append([SystemMessage("s"), HumanMessage(content=[{"type": "text", "text": "part ö"}])])
    lists.append([HumanMessage(content=[{"type": "text", "text": "a"}]), HumanMessage("b")])
    return lists


@pytest.mark.parametrize(
    "pass_options",
    [None, PassOptions(sample=3), PassOptions(generation="g-ü 1"), PassOptions(sample=0, generation="g")],
)
@pytest.mark.parametrize("answer_key", [None, lambda item: {"recorded": item.response, "n": 1}])
def test_pass_keys_are_prompt_hash(tmp_path: Path, pass_options: PassOptions | None, answer_key: Any) -> None:
    store = RunStore(tmp_path / "s.db")
    ev = _evaluator(store, answer_key=answer_key)
    keys = PassKeys(ev, pass_options)
    item = Item(id="i", task="t", response='r "ö"', gold_answers=["g"])
    checked = 0
    for _ in range(2):  # the second round reads the shared turns from the cache
        for messages in _message_lists():
            expected = prompt_hash(ev, messages, item, pass_options)
            assert keys(messages, item) == expected
            checked += 1
    assert checked == 2 * len(_message_lists())
    # and prompt_hash is the documented stable_hash of the parts (the keys of existing stores)
    messages = _message_lists()[1]
    parts: list[Any] = [[(m.type, m.content) for m in messages], ev.model_name, ev.params]
    if answer_key is not None:
        parts.append(answer_key(item))
    o = pass_options or PassOptions()
    if o.sample is not None:
        parts.append({"sample": o.sample})
    if o.generation is not None:
        parts.append({"generation": o.generation})
    assert keys(messages, item) == stable_hash(*parts, length=32)
    store.close()


def test_orjson_encodes_every_code_point_as_json_dumps() -> None:
    """The premise of ``PassKeys``: escaping is per character and the same in both encoders."""
    import json

    import orjson

    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    assert len(chars) > 1_000_000
    text = "".join(chars)
    assert orjson.dumps(text) == json.dumps(text, ensure_ascii=False).encode("utf-8")


def test_a_lone_surrogate_fails_as_before(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "s.db")
    ev = _evaluator(store)
    messages: list[BaseMessage] = [SystemMessage("s"), HumanMessage("bad \ud800 text")]
    with pytest.raises(UnicodeEncodeError):
        prompt_hash(ev, messages, None, None)
    with pytest.raises(UnicodeEncodeError):
        PassKeys(ev, None)(messages, None)
    store.close()


def test_build_jobs_keys_with_icl_examples(tmp_path: Path) -> None:
    """Jobs (shared system and ICL turns, from the prompt set's caches) carry ``prompt_hash``'s keys."""
    store = RunStore(tmp_path / "s.db")
    ev = _evaluator(store)
    examples = [
        IclExample(
            id=f"e{k}", item_id=f"x{k}", task="t ö", response=f"r{k}", gold_answers=["g"], correct_label=k % 2
        )
        for k in range(3)
    ]
    items = [Item(id=f"i{k}", task="task", response=f'resp {k} "q"', gold_answers=["g"]) for k in range(6)]
    jobs = build_jobs(ev, items, lambda item: examples[: int(item.id[1:]) % 4], None)
    assert len(jobs) == len(items)
    assert len({j.prompt_hash for j in jobs}) == len(items)
    for job in jobs:
        assert job.prompt_hash == prompt_hash(ev, job.messages, job.item, None)
    store.close()
