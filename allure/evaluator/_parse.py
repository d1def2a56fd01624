"""Parse the evaluator's label from its output, and the label probability from logprobs.

Output that does not parse is ``unparsed``: it is counted, never coerced to a label.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from allure.labels import Label, LabelParser

__all__ = ["LabelParser", "label_probabilities", "label_probs", "prob_positive"]


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
        for alt in tok.get("top_logprobs") or [{"token": tok.get("token"), "logprob": tok.get("logprob")}]:
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
    chosen = content[start]
    alts = chosen.get("top_logprobs") or [{"token": chosen.get("token"), "logprob": chosen.get("logprob")}]
    for alt in alts:
        text = str(alt.get("token", "")).lstrip()
        lp = alt.get("logprob")
        if not text or lp is None:
            continue
        p = math.exp(float(lp))
        if text in mass:  # the whole label, as written (the common case: no search needed)
            mass[text] += p
            continue
        whole = [f for f in forms if text.startswith(f) and not text[len(f)].isalnum()]
        if whole:
            mass[max(whole, key=len)] += p
            continue
        starts = [f for f in forms if f.startswith(text)]
        if len(starts) == 1:
            mass[starts[0]] += p
        elif target in starts:
            mass[target] += p * math.exp(rest)
    total = sum(mass.values())
    if total <= 0:
        return None
    return {f: m / total for f, m in mass.items()}


# -- the same two readings, for every call of a pass ----------------------------------------------------
_MAX_SHAPES = 4096
"""Reply shapes remembered (the memory is emptied when it is full)."""

_positions: dict[tuple[Any, ...], tuple[tuple[int, int] | None, int | None]] = {}
"""(tokens, label) -> the label's span for :func:`label_probs` and its token for :func:`prob_positive`."""

_roles: dict[tuple[Any, ...], tuple[Any, ...]] = {}
"""(alternatives' tokens, label, label forms) -> what each alternative counts for."""

_NO_ROLE = (None, False)


def _remember(memo: dict[tuple[Any, ...], Any], key: tuple[Any, ...], value: Any) -> Any:
    if len(memo) >= _MAX_SHAPES:
        memo.clear()
    memo[key] = value
    return value


def _positions_of(tokens: tuple[Any, ...], target: str) -> tuple[tuple[int, int] | None, int | None]:
    texts = [str(t) for t in tokens]
    last = next((i for i in range(len(texts) - 1, -1, -1) if texts[i].strip() == target), None)
    return _label_start(texts, target), last


def _roles_of(alt_tokens: tuple[Any, ...], target: str, forms: tuple[str, ...]) -> tuple[Any, ...]:
    """What each alternative counts for in :func:`label_probs`: ``(form, times the rest)`` or no form."""
    roles: list[tuple[str | None, bool]] = []
    for token in alt_tokens:
        text = str(token).lstrip()
        if not text:
            roles.append(_NO_ROLE)
        elif text in forms:
            roles.append((text, False))
        elif whole := [f for f in forms if text.startswith(f) and not text[len(f)].isalnum()]:
            roles.append((max(whole, key=len), False))
        elif len(starts := [f for f in forms if f.startswith(text)]) == 1:
            roles.append((starts[0], False))
        elif target in starts:
            roles.append((target, True))
        else:
            roles.append(_NO_ROLE)
    return tuple(roles)


def _alternatives(tok: dict[str, Any]) -> list[dict[str, Any]]:
    return tok.get("top_logprobs") or [{"token": tok.get("token"), "logprob": tok.get("logprob")}]


def label_probabilities(
    logprobs: Any,
    label: Label | None,
    labels: Sequence[Label],
    positive: Label | None,
    negative: Label | None,
) -> tuple[float | None, dict[str, float] | None]:
    """``(prob_positive(...), label_probs(...))`` for one reply: the same numbers, bit for bit, at a
    fraction of the cost for a pass's thousands of replies.

    What depends only on the reply's tokens (where the label is, which label each alternative
    spells) is worked out once per distinct shape of reply and remembered: a judge that answers
    in a fixed format writes a handful of shapes whatever its probabilities. Only the sums of
    ``e^logprob`` are computed per reply. A reply that is not the usual JSON shape (no dicts, a
    token that is not a string) is read by the two functions themselves.
    """
    if label is None or not logprobs or not isinstance(logprobs, dict):
        return None, None
    content = logprobs.get("content")
    if not content:
        return None, None
    target = str(label)
    try:
        tokens = tuple([t.get("token", "") for t in content])
        key = (tokens, target)
        span, last = _positions.get(key) or _remember(_positions, key, _positions_of(tokens, target))
        probs = None if span is None else _label_mass(content, span, target, labels)
        pos = (
            None
            if positive is None or negative is None or last is None
            else _pos_mass(content[last], positive, negative)
        )
    except (AttributeError, TypeError):  # not the usual shape (or unhashable tokens): the plain readings
        return prob_positive(logprobs, label, positive, negative), label_probs(logprobs, label, labels)
    return pos, probs


def _label_mass(
    content: list[dict[str, Any]], span: tuple[int, int], target: str, labels: Sequence[Label]
) -> dict[str, float] | None:
    start, end = span
    forms = tuple([str(lab) for lab in labels])
    alts = _alternatives(content[start])
    alt_tokens = tuple([alt.get("token", "") for alt in alts])
    key = (alt_tokens, target, forms)
    roles = _roles.get(key) or _remember(_roles, key, _roles_of(alt_tokens, target, forms))
    mass = dict.fromkeys(forms, 0.0)
    rest: float | None = None
    for alt, (form, times_rest) in zip(alts, roles, strict=True):
        lp = alt.get("logprob")
        if form is None or lp is None:
            continue
        p = math.exp(float(lp))
        if times_rest:
            if rest is None:
                rest = sum(float(content[j].get("logprob") or 0.0) for j in range(start + 1, end + 1))
            p = p * math.exp(rest)
        mass[form] += p
    total = sum(mass.values())
    if total <= 0:
        return None
    return {f: m / total for f, m in mass.items()}


def _pos_mass(tok: dict[str, Any], positive: Label, negative: Label) -> float | None:
    pos_form, neg_form = str(positive), str(negative)
    mass_pos = mass_neg = 0.0
    for alt in _alternatives(tok):
        lp = alt.get("logprob")
        if lp is None:
            continue
        text = str(alt.get("token", "")).strip()
        if text == pos_form:
            mass_pos += math.exp(float(lp))
        if text == neg_form:
            mass_neg += math.exp(float(lp))
    total = mass_pos + mass_neg
    if total <= 0:
        return None
    return mass_pos / total
