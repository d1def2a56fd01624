"""The provider-drift probe: ask some frozen items again, fresh, and compare with the stored verdicts.

A re-audit whose fingerprint did not change answers every call from the run store, so a provider
that silently changed the model behind the same name would never show. The probe re-asks
``[reaudit] probe`` randomly chosen items with a new *generation* of calls (a part of the cache
key: the fresh answers are stored beside the old ones, never over them) and counts the items
whose fresh label differs from the stored one.

The model's own repeat noise is measured once per fingerprint: the probe items are asked a
second time, fresh, and the share of items whose two fresh labels differ is the noise rate
``q``. Drift is reported when the ``k`` disagreements of ``n`` probe items are more than the
noise explains: the one-sided binomial tail ``P(X >= k | n, p0) < alpha`` with
``p0 = max(q, 1 / (2n))`` (a noise rate measured as 0 on ``n`` items is not taken as exactly 0).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from allure.backends import backend_class
from allure.config import AuditSpec
from allure.labels import Label
from allure.models import Item


class ProbeResult(BaseModel):
    """What the probe of one re-audit found."""

    n: int
    """Items asked again, fresh."""
    disagreements: int
    """Probe items whose fresh label differs from the stored one."""
    noise_rate: float
    """The model's repeat noise: the share of items whose two fresh labels differ."""
    noise_from: str
    """The re-audit that measured the noise (this one, or an earlier one with the same fingerprint)."""
    p_value: float
    """One-sided binomial tail of the disagreements under the noise rate."""
    drift: bool
    """Whether the disagreement is beyond the noise (provider drift: the whole set was run fresh)."""
    item_ids: list[str]
    """The probe items."""

    def sentence(self) -> str:
        """One line for the summary and the terminal."""
        head = "provider drift" if self.drift else "no provider drift"
        return (
            f"{head}: {self.disagreements} of {self.n} probe item(s) asked again fresh disagree with the "
            f"stored verdicts (repeat noise {self.noise_rate:.3f}, measured in {self.noise_from}; "
            f"binomial p = {self.p_value:.4f})" + ("; the whole set was run fresh" if self.drift else "")
        )


def probe_size(spec: AuditSpec) -> int:
    """``[reaudit] probe``, or the backend kind's default (``probe_default``: 20 for a hosted
    ``openai`` model, 0 for replay and embedded)."""
    if spec.reaudit is not None and spec.reaudit.probe is not None:
        return spec.reaudit.probe
    return backend_class(spec.evaluator.kind).probe_default


def probe_items(items: Sequence[Item], n: int, *, seed: str) -> list[Item]:
    """``n`` items drawn at random (seeded by ``seed``, the re-audit id), in the set's order."""
    if n >= len(items):
        return list(items)
    chosen = set(random.Random(seed).sample(range(len(items)), n))
    return [it for i, it in enumerate(items) if i in chosen]


def disagreements(a: Mapping[str, Label | None], b: Mapping[str, Label | None], ids: Sequence[str]) -> int:
    """Items of ``ids`` whose labels differ between ``a`` and ``b`` (unparsed counts as a label)."""
    return sum(1 for i in ids if a.get(i) != b.get(i))


def binomial_tail(k: int, n: int, p: float) -> float:
    """``P(X >= k)`` for ``X ~ Binomial(n, p)`` (exact)."""
    if k <= 0:
        return 1.0
    return float(min(1.0, sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(k, n + 1))))


def judge_drift(k: int, n: int, noise: float, alpha: float) -> tuple[float, bool]:
    """``(p, drift)``: the tail probability of ``k`` disagreements of ``n`` under the noise, and
    whether it is below ``alpha`` with a disagreement rate above the noise."""
    if n == 0:
        return 1.0, False
    p0 = max(noise, 1.0 / (2 * n))
    p = binomial_tail(k, n, min(p0, 1.0))
    return p, p < alpha and k / n > noise
