"""Write allure's demo dataset: a seeded, stratified sample of the CogEval conversations.

Usage::

    python scripts/make_demo_dataset.py [--source PATH] [--out allure/data/cogeval_demo.jsonl.gz]
                                        [--size 400] [--seed 0]

How the sample is drawn (also written to ``allure/data/README.md``):

1. Candidates: rows at upstream HEAD with a 0/1 ``gpt_rubric`` score and a response of at
   most ``--max-chars`` characters.
2. Coverage: every graph, domain, task and generator (``model_dir``) that has scores gets
   at least ``--min-per-value`` rows, and every graph/domain pair at least one.
3. Fill: up to ``--size`` rows, an equal share per task; within a task about
   ``--disagree-share`` of the rows are ones where the recorded GPT-4 label and allure's
   regex gold check disagree, and each side is split evenly between score 1 and score 0.
4. Short responses first: within every draw, a response of at most ``--short-chars``
   characters is preferred (a random key divided by ``--short-weight``), so that a small
   local evaluator grades the demo quickly.

Only the fields the CogEval adapter reads plus small metadata are kept (``messages`` and
``score_history`` are dropped). The output is byte-reproducible for a given seed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from allure.dataset import item_from_cogeval_row
from allure.gold_check import GoldCheck

SOURCE = (
    Path(__file__).resolve().parents[1].parent
    / "shared"
    / "data"
    / "cogeval_cogmaps"
    / "cogeval_conversations.jsonl.gz"
)
START, END = "<!-- demo-summary:start -->", "<!-- demo-summary:end -->"
KEEP = (
    "path",
    "graph",
    "domain",
    "task",
    "model_dir",
    "model",
    "variant",
    "temperature",
    "rep",
    "test_key",
    "test_question",
    "response",
    "expected_answer",
    "parsed_response",
    "score",
    "max_score",
    "rubric",
)


def read_candidates(source: Path, max_chars: int) -> list[dict[str, Any]]:
    """Scored HEAD rows with short enough responses, each with ``_agree`` (GPT-4 == regex)."""
    check = GoldCheck()
    rows: list[dict[str, Any]] = []
    with gzip.open(source, "rt", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            raw = json.loads(line)
            if raw.get("score") not in (0, 1) or len(raw.get("response") or "") > max_chars:
                continue
            row = {k: raw.get(k) for k in KEEP}
            item = item_from_cogeval_row(row, where=f"{source}:{lineno}")
            row["_agree"] = check.reference_label(item) == item.recorded_label
            rows.append(row)
    return rows


def draw(args: argparse.Namespace, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sample (see the module docstring)."""
    rng = random.Random(args.seed)
    key = {
        r["path"]: rng.random() / (args.short_weight if len(r["response"]) <= args.short_chars else 1.0)
        for r in rows
    }
    rows = sorted(rows, key=lambda r: (key[r["path"]], r["path"]))  # best first
    chosen: dict[str, dict[str, Any]] = {}

    def take(pool: list[dict[str, Any]], n: int) -> int:
        got = 0
        for r in pool:
            if got >= n:
                break
            if r["path"] not in chosen:
                chosen[r["path"]] = r
                got += 1
        return got

    # 2. coverage, rarest values first
    for dim in ("model_dir", "graph", "domain", "task"):
        counts = Counter(r[dim] for r in rows)
        for value in sorted(counts, key=lambda v: (counts[v], v)):
            have = sum(1 for r in chosen.values() if r[dim] == value)
            take([r for r in rows if r[dim] == value], args.min_per_value - have)
    for pair in sorted({(r["graph"], r["domain"]) for r in rows}):
        if not any((r["graph"], r["domain"]) == pair for r in chosen.values()):
            take([r for r in rows if (r["graph"], r["domain"]) == pair], 1)

    # 3. fill per task x (agree, score)
    tasks = sorted({r["task"] for r in rows})
    cells: dict[tuple[str, bool, int], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        cells[(r["task"], r["_agree"], int(r["score"]))].append(r)
    for i, task in enumerate(tasks):
        quota = args.size // len(tasks) + (1 if i < args.size % len(tasks) else 0)
        have = Counter((r["_agree"], int(r["score"])) for r in chosen.values() if r["task"] == task)
        disagree = round(quota * args.disagree_share)
        want = {
            (False, 1): disagree // 2,
            (False, 0): disagree - disagree // 2,
            (True, 1): (quota - disagree) // 2,
            (True, 0): quota - disagree - (quota - disagree) // 2,
        }
        short = 0
        for cell, n in want.items():
            missing = max(0, n - have[cell])
            short += missing - take(cells[(task, *cell)], missing)
        for cell in want:  # a cell that ran dry: fill from the others of the same task
            short -= take(cells[(task, *cell)], short)
    take(rows, args.size - len(chosen))  # the last task ran dry: top up, best keys first
    return sorted(chosen.values(), key=lambda r: r["path"])


def write_jsonl_gz(rows: list[dict[str, Any]], out: Path) -> None:
    """Write ``rows`` (without private ``_`` fields) as gzip JSONL with a fixed mtime."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        for r in rows:
            clean = {k: v for k, v in r.items() if not k.startswith("_")}
            gz.write((json.dumps(clean, ensure_ascii=False) + "\n").encode("utf-8"))
    tmp.replace(out)


def summary(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    """The sample's composition, as the Markdown block of ``allure/data/README.md``."""

    def line(name: str, counts: Counter[Any]) -> str:
        values = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        return f"- {name} ({len(counts)}): {values}"

    lengths = sorted(len(r["response"]) for r in rows)
    agree = sum(1 for r in rows if r["_agree"])
    return "\n".join(
        [
            f"- rows: {len(rows)}",
            f"- seed: {args.seed}",
            line("graphs", Counter(r["graph"] for r in rows)),
            line("domains", Counter(r["domain"] for r in rows)),
            line("tasks", Counter(r["task"] for r in rows)),
            line("generators", Counter(r["model_dir"] for r in rows)),
            line("groups", Counter(f"{r['graph']}/{r['domain']}" for r in rows)),
            line("scores", Counter(int(r["score"]) for r in rows)),
            f"- regex gold check agrees with the recorded score: {agree}, disagrees: {len(rows) - agree}",
            f"- response length (characters): median {lengths[len(lengths) // 2]}, max {lengths[-1]}, "
            f"at most {args.short_chars}: {sum(1 for n in lengths if n <= args.short_chars)}",
        ]
    )


def update_readme(readme: Path, block: str) -> None:
    """Replace the text between the demo-summary markers of ``readme`` with ``block``."""
    text = readme.read_text(encoding="utf-8")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(f"{head}{START}\n{block}\n{END}{tail}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, draw the sample, write it and print its composition."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=SOURCE, help="cogeval_conversations.jsonl.gz")
    ap.add_argument("--out", type=Path, default=Path("allure/data/cogeval_demo.jsonl.gz"), help="output file")
    ap.add_argument("--size", type=int, default=400, help="rows to draw")
    ap.add_argument("--seed", type=int, default=0, help="random seed")
    ap.add_argument("--max-chars", type=int, default=2500, help="longest response kept")
    ap.add_argument("--short-chars", type=int, default=400, help="a 'short' response has at most this")
    ap.add_argument(
        "--short-weight", type=float, default=2.0, help="how strongly short responses are preferred"
    )
    ap.add_argument("--min-per-value", type=int, default=3, help="rows per graph, domain, task, generator")
    ap.add_argument("--disagree-share", type=float, default=0.35, help="share of regex/GPT-4 disagreements")
    ap.add_argument("--readme", type=Path, default=Path("allure/data/README.md"), help="README to update")
    args = ap.parse_args(argv)
    rows = draw(args, read_candidates(args.source, args.max_chars))
    write_jsonl_gz(rows, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size:,} bytes)")
    block = summary(rows, args)
    if args.readme.is_file():
        update_readme(args.readme, block)
    print(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
