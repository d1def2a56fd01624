"""Is the loop's out-of-fold test of the read-out a fair estimate of its held-out gain? (issue 43's
open question; exploratory, no call sent)

On HaluEval's second draw the loop kept the parsed labels because the read-out gained +0.022 out of
fold on the audit split (one-sided p = 0.41), while the bench's "read-out alone" arm gained +0.184 on
the held-out items; CB's first draw showed the same gap. Two things differ between those figures:
the items (audit out of fold against held-out) and the read-out (the loop's first pass fits it on
``z`` alone, the arm is the learning-curve study's, on ``z`` and the memory's ``vote``). This bench
separates them on the draws' stored calls (``benchmarks/results/loop.<key>.db.gz``):

- **the run's own split**, for each feature set (``z``; ``z`` + ``vote``): the read-out's gain out of
  fold on the audit split and the gain on the held-out items of the read-out fitted on every audit
  item;
- **re-splits**: the same items split again ``--resplits`` times (:func:`allure.dataset.split_heldout`
  with seeds 1, 2, ..., the run's held-out share; the folds by :func:`allure.dataset.cross_folds`),
  each giving both gains. Their mean difference is the out-of-fold test's bias; their spread says
  how far one split's two figures may lie apart by chance; the share of re-splits whose out-of-fold
  test adopts the read-out (:func:`allure.metrics.significantly_better` at the read-out's level in
  the default run's family, 0.05 / 3) is the decision's power on items like these.

Everything is the product's: the zero-shot pass's stored verdicts, the read-out step
(:class:`allure.passes.readout.PassReadout`: the fold fits, the out-of-fold labels, the fit on
every audit item, an item without label probabilities keeping its label), the objective
(:func:`allure.metrics.objective_value`). The baseline is the judge's parsed labels (a calibrated
pass, RTE's ``offset``, stored its calibrated labels beside them). ``vote``: the audit items the
zero-shot judge's parsed labels got wrong, with their reference labels (what ``--auto-approve``
approves from an uncalibrated pass), embedded as the memory embeds them (their responses,
all-MiniLM-L6-v2); out of fold a fold's own examples do not vote.

Usage::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_readout_gap.py [--resplits 100] [--keys halueval-d2,...]

Writes ``benchmarks/results/readout_gap.md`` and prints it.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import tempfile
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT / "benchmarks"))

from allure.dataset import cross_folds, split_heldout, task_groups  # noqa: E402
from allure.labels import Label  # noqa: E402
from allure.metrics import DecisionFamily, objective_value, significantly_better  # noqa: E402
from allure.models import Item, Verdict  # noqa: E402
from allure.passes.readout import PassReadout  # noqa: E402
from allure.passes.readout._vote import VoteSource  # noqa: E402

KEYS = ("halueval-d1", "halueval-d2", "rte-d1", "rte-d2", "cb-d1", "cogeval-d1", "cogeval-d2")
FOLDS = 5
LEVEL = DecisionFamily.declare(0.05, calibration_modes=3, readout=True, memory_versions=1).level("readout")
"""The read-out's level in the default run's family (calibration, read-out and the guard: 0.05 / 3)."""


@dataclass
class Draw:
    """One draw's stored zero-shot pass: its items, references, verdicts and the run's split."""

    key: str
    items: list[Item]
    references: dict[str, Label | None]
    verdicts: dict[str, Verdict]
    splits: dict[str, str]
    labels: tuple[Label, ...]
    positive: Label | None
    objective: str
    arm: float | None
    """The bench's "read-out alone" arm on the held-out items (``loop.<key>.json``)."""


