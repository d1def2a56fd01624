"""Parse the evaluator's label from its output, and the label probability from logprobs.

Output that does not parse is ``unparsed``: it is counted, never coerced to a label.
"""

from __future__ import annotations

import math
from typing import Any

from allure.labels import Label, LabelParser

__all__ = ["LabelParser", "prob_positive"]


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
