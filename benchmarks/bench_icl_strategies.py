"""Which way of choosing ICL examples helps the embedded judge? Strategies, calibration and the guard,
on two judge tasks, measured by balanced accuracy (the label prior cannot game it).

Per task (``cogeval``: the ``grader`` prompt, regex gold; ``halueval``: ``reference_free``, human
labels, 18 % "yes"), with the embedded Qwen2.5-Coder-1.5B (Q4_K_M):

1. A seeded draw of audit items (split into *mine* and *dev*) and ``--items`` held-out items.
2. Zero-shot over every item. The memory is ALLURE proper: the judge's *own* mistakes on the mine
   split, auto-approved as the reference says (a reviewer who agrees), plus as many of its correct
   verdicts there (``source = "success"``). Nothing from dev or held-out enters it.
3. Arms on dev + held-out: ``zero-shot``; ``default`` (what the loop used before: every mistake of
   the same problem type); ``label-prior`` (8 examples, label shares of the audit split);
   ``nearest`` (k = 4 nearest examples per group of items, similarity floor 0.3);
   ``validated`` (6 candidate blocks scored on dev; the best kept, zero-shot included as
   candidate 0); ``guard, no calibration`` (the loop before: the default strategy if it beat
   zero-shot on dev, else zero-shot); ``+cal`` arms (zero-shot, default and the best arm calibrated
   as ``[evaluator] calibration = "auto"`` does: none, contextual, prior-corrected or a logit offset
   fitted on the mined split, whichever is best on dev, a collapse to one label refused); ``loop
   default`` (``auto`` calibration and the guard: the default strategy's calibrated pass if it is not
   worse on dev than calibrated zero-shot, else calibrated zero-shot).
4. Every decision (validated block, calibration mode, best arm, guard) reads dev only; the
   held-out split is read once per arm for the table: balanced accuracy [stratified bootstrap
   95 % CI], accuracy, F1, kappa, AUC, predicted label shares, calls and wall time, and against
   zero-shot the paired BA difference [CI] with Holm-adjusted sign-flip permutation p, and McNemar
   p on accuracy.

Every call goes through the run store of ``--project`` (per task), so the bench resumes where it
stopped and a second run sends 0 calls. The run store is also saved, gzipped, under
``benchmarks/results/`` (``--save-store``), so that another session on another machine resumes it.

Usage::

    .venv/bin/python benchmarks/bench_icl_strategies.py [--tasks halueval,cogeval] [--items 300] [--seed 0]
"""

from __future__ import annotations

import argparse
import gzip
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from allure.config import AuditSpec  # noqa: E402
from allure.dataset import DatasetSpec, load_items  # noqa: E402
from allure.gold_check import GoldCheck  # noqa: E402
from allure.labels import Label  # noqa: E402
from allure.memory import EpisodicMemory, RetrievalPolicy, build_candidates, build_successes  # noqa: E402
from allure.metrics import (  # noqa: E402  # noqa: E402
    CONTENT_FREE,
    SplitMetrics,
    apply_offset,
    binary_rows,
    calibrate,
    choose_calibration,
    compute_metrics,
    content_free_mean,
    fit_offset,
    holm_adjust,
    label_shares,
    mcnemar_test,
    objective_difference,
)
from allure.models import Item, Verdict, stable_hash  # noqa: E402
from allure.store import RunStore, project_db_path  # noqa: E402
from allure.studies import ArmSpec, ArmsStudy, StudySource, run_study  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results"
PROMPTS = ROOT / "benchmarks" / "prompts"
"""The reversed questions of the read-out's polarity variant (``[evaluator] polarity_prompt``; only
``bench_readout.py`` asks them: a study arm runs no read-out, so this bench sends none)."""
HALUEVAL_RUBRIC = (
    "yes: the response contains hallucinated content (made-up, unverifiable or false facts, or it does "
    "not follow the query); no: it contains none."
)


@dataclass
class Task:
    """One judge task: its spec, items and splits."""

    name: str
    spec: AuditSpec
    items: list[Item]
    reference: dict[str, Label | None]
    split: dict[str, str]  # mine | dev | heldout
    extract: Callable[[str], str | None]

    def ids(self, *splits: str) -> list[Item]:
        return [it for it in self.items if self.split[it.id] in splits]