def load(key: str, work: Path) -> Draw:
    """The draw's last finished run, from its gzipped store."""
    from bench_loop import TASKS

    from allure.config import load_spec
    from allure.store import RunStore

    snap = RESULTS / f"loop.{key}.db.gz"
    rec_path = RESULTS / f"loop.{key}.json"
    if not snap.is_file() or not rec_path.is_file():
        raise SystemExit(
            f"missing {snap.name} or {rec_path.name}: run benchmarks/bench_loop.py for {key} first"
        )
    db = work / f"{key}.db"
    with gzip.open(snap, "rb") as src, db.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    store = RunStore(str(db))
    rec = json.loads(rec_path.read_text())
    done = [r for r in store.list_runs() if r.id.startswith("run-") and r.status == "done"]
    # the record's run, or (a record read again elsewhere from these calls) the store's last finished run
    run = next((r for r in done if r.id == rec["run_id"]), done[-1])
    zero = int(run.info.get("zero_shot_iteration", 1))
    spec = load_spec(ROOT / "examples" / TASKS[key.split("-d")[0]].example)
    arm = next((a for a in rec.get("arms", {}).get("arms", []) if a.get("arm") == "read-out alone"), {})
    return Draw(
        key,
        store.items(run.id),
        store.reference_labels(run.id),
        parsed_verdicts(store, db, run.id, zero),
        store.splits(run.id),
        tuple(spec.label_set),
        spec.positive_label if len(spec.label_set) == 2 else None,
        rec["primary"]["objective"],
        arm.get("delta"),
    )


def parsed_verdicts(store: Any, db: Path, run_id: str, iteration: int) -> dict[str, Verdict]:
    """The pass's verdicts with the labels the judge gave: a calibrated pass (RTE's ``offset``) stored
    its calibrated labels beside the parsed ones, and the read-out is compared with the parsed ones."""
    import sqlite3

    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        post = {
            r[0]
            for r in conn.execute(
                "SELECT item_id FROM verdicts WHERE run_id=? AND iteration=? AND label_json IS NOT NULL",
                (run_id, iteration),
            )
        }
    got = store.verdicts(run_id, iteration)
    return {i: v.model_copy(update={"label": v.raw_label}) if i in post else v for i, v in got.items()}


def vote_source(d: Draw, audit: set[str], vectors: dict[str, np.ndarray]) -> VoteSource | None:
    """What ``--auto-approve`` approves from the zero-shot pass: each audit mistake, its reference label."""
    wrong = [
        it.id
        for it in d.items
        if it.id in audit
        and it.id in d.verdicts
        and d.references.get(it.id) is not None
        and d.verdicts[it.id].label != d.references[it.id]
    ]
    if not wrong:
        return None
    return VoteSource(
        np.stack([vectors[i] for i in wrong]),
        [d.references[i] for i in wrong],  # type: ignore[misc]
        wrong,
        lambda items: np.stack([vectors[it.id] for it in items]),
    )


def gains(
    d: Draw, splits: dict[str, str], seed: int, vectors: dict[str, np.ndarray] | None
) -> tuple[float, float, bool] | None:
    """(gain out of fold on the audit split, gain on held-out, adopted out of fold) of the read-out
    (``vectors``: with the memory's vote) on one split; ``None`` when it cannot be fitted."""
    audit = {i for i, s in splits.items() if s == "audit"}
    held = [it.id for it in d.items if splits.get(it.id) == "heldout" and it.id in d.verdicts]
    groups = task_groups(d.items)
    folds = cross_folds(d.references, splits, FOLDS, seed, groups)
    step = PassReadout(
        mode="logistic",
        labels=d.labels,
        positive=d.positive,
        fit_ids=frozenset(audit),
        references={i: d.references.get(i) for i in audit},
        dev_ids=frozenset(),
        not_fit=frozenset(held),
        vote=vote_source(d, audit, vectors) if vectors is not None else None,
        objective=d.objective,
        seed=seed,
        folds=folds,
        groups=groups,
    )
    read = step.read(d.items, d.verdicts)
    if read.learned is None:
        return None
    dec = sorted(i for i in folds if i in d.verdicts)
    refs = [d.references.get(i) for i in dec]
    parsed = [d.verdicts[i].label for i in dec]
    oof = [read.out_of_fold.get(i, p) for i, p in zip(dec, parsed, strict=True)]
    test = significantly_better(
        refs,
        parsed,
        oof,
        labels=d.labels,
        objective=d.objective,
        alpha=LEVEL,
        seed=seed,  # type: ignore[arg-type]
        groups=[groups.get(i, i) for i in dec],
    )
    hrefs = [d.references.get(i) for i in held]
    hparsed = [d.verdicts[i].label for i in held]
    happlied = [read.labels.get(i, p) for i, p in zip(held, hparsed, strict=True)]

    def value(refs_: list[Label | None], pred: list[Label | None]) -> float:
        v = objective_value(refs_, pred, objective=d.objective, labels=d.labels)  # type: ignore[arg-type]
        return float("nan") if v is None else v

    return (
        value(refs, oof) - value(refs, parsed),
        value(hrefs, happlied) - value(hrefs, hparsed),
        test.better,
    )


