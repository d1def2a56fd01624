"""The body the OpenAI-compatible backend sends: ``request_json`` (built from remembered parts) is
``orjson.dumps(request_body(...))`` byte for byte, whatever the settings, turns and extra fields."""

from __future__ import annotations

import orjson
import pytest
from langchain_core.messages import AIMessage, ChatMessage, HumanMessage, SystemMessage, ToolMessage

from allure.evaluator import build_openai_backend

SYSTEM = SystemMessage("You grade answers. Reply score: 0 or score: 1.")
EXAMPLE = [HumanMessage("Task: 2+2?\nResponse: 5"), AIMessage("score: 0")]


def _backend(**kw: object):
    return build_openai_backend(
        model="m", api_key_env="UNUSED", api_key="k", base_url="http://127.0.0.1:9/v1", **kw
    )


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"temperature": 0.7, "max_tokens": 3},
        {"logprobs": True, "seed": 4},
        {"logprobs": False, "seed": None},
    ],
)
@pytest.mark.parametrize(
    "backend_kw", [{}, {"logprobs": True, "seed": 1}, {"extra_body": {"temperature": 1.5, "top_k": 3}}]
)
def test_the_body_is_request_body_encoded(settings: dict, backend_kw: dict) -> None:
    chat = _backend(**backend_kw)
    prompts = [
        [SYSTEM, HumanMessage('Task: 1+1?\nResponse: 2 ✓ \u2028 "quoted"')],
        [SYSTEM, *EXAMPLE, HumanMessage("Task: 3+3?\nResponse: 6")],
        [SYSTEM, *EXAMPLE, HumanMessage("Task: 3+3?\nResponse: 7")],  # shared turns from memory now
        [ChatMessage(role="critic", content="be strict"), HumanMessage("x")],
        [SYSTEM, ToolMessage("tool says", tool_call_id="t1"), HumanMessage("y")],
        [HumanMessage("only the item")],
        # one text in several roles, tool calls and custom roles with one text: remembered apart or not at all
        [SystemMessage("same text"), HumanMessage("same text"), AIMessage("same text"), HumanMessage("z")],
        [
            ToolMessage("same text", tool_call_id="t2"),
            ChatMessage(role="judge", content="same text"),
            HumanMessage("z"),
        ],
        [
            ToolMessage("same text", tool_call_id="t3"),
            ChatMessage(role="critic", content="same text"),
            HumanMessage("z"),
        ],
    ]
    for messages in prompts * 2:
        assert chat.request_json(messages, **settings) == orjson.dumps(
            chat.request_body(messages, **settings)
        )


def test_what_it_remembers_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from allure.evaluator import _openai

    monkeypatch.setattr(_openai, "_MAX_REMEMBERED", 4)
    chat = _backend()
    for k in range(20):
        msgs = [SystemMessage(f"system {k}"), HumanMessage(f"item {k}")]
        assert chat.request_json(msgs, seed=k) == orjson.dumps(chat.request_body(msgs, seed=k))
        assert len(chat._turns) <= 4 and len(chat._heads) <= 4