def _draw(pool: list[Item], n_audit: int, n_items: int, seed: int, dev_share: float) -> dict[str, str]:
    rng = random.Random(seed)
    chosen = rng.sample(sorted(pool, key=lambda it: it.id), min(len(pool), n_audit + n_items))
    held = {it.id for it in chosen[:n_items]}
    audit = chosen[n_items:]
    n_dev = round(dev_share * len(audit))
    dev = {it.id for it in audit[:n_dev]}
    return {it.id: "heldout" if it.id in held else "dev" if it.id in dev else "mine" for it in chosen}


def halueval_task(args: argparse.Namespace, model: str) -> Task:
    data = SHARED / "halueval_general" / "general_data.json"
    if not data.is_file():
        raise SystemExit(f"missing {data}: the bench reads ../shared/data/halueval_general")
    ds = DatasetSpec.model_validate(
        {
            "path": str(data),
            "format": "jsonl",
            "columns": {"task": "user_query", "response": "chatgpt_response", "gold_label": "hallucination"},
            "max_response_chars": args.max_chars,
        }
    )
    labels: list[Label] = ["yes", "no"]
    pool = [it for it in load_items(ds, label_set=labels) if it.gold_label is not None]
    split = _draw(pool, args.audit, args.items, args.seed, args.dev_share)
    items = [it for it in pool if it.id in split]
    spec = AuditSpec.model_validate(
        {
            "name": "bench-icl-strategies-halueval",
            "label_set": labels,
            "positive_label": "yes",
            "label_synonyms": {
                "yes": ["hallucinated", "hallucination"],
                "no": ["faithful", "no hallucination"],
            },
            "dataset": ds.model_dump(mode="json"),
            "evaluator": {
                "kind": "local",
                "model": model,
                "prompt": "reference_free",
                "rubric": HALUEVAL_RUBRIC,
                "calibration": "none",  # the bench calibrates each arm itself (calibrated() below)
                # "is the response free of hallucination?": its "yes" means the judge's "no"
                "polarity_prompt": str(PROMPTS / "halueval_reversed"),
                "polarity_labels": {"yes": "no", "no": "yes"},
            },
        }
    )
    return Task("halueval", spec, items, {it.id: it.gold_label for it in items}, split, lambda s: None)


def cogeval_task(args: argparse.Namespace, model: str) -> Task:
    from bench_icl_effect import pick_items

    data = SHARED / "cogeval_cogmaps" / "cogeval_conversations.jsonl.gz"
    if not data.is_file():
        raise SystemExit(f"missing {data}: the bench reads ../shared/data/cogeval_cogmaps")
    drawn = pick_items(
        data, args.audit + args.items, args.max_chars_cogeval, set(), seed=args.seed + 11, per_task=3
    )
    check = GoldCheck()
    rng = random.Random(args.seed)
    # whole tasks stay together in one split (their responses share a task text: prompt cache)
    by_task: dict[str, list[Item]] = {}
    for it in drawn:
        by_task.setdefault(it.task, []).append(it)
    tasks = sorted(by_task, key=lambda t: by_task[t][0].id)
    rng.shuffle(tasks)
    split: dict[str, str] = {}
    n_held = 0
    audit: list[Item] = []
    for t in tasks:
        if n_held < args.items:
            for it in by_task[t]:
                split[it.id] = "heldout"
            n_held += len(by_task[t])
        else:
            audit.extend(by_task[t])
    n_dev = round(args.dev_share * len(audit))
    for i, it in enumerate(audit):
        split[it.id] = "dev" if i < n_dev else "mine"
    spec = AuditSpec.model_validate(
        {
            "name": "bench-icl-strategies-cogeval",
            "dataset": {"path": str(data), "format": "cogeval"},
            "evaluator": {
                "kind": "local",
                "model": model,
                "calibration": "none",
                # "is the response wrong?": its score 1 means the judge's 0
                "polarity_prompt": str(PROMPTS / "cogeval_reversed"),
                "polarity_labels": {"1": 0, "0": 1},
            },
        }
    )
    return Task(
        "cogeval", spec, drawn, {it.id: check.reference_label(it) for it in drawn}, split, check.extract
    )


