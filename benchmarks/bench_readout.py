"""What does the loop decide for a user, on the embedded judge? One ``allure.audit`` run per task and
seed over stored calls; everything reported is read from the run's own ``report.json``.

Per task (``halueval``, ``cogeval``) and seed, a fresh project and one run, started as a user
starts ``allure audit SPEC --auto-approve``:

- the run store: the snapshot ``benchmarks/results/icl_strategies.<task>.db.gz`` (the stored calls
  of the embedded Qwen2.5-Coder-1.5B, written by ``bench_icl_strategies.py``);
- the dataset: the task's 600 items (those of the snapshot's zero-shot pass), their rows copied
  from ``../shared/data`` into the project;
- the spec: the worked example (``examples/halueval_general.toml``; ``examples/cogeval_replay.toml``
  with the embedded judge in place of the replay), its ``[dataset] path`` pointed at those rows,
  ``[loop] heldout_fraction = 0.5`` (300 held-out items), ``seed`` = the seed (the product splits
  the items and deals the folds), ``max_iterations = 1``, ``auto_approve = true``; everything else
  the product's defaults (``calibration = "auto"``, ``readout = "auto"``, ``folds = 5``).

One pass only: the memory's pass (pass 2: the examples mined from this run's audit mistakes, cross-
fitted) puts examples in every prompt that no stored call has seen, about 600 new calls a task and
seed (about 30 min each at ~3 s a call on 2 shared cores). So the run is zero-shot + calibration +
read-out, decided by the product; the memory arm is reported as not run, with its cost.

Before any run the driver prints its plan (tasks, seeds, the calls the store cannot answer, counted
by the product's own planner, ``Evaluator.plan``, over the zero-shot pass and its content-free calls,
and the estimated time) and refuses to start when they exceed ``--max-new-calls`` (default 0). It
counts the embedded server's starts: a rerun sends 0 calls and starts no server.

The bench keeps no exploratory arm of its own. The learning-curve study of a run
(``allure study run learning-curve --from-run RUN``, no call) reads the same stored calls but took
over 10 min a run on this machine (2 shared cores, load 14), so the bench does not run it.

Rerun (a few minutes a task and seed on 2 shared cores; writes ``benchmarks/results/readout.md``
fresh)::

    PYTHONPATH=. .venv/bin/python benchmarks/bench_readout.py [--tasks halueval,cogeval] [--seeds 0,1]
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stored_calls import RESULTS, ROOT, fresh_project, server_starts, snapshot, zero_shot_plan  # noqa: E402

import allure  # noqa: E402
from allure.models import Item  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
HELDOUT_FRACTION = 0.5


@dataclass(frozen=True)
class TaskDef:
    """A task: its worked example, its source rows and the snapshot of its stored calls."""

    name: str
    title: str
    example: str
    source: Path

    @property
    def snapshot(self) -> Path:
        return snapshot(self.name)


TASKS = {
    "halueval": TaskDef(
        "halueval", "HaluEval", "halueval_general.toml", SHARED / "halueval_general" / "general_data.json"
    ),
    "cogeval": TaskDef(
        "cogeval",
        "CogEval",
        "cogeval_replay.toml",
        SHARED / "cogeval_cogmaps" / "cogeval_conversations.jsonl.gz",
    ),
}


@dataclass
class Planned:
    """One (task, seed): its project, spec and the calls its run needs beyond the store."""

    task: TaskDef
    seed: int
    project: Path
    spec: dict[str, Any]
    items: int
    uncached: int
    latency_s: float | None


def stored_items(project: Path, task: TaskDef) -> list[Item]:
    """The items of the snapshot's zero-shot pass (the task's 600)."""
    with allure.open_project(project).store() as store:
        return store.items(f"{task.name}-zero-shot")


def write_dataset(project: Path, task: TaskDef, items: list[Item]) -> Path:
    """The source rows of ``items``, as they are in ``../shared/data``, in a file of the project."""
    if not task.source.is_file():
        raise SystemExit(f"missing {task.source}: the bench reads ../shared/data")
    ids = {it.id for it in items}
    if task.name == "halueval":  # items are named by line number (line-N): the id goes in a column
        out = project / "halueval-600.jsonl"
        with open(task.source, encoding="utf-8") as fh, open(out, "w", encoding="utf-8") as dst:
            for n, line in enumerate(fh, start=1):
                if f"line-{n}" in ids:
                    dst.write(
                        json.dumps({**json.loads(line), "item_id": f"line-{n}"}, ensure_ascii=False) + "\n"
                    )
        return out
    out = project / "cogeval-600.jsonl.gz"
    with gzip.open(task.source, "rt", encoding="utf-8") as fh, gzip.open(out, "wt", encoding="utf-8") as dst:
        for line in fh:
            if line.strip() and json.loads(line).get("path") in ids:
                dst.write(line if line.endswith("\n") else line + "\n")
    return out


def audit_spec(task: TaskDef, data: Path, seed: int) -> dict[str, Any]:
    """The worked example's spec, pointed at ``data``, as one pass with ``--auto-approve``."""
    raw = tomllib.loads((ROOT / "examples" / task.example).read_text())
    raw["dataset"] = {k: v for k, v in raw["dataset"].items() if k != "limit"}
    raw["dataset"]["path"] = str(data)
    if task.name == "halueval":
        raw["dataset"]["columns"] = {**raw["dataset"]["columns"], "id": "item_id"}
    else:
        raw["evaluator"] = {}  # the embedded judge (the product's default kind and model), not the replay
    raw["loop"] = {"max_iterations": 1, "heldout_fraction": HELDOUT_FRACTION, "seed": seed}
    raw["auto_approve"] = True
    return raw


