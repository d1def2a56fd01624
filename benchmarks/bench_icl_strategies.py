"""Which way of choosing ICL examples helps the embedded judge? The stored strategy arms, run again
through the studies API (``allure.studies.run_study``) over stored calls; every figure is the study's.

Per task (``halueval``: ``reference_free``, human labels; ``cogeval``: the ``grader`` prompt, regex
gold), with the embedded Qwen2.5-Coder-1.5B (Q4_K_M), from the run store saved by this bench's first
run (``benchmarks/results/icl_strategies.<task>.db.gz``, restored into a fresh project):

1. The items, their reference labels and the three splits of the stored studies: *mine* (the
   zero-shot items outside the strategies study), *dev* and *held-out* (the strategies study's
   items; dev: those of the stored validation study), with the spec the calls were made with.
2. The memory: the judge's own zero-shot mistakes on the mine split plus as many of its correct
   verdicts there (the product's ``build_candidates`` / ``build_successes``), approved as the reference
   says (what ``--auto-approve`` does). Nothing from dev or held-out enters it.
3. One study over dev + held-out (420 items): ``zero-shot``, ``default`` (every mistake of the same
   problem type), ``label-prior`` (8 examples, label shares of the audit items), ``nearest`` (k = 4
   nearest examples, similarity floor 0.3), each compared with zero-shot by the study (McNemar exact,
   Holm over the arms, paired bootstrap intervals).

The bench decides nothing: no calibration, no guard, no choice of a strategy. Validated selection,
the calibrated arms and the bench's "loop default" were decisions of its own and are gone (issue 41
item 6); what the loop decides is measured by ``bench_readout.py`` (``allure.audit`` runs).

The study's own plan line says how many prompts the store cannot answer; the bench refuses to start
the embedded server (``--max-new-calls 0``, the default), so a rerun sends 0 calls. A prompt with
examples is fitted to the context by the server's token counts: they are saved beside the snapshot
(``icl_strategies.<task>.token-counts.json``) so that the rerun needs no server for them either;
``--max-new-calls`` above 0 lets the server start (for those counts or new calls) and saves them.

Rerun (a few minutes a task; writes ``benchmarks/results/icl_strategies.md`` fresh)::

    PYTHONPATH=. .venv/bin/python benchmarks/bench_icl_strategies.py [--tasks halueval,cogeval]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stored_calls import RESULTS, ROOT, ServerRefused, fresh_project, server_starts, snapshot  # noqa: E402

from allure.config import parse_spec  # noqa: E402
from allure.gold_check import GoldCheck  # noqa: E402
from allure.memory import EpisodicMemory, PassVerdicts, RetrievalPolicy, build_candidates, build_successes  # noqa: E402
from allure.store import open_project_store  # noqa: E402
from allure.studies import ArmSpec, ArmsStudy, StudyRecord, StudySource, run_study  # noqa: E402


def token_counts(name: str) -> str:
    """The prefix of the embedded server's token counts of the task's prompts, saved beside its
    snapshot (the product's file name follows it)."""
    return f"icl_strategies.{name}.token-counts."


def counts_dir(project: Path) -> Path:
    """Where the product keeps a project's token counts (one file, named by the model's identity)."""
    return project / ".allure" / "token-counts"


def run_task(name: str, project: Path, max_new_calls: int) -> tuple[StudyRecord, int]:
    """The task's strategy study over its stored calls; the study and the server's starts."""
    fresh_project(project, snapshot(name))
    store = open_project_store(project, create=False)
    try:
        spec = parse_spec(store.get_run(f"{name}-strategies").spec, source=f"stored {name}-strategies spec")
        items = store.items(f"{name}-zero-shot")
        refs = store.reference_labels(f"{name}-zero-shot")
        zero = store.verdicts(f"{name}-zero-shot", 1)
        evaluated = {it.id for it in store.items(f"{name}-strategies")}
        dev = {it.id for it in store.items(f"{name}-validate")}
    finally:
        store.close()
    for saved in RESULTS.glob(f"{token_counts(name)}*.json"):
        counts_dir(project).mkdir(parents=True, exist_ok=True)
        shutil.copy(saved, counts_dir(project) / saved.name.removeprefix(token_counts(name)))
    splits = {it.id: "heldout" if it.id in evaluated else "audit" for it in items}
    extract = GoldCheck().extract if name == "cogeval" else (lambda _: None)
    mined = PassVerdicts("bench", items, refs, splits, zero)
    mistakes = build_candidates(mined, extract=extract)
    successes = build_successes(mined, k=len(mistakes), seed=0)
    memory = EpisodicMemory.open(str(project / "memory"))
    memory.add(
        [
            ex.model_copy(update={"decision": "approve", "reviewer": "auto-approve (bench)"})
            for ex in mistakes + successes
        ]
    )
    audit_ids = {
        it.id for it in items if it.id not in evaluated
    } | dev  # mine + dev, as the stored arm read them
    audit = [str(r) for i, r in refs.items() if i in audit_ids and r is not None]
    prior = {lab: audit.count(lab) / len(audit) for lab in sorted(set(audit))}
    arms = [
        ArmSpec(name="zero-shot", example_ids=[]),
        ArmSpec(name="default", policy=RetrievalPolicy(kind="same_problem_type", sources=["mistake"])),
        ArmSpec(
            name="label-prior",
            policy=RetrievalPolicy.model_validate({"kind": "label_prior", "x": 8, "prior": prior}),
        ),
        ArmSpec(
            name="nearest",
            policy=RetrievalPolicy.model_validate(
                {
                    "kind": "nearest",
                    "k": 4,
                    "min_similarity": 0.3,
                    "group_by": "problem_type" if name == "cogeval" else "none",
                }
            ),
        ),
    ]
    chosen = [it for it in items if it.id in evaluated]
    src = StudySource(
        spec=spec,
        items=chosen,
        reference={it.id: refs.get(it.id) for it in chosen},
        splits={it.id: "heldout" for it in chosen},
        source={"spec": f"bench_icl_strategies ({name})", "split": "bench"},
        memory_location=memory.location,
    )

    def say(line: str) -> None:  # the study's plan line comes before any call: refuse more than allowed
        print(line, flush=True)
        new = re.search(r"(\d+) not yet stored", line)
        if new and int(new.group(1)) > max_new_calls:
            raise ServerRefused(
                f"the study needs {new.group(1)} new calls, --max-new-calls is {max_new_calls}"
            )

    with server_starts(refuse=max_new_calls == 0) as starts:
        study = run_study(project, src, memory, ArmsStudy(arms), name=f"{name}-strategies", say=say)
    if starts:  # the server counted tokens: keep its counts for the next rerun
        for f in counts_dir(project).glob("*.json"):
            shutil.copy(f, RESULTS / f"{token_counts(name)}{f.name}")
    return study, len(starts)


def _f(x: float | None, fmt: str = ".3f") -> str:
    return "-" if x is None else format(x, fmt)


def render(name: str, study: StudyRecord, starts: int) -> str:
    """The study's arms and its comparisons with zero-shot, as the study record holds them."""
    out = [
        f"### {name}: {study.n_items} items (dev + held-out), study `{study.id}`",
        "",
        "| arm | balanced accuracy | accuracy [95% CI] | F1 | kappa | calls sent | from the store "
        "| vs zero-shot: BA delta [95% CI] | BA p (Holm) | McNemar p (Holm) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in study.arms:
        m, c = r.metrics, r.comparison
        acc = m.ci.accuracy
        o = c.objective if c else None
        out.append(
            f"| {r.arm.name} | {_f(m.balanced_accuracy)} | {_f(m.accuracy)}"
            + (f" [{acc.low:.3f}, {acc.high:.3f}]" if acc else "")
            + f" | {_f(m.f1)} | {_f(m.kappa)} | {r.calls} | {r.cache_hits} | "
            + (
                f"{o.delta:+.3f} [{_f(o.ci_low, '+.3f')}, {_f(o.ci_high, '+.3f')}]"
                if o and o.delta is not None
                else "-"
            )
            + f" | {_f(c.objective_p_holm) if c else '-'} | {_f(c.p_holm) if c else '-'} |"
        )
    out += ["", f"embedded server started {starts} time(s)", ""]
    return "\n".join(out)


def write(args: argparse.Namespace, texts: list[str], total: int, wall: float) -> None:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout.strip()
    header = (
        f"# ICL strategies on the embedded judge\n\n`PYTHONPATH=. python benchmarks/bench_icl_strategies.py "
        f"--tasks {args.tasks}` at commit {commit}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: "
        f"{total} calls sent, {wall / 60:.1f} min. Each table is one study "
        "(`allure.studies.run_study`) over stored calls; its comparisons are the study's (McNemar exact, "
        "Holm over the arms, paired bootstrap), on dev + held-out together: the bench decides nothing.\n\n"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(header + "\n".join(texts))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", default="halueval,cogeval", help="comma-separated: halueval, cogeval")
    ap.add_argument(
        "--max-new-calls",
        type=int,
        default=0,
        help="refuse a study that needs more calls; 0 also refuses to start the embedded server (token counts included)",
    )
    ap.add_argument("--project", type=Path, default=ROOT / ".allure-bench" / "icl_strategies")
    ap.add_argument("--out", type=Path, default=RESULTS / "icl_strategies.md")
    args = ap.parse_args()
    t0 = time.perf_counter()
    texts, total = [], 0
    for name in args.tasks.split(","):
        study, starts = run_task(name, args.project / name, args.max_new_calls)
        total += sum(r.calls for r in study.arms)
        text = render(name, study, starts)
        print(text, flush=True)
        texts.append(text)
        write(args, texts, total, time.perf_counter() - t0)  # after each task
    print(f"calls sent in this run: {total}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
