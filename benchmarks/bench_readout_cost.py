"""What deciding and applying the learned read-out costs on a pass of N items (issue 41 item 7).

The read-out step of a pass (:class:`allure.passes.readout.PassReadout`, ``readout = "auto"``, the
default, cross-fitted over 5 folds as the loop runs it) is applied to N scripted verdicts of a
two-label judge whose log-odds rank the items backwards (25 % positive, every item an audit item
with a reference): one read-out fitted on every item, one per fold on the other folds, the
out-of-fold labels tested against the parsed ones, every item labelled. Nothing is called and
nothing is stored: what is timed is the step alone, in CPU seconds of this process (all threads).

Printed per case: the first application in this process (the modules the step imports on first use
included, as a user's first pass pays them), then the median of ``--repeat`` more, in seconds and in
microseconds an item, and the decision. The target (issue 41): at most 0.1 s (20 us an item) on
5,000 items. ``--with-reversed`` adds a case with the reversed question's verdicts (``z_reversed``
tried besides ``z``); ``--labels 3`` a case with a three-label judge (a multinomial read-out).

Usage::

    python benchmarks/bench_readout_cost.py [--n 5000] [--repeat 5] [--with-reversed] [--labels 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Mapping

import numpy as np

from allure.models import Item, Verdict


def scripted(
    n: int, labels: tuple[str, ...], seed: int = 0
) -> tuple[list[Item], dict[str, Verdict], dict[str, str]]:
    """``n`` items, their verdicts (label probabilities that rank the references backwards) and references."""
    rng = np.random.default_rng(seed)
    k = len(labels)
    share = [0.25] + [0.75 / (k - 1)] * (k - 1)
    refs = rng.choice(k, size=n, p=share)
    items = [Item(id=f"i{j:05d}", task="t", response=f"r{j}") for j in range(n)]
    verdicts: dict[str, Verdict] = {}
    for j, it in enumerate(items):
        logits = rng.normal(0.0, 1.2, size=k)
        logits[(refs[j] + 1) % k] += 1.0  # the judge leans to the wrong label
        p = np.exp(logits - logits.max())
        p /= p.sum()
        probs = {lab: float(q) for lab, q in zip(labels, p, strict=True)}
        verdicts[it.id] = Verdict(
            item_id=it.id,
            label=labels[int(np.argmax(p))],
            prob_positive=float(p[0]) if k == 2 else None,
            label_probs=probs,
        )
    return items, verdicts, {it.id: labels[int(refs[j])] for j, it in enumerate(items)}


def reversed_verdicts(
    items: list[Item], verdicts: Mapping[str, Verdict], seed: int = 1
) -> dict[str, Verdict]:
    """The reversed question's verdicts read back: the main order's log-odds plus noise."""
    rng = np.random.default_rng(seed)
    out = {}
    for it in items:
        p = verdicts[it.id].prob_positive or 0.5
        z = np.log(p) - np.log1p(-p) + rng.normal(0.0, 1.0)
        q = float(1.0 / (1.0 + np.exp(-z)))
        out[it.id] = Verdict(item_id=it.id, label="1" if q > 0.5 else "0", prob_positive=q)
    return out


def step_for(items: list[Item], refs: dict[str, str], labels: tuple[str, ...]):  # type: ignore[no-untyped-def]
    """The loop's read-out step for these items (``auto``, 5 folds, every item an audit item)."""
    from allure.dataset import cross_folds
    from allure.passes.readout import PassReadout

    ids = frozenset(it.id for it in items)
    return PassReadout(
        mode="auto",
        labels=labels,
        positive=labels[0] if len(labels) == 2 else None,
        fit_ids=ids,
        references=refs,
        dev_ids=frozenset(),
        not_fit=frozenset(),
        folds=cross_folds(refs, {i: "audit" for i in ids}, 5, 0),
    )


TEST_CPU = [0.0]
"""CPU seconds spent in the test of "better" (``allure.metrics.significantly_better``) so far."""


def _timing_the_test() -> None:
    """Count the CPU the step spends in its test of "better" (the decision rule, another concern than the fit)."""
    import allure.metrics as m

    inner = m.significantly_better

    def timed_test(*args, **kwargs):  # type: ignore[no-untyped-def]
        c0 = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            TEST_CPU[0] += time.process_time() - c0

    m.significantly_better = timed_test  # type: ignore[assignment]


def timed(items, verdicts, refs, labels, back):  # type: ignore[no-untyped-def]
    """CPU seconds of one application of the step, of which in its test of "better"; its decision."""
    step = step_for(items, refs, labels)
    extra = {} if back is None else {"back": back}
    TEST_CPU[0] = 0.0
    c0 = time.process_time()
    got = step.read(items, verdicts, **extra)
    return time.process_time() - c0, TEST_CPU[0], got.decision


def case(name: str, n: int, repeat: int, labels: tuple[str, ...], with_back: bool) -> float:
    items, verdicts, refs = scripted(n, labels)
    back = reversed_verdicts(items, verdicts) if with_back else None
    first, first_test, decision = timed(items, verdicts, refs, labels, back)
    got = [timed(items, verdicts, refs, labels, back) for _ in range(repeat)]
    runs, tests = [r[0] for r in got], [r[1] for r in got]
    med = statistics.median(runs) if runs else first
    med_test = statistics.median(tests) if tests else first_test
    print(f"== {name}: {n} items ==")
    print(
        f"  first in this process (imports included): {first:.3f} s CPU ({1e6 * first / n:.1f} us an item), "
        f"of which the test of 'better' {first_test:.3f} s"
    )
    print(
        f"  median of {len(runs)} more: {med:.3f} s CPU ({1e6 * med / n:.1f} us an item; "
        f"min {min(runs, default=first):.3f}, max {max(runs, default=first):.3f}), of which the test of "
        f"'better' {med_test:.3f} s: fitting, features and application {med - med_test:.3f} s "
        f"({1e6 * (med - med_test) / n:.1f} us an item)"
    )
    print(f"  decision: {decision}")
    return med


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000, help="items in the pass")
    ap.add_argument("--repeat", type=int, default=5, help="timed applications after the first")
    ap.add_argument("--with-reversed", action="store_true", help="also a case with z_reversed tried")
    ap.add_argument("--labels", type=int, default=2, help="also a case with this many labels (3+)")
    args = ap.parse_args()
    _timing_the_test()
    med = case("readout = auto, two labels, z (the default)", args.n, args.repeat, ("1", "0"), False)
    if args.with_reversed:
        case("readout = auto, two labels, z and z_reversed tried", args.n, args.repeat, ("1", "0"), True)
    if args.labels > 2:
        labels = tuple(str(j) for j in range(args.labels))
        case(f"readout = auto, {args.labels} labels, multinomial", args.n, args.repeat, labels, False)
    target = 0.1 * args.n / 5000
    print(
        f"\ntarget: <= {target:.3f} s CPU on {args.n} items (20 us an item): "
        f"{'met' if med <= target else 'missed'} by the default case ({med:.3f} s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
