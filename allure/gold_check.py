"""The gold check: the reference label of a response by regex matching (METHODS.md §1.3).

ALLURE checks the evaluator's label against a reference obtained by regular-expression
matching between the generator's response and the correct answer(s). This module makes
that check explicit and configurable:

1. **Extract** the final answer with :attr:`GoldCheckConfig.answer_pattern` (by default
   the text after the *last* ``Answer:`` (or ``answer is:``) in the response, as
   CogEval's rubric asks).
   When nothing matches, :attr:`GoldCheckConfig.fallback` decides: ``incorrect`` (the
   reference is the negative label), ``whole`` (the whole response is the answer) or
   ``search`` (the response counts as correct when a normalised gold answer occurs
   anywhere in it).
2. **Normalise** the extracted answer and every gold answer the same way: lower-case,
   drop characters in :attr:`~GoldCheckConfig.strip_chars`, drop filler words and phrases
   (``answer:``, ``room``, ``zone``, ``field``, ...), unify separators (``,``, ``->``,
   ``-``, ``;``, ``and``) into ``", "`` and collapse whitespace. ``Answer: Room 1, Room 3``
   and ``1,3`` both become ``1, 3``.
3. **Match**: ``exact`` (the normalised forms are equal) or ``contains`` (a normalised gold
   answer is a contiguous run of the extracted answer's parts).

An item's own ``gold_label`` always wins over the regex check; an item with neither a
gold label nor gold answers has no reference (``None``): it is left unscored, never
coerced to a label.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

from allure.errors import GoldCheckError
from allure.labels import Label
from allure.models import Item

Fallback = Literal["incorrect", "whole", "search"]
"""What to do when :attr:`GoldCheckConfig.answer_pattern` does not match the response.

- ``incorrect``: the response gave no final answer in the asked format; reference = negative.
- ``whole``: treat the whole response as the answer (suits terse responses such as ``1, 3``).
- ``search``: correct when any normalised gold answer occurs anywhere in the normalised response.
"""

MatchMode = Literal["exact", "contains"]
"""``exact``: normalised answer equals a normalised gold answer; ``contains``: a normalised
gold answer occurs as a contiguous run of parts inside the normalised answer."""

DEFAULT_STRIP_WORDS: tuple[str, ...] = (
    "final answer",
    "answer",
    "there are",
    "there is",
    "clusters",
    "cluster",
    "rooms",
    "room",
    "zones",
    "zone",
    "fields",
    "field",
    "the",
)


class GoldCheckConfig(BaseModel):
    """How the gold check extracts, normalises and matches answers (defaults tuned for CogEval)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    answer_pattern: str = r"(?i)\banswer(?:\s+is)?\s*:\s*([^\n]*?\S)\s*(?:\.(?:\s|$)|\n|$)"
    """Regex with exactly one group capturing the final answer; the LAST match in the
    response is used. The default takes the text after the last ``Answer:`` (or ``answer
    is:``) up to the end of its line or its first sentence (``. `` then more text), or the
    next non-empty line when ``Answer:`` ends its line."""
    fallback: Fallback = "whole"
    """What to do when ``answer_pattern`` does not match: ``incorrect``, ``whole`` or ``search``.
    ``whole`` (the default) accepts terse responses such as ``1, 3`` and, with ``exact``
    matching, still rejects any longer text; on CogEval it agrees with GPT-4 slightly more
    often than ``incorrect`` (0.9349 vs 0.9344 of 59,337 scored rows)."""
    whole_max_chars: int = Field(default=400, ge=0)
    """The ``whole`` fallback only considers responses of at most this many characters;
    a longer response without a match is incorrect (no terse final answer is that long,
    and skipping it keeps the check fast)."""
    lowercase: StrictBool = True
    """Compare case-insensitively."""
    strip_chars: str = "*`\"'[](){}.!?:_"
    """Characters removed before matching (markdown emphasis, quotes, brackets, final stops)."""
    strip_words: list[str] = Field(default_factory=lambda: list(DEFAULT_STRIP_WORDS))
    """Filler words and phrases removed as whole words (matched case-insensitively); a
    trailing ``:`` or ``.`` in an entry is optional in the text."""
    separators: str = r",|;|->|=>|→|–|—|-|\band\b|\bthen\b|\bto\b|&"
    """Regex of separators between the parts of an answer; every match becomes ``", "``."""
    match: MatchMode = "exact"
    """``exact`` or ``contains`` (see :data:`MatchMode`)."""
    positive_label: Label = 1
    """The reference label of a correct response (default: the spec's positive label)."""
    negative_label: Label = 0
    """The reference label of an incorrect response (default: the other label of a two-label set)."""

    @field_validator("positive_label", "negative_label", mode="before")
    @classmethod
    def _not_bool(cls, value: Any) -> Any:
        if isinstance(value, bool):
            raise ValueError('true/false are not labels; name a label of label_set, e.g. 1 or "yes"')
        return value


_FIX_REGEX = "write a valid Python regular expression (escape literal ( ) [ ] . * + ? with a backslash)"
_FIX_GROUPS = "capture the answer with one (...) group and make the others non-capturing: (?:...)"


def _compile(pattern: str, field: str, *, groups: int | None = None) -> re.Pattern[str]:
    where = f"gold_check.{field}"
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise GoldCheckError(
            f"the regex {pattern!r} does not compile: {exc}", where=where, fix=_FIX_REGEX
        ) from exc
    if groups is not None and compiled.groups != groups:
        msg = f"the regex {pattern!r} has {compiled.groups} capture groups, expected {groups}"
        raise GoldCheckError(msg, where=where, fix=_FIX_GROUPS)
    return compiled