@dataclass
class ArmRun:
    """One arm's verdicts (item id -> verdict) and costs; ``blocks``: item id -> its example ids."""

    name: str
    verdicts: dict[str, Verdict]
    blocks: dict[str, tuple[str, ...]]
    calls: int = 0
    wall_s: float = 0.0
    labels: dict[str, Label | None] = field(default_factory=dict)

    def label(self, item_id: str) -> Label | None:
        if item_id in self.labels:
            return self.labels[item_id]
        v = self.verdicts.get(item_id)
        return v.label if v else None


class Bench:
    """Runs a task's studies through the run store and keeps the calls count."""

    def __init__(self, task: Task, project: Path, memory: EpisodicMemory) -> None:
        self.task, self.project, self.memory = task, project, memory
        self.calls = 0

    def study(self, name: str, items: list[Item], arms: list[ArmSpec]) -> dict[str, ArmRun]:
        t = self.task
        src = StudySource(
            spec=t.spec,
            items=items,
            reference={it.id: t.reference.get(it.id) for it in items},
            splits={it.id: "heldout" for it in items},
            source={"spec": f"bench_icl_strategies ({t.name})", "split": "bench"},
            memory_location=self.memory.location,
        )
        study = run_study(
            self.project,
            src,
            self.memory,
            ArmsStudy(arms),
            name=f"{t.name}-{name}",
            say=lambda line: print(line, flush=True),
        )
        store = RunStore(project_db_path(self.project))
        try:
            out = {}
            for r in study.arms:
                vs = store.verdicts(study.id, r.index)
                # an arm's cost: every prompt it needed (sent now or earlier) and the server time they took
                out[r.arm.name] = ArmRun(
                    r.arm.name,
                    vs,
                    {i: tuple(v.icl_ids) for i, v in vs.items()},
                    len(vs),
                    sum(v.latency_s for v in vs.values()),
                )
                self.calls += r.calls
            return out
        finally:
            store.close()


def mine_memory(bench: Bench, zero: ArmRun) -> None:
    """ALLURE proper: the judge's own mistakes on the mine split (+ as many correct verdicts), approved."""
    t = bench.task
    if bench.memory.count():
        return
    splits = {i: ("audit" if s == "mine" else "heldout") for i, s in t.split.items()}
    mistakes = build_candidates(
        "bench", t.items, references=t.reference, splits=splits, verdicts=zero.verdicts, extract=t.extract
    )
    successes = build_successes(
        "bench",
        t.items,
        references=t.reference,
        splits=splits,
        verdicts=zero.verdicts,
        k=len(mistakes),
        seed=0,
    )
    approved = [
        ex.model_copy(update={"decision": "approve", "reviewer": "auto-approve (bench)"})
        for ex in mistakes + successes
    ]
    bench.memory.add(approved)


def prior_of(t: Task) -> dict[str, float]:
    known = [str(t.reference[it.id]) for it in t.ids("mine", "dev") if t.reference[it.id] is not None]
    return {lab: known.count(lab) / len(known) for lab in sorted(set(known))}


def dev_score(t: Task, arm: ArmRun, objective: str = "balanced_accuracy") -> float:
    from allure.metrics import objective_value

    dev = t.ids("dev")
    v = objective_value(
        [t.reference[it.id] for it in dev],
        [arm.label(it.id) for it in dev],
        objective=objective,
        labels=t.spec.label_set,
    )
    return -1.0 if v is None else v


