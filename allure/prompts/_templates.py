"""Load a prompt set and render an item's messages with its ICL examples (ALLURE Fig. 2)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from string import Formatter
from typing import TYPE_CHECKING

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from allure._text_errors import read_utf8
from allure.errors import SpecError
from allure.models import IclExample, Item

if TYPE_CHECKING:
    from langchain_core.prompts import ChatPromptTemplate

_FILES = ("system.txt", "user.txt", "assistant.txt")

PROMPT_SETS = ("grader", "pairwise", "rubric", "reference_free")
"""The prompt sets shipped in ``allure/prompts/`` (the judge shapes)."""

USER_FIELDS = frozenset({"task", "gold_answers", "response", "response_b", "rubric", "labels"})
"""Placeholders a user template may use: the item's task, gold answers, response (the first
response of a pair), second response, rubric, and the label set as text."""


def format_gold(answers: list[str]) -> str:
    """Gold answers as one line (alternatives joined by `` OR ``)."""
    return " OR ".join(a.strip() for a in answers) if answers else "(none given)"


@dataclass(frozen=True)
class PromptSet:
    """The three templates of a prompt set.

    :meth:`chat_template` is the set as a LangChain ``ChatPromptTemplate``; :meth:`render`
    produces the same messages (tested) with the ICL block cached per list of example ids, so
    that labelling tens of thousands of items costs microseconds per prompt.
    """

    name: str
    system: str
    user: str
    assistant: str
    labels: str = "0, 1"
    """The label set as text, for the ``{labels}`` placeholder."""
    rubric: str = ""
    """The spec's rubric text, for items without their own."""
    example_user: str = ""
    """The ICL example's user turn (``example_user.txt``; default: ``user``); may also use ``{label}``."""
    _examples_cache: dict[tuple[str, ...], list[BaseMessage]] = field(
        default_factory=dict, compare=False, repr=False
    )
    _system_cache: dict[tuple[str, str, str], SystemMessage] = field(
        default_factory=dict, compare=False, repr=False
    )

    @property
    def pairwise(self) -> bool:
        """True when the user turn shows two responses (``{response_b}``)."""
        return "{response_b}" in self.user

    def with_context(self, *, labels: str, rubric: str = "") -> PromptSet:
        """This set with the label set's text and the spec's rubric filled in."""
        return replace(self, labels=labels, rubric=rubric, _examples_cache={}, _system_cache={})

    def fields(self, item: Item | IclExample) -> dict[str, str]:
        """The user template's values for an item or an ICL example."""
        return {
            "task": item.task,
            "gold_answers": format_gold(item.gold_answers),
            "response": item.response,
            "response_b": item.response_b or "",
            "rubric": item.rubric or self.rubric,
            "labels": self.labels,
        }

    def chat_template(self) -> ChatPromptTemplate:
        """System turn, then the ICL pairs, then the item's user turn."""
        from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

        return ChatPromptTemplate.from_messages(
            [("system", self.system), MessagesPlaceholder("examples"), ("human", self.user)]
        )

    def example_messages(self, examples: list[IclExample]) -> list[BaseMessage]:
        """ICL examples as user/assistant pairs (ALLURE Fig. 2), in the given (stable) order."""
        key = tuple(f"{ex.id}:{ex.correct_label}" for ex in examples)
        cached = self._examples_cache.get(key)
        if cached is None:
            cached = []
            template = self.example_user or self.user
            for ex in examples:
                cached.append(HumanMessage(template.format(**self.fields(ex), label=ex.correct_label)))
                cached.append(AIMessage(self.assistant.format(label=ex.correct_label)))
            if len(self._examples_cache) > 256:
                self._examples_cache.clear()
            self._examples_cache[key] = cached
        return cached

    def system_message(self) -> SystemMessage:
        """The system turn (rendered once; every prompt of the set shares the one message)."""
        key = (self.system, self.labels, self.rubric)
        cached = self._system_cache.get(key)
        if cached is None:
            cached = SystemMessage(self.system.format(labels=self.labels, rubric=self.rubric).strip())
            self._system_cache.clear()
            self._system_cache[key] = cached
        return cached

    def render(self, item: Item, examples: list[IclExample]) -> list[BaseMessage]:
        """The full message list for ``item`` with ``examples`` before it (same as ``chat_template()``).

        The system turn and the ICL turns are shared by the prompts that have them: treat them as read-only."""
        user = HumanMessage(self.user.format(**self.fields(item)))
        if not examples:
            return [self.system_message(), user]
        return [self.system_message(), *self.example_messages(examples), user]