def plan(task: TaskDef, seed: int, project: Path, raw: dict[str, Any]) -> Planned:
    """The calls of the run's pass that the store cannot answer (:func:`zero_shot_plan`)."""
    z = zero_shot_plan(raw, project, f"bench_readout ({task.name})")
    return Planned(task, seed, project, raw, z.items, z.uncached, z.latency_s)


@dataclass
class Result:
    planned: Planned
    run_id: str
    report: dict[str, Any]
    wall_s: float
    server_starts: int


def run_one(p: Planned) -> Result:
    """The user's run, read back from the product."""
    t0 = time.perf_counter()
    with server_starts() as starts:
        outcome = allure.audit(p.spec, project=p.project)
        wall = time.perf_counter() - t0
        report = allure.open_project(p.project).run(outcome.run_id).report()
    return Result(p, outcome.run_id, report, wall, len(starts))


def _f(x: float | None, fmt: str = ".3f") -> str:
    return "-" if x is None else format(x, fmt)


def _p(x: float | None) -> str:
    return "-" if x is None else f"{x:.2g}" if x < 0.001 else f"{x:.3f}".rstrip("0").rstrip(".")


def primary_line(r: Result) -> str:
    o = (r.report.get("primary") or {}).get("objective") or {}
    if not o:
        return "no primary comparison in report.json"
    return (
        f"{o.get('objective', 'objective').replace('_', ' ')} {_f(o.get('value_a'))} -> {_f(o.get('value_b'))}, "
        f"delta {_f(o.get('delta'), '+.3f')} [95% CI {_f(o.get('ci_low'), '+.3f')}, {_f(o.get('ci_high'), '+.3f')}], "
        f"p = {_p(o.get('p_value'))} ({o.get('alternative', 'two-sided')}), n = {o.get('n')}"
    )


def adopted(r: Result) -> list[str]:
    """What the run adopted and why, as report.json says it (calibration, read-out, memory)."""
    last = (r.report.get("iterations") or [{}])[-1]
    cal, rd = last.get("calibration") or {}, last.get("readout") or {}
    choice = cal.get("choice") or {}
    cand = last.get("candidates") or {}
    return [
        f"calibration `{cal.get('mode', '-')}`: {cal.get('chosen', '-')} "
        f"({choice.get('line') or cal.get('note') or 'no choice recorded'})",
        f"read-out: {rd.get('decision') or 'none recorded'}"
        + (f"; applied: {rd['describe']}" if rd.get("describe") else ""),
        f"memory (pass 2): not run ({cand.get('approved', 0)} examples approved from the audit mistakes; "
        f"a second pass would put them in the prompts of up to {r.planned.items} items, calls no store holds: "
        f"about {r.planned.items} new calls, ~{r.planned.items * 3 / 60:.0f} min at ~3 s a call)",
    ]


def cost_line(r: Result) -> str:
    its = r.report.get("iterations") or []
    calls = sum(int(it.get("calls") or 0) for it in its)
    hits = sum(int(it.get("cache_hits") or 0) for it in its)
    return (
        f"calls sent {calls}, answered from the store {hits}; pass {sum(float(it.get('wall_s') or 0) for it in its):.1f} s, "
        f"whole run {r.wall_s:.0f} s (with the approvals' embedding and the report); "
        f"embedded server started {r.server_starts} time(s)"
    )


def heldout_line(r: Result) -> str:
    last = (r.report.get("iterations") or [{}])[-1]
    m = (last.get("splits") or {}).get("heldout") or {}
    return (
        f"held-out, the loop's judge (exploratory beside the primary): balanced accuracy {_f(m.get('balanced_accuracy'))}, "
        f"accuracy {_f(m.get('accuracy'))}, F1 {_f(m.get('f1'))}, kappa {_f(m.get('kappa'))}, n = {m.get('n', '-')}"
    )


def section(r: Result) -> str:
    t = r.planned.task
    lines = [
        f"### {t.title}, seed {r.planned.seed} (run `{r.run_id}`)",
        "",
        f"- **primary** (pre-registered, from report.json): the loop's judge against the zero-shot "
        f"judge's parsed labels on held-out, {primary_line(r)}",
        *[f"- adopted: {a}" for a in adopted(r)[:2]],
        f"- {adopted(r)[2]}",
        f"- decision data: {str(r.report.get('decision_data') or '-').removeprefix('decision data: ')}",
        f"- {heldout_line(r)}",
        f"- cost: {cost_line(r)}",
        "",
    ]
    return "\n".join(lines)