def calibrated(bench: Bench, arm: ArmRun, items: list[Item]) -> ArmRun:
    """``arm`` + contextual calibration: p_cf per distinct block (3 content-free calls each), mode chosen on dev."""
    t = bench.task
    pos = t.spec.positive_label
    neg = next(lab for lab in t.spec.label_set if lab != pos)
    blocks = sorted({arm.blocks.get(it.id, ()) for it in items})
    cf_items: list[Item] = []
    for b in blocks:
        key = stable_hash(list(b), length=8)
        for k, text in enumerate(CONTENT_FREE):
            cf_items.append(
                Item(
                    id=f"cf-{key}-{k}",
                    task=text,
                    response=text,
                    gold_answers=[text] if t.name == "cogeval" else [],
                )
            )
    cf_arms = [ArmSpec(name=f"block {stable_hash(list(b), length=8)}", example_ids=list(b)) for b in blocks]
    # a study name holds letters, digits, '.', '_', '-' ("validated (zero-shot won)" -> "validated_zero-shot_won")
    stem = "cf-" + re.sub(r"[^A-Za-z0-9._-]+", "_", arm.name).strip("_")
    runs: dict[str, ArmRun] = {}
    for a in cf_arms:  # each block asks its own 3 content-free inputs only
        key = a.name.split()[-1]
        own = [it for it in cf_items if it.id.startswith(f"cf-{key}-")]
        runs.update(bench.study(stem if len(cf_arms) == 1 else f"{stem}-{key}", own, [a]))
    p_cf: dict[tuple[str, ...], list[float]] = {}
    for b, a in zip(blocks, cf_arms, strict=True):
        key = stable_hash(list(b), length=8)
        probs = [
            v.prob_positive
            for k in range(len(CONTENT_FREE))
            if (v := runs[a.name].verdicts.get(f"cf-{key}-{k}")) is not None and v.prob_positive is not None
        ]
        p_cf[b] = probs
    prior = prior_of(t)
    pi = [prior.get(str(neg), 0.5), prior.get(str(pos), 0.5)]
    dev = t.ids("dev")

    def labels_for(mode: str, offset: float = 0.0) -> dict[str, Label | None]:
        out: dict[str, Label | None] = {}
        for it in items:
            v = arm.verdicts.get(it.id)
            p = v.prob_positive if v else None
            cf = p_cf.get(arm.blocks.get(it.id, ()), [])
            if mode == "none" or p is None or (mode != "offset" and not cf):
                out[it.id] = v.label if v else None
                continue
            if mode == "offset":
                q = float(apply_offset([p], offset)[0])
            else:
                mean = content_free_mean(binary_rows(cf))
                q = float(calibrate(binary_rows([p]), mean, prior=pi if mode == "prior" else None)[0, 1])
            out[it.id] = pos if q > 0.5 else neg
        return out

    modes = {m: labels_for(m) for m in ("none", "contextual", "prior")}
    # offset: fitted on the mined split (the loop fits it on the audit items outside dev), so the mode is
    # chosen on dev items it was not fitted on; an arm that never labelled the mined items has no offset
    mined = [(v.prob_positive, t.reference[it.id]) for it in t.ids("mine") if (v := arm.verdicts.get(it.id))]
    mined = [(p, r) for p, r in mined if p is not None and r is not None]
    if mined:
        share = sum(r == pos for _, r in mined) / len(mined)
        modes["offset"] = labels_for("offset", fit_offset([p for p, _ in mined], share))
    # the loop's rule (calibration = "auto"): a collapse to one label refused, every other mode tested
    # against "none" on dev (one-sided, Holm over the modes), the best significant one applied
    pick = choose_calibration(
        {m: [lab.get(it.id) for it in dev] for m, lab in modes.items()},
        [t.reference[it.id] for it in dev],
        labels=t.spec.label_set,
    )
    n_cf = sum(r.calls for r in runs.values())
    print(f"  calibration of {arm.name}: {len(blocks)} block(s), {pick.describe()}", flush=True)
    return ArmRun(
        f"{arm.name} +cal ({pick.mode})",
        arm.verdicts,
        arm.blocks,
        arm.calls + n_cf,
        arm.wall_s,
        modes[pick.mode],
    )