def study(d: Draw, resplits: int, vectors: dict[str, np.ndarray]) -> list[str]:
    """The draw's rows of the table: one per feature set."""
    n_held = sum(1 for s in d.splits.values() if s == "heldout")
    fraction = n_held / len(d.splits)
    rows = []
    for name, vec in (("z", None), ("z + vote", vectors)):
        own = gains(d, d.splits, 0, vec)
        got = [
            g for r in range(1, resplits + 1) if (g := gains(d, split_heldout(d.items, fraction, r), r, vec))
        ]
        if own is None or not got:
            rows.append(f"| {d.key} | {name} | not fitted | | | | | |")
            continue
        a = np.array([(g[0], g[1], float(g[2])) for g in got])
        gap = a[:, 1] - a[:, 0]
        own_gap = own[1] - own[0]
        corr = float(np.corrcoef(a[:, 0], a[:, 1])[0, 1])
        rows.append(
            f"| {d.key} | {name} | {own[0]:+.3f} ({'adopted' if own[2] else 'kept'}) / {own[1]:+.3f} | "
            f"{a[:, 0].mean():+.3f} | {a[:, 1].mean():+.3f} | {gap.mean():+.3f} (sd {gap.std(ddof=1):.3f}) | "
            f"{corr:+.2f} | {(gap >= own_gap).mean():.2f} | {int(a[:, 2].sum())} / {len(got)} |"
        )
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--resplits", type=int, default=100)
    ap.add_argument("--keys", default=",".join(KEYS))
    args = ap.parse_args()
    from allure.memory import embed

    t0 = time.perf_counter()
    lines = [
        "# The read-out's out-of-fold test against its held-out gain",
        "",
        "Written by `benchmarks/bench_readout_gap.py` (exploratory; no call sent). Per draw of the loop",
        "bench, the zero-shot pass's stored verdicts. `own split`: the run's own audit/held-out split,",
        "the read-out's gain out of fold on the audit split (and whether the loop's test at the",
        f"read-out's level {LEVEL:.3g} adopts it) / its gain on the held-out items when fitted on every",
        f"audit item. Then {args.resplits} re-splits of the same items (same held-out share): the mean",
        "of each gain, the mean and sd of their difference (held-out minus out of fold: the test's",
        "bias, and how far apart one split's two figures fall by chance), the correlation of the two",
        "gains, the share of re-splits whose difference is at least the run's own, and how many",
        "re-splits the out-of-fold test adopts (the decision's power on items like these).",
        "",
        "| draw | read-out on | own split: out of fold / held-out | re-splits: out of fold | held-out | "
        "held-out - out of fold | corr | share >= own gap | adopted |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    arms = []
    for key in args.keys.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            d = load(key, Path(tmp))
        vectors = dict(zip([it.id for it in d.items], embed([it.response for it in d.items]), strict=True))
        rows = study(d, args.resplits, vectors)
        lines += rows
        print("\n".join(rows), flush=True)
        if d.arm is not None:
            arms.append(f"{key} {d.arm:+.3f}")
    lines += [
        "",
        "The bench's \"read-out alone\" arm (learning-curve study on `z` and `vote`, the run's split): "
        + ("; ".join(arms) if arms else "none recorded")
        + f". {time.perf_counter() - t0:.0f} s.",
    ]
    out = RESULTS / "readout_gap.md"
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
