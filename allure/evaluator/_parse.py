"""Parse the evaluator's label from its output, and the label probability from logprobs.

Output that does not parse is ``unparsed``: it is counted, never coerced to a label.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from allure.labels import Label, LabelParser

__all__ = ["LabelParser", "label_probs", "prob_positive"]


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
