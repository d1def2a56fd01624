"""Issue 41 items 0 and 1: the level of the test of "better" and of a whole run's decisions, and the
read-out's power on stored HaluEval calls. Reads stored calls only (no server, no call sent).

1. ``null``: the level of one test for a pure threshold move toward the majority label that leaves
   the true balanced accuracy unchanged (a share ``q`` of each label moved), old test (the paired
   sign-flip) against the new one (:func:`allure.metrics.better_p`), at n = 100 with 14 positives and
   n = 300 with 60; then the run-level false-adoption rate in the null world of
   ``decision_world.py`` (3 passes, calibration and read-out ``auto``, the guard), under the old
   rule (every decision at alpha with the old test: Holm over the modes, one test for the read-out
   and one per memory version) and the new one (the run's :class:`allure.metrics.DecisionFamily`).
   ``composite``: nulls where the moves' means agree by label but their spread does not.
2. ``power``: 100 draws of 100 audit items (14 "yes", 86 "no") from the 600 HaluEval items of the
   stored zero-shot pass (``benchmarks/results/icl_strategies.halueval.db.gz``, study
   ``halueval-zero-shot``). As the loop's ``readout = "auto"`` with ``[loop] folds = 5``: each fold's
   items labelled by the logistic read-out on ``z`` (the label log-odds) fitted on the other folds
   (:func:`allure.metrics.fit_readout`, folds by :func:`allure.dataset.cross_folds`), then the
   out-of-fold labels tested against the parsed ones: adopted when the test's p is below the
   level. Shares are given at alpha 0.05 and at the read-out's level in the default run's family.

Usage::

    .venv/bin/python benchmarks/bench_decisions.py [--runs 2000] [--draws 100] [--part null,composite,power]
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import decision_world as world  # noqa: E402

from allure.dataset import cross_folds  # noqa: E402
from allure.metrics import (  # noqa: E402
    DecisionFamily,
    better_p,
    fit_readout,
    holm_adjust,
    log_odds,
    objective_value,
    sign_flip_p,
    stratified_p,
)

RESULTS = Path(__file__).resolve().parent / "results"
ALPHA = 0.05


def _mc(rate: float, runs: int) -> str:
    return f"{rate:.3f} +- {math.sqrt(max(rate * (1 - rate), 1e-12) / runs):.3f}"


def _old_run(rng: np.random.Generator, w: world.World, passes: int) -> bool:
    """The rule before issue 41: every decision at alpha, the paired sign-flip test (Holm over modes)."""

    def old_p(refs: list[str], a: list[str], b: list[str]) -> float:
        codes = {"yes": 0, "no": 1}
        t, ca, cb = (np.array([codes[x] for x in v]) for v in (refs, a, b))
        d = objective_value(refs, b, labels=world.LABELS) - objective_value(refs, a, labels=world.LABELS)  # type: ignore[operator]
        return sign_flip_p(t, ca, cb) if d > 0 else 1.0

    def one_pass(parsed: list[str]) -> tuple[list[str], bool]:
        modes = {m: world.moved(parsed, w.u, mv) for m, mv in world.MOVES.items()}
        ps = {m: old_p(w.refs, parsed, lab) for m, lab in modes.items()}
        adj = dict(zip(ps, holm_adjust(list(ps.values())), strict=True))
        shown = [m for m in modes if adj[m] < ALPHA]
        labels = (
            modes[max(shown, key=lambda m: objective_value(w.refs, modes[m], labels=world.LABELS) or 0)]
            if shown
            else parsed
        )
        ro = world.moved(labels, w.u, world.READOUT)
        if old_p(w.refs, labels, ro) < ALPHA:
            return ro, True
        return labels, bool(shown)

    active, adopted = one_pass(w.parsed)
    y = np.array(w.refs, dtype=object)
    for _ in range(2, passes + 1):
        labels, _chosen = one_pass(world._judge(rng, y, w.u))
        if old_p(w.refs, active, labels) >= ALPHA:
            break
        active, adopted = labels, True
    return adopted


def null_part(runs: int) -> list[str]:
    out = ["## Null: a threshold move toward the majority label, true balanced accuracy unchanged", ""]
    out.append(
        f"One test, {runs} draws per row; rejection rate at alpha {ALPHA} (+- one Monte Carlo standard error)."
    )
    out += [
        "",
        "| n | positives | moved share q | old: paired sign-flip | new: better_p |",
        "|---|---|---|---|---|",
    ]
    for n, n_pos in ((100, 14), (300, 60)):
        for q in (0.03, 0.05, 0.08, 0.12, 0.2):
            rng = np.random.default_rng(1)
            draws = [world.threshold_move(rng, n, n_pos, q) for _ in range(runs)]
            old = sum(sign_flip_p(t, a, b) < ALPHA for t, a, b in draws) / runs
            new = sum(max(stratified_p(t, a, b)[0], sign_flip_p(t, a, b)) < ALPHA for t, a, b in draws) / runs
            out.append(f"| {n} | {n_pos} | {q:g} | {_mc(old, runs)} | {_mc(new, runs)} |")
            print(out[-1], flush=True)
    passes = 3
    family = world.family_for(ALPHA, passes)
    out += [
        "",
        f"Run level: the null world of `decision_world.py`, {passes} passes; {family.describe()}.",
        "",
    ]
    out += [
        "| n | positives | runs | old rule: adopts anything | new rule: adopts anything |",
        "|---|---|---|---|---|",
    ]
    for n, n_pos in ((100, 14), (300, 60)):
        rng = np.random.default_rng(2)
        old = sum(_old_run(rng, world.draw_world(rng, n, n_pos), passes) for _ in range(runs)) / runs
        new = world.false_adoption_rate(n, n_pos, runs, alpha=ALPHA, passes=passes, seed=3)
        out.append(f"| {n} | {n_pos} | {runs} | {_mc(old, runs)} | {_mc(new, runs)} |")
        print(out[-1], flush=True)
    return out


def _noise(
    rng: np.random.Generator, n: int, n_pos: int, up: tuple[float, float], down: tuple[float, float]
) -> tuple[np.ndarray, ...]:
    """Codes (0: minority): B moves an item A answered 1 to 0 with probability ``up[label]`` and one
    A answered 0 to 1 with ``down[label]``; equal mean moves per label: the true balanced accuracy unchanged."""
    t = np.array([0] * n_pos + [1] * (n - n_pos))
    a = rng.integers(0, 2, n)
    u = rng.random(n)
    to0 = (a == 1) & (u < np.where(t == 0, up[0], up[1]))
    to1 = (a == 0) & (u < np.where(t == 0, down[0], down[1]))
    return t, a, np.where(to0, 0, np.where(to1, 1, a))


def composite_part(runs: int) -> list[str]:
    """Nulls where the moves' means agree by label but not their spread: the label permutation alone
    is not exact there, the sign-flip test is when the moves are symmetric noise."""
    out = ["## Null: moves with equal means by label, unequal spread (why the larger of two p-values)", ""]
    out += [
        "| n | positives | minority items: P(to minority), P(to majority) | majority items: the same | sign-flip | label permutation | better_p (larger) |",
        "|---|---|---|---|---|---|---|",
    ]
    cases = (
        ((0.2, 0.2), (0.0, 0.0)),
        ((0.0, 0.0), (0.2, 0.2)),
        ((0.3, 0.1), (0.2, 0.0)),
        ((0.1, 0.1), (0.05, 0.05)),
    )
    for n, n_pos in ((100, 14), (300, 60)):
        for (up0, down0), (up1, down1) in cases:
            rng = np.random.default_rng(3)
            draws = [_noise(rng, n, n_pos, (up0, up1), (down0, down1)) for _ in range(runs)]
            sf = np.array([sign_flip_p(t, a, b) for t, a, b in draws])
            lp = np.array([stratified_p(t, a, b)[0] for t, a, b in draws])
            rates = [float(np.mean(x < ALPHA)) for x in (sf, lp, np.maximum(sf, lp))]
            out.append(
                f"| {n} | {n_pos} | {up0:g}, {down0:g} | {up1:g}, {down1:g} | "
                + " | ".join(_mc(r, runs) for r in rates)
                + " |"
            )
            print(out[-1], flush=True)
    return out


def _halueval() -> tuple[list[str], dict[str, str], dict[str, str | None], dict[str, float]]:
    """The stored zero-shot pass: item ids, references, parsed labels, label log-odds ``z``."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "halueval.db"
        db.write_bytes(gzip.decompress((RESULTS / "icl_strategies.halueval.db.gz").read_bytes()))
        con = sqlite3.connect(db)
        rows = con.execute(
            "SELECT v.item_id, i.reference_label, c.label, c.prob_positive FROM verdicts v "
            "JOIN items i ON i.run_id = v.run_id AND i.item_id = v.item_id JOIN calls c ON c.id = v.call_id "
            "WHERE v.run_id = 'halueval-zero-shot' ORDER BY v.item_id"
        ).fetchall()
        con.close()
    ids = [r[0] for r in rows]
    ref = {r[0]: json.loads(r[1]) for r in rows}
    parsed = {r[0]: None if r[2] is None else json.loads(r[2]) for r in rows}
    z = {r[0]: lo if (lo := log_odds(r[3])) is not None else 0.0 for r in rows}
    return ids, ref, parsed, z


