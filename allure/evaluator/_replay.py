"""The replay backend: answers with the output recorded for an item (no network, no model).

Used to replay an audit from labels recorded in the dataset (CogEval carries GPT-4's). An item
with nothing recorded gets an empty answer, which parses as ``unparsed``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Unpack

from allure.evaluator._backend import CallSettings, ChatBackend, Reply

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage


class ReplayBackend(ChatBackend):
    """Answers each request with ``recorded[item_id]`` (item id -> recorded output)."""

    def __init__(self, recorded: Mapping[str, str], model_name: str = "replay") -> None:
        self.recorded = dict(recorded)
        self.model_name = model_name

    async def complete(self, messages: Sequence[BaseMessage], **settings: Unpack[CallSettings]) -> Reply:
        return Reply(text=self.recorded.get(settings.get("item_id") or "", ""))
