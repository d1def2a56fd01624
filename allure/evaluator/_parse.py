"""Parse the evaluator's label from its output, and the label probability from logprobs.

Output that does not parse is ``unparsed``: it is counted, never coerced to a label.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from allure.labels import Label, LabelParser

__all__ = ["LabelParser", "ReplyReader", "label_probs", "prob_positive"]


def prob_positive(
    logprobs: Any, label: Label | None, positive: Label | None, negative: Label | None
) -> float | None:
    """P(positive label) from OpenAI-style token logprobs at the label's token.

    Looks for the token that spells ``label`` and renormalises the probability mass of the
    positive and negative label tokens among its ``top_logprobs``:
    ``p = e^{lp(pos)} / (e^{lp(pos)} + e^{lp(neg)})``. Returns ``None`` when the server sent no
    logprobs or the label token is not found.
    """
    if label is None or positive is None or negative is None or not logprobs:
        return None
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not content:
        return None
    target = str(label)
    for tok in reversed(content):  # the label is the last label token the model wrote
        if str(tok.get("token", "")).strip() != target:
            continue
        mass: dict[Label, float] = {positive: 0.0, negative: 0.0}
        for alt in _alternatives(tok):
            text = str(alt.get("token", "")).strip()
            lp = alt.get("logprob")
            if lp is None:
                continue
            for lab in (positive, negative):
                if text == str(lab):
                    mass[lab] += math.exp(float(lp))
        total = mass[positive] + mass[negative]
        if total <= 0:
            return None
        return mass[positive] / total
    return None


def _alternatives(tok: dict[str, Any]) -> list[dict[str, Any]]:
    """A token's ``top_logprobs``, or the token itself when the server sent none."""
    return tok.get("top_logprobs") or [{"token": tok.get("token"), "logprob": tok.get("logprob")}]


def _spelled(text: str, forms: Sequence[str], target: str) -> tuple[str | None, bool]:
    """The label form an alternative's ``text`` (leading space dropped, not empty) counts for in
    :func:`label_probs`, and whether it counts times the probability of the label's other tokens;
    ``(None, False)``: none (see :func:`label_probs` for the rules)."""
    if text in forms:  # the whole label, as written (the common case: no search needed)
        return text, False
    whole = [f for f in forms if text.startswith(f) and not text[len(f)].isalnum()]
    if whole:
        return max(whole, key=len), False
    starts = [f for f in forms if f.startswith(text)]
    if len(starts) == 1:
        return starts[0], False
    if target in starts:
        return target, True
    return None, False


def _label_start(tokens: list[str], target: str) -> tuple[int, int] | None:
    """``(first, last)`` token index of the last place where the output spells ``target`` (a leading
    space or whitespace tokens before it dropped), or ``None``."""
    for i in range(len(tokens) - 1, -1, -1):
        head = tokens[i].lstrip()
        if not head or not ("".join(tokens[i:]).lstrip().startswith(target)):
            continue
        if not (target.startswith(head) or head.startswith(target)):
            continue
        spelled, j = head, i
        while len(spelled) < len(target) and j + 1 < len(tokens):
            j += 1
            spelled += tokens[j]
        return i, j
    return None


