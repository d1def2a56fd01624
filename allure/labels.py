"""Label vocabularies: which labels an evaluator may give, how they are written, and how to read them back.

A label set holds integers (``[0, 1]``, ``[1, 2, 3, 4, 5]``) or strings (``["A", "B"]``,
``["yes", "no"]``); each label may have synonyms, forms of the label an evaluator or a dataset
writes (``"Output (a)"`` for ``A``). :class:`LabelVocabulary` resolves any such text to its
label; :func:`default_label_pattern` builds the regex that finds a label in an evaluator's
output from the prompt set's assistant template (``"score: {label}"`` gives ``score:\\s*(0|1)``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Label = int | str
"""A label: an integer (a score, a class number) or a string (a class name, ``"A"``)."""

_QUOTES = "*`\"'“”‘’[]().:;!?"
"""Characters around a label that do not change it (markdown emphasis, quotes, brackets, stops)."""


def _fold(text: str) -> str:
    """Case-folded text without surrounding quote, bracket and stop characters and inner runs of space."""
    return " ".join(text.strip().strip(_QUOTES).strip().casefold().split())


class LabelVocabulary:
    """A label set with synonyms: resolves text to a label (exact, then case- and quote-insensitive).

    Args:
        labels: The labels, all integers or all strings.
        synonyms: Extra forms per label, keyed by the label or its string form (TOML keys are strings).
    """

    def __init__(self, labels: Sequence[Label], synonyms: Mapping[Any, Iterable[str]] | None = None) -> None:
        self.labels: list[Label] = list(labels)
        self._exact: dict[str, Label] = {str(lab): lab for lab in self.labels}
        self._folded: dict[str, Label] = {}
        for lab in self.labels:
            self._folded.setdefault(_fold(str(lab)), lab)
        self.synonyms: dict[Label, list[str]] = {lab: [] for lab in self.labels}
        for key, forms in (synonyms or {}).items():
            found = self._exact.get(str(key))
            if found is None:
                continue
            for form in forms:
                self.synonyms[found].append(form)
                self._folded.setdefault(_fold(form), found)

    @property
    def is_int(self) -> bool:
        """True when the labels are integers."""
        return all(isinstance(lab, int) for lab in self.labels)

    def forms(self) -> list[str]:
        """Every written form (labels and synonyms), longest first (for a regex alternation)."""
        out = {str(lab) for lab in self.labels}
        for forms in self.synonyms.values():
            out.update(f.strip() for f in forms if f.strip())
        return sorted(out, key=lambda s: (-len(s), s))

    def resolve(self, value: Any) -> Label | None:
        """The label ``value`` names, or ``None``.

        Integers and integral floats match integer labels (``1.0`` is ``1``); text matches a
        label or a synonym exactly, then ignoring case, surrounding quotes, brackets and stops.
        """
        if value is None or isinstance(value, bool):
            return None if value is None else self.resolve(int(value))
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, int):
            return value if value in self.labels else self._exact.get(str(value))
        text = str(value).strip()
        if text in self._exact:
            return self._exact[text]
        found = self._folded.get(_fold(text))
        if found is not None:
            return found
        if self.is_int:
            try:
                number = float(text)
            except ValueError:
                return None
            if number.is_integer() and int(number) in self.labels:
                return int(number)
        return None


POSITIVE_WORDS = (
    "yes",
    "true",
    "correct",
    "pass",
    "passed",
    "good",
    "consistent",
    "faithful",
    "supported",
    "entailment",
    "positive",
    "acceptable",
    "valid",
    "right",
)
"""Words that name the positive class of a two-label string set."""


def guess_positive(labels: Sequence[Label]) -> Label | None:
    """The default positive label: the last of an integer set; of two strings, one in :data:`POSITIVE_WORDS`."""
    if all(isinstance(x, int) for x in labels):
        return labels[-1]
    if len(labels) == 2:
        for lab in labels:
            if str(lab).strip().lower() in POSITIVE_WORDS:
                return lab
    return None


def label_list(labels: Iterable[Label]) -> str:
    """Labels as written in a message: ``0, 1`` or ``"A", "B"``."""
    return ", ".join(json.dumps(lab) if isinstance(lab, str) else str(lab) for lab in labels)


def default_label_pattern(assistant_template: str, vocab: LabelVocabulary) -> str:
    """The regex that finds a label in an evaluator's output, built from the answer format.

    The text of ``assistant_template`` before ``{label}`` (its last line) becomes a literal,
    case-insensitive prefix (whitespace flexible), followed by optional emphasis or quotes and
    one group that alternates every label and synonym (longest first), not followed by a word
    character. ``"score: {label}"`` with ``[0, 1]`` gives ``(?i)score:\\s*[*`"'(\\[]*(1|0)(?!\\w)``.
    With no text before ``{label}`` the group alone is the pattern.
    """
    head = assistant_template.split("{label}", 1)[0].rsplit("\n", 1)[-1]
    prefix = r"\s*".join(re.escape(part) for part in head.split()) if head.strip() else ""
    alts = "|".join(re.escape(form) for form in vocab.forms())
    opening = "[*`\"'(\\[]*"
    if prefix:
        return f"(?i){prefix}\\s*{opening}({alts})(?!\\w)"
    return f"(?i)(?<!\\w){opening}({alts})(?!\\w)"


class LabelParser:
    """Finds the label in an evaluator's output: the last match of a regex, resolved in the vocabulary.

    When the regex finds nothing, an output that is, as a whole, a label or a synonym (``"B"``,
    ``"Output (a)."``) is that label. Anything else is ``None`` (unparsed, never coerced).
    """

    MAX_REMEMBERED = 4096
    """Short outputs whose label is remembered (a judge that answers in a fixed format writes few)."""
    SHORT = 256
    """Outputs up to this many characters are remembered."""

    def __init__(self, pattern: str, vocab: LabelVocabulary | Sequence[Label]) -> None:
        self.regex = re.compile(pattern)
        self.vocab = vocab if isinstance(vocab, LabelVocabulary) else LabelVocabulary(vocab)
        self._seen: dict[str, Label | None] = {}

    def parse(self, text: str) -> Label | None:
        """The label in ``text``, or ``None``."""
        text = text or ""
        if len(text) > self.SHORT:
            return self._parse(text)
        seen = self._seen
        if text in seen:
            return seen[text]
        if len(seen) >= self.MAX_REMEMBERED:
            seen.clear()
        label = seen[text] = self._parse(text)
        return label

    def _parse(self, text: str) -> Label | None:
        last: re.Match[str] | None = None
        for last in self.regex.finditer(text):  # noqa: B007 - the last match wins
            pass
        if last is not None and last.group(1) is not None:
            found = self.vocab.resolve(last.group(1))
            if found is not None:
                return found
        stripped = text.strip()
        return self.vocab.resolve(stripped) if len(stripped) <= 80 else None


def encode_label(label: Label | None) -> int | str | None:
    """A label as stored in an SQLite column: integers as integers, strings JSON-quoted.

    Quoting keeps the string ``"1"`` a string under SQLite's INTEGER column affinity.
    """
    if label is None or isinstance(label, int):
        return label
    return json.dumps(label)


def decode_label(value: Any) -> Label | None:
    """The inverse of :func:`encode_label` (an unquoted string from an older store stays as is)."""
    if isinstance(value, str) and value.startswith('"'):
        decoded = json.loads(value)
        return decoded if isinstance(decoded, str) else str(decoded)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