def placeholders(text: str) -> set[str]:
    """The placeholders of an f-string template, as LangChain's ``PromptTemplate`` reads them.

    Raises:
        ValueError: unbalanced braces, or a placeholder with attribute or index access.
    """
    names = {name for _, name, _, _ in Formatter().parse(text) if name is not None}
    bad = sorted(n for n in names if "." in n or "[" in n or "]" in n)
    if bad:
        raise ValueError(f"placeholders with attribute or index access are not allowed: {bad}")
    return names


def load_prompt_set(name_or_path: str, *, where: str = "evaluator.prompt") -> PromptSet:
    """A built-in prompt set by name (``allure/prompts/NAME/``) or a folder with the three files.

    Args:
        name_or_path: The set's name or folder.
        where: What named it, for an unknown set's message (the spec's field, or a command's option).

    Raises:
        SpecError: the set or one of its files is missing, or a template names an unknown placeholder.
    """
    folder = Path(name_or_path)
    if not folder.is_dir():
        builtin = resources.files("allure.prompts").joinpath(name_or_path)
        if not builtin.is_dir():
            raise SpecError(
                f"unknown prompt set {name_or_path!r}",
                where=where,
                fix=f"use one of {', '.join(PROMPT_SETS)}, or a folder holding system.txt, user.txt and "
                "assistant.txt",
            )
        folder = Path(str(builtin))
    texts = {}
    for fname in _FILES:
        f = folder / fname
        if not f.is_file():
            raise SpecError(
                f"prompt file missing: {fname}", where=str(f), fix=f"add {fname} to the prompt folder"
            )
        texts[fname] = read_utf8(f, error=SpecError, what="prompt file").strip()
    if (folder / "example_user.txt").is_file():
        texts["example_user.txt"] = read_utf8(
            folder / "example_user.txt", error=SpecError, what="prompt file"
        ).strip()
    ps = PromptSet(
        folder.name,
        texts["system.txt"],
        texts["user.txt"],
        texts["assistant.txt"],
        example_user=texts.get("example_user.txt", ""),
    )
    allowed: dict[str, set[str]] = {
        "user.txt": set(USER_FIELDS),
        "example_user.txt": set(USER_FIELDS) | {"label"},
        "assistant.txt": {"label"},
        "system.txt": {"labels", "rubric"},
    }
    for fname, text in texts.items():
        try:
            names = placeholders(text)
        except (ValueError, KeyError) as exc:
            raise SpecError(
                f"template does not parse: {exc}", where=str(folder / fname), fix="escape braces as {{ }}"
            ) from exc
        extra = names - allowed[fname]
        if extra:
            raise SpecError(
                f"unknown placeholder(s) {sorted(extra)}",
                where=str(folder / fname),
                fix=f"use only {sorted(allowed[fname]) or 'no placeholders'}",
            )
    return ps


def check_prompt_shape(ps: PromptSet, folder: Path) -> None:
    """Refuse a prompt set that cannot judge anything: a user turn without ``{response}``, an answer
    format without ``{label}``, or a prompt that never says how to answer (neither the answer
    format's words, e.g. ``score:``, nor ``{labels}`` appear in the system or user turn). Checked
    where a set judges (the spec's ``evaluator.prompt``), not for meta-prompts such as a rephraser.

    Args:
        ps: The loaded set.
        folder: Where it was loaded from (for the messages).

    Raises:
        SpecError: naming the file, what is missing and the fix.
    """
    if "{response}" not in ps.user:
        raise SpecError(
            "the user turn has no {response} placeholder: the evaluator would never see the response it judges",
            where=str(folder / "user.txt"),
            fix="add {response} where the response goes (and {response_b} for a pairwise set)",
        )
    if "{label}" not in ps.assistant:
        raise SpecError(
            "the answer format has no {label} placeholder: no label could be read from an answer",
            where=str(folder / "assistant.txt"),
            fix='write the answer format with {label} where the label goes, e.g. "score: {label}"',
        )
    prefix = ps.assistant.split("{label}")[0].strip().lower()
    told = (ps.system + "\n" + ps.user).lower()
    if prefix and prefix not in told and "{labels}" not in told:
        raise SpecError(
            f"the prompt never tells the evaluator how to answer: {prefix!r} (the answer format) does not "
            "appear in system.txt or user.txt, and neither does {labels}",
            where=str(folder / "user.txt"),
            fix=f'add the instruction, e.g. Reply with "{prefix} X", X one of {{labels}}.',
        )