def label_probs(logprobs: Any, label: Label | None, labels: Sequence[Label]) -> dict[str, float] | None:
    """Each label's probability at the label's position in the output, from OpenAI-style logprobs.

    The label's first token is found where the output (leading spaces dropped) last spells the
    parsed ``label``, possibly over several tokens. Each alternative in that token's
    ``top_logprobs`` (leading space dropped) counts for the label it spells: the whole label, the
    label followed by punctuation (``A.``), or the start of exactly one label (a multi-token label
    whose first token no other label shares). A first token several labels share counts for the
    parsed label only, times the probability of the rest of its tokens as written. The masses are
    normalised over the label set:

        p(l) = m(l) / sum_k m(k),  m(l) = sum of e^logprob over the alternatives counted for l

    Returns:
        ``{str(label): p}`` for every label, or ``None`` when the server sent no logprobs, the label
        was not parsed, its token is not found, or no alternative spells any label.
    """
    if label is None or not logprobs:
        return None
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not content:
        return None
    tokens = [str(t.get("token", "")) for t in content]
    target = str(label)
    span = _label_start(tokens, target)
    if span is None:
        return None
    start, end = span
    rest = sum(float(content[j].get("logprob") or 0.0) for j in range(start + 1, end + 1))
    forms = [str(lab) for lab in labels]
    mass = dict.fromkeys(forms, 0.0)
    for alt in _alternatives(content[start]):
        text = str(alt.get("token", "")).lstrip()
        lp = alt.get("logprob")
        if not text or lp is None:
            continue
        p = math.exp(float(lp))
        form, times_rest = _spelled(text, forms, target)
        if form is not None:
            mass[form] += p * math.exp(rest) if times_rest else p
    total = sum(mass.values())
    if total <= 0:
        return None
    return {f: m / total for f, m in mass.items()}


