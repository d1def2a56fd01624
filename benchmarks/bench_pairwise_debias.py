"""Position debiasing of the embedded pairwise judge: raw vs ``consistent`` vs ``logprob_mean``.

Data. No dataset under ``../shared/data`` holds two human-judged responses to the same task:
``summeval_sample_summac`` has one summary per CNN/DM article (100 distinct ``cnndm_id``), as do
``qags_cnndm_unieval`` (235 distinct ``doc_id``) and HaluEval general (one answer per query). CogEval
does: many generators answered each task text, and each row carries the human-written correct
answer(s). A pair is two responses (at most ``--max-chars`` characters each) to one CogEval task,
one right and one wrong by ALLURE's reference (the regex check of the response against those
correct answers); the right one is the better response. Which of the two is shown first is drawn
per pair (seeded), so the reference is ``A`` for about half the pairs. Pairs are drawn evenly
across problem types, at most one per task text.

Calls. One pass through the evaluator's pipeline (:func:`allure.passes.run_pass` with ``swap``:
the pair in each order), every call with ``logprobs=true`` (the label tokens' top logprobs), stored
in the project's run store as it returns: a re-run sends none again, and a killed run resumes where
it stopped. The three arms are computed from the SAME two calls per pair:

- ``raw``: the original order's verdict;
- ``consistent``: the label when both orders agree, else undecided (``inconsistent``);
- ``logprob_mean``: each label's probability averaged over both orders (mapped back), argmax.

The debiased arms are the pipeline's own debias step (``position_debias`` set), run once per mode
on the first pass's verdicts: both orders' calls are stored by then, so these send none.

Printed (and written to ``benchmarks/results/pairwise_debias.md``): position consistency and the
first-position share, then per arm the items decided, accuracy over decided items, the undecided
share, accuracy with undecided counted wrong, and McNemar's exact test against ``raw`` on the items
both decide (n, b, c, p), and on all items with undecided counted wrong.

Usage::

    .venv/bin/python benchmarks/bench_pairwise_debias.py [--items 100] [--seed 0] [--project DIR]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from allure.config import AuditSpec, PositionDebias
from allure.dataset import DatasetSpec, load_items
from allure.errors import StoreError
from allure.evaluator import Evaluator, open_evaluator
from allure.gold_check import GoldCheck
from allure.labels import Label
from allure.metrics import decided_accuracy, mcnemar_test
from allure.models import Item
from allure.passes import PassOutcome, PassPlan, run_pass, swapped_order
from allure.store import RunStore, project_db_path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "cogeval_cogmaps" / "cogeval_conversations.jsonl.gz"
RESULTS = ROOT / "benchmarks" / "results" / "pairwise_debias.md"
LABELS: list[Label] = ["A", "B"]
RUBRIC = "The better response is the one that gives the correct answer to the task."
GUESS_S_PER_CALL = 20.0
"""Seconds per call assumed for the plan when no call of these prompts is stored yet (2 busy CPU cores, 1.5B: 16 to 43 s per call at --items 3)."""


def build_pairs(data: Path, n: int, max_chars: int, seed: int) -> list[Item]:
    """``n`` pairs (right, wrong) of responses to one CogEval task, evenly across problem types."""
    check = GoldCheck()
    spec = DatasetSpec(path=str(data), format="cogeval", max_response_chars=max_chars)
    tasks: dict[str, dict[str, list[tuple[Item, int]]]] = defaultdict(lambda: defaultdict(list))
    for it in load_items(spec):
        ref = check.reference_label(it)
        if ref is not None and it.response.strip():
            tasks[it.problem_type][it.task].append((it, int(ref)))
    rng = random.Random(seed)
    queues: dict[str, list[Item]] = {}
    for ptype, by_task in sorted(tasks.items()):
        pairs = []
        for task, rows in sorted(by_task.items()):
            right = sorted((it for it, r in rows if r == 1), key=lambda it: it.id)
            wrong = sorted((it for it, r in rows if r == 0), key=lambda it: it.id)
            wrong = [w for w in wrong if w.response.strip() not in {r.response.strip() for r in right}]
            if not right or not wrong:
                continue
            good, bad = rng.choice(right), rng.choice(wrong)
            first_good = rng.random() < 0.5
            a, b = (good, bad) if first_good else (bad, good)
            pairs.append(
                Item(
                    id=f"{a.id}|{b.id}",
                    task=task,
                    response=a.response,
                    response_b=b.response,
                    gold_label="A" if first_good else "B",
                    problem_type=ptype,
                )
            )
        rng.shuffle(pairs)
        queues[ptype] = pairs
    out: list[Item] = []
    while len(out) < n and any(queues.values()):
        for ptype in sorted(queues):
            if queues[ptype] and len(out) < n:
                out.append(queues[ptype].pop())
    return out


DEBIAS_MODES: tuple[PositionDebias, ...] = ("consistent", "logprob_mean")


def judge(
    ev: Evaluator, run_id: str, items: list[Item]
) -> tuple[PassOutcome, dict[PositionDebias, PassOutcome]]:
    """The pass in both orders (no debiasing: its labels are the raw arm), then the pipeline's debias
    step per mode on that pass's verdicts (its calls stored: none sent again)."""
    plan = PassPlan(
        run_id=run_id, iteration=1, items=items, examples_for=lambda _: [], labels=tuple(LABELS), swap=True
    )
    paired = run_pass(ev, plan)
    debiased = {
        mode: run_pass(ev, replace(plan, position_debias=mode), main=paired.result) for mode in DEBIAS_MODES
    }
    return paired, debiased


def fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def main() -> int:
    """Run it; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="CogEval JSONL.gz")
    ap.add_argument("--items", type=int, default=100, help="pairs to judge (each in both orders)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the pairs and their order")
    ap.add_argument("--max-chars", type=int, default=200, help="longest response kept")
    ap.add_argument(
        "--project", type=Path, default=Path(".allure-bench/pairwise_debias"), help="project folder"
    )
    ap.add_argument("--model", default="qwen2.5-coder-1.5b", help="embedded model")
    ap.add_argument("--out", type=Path, default=RESULTS, help="markdown table written here")
    args = ap.parse_args()
    if args.items < 1:
        print("error: --items must be at least 1", file=sys.stderr)
        return 2
    if not args.data.is_file():
        print(
            f"error: {args.data} not found (CogEval under ../shared/data beside the repository)",
            file=sys.stderr,
        )
        return 2

    t0 = time.perf_counter()
    items = build_pairs(args.data, args.items, args.max_chars, args.seed)
    types = sorted({x.problem_type for x in items})
    share_a = sum(x.gold_label == "A" for x in items) / max(len(items), 1)
    print(
        f"{len(items)} pairs (one right, one wrong response to a CogEval task) across {len(types)} problem "
        f"types; reference A in {share_a:.2f} of them ({time.perf_counter() - t0:.1f} s)",
        flush=True,
    )
    spec = AuditSpec.model_validate(
        {
            "name": "bench-pairwise-debias",
            "label_set": LABELS,
            "dataset": {"path": str(args.data), "format": "cogeval"},
            "evaluator": {
                "kind": "local",
                "model": args.model,
                "prompt": "pairwise",
                "rubric": RUBRIC,
                "logprobs": True,
                "position_debias": "logprob_mean",
            },
        }
    )
    project = args.project.resolve()
    (project / ".allure").mkdir(parents=True, exist_ok=True)
    store = RunStore(project_db_path(project))
    run_id = f"pairwise-debias-{args.items}-{args.seed}"
    swapped = swapped_order(items, LABELS)  # the prompts the pass asks in the swapped order (the plan)
    try:
        try:
            store.get_run(run_id)
        except StoreError:
            store.create_run(spec.model_dump(mode="json"), run_id=run_id)
        with open_evaluator(spec, store, items + swapped, lazy_start=True) as ev:
            plans = [ev.plan(batch, lambda _: []) for batch in (items, swapped)]
            uncached = sum(p.uncached for p in plans)
            lat = [p.cached_latency_s for p in plans if p.cached_latency_s]
            per_call = sum(lat) / len(lat) if lat else GUESS_S_PER_CALL
            print(
                f"plan: {2 * len(items)} calls ({len(items)} pairs in both orders), {uncached} not stored yet; "
                f"estimated time {uncached * per_call / 60:.1f} min "
                f"({'stored calls took' if lat else 'assuming'} {per_call:.1f} s per call)",
                flush=True,
            )
            paired, debiased = judge(ev, run_id, items)
            result, again = paired.result, paired.swapped
            assert again is not None and paired.position is not None  # a swapped pass
            print(
                f"original order: {result.stats.calls} calls sent, {result.stats.cache_hits} stored",
                flush=True,
            )
            print(
                f"swapped order: {again.stats.calls} calls sent, {again.stats.cache_hits} stored", flush=True
            )
            sent = paired.stats.calls + sum(d.swapped.stats.calls for d in debiased.values() if d.swapped)
            model = ev.model_name
    finally:
        store.close()
    a = [result.verdicts.get(x.id) for x in items]
    b = [again.verdicts.get(x.id) for x in swapped]
    orig = [paired.raw_labels[x.id] for x in items]
    y: list[Label | None] = [x.gold_label for x in items]
    pos = paired.position
    by_type = pos["by_problem_type"] or {t: pos for t in types}  # one problem type: its figures are all's
    probs = sum(1 for v in [*a, *b] if v is not None and v.label_probs)
    arms: dict[str, list[Label | None]] = {"raw": orig}
    notes = []
    for mode, out in debiased.items():
        d = out.debias
        assert d is not None  # position_debias set on a swapped pass
        arms[mode] = [d.labels[x.id] for x in items]
        if mode == "logprob_mean" and d.used != mode:
            notes.append("logprob_mean: every pair decided by the consistent rule (no label probabilities)")
        elif mode == "logprob_mean" and d.prob_fallback:
            notes.append(
                f"logprob_mean: {d.prob_fallback} pairs decided by the consistent rule (no label probabilities)"
            )
    rows = []
    for name, labels in arms.items():
        m = decided_accuracy(y, labels)
        if name == "raw":
            test_d, test_all = "", ""
        else:
            both = [i for i in range(len(items)) if orig[i] is not None and labels[i] is not None]
            md = mcnemar_test([y[i] for i in both], [orig[i] for i in both], [labels[i] for i in both])
            ma = mcnemar_test(y, orig, labels)
            test_d = f"n = {md.n}, b = {md.b}, c = {md.c}, p = {md.p_value:.3g}"
            test_all = f"b = {ma.b}, c = {ma.c}, p = {ma.p_value:.3g}"
        rows.append(
            f"| {name} | {m.decided} of {m.n} | {fmt(m.accuracy_decided)} | {fmt(m.undecided_share)} | "
            f"{fmt(m.accuracy_all)} | {test_d or '-'} | {test_all or '-'} |"
        )
    table = [
        f"Embedded judge `{model}`, {len(items)} CogEval pairs (seed {args.seed}, responses of at most "
        f"{args.max_chars} characters), each judged in both orders: {2 * len(items)} calls, "
        f"{probs} with label probabilities. Position consistency {fmt(pos['consistency'])} over {pos['n']} pairs; "
        f"first position chosen in {fmt(pos['first_position_rate'])} of verdicts.",
        "",
        "| verdicts | decided | accuracy (decided) | undecided | accuracy (undecided wrong) "
        "| McNemar vs raw, items both decide | McNemar vs raw, undecided wrong |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        "b: pairs raw gets right and the arm wrong; c: the reverse; exact two-sided p.",
        *notes,
        "",
        "Position consistency per problem type: "
        + ", ".join(f"{t} {fmt(p['consistency'])} (n = {p['n']})" for t, p in by_type.items()),
    ]
    text = "\n".join(table)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        "# Position debiasing of the embedded pairwise judge\n\n"
        f"`python benchmarks/bench_pairwise_debias.py --items {args.items} --seed {args.seed}`\n\n"
        + text
        + "\n"
    )
    print(f"{sent} calls sent in this run, {time.perf_counter() - t0:.0f} s; table written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