class GoldCheck:
    """Reference labels by regex extraction, normalisation and matching.

    Args:
        config: The check's settings; defaults suit CogEval.

    Raises:
        GoldCheckError: A configured regex does not compile or has the wrong number of groups.
    """

    def __init__(self, config: GoldCheckConfig | None = None) -> None:
        self.config = config or GoldCheckConfig()
        cfg = self.config
        self._answer = _compile(cfg.answer_pattern, "answer_pattern", groups=1)
        self._separators = _compile(cfg.separators, "separators")
        words = sorted({w.strip() for w in cfg.strip_words if w.strip()}, key=len, reverse=True)
        alternatives = [re.escape(w.rstrip(":.")) + r"[:.]?" for w in words]
        filler = r"(?<!\w)(?:" + "|".join(alternatives) + r")(?![^\W\d])" if alternatives else r"(?!x)x"
        self._filler = _compile(filler, "strip_words")
        self._strip = str.maketrans("", "", cfg.strip_chars)
        self._gold_cache: dict[str, tuple[str, ...]] = {}

    def extract(self, response: str) -> str | None:
        """The final answer in ``response``: group 1 of the last match of ``answer_pattern``.

        Returns:
            The captured text, stripped; ``None`` when the pattern does not match.
        """
        last: re.Match[str] | None = None
        for last in self._answer.finditer(response):  # noqa: B007 - we want the last match
            pass
        if last is None or last.group(1) is None:
            return None
        return last.group(1).strip()

    def normalise(self, text: str) -> str:
        """Normalise an answer: case, filler words, stripped characters, separators, whitespace.

        Filler words are removed before ``strip_chars`` so that ``Answer:`` is recognised
        with its colon, and separators are unified last, so ``Room 1 -> Room 3.`` gives ``1, 3``.
        """
        if self.config.lowercase:
            text = text.lower()
        text = self._filler.sub(" ", text)
        text = text.translate(self._strip)
        text = self._filler.sub(" ", text)
        parts = [" ".join(p.split()) for p in self._separators.split(text)]
        return ", ".join(p for p in parts if p)

    def _parts(self, text: str) -> tuple[str, ...]:
        normalised = self.normalise(text)
        return tuple(normalised.split(", ")) if normalised else ()

    def _gold_parts(self, gold: str) -> tuple[str, ...]:
        parts = self._gold_cache.get(gold)
        if parts is None:
            parts = self._gold_cache[gold] = self._parts(gold)
        return parts

    def matched_gold(self, response: str, gold_answers: list[str]) -> tuple[str | None, str | None]:
        """The answer used for matching and the first gold answer it matches.

        Returns:
            ``(answer, gold)``: ``answer`` is the extracted answer (or the whole response
            under the ``whole``/``search`` fallbacks, ``None`` under ``incorrect``);
            ``gold`` is the matched gold answer or ``None``.
        """
        answer = self.extract(response)
        mode = self.config.match
        if answer is None:
            if self.config.fallback == "incorrect":
                return None, None
            if self.config.fallback == "search":
                return response, self._search(response, gold_answers)
            if len(response) > self.config.whole_max_chars:
                return None, None
            answer = response
        got = self._parts(answer)
        for gold in gold_answers:
            want = self._gold_parts(gold)
            if not want:
                continue
            if mode == "exact" and got == want:
                return answer, gold
            n = len(want)
            if mode == "contains" and any(got[i : i + n] == want for i in range(len(got) - n + 1)):
                return answer, gold
        return answer, None

    def _search(self, response: str, gold_answers: list[str]) -> str | None:
        """The first gold answer whose normalised form occurs, on word boundaries, in the
        normalised response (``1, 3`` occurs in ``the path is 1, 3 now``, not in ``1, 2, 3``)."""
        text = self.normalise(response)
        for gold in gold_answers:
            want = ", ".join(self._gold_parts(gold))
            if want and re.search(r"(?<!\w)" + re.escape(want) + r"(?!\w)", text):
                return gold
        return None

    def reference_label(self, item: Item) -> Label | None:
        """The reference label of ``item``.

        Returns:
            ``item.gold_label`` when set; ``None`` when the item has no gold answers;
            otherwise ``positive_label`` if the response matches a gold answer, else
            ``negative_label``.
        """
        if item.gold_label is not None:
            return item.gold_label
        if not item.gold_answers:
            return None
        _, gold = self.matched_gold(item.response, item.gold_answers)
        return self.config.positive_label if gold is not None else self.config.negative_label

    def explain(self, item: Item) -> dict[str, Any]:
        """How the reference label of ``item`` came about, for reports and the reviewer.

        Returns:
            A JSON-able dict: ``extracted`` (the pattern's capture or ``None``),
            ``answer`` (the text matched), ``normalised_answer``, ``normalised_gold``
            (one per gold answer), ``matched_gold``, ``source`` (``gold_label``,
            ``regex``, ``fallback`` or ``none``) and ``label``.
        """
        extracted = self.extract(item.response)
        answer, gold = self.matched_gold(item.response, item.gold_answers)
        if item.gold_label is not None:
            source = "gold_label"
        elif not item.gold_answers:
            source = "none"
        else:
            source = "regex" if extracted is not None else "fallback"
        return {
            "extracted": extracted,
            "answer": answer,
            "normalised_answer": self.normalise(answer) if answer is not None else None,
            "normalised_gold": [self.normalise(g) for g in item.gold_answers],
            "matched_gold": gold,
            "source": source,
            "label": self.reference_label(item),
        }
