"""Parse the evaluator's label from its output, and the label probability from logprobs.

Output that does not parse is ``unparsed``: it is counted, never coerced to a label.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any


class LabelParser:
    """Finds the label with a regex (the last match wins) and keeps it only if it is in the label set."""

    def __init__(self, pattern: str, label_set: Sequence[int]) -> None:
        self.regex = re.compile(pattern)
        self.label_set = [int(x) for x in label_set]

    def parse(self, text: str) -> int | None:
        """The label in ``text``, or ``None`` if there is none (or it is outside the label set)."""
        matches = list(self.regex.finditer(text or ""))
        if not matches:
            return None
        raw = matches[-1].group(1).strip()
        try:
            value = int(raw)
        except ValueError:
            return None
        return value if value in self.label_set else None


def prob_positive(logprobs: Any, label: int | None, positive: int, negative: int) -> float | None:
    """P(positive label) from OpenAI-style token logprobs at the label's token.

    Looks for the token that spells ``label`` and renormalises the probability mass of the
    positive and negative label tokens among its ``top_logprobs``:
    ``p = e^{lp(pos)} / (e^{lp(pos)} + e^{lp(neg)})``. Returns ``None`` when the server sent no
    logprobs or the label token is not found.
    """
    if label is None or not logprobs:
        return None
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not content:
        return None
    target = str(label)
    for tok in reversed(content):  # the label is the last digit the model wrote
        if str(tok.get("token", "")).strip() != target:
            continue
        mass = {positive: 0.0, negative: 0.0}
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
