"""Scripted verdicts for the run-level decision simulation (issue 41 items 0 and 1).

A *world* gives every audit item a reference label and the judge's parsed label; a run then takes
the loop's decisions with the library's own functions (:class:`allure.metrics.DecisionFamily`,
:func:`allure.metrics.choose_calibration`, :func:`allure.metrics.significantly_better`) in the order
the loop takes them: pass 1 chooses a calibration mode and tests the read-out (adoptions); each
later pass (a new memory version) makes its own choices and the guard tests the result against the
active judge, the loop stopping at the first refusal.

In the **null world** nothing can help: every candidate is a *threshold move* that changes the same
share of each label (the true balanced accuracy unchanged: the least favourable null of "not
better"), and a new memory version's judge is as good as zero-shot (its labels redrawn from the
same confusion). An item's place relative to the judge's threshold is ``u ~ U(0, 1)``, independent
of its label: the judge says the minority label for ``u < 0.15`` (``contextual``, ``prior`` and the
read-out move some of these to the majority label) and the majority label for ``0.15 <= u < 0.25``
(``offset`` and the read-out move some of these to the minority label).

In the **effect world** the judge is biased toward the minority label: its band ``u < 0.15`` holds
majority items only (their minority-label answers are wrong), so ``prior`` and the read-out, which
move them back, are truly better.

Used by ``benchmarks/bench_decisions.py`` and ``tests/metrics/test_decision_family.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from allure.metrics import DecisionFamily, choose_calibration, significantly_better

LABELS = ["yes", "no"]
"""``yes``: the minority label; ``no``: the majority label."""

MOVES: dict[str, tuple[tuple[float, float, str], ...]] = {
    "contextual": ((0.0, 0.05, "no"),),
    "prior": ((0.0, 0.12, "no"),),
    "offset": ((0.15, 0.20, "yes"),),
}
"""Each calibration mode: the bands of ``u`` whose labels it moves, and to which label."""

READOUT = ((0.0, 0.08, "no"), (0.15, 0.22, "yes"))
"""The read-out's moves (both ways)."""


@dataclass(frozen=True)
class World:
    """One draw of audit items: references, the band variable ``u``, and the parsed labels."""

    refs: list[str]
    u: np.ndarray
    parsed: list[str]


def draw_world(rng: np.random.Generator, n: int, n_pos: int, *, effect: bool = False) -> World:
    """``n`` items, ``n_pos`` of them ``yes``; the judge answers ``yes`` to 70 % of the ``yes``
    items and 30 % of the ``no`` items outside its bands (module docstring)."""
    y = np.array(["yes"] * n_pos + ["no"] * (n - n_pos), dtype=object)
    u = rng.random(n)
    if effect:  # the yes-band holds "no" items only: the judge's "yes" there is wrong
        u = np.where((y == "yes") & (u < 0.15), 0.15 + 0.85 * rng.random(n), u)
    return World([str(x) for x in y], u, _judge(rng, y, u))


def _judge(rng: np.random.Generator, y: np.ndarray, u: np.ndarray) -> list[str]:
    """The judge's labels: ``yes`` in its lower band, ``no`` in its upper band, else its confusion."""
    says_yes = rng.random(len(y)) < np.where(y == "yes", 0.7, 0.3)
    out = np.where(u < 0.15, "yes", np.where(u < 0.25, "no", np.where(says_yes, "yes", "no")))
    return [str(x) for x in out]


def threshold_move(rng: np.random.Generator, n: int, n_pos: int, q: float) -> tuple[np.ndarray, ...]:
    """Codes of one test's null (0: the minority label): a share ``q`` of each label, answered 0 by A,
    moved to 1 by B; the true balanced accuracy unchanged."""
    t = np.array([0] * n_pos + [1] * (n - n_pos))
    move = rng.random(n) < q
    a = np.where(move, 0, np.where(rng.random(n) < np.where(t == 0, 0.7, 0.3), 0, 1))
    return t, a, np.where(move, 1, a)


def moved(labels: list[str], u: np.ndarray, moves: tuple[tuple[float, float, str], ...]) -> list[str]:
    """``labels`` with every item in a band of ``moves`` given that band's label."""
    out = list(labels)
    for lo, hi, to in moves:
        for i in np.flatnonzero((u >= lo) & (u < hi)):
            out[i] = to
    return out


def family_for(alpha: float, passes: int) -> DecisionFamily:
    """The family a run with calibration ``auto`` (3 modes), read-out ``auto`` and ``passes``
    passes with the guard on declares (as :func:`allure.config.decision_family` does)."""
    return DecisionFamily.declare(alpha, calibration_modes=3, readout=True, memory_versions=passes)


def _pass(world: World, parsed: list[str], family: DecisionFamily) -> tuple[list[str], list[str]]:
    """One pass's own choices on ``parsed``: the calibration mode, then the read-out; the labels
    and what it adopted (``prior``, ``read-out``)."""
    modes = {"none": parsed} | {m: moved(parsed, world.u, mv) for m, mv in MOVES.items()}
    pick = choose_calibration(modes, world.refs, labels=LABELS, alpha=family.level("calibration"))
    labels = modes[pick.mode]
    adopted = [] if pick.mode == "none" else [pick.mode]
    readout = moved(labels, world.u, READOUT)
    d = significantly_better(world.refs, labels, readout, labels=LABELS, alpha=family.level("readout"))
    if d.better:
        return readout, [*adopted, "read-out"]
    return labels, adopted


def run(rng: np.random.Generator, world: World, family: DecisionFamily, passes: int) -> list[str]:
    """The run's adoptions in ``world`` (empty: it kept the zero-shot parsed labels)."""
    active, adopted = _pass(world, world.parsed, family)
    y = np.array(world.refs, dtype=object)
    for p in range(2, passes + 1):
        new_parsed = _judge(rng, y, world.u)  # a memory version as good as zero-shot
        labels, chosen = _pass(world, new_parsed, family)
        d = significantly_better(world.refs, active, labels, labels=LABELS, alpha=family.level("memory"))
        if not d.better:
            break
        active, adopted = labels, [*adopted, f"memory {p}", *chosen]
    return adopted


def false_adoption_rate(
    n: int, n_pos: int, runs: int, *, alpha: float = 0.05, passes: int = 3, seed: int = 0
) -> float:
    """Share of ``runs`` null-world runs that adopt anything."""
    rng = np.random.default_rng(seed)
    family = family_for(alpha, passes)
    return sum(bool(run(rng, draw_world(rng, n, n_pos), family, passes)) for _ in range(runs)) / runs
