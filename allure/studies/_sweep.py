"""A sweep's summary per size: mean, standard deviation and range of a metric over the repeats."""

from __future__ import annotations

import statistics
from collections import defaultdict

from allure.audits._model import ArmResult, SweepPoint

SWEEP_METRICS = ("accuracy", "f1", "kappa", "auc")
"""The metrics summarised per size."""


def summarise_sweep(arms: list[ArmResult]) -> list[SweepPoint]:
    """One :class:`SweepPoint` per (size, metric), sizes ascending; undefined values are skipped."""
    by_size: dict[int, list[ArmResult]] = defaultdict(list)
    for r in arms:
        if r.arm.size is not None:
            by_size[r.arm.size].append(r)
    out = []
    for size in sorted(by_size):
        for metric in SWEEP_METRICS:
            values = [getattr(r.metrics, metric) for r in by_size[size]]
            vals: list[float | None] = [None if v is None else float(v) for v in values]
            defined = [v for v in vals if v is not None]
            out.append(
                SweepPoint(
                    size=size,
                    repeats=len(vals),
                    metric=metric,
                    mean=statistics.fmean(defined) if defined else None,
                    sd=statistics.stdev(defined) if len(defined) >= 2 else None,
                    low=min(defined) if defined else None,
                    high=max(defined) if defined else None,
                    values=vals,
                )
            )
    return out