def validated(bench: Bench, n_candidates: int) -> tuple[str, list[str] | None, dict[str, ArmRun]]:
    """Random search over candidate blocks on dev (zero-shot is candidate 0); returns the winner's name and ids."""
    t = bench.task
    prior = prior_of(t)
    arms = [ArmSpec(name="cand-0 zero-shot", example_ids=[])]
    for c in range(1, n_candidates + 1):
        size = (4, 8)[c % 2]
        sources: list[str] | None = None if c <= n_candidates // 2 else ["mistake"]
        policy = RetrievalPolicy.model_validate(
            {"kind": "label_prior", "x": size, "seed": 100 + c, "prior": prior, "sources": sources}
        )
        ids = [ex.id for ex in bench.memory.retrieve(t.ids("dev")[0], policy)]
        tag = "mixed" if sources is None else "mistakes"
        arms.append(ArmSpec(name=f"cand-{c} x={size} {tag}", example_ids=ids))
    runs = bench.study("validate", t.ids("dev"), arms)
    scores = {name: dev_score(t, r) for name, r in runs.items()}
    best = max(scores, key=lambda n: (scores[n], n.startswith("cand-0")))
    ids = next(a.example_ids for a in arms if a.name == best)
    print("  validated selection on dev: " + ", ".join(f"{n} {s:.3f}" for n, s in scores.items()), flush=True)
    return best, (ids or None), runs


@dataclass
class Row:
    name: str
    metrics: SplitMetrics
    shares: dict[str, float]
    calls: int
    wall_s: float
    dev: float
    delta: str = ""
    p_holm: float | None = None
    mcnemar_p: float | None = None
    delta_value: float | None = None
    ci: tuple[float, float] | None = None