def summary(results: list[Result]) -> list[str]:
    out = [
        "| task, seed | n held-out | zero-shot BA (parsed) | the loop's judge BA | primary: delta [95% CI], p | adopted |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        o = (r.report.get("primary") or {}).get("objective") or {}
        last = (r.report.get("iterations") or [{}])[-1]
        cal, rd = last.get("calibration") or {}, last.get("readout") or {}
        took = [f"calibration {cal['chosen']}"] if cal.get("chosen") not in (None, "none") else []
        if (
            rd.get("describe")
            and "adopted" in str(rd.get("decision", ""))
            and "not adopted" not in str(rd.get("decision"))
        ):
            took.append(f"read-out ({', '.join(rd.get('features') or [])})")
        out.append(
            f"| {r.planned.task.title}, {r.planned.seed} | {o.get('n', '-')} | {_f(o.get('value_a'))} | "
            f"{_f(o.get('value_b'))} | {_f(o.get('delta'), '+.3f')} [{_f(o.get('ci_low'), '+.3f')}, "
            f"{_f(o.get('ci_high'), '+.3f')}], p = {_p(o.get('p_value'))} | {', '.join(took) or 'nothing: zero-shot kept'} |"
        )
    return out


def write(args: argparse.Namespace, results: list[Result], sent: int, wall: float, planned: int) -> None:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "allure"], capture_output=True, text=True, cwd=ROOT
    ).stdout
    head = [
        "# What the loop decides on the embedded judge (bench_readout.py)",
        "",
        f"`PYTHONPATH=. python benchmarks/bench_readout.py --tasks {args.tasks} --seeds {args.seeds}` at commit "
        f"{commit}{' (with uncommitted changes under allure/)' if dirty else ''}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: {sent} calls sent, "
        f"embedded server started {sum(r.server_starts for r in results)} time(s), {wall / 60:.1f} min"
        + (f" (partial: {len(results)} of {planned} runs finished)." if len(results) < planned else "."),
        "",
        "Each row is one `allure.audit` run as a user starts it with `--auto-approve`: the worked example's "
        "spec (`examples/halueval_general.toml`; `examples/cogeval_replay.toml` with the embedded judge in place of "
        "the replay) over the task's 600 items, `[loop] heldout_fraction = 0.5`, `seed` = the seed (the product "
        "splits the items and deals the folds: a seed is a new split of the same items, not new items), every other "
        'setting the product\'s default (`calibration = "auto"`, `readout = "auto"`, `folds = 5`). Every figure '
        "is read from the run's report.json; the bench decides nothing.",
        "",
        "**One pass (`max_iterations = 1`).** The memory's pass would put this run's mined examples in the prompts, "
        "calls no stored snapshot holds (about 600 a task and seed, ~30 min each on this machine); the bench sends "
        "none (`--max-new-calls 0`). So the memory arm is not run, and each run is zero-shot + calibration + read-out "
        "as the product decides them.",
        "",
        *summary(results),
        "",
        "`primary`: the run's one pre-registered comparison (report.json `primary`): the loop's judge against the "
        "zero-shot judge's parsed labels on the held-out split, balanced accuracy, paired permutation test, alpha 0.05.",
        "",
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(head) + "\n".join(section(r) for r in results))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", default="halueval,cogeval")
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument(
        "--max-new-calls", type=int, default=0, help="refuse to start when the runs need more calls"
    )
    ap.add_argument("--project", type=Path, default=ROOT / ".allure-bench" / "readout")
    ap.add_argument("--out", type=Path, default=RESULTS / "readout.md")
    args = ap.parse_args()
    t0 = time.perf_counter()
    plans = []
    for name in args.tasks.split(","):
        task = TASKS[name]
        for seed in (int(s) for s in args.seeds.split(",")):
            project = args.project / f"{name}-s{seed}"
            fresh_project(project, task.snapshot)
            data = write_dataset(project, task, stored_items(project, task))
            plans.append(plan(task, seed, project, audit_spec(task, data, seed)))
    need = sum(p.uncached for p in plans)
    lat = [p.latency_s for p in plans if p.latency_s]
    eta = need * (sum(lat) / len(lat) if lat else 3.0)
    print(
        "plan: "
        + "; ".join(
            f"{p.task.name} seed {p.seed}: {p.items} items, {p.uncached} uncached calls" for p in plans
        )
        + f"; {need} calls in all (~{eta / 60:.0f} min), then about 2-3 min a run (approvals' embedding, report)",
        flush=True,
    )
    if need > args.max_new_calls:
        print(
            f"refused: the runs need {need} new calls, --max-new-calls is {args.max_new_calls}",
            file=sys.stderr,
        )
        return 2
    results = []
    for p in plans:
        print(f"== {p.task.name} seed {p.seed}: allure.audit ...", flush=True)
        r = run_one(p)
        results.append(r)
        print(section(r), flush=True)
        sent = sum(int(it.get("calls") or 0) for r in results for it in r.report.get("iterations") or [])
        write(
            args, results, sent, time.perf_counter() - t0, len(plans)
        )  # after each run: a partial file says so
    print(f"calls sent in this run: {sent}; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