# -- the same two readings, for every call of a pass ----------------------------------------------------
class ReplyReader:
    """``(prob_positive(...), label_probs(...))`` of the replies of one label set: the same numbers,
    bit for bit, at a fraction of the cost for a pass's thousands of replies.

    What depends only on a reply's tokens (where the label is, which label each alternative spells)
    is worked out once per distinct shape of reply and remembered: a judge that answers in a fixed
    format writes a handful of shapes whatever its probabilities. Per reply, only the sums of
    ``e^logprob`` are computed, once for both numbers when they read the same alternatives the same
    way (one label token, alternatives that spell a label or none). A reply not of the usual JSON
    shape (a token that is not a string, an entry that is not an object) is read by the two
    functions themselves.

    Args:
        labels: The label set (``label_probs`` normalises over it).
        positive: The positive label (``None``: no ``prob_positive``).
        negative: The negative label of a two-label set (``None``: no ``prob_positive``).
    """

    MAX_SHAPES = 4096
    """Reply shapes remembered (the memory is emptied when it is full)."""

    def __init__(self, labels: Sequence[Label], positive: Label | None, negative: Label | None) -> None:
        self.labels = list(labels)
        self.positive = positive
        self.negative = negative
        self._written = [str(lab) for lab in self.labels]
        self.forms = list(dict.fromkeys(self._written))
        self._index = {f: i for i, f in enumerate(self.forms)}
        self._binary = positive is not None and negative is not None
        self._pos_neg = (str(positive), str(negative))
        both = self._binary and self._pos_neg[0] in self._index and self._pos_neg[1] in self._index
        self._pn_index = (self._index[self._pos_neg[0]], self._index[self._pos_neg[1]]) if both else None
        self._places: dict[tuple[Any, ...], tuple[int, int, int] | None] = {}
        """(tokens, label) -> (label span's first and last token, the token prob_positive reads; -1: none)."""
        self._roles: dict[tuple[Any, ...], tuple[tuple[tuple[int, bool], ...], bool]] = {}
        """(alternatives' tokens, label) -> what each counts for in label_probs (form index or -1, times
        the rest), and whether prob_positive counts each the same (positive's form, negative's, none)."""
        self._sides: dict[tuple[Any, ...], tuple[int, ...]] = {}
        """Alternatives' tokens -> 1 positive, 2 negative, 3 both, 0 neither, for prob_positive."""

    def _remember(self, memo: dict[tuple[Any, ...], Any], key: tuple[Any, ...], value: Any) -> Any:
        if len(memo) >= self.MAX_SHAPES:
            memo.clear()
        memo[key] = value
        return value

    def read(self, logprobs: Any, label: Label | None) -> tuple[float | None, dict[str, float] | None]:
        """``(prob_positive, label_probs)`` of one reply's ``logprobs`` for its parsed ``label``."""
        if label is None or not logprobs or not isinstance(logprobs, dict):
            return None, None
        content = logprobs.get("content")
        if not content:
            return None, None
        target = str(label)
        try:
            return self._read(content, target)
        except (KeyError, AttributeError, TypeError):  # not the usual shape: the definitions read it
            return (
                prob_positive(logprobs, label, self.positive, self.negative),
                label_probs(logprobs, label, self.labels),
            )

    def _read(
        self, content: list[dict[str, Any]], target: str
    ) -> tuple[float | None, dict[str, float] | None]:
        key = (tuple([t["token"] for t in content]), target)
        places = self._places
        place = places[key] if key in places else self._remember(places, key, self._place(key[0], target))
        if place is None:
            return None, None
        start, end, last = place
        if start < 0:
            return (self._positive_mass(content[last]) if self._binary else None), None
        tok = content[start]
        alts = _alternatives(tok)
        akey = (tuple([alt.get("token", "") for alt in alts]), target)
        roles, agree = self._roles.get(akey) or self._remember(
            self._roles, akey, self._roles_of(akey[0], target)
        )
        mass = [0.0] * len(self.forms)
        for alt, (form, times_rest) in zip(alts, roles, strict=True):
            lp = alt.get("logprob")
            if form < 0 or lp is None:
                continue
            p = math.exp(float(lp))
            if times_rest:
                rest = sum(float(content[j].get("logprob") or 0.0) for j in range(start + 1, end + 1))
                p = p * math.exp(rest)
            mass[form] += p
        total = sum(mass)
        probs = None if total <= 0 else {f: m / total for f, m in zip(self.forms, mass, strict=True)}
        if last < 0 or not self._binary:
            return None, probs
        if last == start and agree and self._pn_index is not None:  # the same sums: no second reading
            pos, neg = mass[self._pn_index[0]], mass[self._pn_index[1]]
            both = pos + neg
            return (None if both <= 0 else pos / both), probs
        return self._positive_mass(content[last]), probs

    @staticmethod
    def _place(tokens: tuple[Any, ...], target: str) -> tuple[int, int, int] | None:
        texts = [str(t) for t in tokens]
        last = next((i for i in range(len(texts) - 1, -1, -1) if texts[i].strip() == target), -1)
        span = _label_start(texts, target)
        if span is None and last < 0:
            return None
        start, end = span if span is not None else (-1, -1)
        return start, end, last

    def _roles_of(self, tokens: tuple[Any, ...], target: str) -> tuple[tuple[tuple[int, bool], ...], bool]:
        roles = tuple(self._role(t, target) for t in tokens)
        pn = self._pn_index
        agree = pn is not None and all(
            not rest and self._side(t) == ((form == pn[0]) | (form == pn[1]) << 1)
            for t, (form, rest) in zip(tokens, roles, strict=True)
        )
        return roles, agree

    def _role(self, token: Any, target: str) -> tuple[int, bool]:
        """What an alternative counts for in :func:`label_probs`: (form index, times the rest), -1: none."""
        text = str(token).lstrip()
        if not text:
            return -1, False
        form, times_rest = _spelled(text, self._written, target)
        return (-1, False) if form is None else (self._index[form], times_rest)

    def _positive_mass(self, tok: dict[str, Any]) -> float | None:
        alts = _alternatives(tok)
        key = tuple([alt.get("token", "") for alt in alts])
        sides = self._sides.get(key) or self._remember(self._sides, key, tuple(self._side(t) for t in key))
        pos = neg = 0.0
        for alt, side in zip(alts, sides, strict=True):
            lp = alt.get("logprob")
            if not side or lp is None:
                continue
            if side & 1:
                pos += math.exp(float(lp))
            if side & 2:
                neg += math.exp(float(lp))
        total = pos + neg
        if total <= 0:
            return None
        return pos / total

    def _side(self, token: Any) -> int:
        text = str(token).strip()
        return (text == self._pos_neg[0]) | (text == self._pos_neg[1]) << 1
