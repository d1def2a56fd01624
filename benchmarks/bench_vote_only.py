"""The memory as a vote only: the loop as a user runs it with ``[memory.retrieval] max_examples = 0``,
against the default, on the loop bench's draws (exploratory; reads stored calls, sends none).

The loop bench's arms (``loop.<key>.json``) found the read-out on ``z`` and the memory's ``vote``
over the zero-shot prompts ("read-out alone") the best arm, or level with the best, of every draw
but CogEval's, where nothing helped; the examples in the prompt ("memory alone") were worse there
(-0.114 and -0.096, Holm p <= 0.001) and cost a memory pass of calls everywhere. A spec can already
ask for that loop: with ``max_examples = 0`` pass 2's prompts carry no example, so they are pass 1's
(the store answers them), and pass 2's read-out reads the approved examples' vote; the guard decides
it against pass 1 out of fold like any memory version. This bench runs both specs through
``allure.audit`` at this checkout's code, in a project of their own seeded with the draw's stored
calls (``benchmarks/results/loop.<key>.db.gz``, never written), with the embedded server refused:
a run that would need a call fails instead of sending it.

- ``default``: the draw's registered spec (:func:`bench_loop.audit_spec`): the loop bench's run,
  read again at this code (the decision rule of this checkout, not the registered commit's);
- ``vote only``: the same spec with ``[memory.retrieval] max_examples = 0``.

Per draw and spec: the primary comparison from the run's ``report.json`` (the loop's final judge
against zero-shot on held-out), what it adopted, and the wall time. Not pre-registered: a new
default chosen from these figures is measured on new item draws, registered first.

Usage::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_vote_only.py [--keys halueval-d2,...]

Writes ``benchmarks/results/vote_only.md`` and prints it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_loop import (  # noqa: E402
    TASKS,
    Draw,
    adopted_cell,
    audit_spec,
    final_heldout,
    prereg,
    records,
    restore_tokens,
    table_facts,
    versus,
    vote_only_spec,
)
from stored_calls import ServerRefused, fresh_project, server_starts  # noqa: E402

import allure  # noqa: E402

VARIANTS = ("default", "vote only")
NOT_STORED = (
    "at this code its memory pass asks prompts the registered run did not (a pass-1 decision differs, "
    "so other mistakes become examples); it would send calls"
)


def project_for(key: str, variant: str, root: Path) -> Path:
    """A fresh project whose store is the draw's stored calls (the saved file is only read)."""
    project = root / f"{key}.{variant.replace(' ', '-')}"
    fresh_project(project, RESULTS / f"loop.{key}.db.gz")
    restore_tokens(project, key)
    return project


def spec_for(key: str, variant: str, project: Path) -> dict[str, Any]:
    """The draw's registered spec, its rows written into ``project``; ``vote only``: no example in a prompt."""
    name, number = key.rsplit("-d", 1)
    task, pre = TASKS[name], prereg()
    tpre = pre["task"][name]
    ids = task.draws(tpre)[int(number) - 1]
    draw = Draw(name, int(number), ids, tpre["split_seeds"][int(number) - 1])
    raw = audit_spec(task, task.write(project, ids), pre, draw.seed)
    return vote_only_spec(raw) if variant == "vote only" else raw


def run(key: str, variant: str, root: Path) -> dict[str, Any]:
    """One ``allure.audit`` of the draw's spec; the figures from its report.

    Raises:
        ServerRefused: The stored calls (and the saved token counts) do not answer the spec at this
            code: the embedded server would start.
    """
    project = project_for(key, variant, root)
    raw = spec_for(key, variant, project)
    t0 = time.perf_counter()
    with server_starts(refuse=True):
        outcome = allure.audit(raw, project=project)
    report = allure.open_project(project).run(outcome.run_id).report()
    primary = (report.get("primary") or {}).get("objective") or {}
    return {
        "key": key,
        "variant": variant,
        "primary": primary,
        "adopted": adopted_cell({"report": table_facts(report)}),
        "guard": report.get("guard") or [],
        "wall_s": time.perf_counter() - t0,
        "heldout": final_heldout(project, outcome.run_id),
        "labels": list(raw["label_set"]) if "label_set" in raw else None,
    }


def versus_row(a: dict[str, Any], b: dict[str, Any]) -> str:
    """The paired comparison of two runs' final judges on the same held-out items (B minus A; the
    responses to one task one unit, as the product tests: :func:`bench_loop.versus`)."""
    cmp = versus(
        a["heldout"],
        b["heldout"],
        objective=a["primary"].get("objective", "balanced_accuracy"),
        labels=a["labels"],
    )
    return (
        f"| {a['key']} | vote only - default | {cmp['n']} | {cmp['value_a']:.3f} | {cmp['value_b']:.3f} | "
        f"{cmp['delta']:+.3f} [{cmp['ci_low']:+.3f}, {cmp['ci_high']:+.3f}] | {cmp['p_value']:.3g} | "
        f"{cmp['n_discordant']} items differ | |"
    )


def row(r: dict[str, Any]) -> str:
    p = r["primary"]
    return (
        f"| {r['key']} | {r['variant']} | {p.get('n')} | {p.get('value_a', float('nan')):.3f} | "
        f"{p.get('value_b', float('nan')):.3f} | {p.get('delta', float('nan')):+.3f} "
        f"[{p.get('ci_low', float('nan')):+.3f}, {p.get('ci_high', float('nan')):+.3f}] | "
        f"{p.get('p_value', float('nan')):.3g} | {r['adopted']} | {r['wall_s']:.0f} s |"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--keys", default=",".join(r["key"] for r in records()), help="default: every recorded draw"
    )
    ap.add_argument("--project", type=Path, default=ROOT / ".allure-bench" / "vote-only")
    args = ap.parse_args()
    lines = [
        "# The memory as a vote only (`max_examples = 0`) against the default loop",
        "",
        "Written by `benchmarks/bench_vote_only.py` (exploratory; stored calls, none sent, the embedded",
        "server refused). Each row is one `allure.audit` run at this checkout's code on a loop-bench draw:",
        "`default` is the draw's registered spec read again, `vote only` the same with",
        "`[memory.retrieval] max_examples = 0` (pass 2 prompts carry no example; its read-out reads the",
        "approved examples' vote). Primary: the loop's final judge against zero-shot's parsed labels on",
        "the held-out items (two-sided, the task's objective), from the run's `report.json`.",
        "",
        "| draw | spec | held-out n | zero-shot | the loop's judge | delta [95% CI] | p | adopted | wall |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    got = []
    for key in args.keys.split(","):
        for variant in VARIANTS:
            try:
                r = run(key, variant, args.project)
            except ServerRefused:  # this code's memory pass asks prompts no stored call answers
                lines.append(f"| {key} | {variant} | not run: {NOT_STORED} | | | | | | |")
            else:
                got.append(r)
                lines.append(row(r))
            print(lines[-1], flush=True)
        pair = [r for r in got if r["key"] == key]
        if len(pair) == 2:
            lines.append(versus_row(*pair))
            print(lines[-1], flush=True)
    out = RESULTS / "vote_only.md"
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