def power_part(draws: int) -> list[str]:
    ids, ref, parsed, z = _halueval()
    yes = [i for i in ids if ref[i] == "yes"]
    no = [i for i in ids if ref[i] == "no"]
    family = DecisionFamily.declare(ALPHA, calibration_modes=3, readout=True, memory_versions=3)
    levels = {
        "alpha 0.05 alone": ALPHA,
        f"the default run's read-out level {family.level('readout'):.4f}": family.level("readout"),
    }
    old_p: list[float] = []
    new_p: list[float] = []
    deltas: list[float] = []
    started = time.time()
    for d in range(draws):
        rng = np.random.default_rng(1000 + d)
        audit = [str(x) for x in rng.choice(yes, 14, replace=False)] + [
            str(x) for x in rng.choice(no, 86, replace=False)
        ]
        refs = {i: ref[i] for i in audit}
        folds = cross_folds(refs, dict.fromkeys(audit, "audit"), 5, d)
        oof: dict[str, str | None] = {}
        for j in sorted(set(folds.values())):
            fit = [i for i in audit if folds[i] != j]
            test = [i for i in audit if folds[i] == j]
            fitted = fit_readout(np.array([[z[i]] for i in fit]), [refs[i] for i in fit], ("z",), seed=d)
            pred = fitted.predict(np.array([[z[i]] for i in test])) if fitted else None
            oof.update({i: str(pred[k]) if pred else parsed[i] for k, i in enumerate(test)})
        y = [refs[i] for i in audit]
        a = [parsed[i] for i in audit]
        b = [oof[i] for i in audit]
        delta = (objective_value(y, b, labels=["yes", "no"]) or 0.0) - (
            objective_value(y, a, labels=["yes", "no"]) or 0.0
        )
        deltas.append(delta)
        codes = {"yes": 0, "no": 1}
        t, ca, cb = (np.array([codes.get(str(x), 2) for x in v]) for v in (y, a, b))
        old_p.append(sign_flip_p(t, ca, cb) if delta > 0 else 1.0)
        new_p.append(better_p(y, a, b, labels=["yes", "no"]) if delta > 0 else 1.0)
    out = [
        "## Power: the HaluEval read-out, 100 audit items (14 'yes')",
        "",
        f"{draws} draws from the 600 items of the stored zero-shot pass ({time.time() - started:.0f} s); "
        f"out-of-fold balanced accuracy gain of the read-out: mean {np.mean(deltas):+.3f}, "
        f"median {np.median(deltas):+.3f}, above 0 in {sum(x > 0 for x in deltas)} draws.",
        "",
        "| level | old test: adopted | new test: adopted |",
        "|---|---|---|",
    ]
    for name, level in levels.items():
        out.append(
            f"| {name} | {sum(p < level for p in old_p)} / {draws} | {sum(p < level for p in new_p)} / {draws} |"
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--draws", type=int, default=100)
    parser.add_argument("--part", default="null,composite,power")
    parser.add_argument("--out", default=str(RESULTS / "decisions.md"))
    args = parser.parse_args()
    parts = set(args.part.split(","))
    out = ["# Decisions: the level of the test of 'better' and of a run (issue 41 items 0, 1)", ""]
    out.append("Written by `benchmarks/bench_decisions.py` (stored calls only; no call sent).")
    out.append("")
    if "null" in parts:
        out += [*null_part(args.runs), ""]
    if "composite" in parts:
        out += [*composite_part(args.runs), ""]
    if "power" in parts:
        out += [*power_part(args.draws), ""]
    text = "\n".join(out)
    print(text)
    Path(args.out).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
