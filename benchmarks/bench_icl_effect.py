"""Does ALLURE's memory help the embedded judge? Zero-shot vs memory on held-out CogEval items.

The memory is built (auto-approved by the rules, no human review) from CogEval's *recorded*
GPT-4/regex disagreements (``benchmarks/cogeval_memory.py``: GPT-4's recorded ``score`` disagrees
with allure's regex reference), not from the embedded judge's own mistakes; responses of at most
``--max-chars`` characters only, so that a prompt with its examples fits the embedded server's
context and prompt time on 2 cores. The evaluated items are ``--items`` other CogEval rows
(none of them is in the memory), responses of at most ``--max-chars`` characters, drawn evenly
across problem types. Two arms through ``allure.studies.run_study`` (every call stored and cached):

- ``zero-shot``: no example;
- ``memory``: ``--icl`` examples drawn from the memory with equal shares per correct label
  (``RetrievalPolicy(kind="sample", balance="label")``), the same block for every item, so the server
  computes it once (prompt cache). Per-item retrieval (same problem type, top-k) gives each item its
  own block, which costs minutes per item on 2 CPU cores at these prompt lengths.

Printed: accuracy, F1 and kappa of both arms with their bootstrap intervals, the paired difference
in accuracy and F1 with the paired bootstrap interval, and McNemar's exact p (n, b, c).

Usage::

    .venv/bin/python benchmarks/bench_icl_effect.py [--items 300] [--icl 8] [--project DIR]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cogeval_memory import DEFAULT_DATA, disagreements, sample_across_modes  # noqa: E402

from allure.config import AuditSpec  # noqa: E402
from allure.dataset import DatasetSpec, load_items  # noqa: E402
from allure.gold_check import GoldCheck  # noqa: E402
from allure.memory import EpisodicMemory, RetrievalPolicy  # noqa: E402
from allure.metrics import SplitMetrics  # noqa: E402
from allure.models import Item  # noqa: E402
from allure.studies import ArmSpec, ArmsStudy, StudyRecord, StudySource, run_study  # noqa: E402


def pick_items(data: Path, n: int, max_chars: int, exclude: set[str], seed: int, per_task: int) -> list[Item]:
    """``n`` CogEval items with a reference label, not in ``exclude``, evenly across problem types.

    Within a problem type whole tasks are drawn (at most ``per_task`` responses to one task text),
    so that items sharing a task text are sent one after another and the server's prompt cache
    re-uses the task: a CogEval task text is several hundred tokens.
    """
    spec = DatasetSpec(path=str(data), format="cogeval", max_response_chars=max_chars)
    check = GoldCheck()
    tasks: dict[str, dict[str, list[Item]]] = defaultdict(lambda: defaultdict(list))
    for it in load_items(spec):
        if it.id not in exclude and check.reference_label(it) is not None:
            tasks[it.problem_type][it.task].append(it)
    rng = random.Random(seed)
    queues: dict[str, list[list[Item]]] = {}
    for ptype, by_task in tasks.items():
        groups = [sorted(g, key=lambda it: it.id) for _, g in sorted(by_task.items())]
        rng.shuffle(groups)
        for g in groups:
            rng.shuffle(g)
        queues[ptype] = [g[:per_task] for g in groups]
    out: list[Item] = []
    while len(out) < n and any(queues.values()):
        for ptype in sorted(queues):
            if queues[ptype] and len(out) < n:
                out.extend(queues[ptype].pop()[: n - len(out)])
    return out


def report(study: StudyRecord, k: int, elapsed: float, project: Path) -> None:
    """Print the two arms' figures, the paired differences and McNemar's test."""
    print(f"== {k} items ==")
    for r in study.arms:
        m = r.metrics

        def show(name: str, m: SplitMetrics = m) -> str:
            v, c = getattr(m, name), getattr(m.ci, name)
            return f"{name} {v:.3f} [{c.low:.3f}, {c.high:.3f}]" if v is not None and c else f"{name} -"

        print(
            f"{r.arm.name:>9}: n = {m.n_scored}, {r.mean_examples:.1f} examples/prompt, "
            f"{show('accuracy')}, {show('f1')}, {show('kappa')}, unparsed {m.n_unparsed}"
        )
    c = study.arms[1].comparison
    assert c is not None
    for name, d in (("accuracy", c.accuracy), ("F1", c.f1)):
        print(
            f"paired difference in {name} (memory - zero-shot): "
            f"{d.delta:+.3f} [{d.ci_low:+.3f}, {d.ci_high:+.3f}]"
        )
    print(
        f"McNemar exact: n = {c.mcnemar.n}, b = {c.mcnemar.b} (right zero-shot only), "
        f"c = {c.mcnemar.c} (right with memory only), p = {c.mcnemar.p_value:.4g}"
    )
    print(c.statement)
    print(
        f"elapsed {elapsed:.0f} s, {study.calls} calls in this step; "
        f"study files in {project / '.allure/studies' / study.id}",
        flush=True,
    )


def main() -> int:
    """Run it; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="CogEval JSONL.gz")
    ap.add_argument("--items", type=int, default=300, help="held-out items to evaluate")
    ap.add_argument("--icl", type=int, default=8, help="examples in the memory arm's ICL block")
    ap.add_argument("--per-task", type=int, default=10, help="responses per task text at most")
    ap.add_argument(
        "--step",
        type=int,
        default=50,
        help="print the figures after every STEP items (stored calls are reused)",
    )
    ap.add_argument("--memory-size", type=int, default=1500, help="memory examples, sampled across modes")
    ap.add_argument("--max-chars", type=int, default=200, help="longest response kept (items and examples)")
    ap.add_argument("--project", type=Path, default=Path(".allure-bench/icl_effect"), help="project folder")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b", help="embedded model")
    args = ap.parse_args()

    t0 = time.perf_counter()
    project = args.project.resolve()
    mem_dir = project / "memory"
    memory = EpisodicMemory.open(str(mem_dir))
    if memory.count() == 0:
        found = [ex for ex in disagreements(args.data, GoldCheck()) if len(ex.response) <= args.max_chars]
        memory.add(sample_across_modes(found, args.memory_size, 0))
    examples = memory.all()
    in_memory = {ex.item_id for ex in examples}
    items = pick_items(args.data, args.items, args.max_chars, in_memory, seed=1, per_task=args.per_task)
    assert not in_memory & {it.id for it in items}
    check = GoldCheck()
    spec = AuditSpec.model_validate(
        {
            "name": "bench-icl-effect",
            "dataset": {"path": str(args.data), "format": "cogeval"},
            "evaluator": {"kind": "local", "model": args.model},
            "memory": {"location": str(mem_dir)},
        }
    )
    src = StudySource(
        spec=spec,
        items=items,
        reference={it.id: check.reference_label(it) for it in items},
        splits={it.id: "heldout" for it in items},
        source={"spec": "bench_icl_effect (CogEval rows not in memory)", "split": "heldout"},
        memory_location=str(mem_dir),
    )
    types = sorted({it.problem_type for it in items})
    print(
        f"memory: {len(examples)} examples from CogEval's recorded GPT-4/regex disagreements "
        f"(auto-approved, not the embedded judge's own mistakes); items: {len(items)} other CogEval rows "
        f"across {len(types)} problem types ({time.perf_counter() - t0:.1f} s)",
        flush=True,
    )
    arms = [
        ArmSpec(name="zero-shot", example_ids=[]),
        ArmSpec(name="memory", policy=RetrievalPolicy(kind="sample", x=args.icl, seed=0, balance="label")),
    ]
    sizes = sorted({*range(args.step, len(items), args.step), len(items)})
    for k in sizes:
        part = items[:k]
        sub = StudySource(
            spec=src.spec,
            items=part,
            reference={it.id: src.reference[it.id] for it in part},
            splits={it.id: "heldout" for it in part},
            source=src.source,
            memory_location=src.memory_location,
        )
        study = run_study(
            project,
            sub,
            memory,
            ArmsStudy(arms, reference="zero-shot"),
            name=f"icl-effect-{k}-{args.icl}",
            say=lambda line: print(line, flush=True),
        )
        report(study, k, time.perf_counter() - t0, project)
    return 0


if __name__ == "__main__":
    sys.exit(main())