def table(t: Task, arms: list[ArmRun], zero: ArmRun) -> tuple[list[Row], str]:
    held = t.ids("heldout")
    y = [t.reference[it.id] for it in held]
    rows = []
    for a in arms:
        vs = [a.verdicts.get(it.id) for it in held]
        m = compute_metrics(
            y,
            [a.label(it.id) for it in held],
            prob_positive=[v.prob_positive if v else None for v in vs],
            labels=tuple(t.spec.label_set),
            pos_label=t.spec.positive_label,
            n_resamples=1000,
            random_state=0,
        )
        shares = label_shares([a.label(it.id) for it in held], t.spec.label_set)
        rows.append(Row(a.name, m, shares, a.calls, a.wall_s, dev_score(t, a)))
    cmps = {}
    for a in arms[1:]:
        cmps[a.name] = objective_difference(
            y,
            [zero.label(it.id) for it in held],
            [a.label(it.id) for it in held],
            objective="balanced_accuracy",
            labels=t.spec.label_set,
        )
    adj = dict(zip(cmps, holm_adjust([c.p_value for c in cmps.values()]), strict=True)) if cmps else {}
    for r, a in zip(rows[1:], arms[1:], strict=True):
        c = cmps[a.name]
        r.p_holm = adj[a.name]
        r.delta_value = c.delta
        r.ci = (c.ci_low, c.ci_high) if c.ci_low is not None and c.ci_high is not None else None
        r.mcnemar_p = mcnemar_test(
            y, [zero.label(it.id) for it in held], [a.label(it.id) for it in held]
        ).p_value
    best = max(rows[1:], key=lambda r: r.dev)
    line = (
        f"best arm: {best.name}, balanced accuracy delta vs zero-shot "
        f"{best.delta_value:+.3f} [{best.ci[0]:+.3f}, {best.ci[1]:+.3f}], Holm p = {best.p_holm:.3g}"
        if best.delta_value is not None and best.ci is not None and best.p_holm is not None
        else f"best arm: {best.name} (no comparison)"
    )
    return rows, line


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def render(t: Task, rows: list[Row], line: str) -> str:
    held = t.ids("heldout")
    ref = label_shares([t.reference[it.id] for it in held], t.spec.label_set)
    out = [
        f"### {t.name}: {len(held)} held-out items, {len(t.ids('dev'))} dev, {len(t.ids('mine'))} mined "
        f"(reference shares {', '.join(f'{k} {v:.0%}' for k, v in ref.items())})",
        "",
        "| arm | BA [95% CI] | dev BA | accuracy | F1 | kappa | AUC | label shares | calls | wall s "
        "| BA delta vs zero-shot [CI] | Holm p (perm.) | McNemar p |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        m = r.metrics
        ba_ci = m.ci.balanced_accuracy if getattr(m.ci, "balanced_accuracy", None) else None
        ba = _f(m.balanced_accuracy) + (f" [{ba_ci.low:.3f}, {ba_ci.high:.3f}]" if ba_ci else "")
        delta = (
            f"{r.delta_value:+.3f} [{r.ci[0]:+.3f}, {r.ci[1]:+.3f}]"
            if r.delta_value is not None and r.ci
            else "-"
        )
        out.append(
            f"| {r.name} | {ba} | {r.dev:.3f} | {_f(m.accuracy_all)} | {_f(m.f1)} | {_f(m.kappa)} | {_f(m.auc)} | "
            + ", ".join(f"{k} {v:.0%}" for k, v in r.shares.items())
            + f" | {r.calls} | {r.wall_s:.0f} | {delta} | {_f(r.p_holm)} | {_f(r.mcnemar_p)} |"
        )
    out += ["", line, ""]
    return "\n".join(out)


def strategy(name: str) -> str:
    """An arm's strategy, without what it chose on this task: ``validated (cand-3 x=8 mixed)`` ->
    ``validated``; a calibrated arm keeps its ``+cal`` (``validated (zero-shot won) +cal (offset)`` ->
    ``validated +cal``)."""
    return re.sub(r"\s*\([^)]*\)", "", name).strip()


def defaults_from_evidence(tables: dict[str, list[Row]]) -> list[str]:
    """Which strategy wins on dev, by balanced accuracy, on every task (the loop's default should be it);
    the safest choice when none does; and whether the loop's default is significantly worse than
    zero-shot on held-out anywhere (the bar: never)."""
    wins: dict[str, list[str]] = {}
    for task, rows in tables.items():
        zero = rows[0].dev
        for r in rows[1:]:
            if r.name.startswith(("loop default", "guard, no calibration")):
                continue
            wins.setdefault(strategy(r.name), [])
            if r.dev > zero:
                wins[strategy(r.name)].append(task)
    every = [s for s, ts in wins.items() if len(ts) == len(tables)]
    out = ["## Defaults from evidence (decided on dev, never on held-out)", ""]
    for s_, ts in wins.items():
        out.append(f"- {s_}: beats zero-shot on dev in {', '.join(ts) if ts else 'no task'}")
    if every:
        best = max(
            every,
            key=lambda s_: min(r.dev for rows in tables.values() for r in rows if strategy(r.name) == s_),
        )
        out.append(f"\ndefault: {best} (wins on dev on every task)")
    else:
        loop_dev = {
            t: next(r.dev for r in rows if r.name.startswith("loop default")) for t, rows in tables.items()
        }
        guard_dev = {
            t: next(r.dev for r in rows if r.name.startswith("guard, no calibration"))
            for t, rows in tables.items()
        }
        safe = all(loop_dev[t] >= rows[0].dev for t, rows in tables.items())
        out.append(
            "\ndefault: no strategy wins on dev on every task, so the loop's default is the safest: "
            '`calibration = "auto"` with the guard (auto keeps the parsed labels unless a correction is strictly '
            "better on dev, a collapse to one label refused; the guard keeps zero-shot unless the examples do at "
            "least as well on dev). "
            "On dev it is "
            + ("never below zero-shot" if safe else "BELOW zero-shot on some task")
            + " ("
            + ", ".join(f"{t} {loop_dev[t]:.3f} vs {rows[0].dev:.3f}" for t, rows in tables.items())
            + ") and against the guard without calibration "
            + ", ".join(f"{t} {loop_dev[t]:.3f} vs {guard_dev[t]:.3f}" for t in tables)
        )
    for task, rows in tables.items():
        loop = next(r for r in rows if r.name.startswith("loop default"))
        worse = loop.delta_value is not None and loop.delta_value < 0 and (loop.p_holm or 1.0) < 0.05
        out.append(
            f"- {task}: {loop.name} vs zero-shot {_f(loop.delta_value)}, Holm p = {_f(loop.p_holm)}: "
            + ("SIGNIFICANTLY WORSE" if worse else "not significantly worse")
        )
    return out


def run_task(t: Task, project: Path, args: argparse.Namespace) -> tuple[str, int, list[Row]]:
    t0 = time.perf_counter()
    project.mkdir(parents=True, exist_ok=True)
    restore_store(project, t.name)
    memory = EpisodicMemory.open(str(project / "memory"))
    bench = Bench(t, project, memory)
    counts = {s: len(t.ids(s)) for s in ("mine", "dev", "heldout")}
    print(f"== {t.name}: {counts} (seed {args.seed}) ==", flush=True)
    most = (
        len(t.items)
        + 3 * (counts["dev"] + counts["heldout"])
        + args.candidates * counts["dev"]
        + counts["heldout"]
    )
    stored, mean_s = _stored_calls(project)
    left = max(most - stored, 0)
    eta = (
        f"~{left * mean_s / 3600:.1f} h at {mean_s:.1f} s per call so far"
        if mean_s
        else "unknown until a call is stored"
    )
    print(
        f"plan: zero-shot on {len(t.items)} items; then 3 strategy arms on {counts['dev'] + counts['heldout']} "
        f"dev + held-out items, {args.candidates} candidate blocks on {counts['dev']} dev items, the chosen "
        f"block on {counts['heldout']} held-out items, 3 content-free calls per calibrated block: at most "
        f"{most} prompts, {stored} calls already stored, so at most {left} uncached (estimated time {eta}); "
        "each study below prints how many are not stored yet and its estimated time",
        flush=True,
    )
    zero = bench.study("zero-shot", t.items, [ArmSpec(name="zero-shot", example_ids=[])])["zero-shot"]
    mine_memory(bench, zero)
    kinds = {ex.source for ex in memory.all()}
    print(f"memory: {memory.count()} examples ({', '.join(sorted(kinds))})", flush=True)
    eval_items = t.ids("dev", "heldout")
    prior = prior_of(t)
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
                {"kind": "nearest", "k": 4, "min_similarity": 0.3, "group_by": args.group_by[t.name]}
            ),
        ),
    ]
    runs = bench.study("strategies", eval_items, arms)
    for name, r in runs.items():
        print(f"  {name}: {len(set(r.blocks.values()))} distinct blocks", flush=True)
    best_name, best_ids, cand_runs = validated(bench, args.candidates)
    if best_ids is None:
        val = ArmRun("validated (zero-shot won)", zero.verdicts, zero.blocks)
    else:
        got = bench.study("validated", t.ids("heldout"), [ArmSpec(name="validated", example_ids=best_ids)])
        v = got["validated"]
        merged = {**cand_runs[best_name].verdicts, **v.verdicts}
        val = ArmRun(
            f"validated ({best_name})", merged, {i: tuple(best_ids) for i in merged}, v.calls, v.wall_s
        )
    zero_run = ArmRun("zero-shot", zero.verdicts, zero.blocks, zero.calls, zero.wall_s)
    main = [zero_run, runs["default"], runs["label-prior"], runs["nearest"], val]
    main = [ArmRun(a.name, a.verdicts, a.blocks, a.calls, a.wall_s) for a in main]
    # the guarded loop as it was (no calibration): the default strategy is adopted only when it is not
    # worse than zero-shot on dev
    adopted = dev_score(t, runs["default"]) >= dev_score(t, zero_run)
    loop = runs["default"] if adopted else zero_run
    old_loop = ArmRun(
        f"guard, no calibration ({'adopted' if adopted else 'kept zero-shot'})", loop.verdicts, loop.blocks
    )
    zero_cal = calibrated(bench, zero_run, eval_items)
    default_cal = calibrated(bench, runs["default"], eval_items)
    best = max(main[1:], key=lambda a: dev_score(t, a))
    best_cal = default_cal if best.name == "default" else calibrated(bench, best, eval_items)
    # the loop's default (calibration = "auto", the guard): each pass calibrated as auto chose on dev,
    # the examples adopted only when their calibrated pass is not worse than the calibrated zero-shot
    adopted = dev_score(t, default_cal) >= dev_score(t, zero_cal)
    chosen = default_cal if adopted else zero_cal
    loop_arm = ArmRun(
        f"loop default (auto calibration, guard {'adopted' if adopted else 'kept zero-shot'})",
        chosen.verdicts,
        chosen.blocks,
        labels=chosen.labels,
    )
    cal_arms = [zero_cal, default_cal] + ([best_cal] if best_cal is not default_cal else [])
    rows, line = table(t, [*main, old_loop, loop_arm, *cal_arms], zero_run)
    text = render(t, rows, line)
    print(text, flush=True)
    print(f"{t.name}: {bench.calls} calls sent in this run, {time.perf_counter() - t0:.0f} s", flush=True)
    save_store(project, t.name, args)
    return text, bench.calls, rows


