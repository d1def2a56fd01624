"""The exported judge as a LangChain ``Runnable``: it drops into a LangChain or LangGraph pipeline.

``invoke({"task": ..., "response": ...})`` returns a :class:`JudgeVerdict`; ``batch`` and ``abatch``
label their inputs in one pass (one evaluator, the calls stored and cached in the project's run
store as ``allure judge label`` stores them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import Runnable, RunnableConfig
from pydantic import BaseModel, Field

from allure.errors import JudgeError
from allure.labels import Label
from allure.models import ITEM_CONTENT, Item, stable_hash

if TYPE_CHECKING:
    from allure.judge._judge import JudgeBundle

ITEM_KEYS = ("id", *ITEM_CONTENT)


class JudgeVerdict(BaseModel):
    """One item's verdict from an exported judge."""

    id: str
    label: Label | None
    """The judge's label (after calibration or debiasing, as in its audit)."""
    parsed_label: Label | None
    """The label parsed from the evaluator's reply."""
    label_probs: dict[str, float] | None = None
    """The label probabilities read from the reply's logprobs."""
    example_ids: list[str] = Field(default_factory=list)
    """The ICL examples the prompt carried."""
    bundle_id: str
    """The judge's version (its bundle id)."""


def item_from_input(value: dict[str, Any]) -> Item:
    """An item from an ``invoke`` input (``response`` required; ``id`` defaults to a content hash)."""
    if not isinstance(value, dict) or not isinstance(value.get("response"), str):
        raise JudgeError(
            "the judge's input must be a dict with a 'response' string",
            where="Runnable input",
            fix='invoke({"task": "...", "response": "..."})',
        )
    data = {k: value[k] for k in ITEM_KEYS if value.get(k) is not None}
    data.setdefault("task", "")
    gold = data.get("gold_answers")
    if isinstance(gold, str):
        data["gold_answers"] = [gold]
    data.setdefault("id", "in-" + stable_hash({k: data[k] for k in sorted(data)}, length=16))
    return Item.model_validate(data)


class JudgeRunnable(Runnable[dict[str, Any], JudgeVerdict]):
    """A :class:`~allure.judge.JudgeBundle` as a LangChain ``Runnable`` (see the module)."""

    def __init__(self, judge: JudgeBundle, project: str = ".") -> None:
        self.judge = judge
        self.project = project

    @property
    def InputType(self) -> Any:  # noqa: N802 (LangChain's name)
        return dict

    @property
    def OutputType(self) -> Any:  # noqa: N802
        return JudgeVerdict

    def _label(self, inputs: Sequence[dict[str, Any]]) -> list[JudgeVerdict]:
        from pathlib import Path

        from allure.judge._label import label_items

        items = [item_from_input(x) for x in inputs]
        unique = list({it.id: it for it in items}.values())
        done = label_items(self.judge, unique, project=Path(self.project))
        by_id = {r["id"]: JudgeVerdict.model_validate(r) for r in done.rows}
        return [by_id[it.id] for it in items]

    def invoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> JudgeVerdict:
        return self._label([input])[0]

    def batch(
        self,
        inputs: list[dict[str, Any]],
        config: RunnableConfig | list[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[JudgeVerdict]:
        return self._label(inputs) if inputs else []

    async def ainvoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> JudgeVerdict:
        return (await asyncio.to_thread(self._label, [input]))[0]

    async def abatch(
        self,
        inputs: list[dict[str, Any]],
        config: RunnableConfig | list[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[JudgeVerdict]:
        return await asyncio.to_thread(self._label, inputs) if inputs else []