def _stored_calls(project: Path) -> tuple[int, float]:
    """Calls already in the project's run store and their mean latency in seconds (0 when none)."""
    db = project_db_path(project)
    if not db.exists():
        return 0, 0.0
    with sqlite3.connect(db) as c:
        n, mean = c.execute("SELECT COUNT(*), AVG(latency_s) FROM calls WHERE status != 'error'").fetchone()
    return int(n), float(mean or 0.0)


def store_snapshot(name: str) -> Path:
    return RESULTS / f"icl_strategies.{name}.db.gz"


def restore_store(project: Path, name: str, snap: Path | None = None) -> None:
    """Start from the saved run store of an earlier session (``snap``; default: this bench's
    snapshot of task ``name``) when this project has none."""
    db, snap = project_db_path(project), snap or store_snapshot(name)
    if db.exists() or not snap.is_file():
        return
    db.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(snap, "rb") as src, open(db, "wb") as dst:
        shutil.copyfileobj(src, dst)
    print(f"restored the run store from {snap}", flush=True)


def save_store(project: Path, name: str, args: argparse.Namespace) -> None:
    """A consistent copy of the run store, gzipped, for a later session to resume from."""
    if not args.save_store:
        return
    snapshot_store(project, store_snapshot(name))


def snapshot_store(project: Path, snap: Path) -> None:
    """A consistent copy of ``project``'s run store (SQLite's backup, safe while it is written), gzipped to ``snap``."""
    snap.parent.mkdir(parents=True, exist_ok=True)
    tmp = project / "snapshot.db"
    tmp.unlink(missing_ok=True)
    src = sqlite3.connect(project_db_path(project))
    dst = sqlite3.connect(tmp)
    src.backup(dst)
    src.close()
    dst.close()
    with open(tmp, "rb") as fh, gzip.open(snap, "wb", compresslevel=9) as out:
        shutil.copyfileobj(fh, out)
    tmp.unlink()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", default="halueval,cogeval", help="comma-separated: halueval, cogeval")
    ap.add_argument("--items", type=int, default=300, help="held-out items per task (>= 300 for the bar)")
    ap.add_argument("--audit", type=int, default=300, help="audit items per task (mine + dev)")
    ap.add_argument("--dev-share", type=float, default=0.4, help="share of the audit items kept for dev")
    ap.add_argument("--seed", type=int, default=0, help="seed of the draw")
    ap.add_argument("--candidates", type=int, default=6, help="candidate blocks of validated selection")
    ap.add_argument("--max-chars", type=int, default=400, help="HaluEval: longest response kept")
    ap.add_argument("--max-chars-cogeval", type=int, default=200, help="CogEval: longest response kept")
    ap.add_argument("--project", type=Path, default=ROOT / ".allure-bench" / "icl_strategies")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b", help="embedded model")
    ap.add_argument("--no-save-store", dest="save_store", action="store_false")
    ap.add_argument("--out", type=Path, default=RESULTS / "icl_strategies.md")
    args = ap.parse_args()
    args.group_by = {"halueval": "none", "cogeval": "problem_type"}
    makers = {"halueval": halueval_task, "cogeval": cogeval_task}
    texts, total, tables = [], 0, {}
    for name in args.tasks.split(","):
        task = makers[name](args, args.model)
        text, calls, tables[name] = run_task(task, args.project / f"{name}-s{args.seed}", args)
        texts.append(text)
        total += calls
    verdict = "\n".join(defaults_from_evidence(tables))
    print(verdict, flush=True)
    texts.append(verdict + "\n")
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout
    header = (
        f"# ICL strategies on the embedded judge\n\n`python benchmarks/bench_icl_strategies.py --tasks {args.tasks} "
        f"--items {args.items} --seed {args.seed}` at commit {commit.strip()}, {time.strftime('%Y-%m-%d')}\n\n"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(header + "\n".join(texts))
    print(f"calls sent in this run: {total}")
    if total == 0:
        print("second run: 0 calls")
    return 0


if __name__ == "__main__":
    sys.exit(main())
