"""Does a learned read-out make the embedded judge better? Zero-shot, the loop's default, a logistic
read-out on the judge's label log-odds, the memory's kNN vote, both, and a learning curve (issue 34).

Per task (``cogeval``, ``halueval``: the draws, prompts and memory of ``bench_icl_strategies.py``)
and seed:

1. Zero-shot over every item (audit = mine + dev, and ``--items`` held-out). Its label
   probabilities give each item's feature ``z = log P(pos) - log P(neg)``: the read-out arms cost
   no call beyond zero-shot's.
2. The memory: the judge's own mistakes on the mine split + as many correct verdicts, approved.
   Each item's memory vote ``v``: the similarity-weighted share of the positive label among its
   8 nearest approved examples (MiniLM embeddings of response + task; the item's own example never
   votes).
3. Arms, read on held-out: ``zero-shot``; ``loop default`` (the loop with its defaults: the default
   strategy, ``calibration = "auto"`` and the one-sided guard (the examples adopted only when their
   calibrated pass is significantly better on dev than calibrated zero-shot and dev holds at least
   10 of each label; the memory's guard reads dev: the ICL calls were made for it), then
   ``readout = "auto"`` as the loop's default ``[loop] folds = 5`` decides it: the logistic read-out
   on ``z`` replaces the labels only when its out-of-fold labels of every audit item (mine + dev,
   each fold's read-out fitted on the other folds) are significantly better than the pass's; the
   applied read-out is fitted on every audit item); ``loop default before read-out``;
   ``read-out (z)``, ``read-out (vote)``, ``read-out (z + vote)``: class-weighted L2 logistic
   regression fitted on the mine split only, ``C`` by stratified 5-fold CV there; ``kNN prompting
   (z)``: majority of the 8 mine items nearest in ``z``; ``memory vote`` (``v > 0.5``); ``read-out
   auto`` (the best read-out on dev, adopted by the guard's one-sided test against zero-shot on
   dev); a learning curve of ``read-out (z + vote)`` fitted on the first 25, 50, 100, 200 audit
   items of 3 seeded review orders (the library's ``allure.evaluator.readout_curve``, as ``allure
   study run learning-curve`` runs it: the vote counts only those items' examples; per size the
   mean over orders with its interval, the delta vs zero-shot, the orders' merged p, Holm over the
   sizes); and a shuffled-label control (20 fits on permuted mine labels: mean balanced accuracy on dev and held-out).
4. The held-out claim: ONE pre-registered primary comparison per task and seed (``loop default``
   vs ``zero-shot``, balanced accuracy, two-sided paired permutation test, alpha 0.05); every other
   arm is exploratory, Holm-adjusted.

Every call goes through the run store of ``--project`` (per task and seed), restored from the
strategies bench's snapshot (``benchmarks/results/icl_strategies.<task>.db.gz``) so that identical
prompts are not sent again; a second run sends 0 calls. Work is ordered so that what is cached
comes first and results are written after each (task, seed).

Usage::

    .venv/bin/python benchmarks/bench_readout.py [--tasks halueval,cogeval] [--seeds 0,1] [--items 300]
"""

from __future__ import annotations

import argparse
import random
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_icl_strategies import (  # noqa: E402
    RESULTS,
    ROOT,
    ArmRun,
    Bench,
    Row,
    Task,
    calibrated,
    cogeval_task,
    halueval_task,
    mine_memory,
    render,
    restore_store,
    snapshot_store,
    table,
)

from allure.dataset import cross_folds  # noqa: E402
from allure.evaluator import CurveDraw  # noqa: E402
from allure.labels import Label  # noqa: E402
from allure.memory import EpisodicMemory, RetrievalPolicy  # noqa: E402
from allure.metrics import (  # noqa: E402
    FittedReadout,
    curve_point,
    curve_points,
    fit_readout,
    holm_adjust,
    knn_labels,
    log_odds,
    memory_vote,
    objective_difference,
    too_few,
)
from allure.models import Item, Verdict  # noqa: E402
from allure.store import project_db_path  # noqa: E402
from allure.studies import ArmSpec  # noqa: E402

CURVE = (25, 50, 100, 200)
CURVE_DRAWS = 3
EMPTY = "''"
"""An empty option value, as a shell command line writes it."""
K = 8


@dataclass
class Features:
    """Per item: ``z`` (zero-shot label log-odds), ``vote`` (the memory's kNN vote) and
    ``z_reversed`` (the polarity variant's label log-odds, read back in the judge's terms)."""

    z: dict[str, float]
    vote: dict[str, float]
    z_reversed: dict[str, float] = field(default_factory=dict)

    def matrix(self, items: list[Item], names: tuple[str, ...]) -> np.ndarray:
        cols = {"z": self.z, "vote": self.vote, "z_reversed": self.z_reversed}
        return np.array([[cols[n][it.id] for n in names] for it in items], dtype=np.float64)


def item_z(v: Verdict | None, pos: Label) -> float:
    """A verdict's label log-odds; without probabilities its parsed label as +-2 (0: unparsed)."""
    lo = log_odds(v.prob_positive) if v else None
    return lo if lo is not None else (0.0 if not v or v.label is None else (2.0 if v.label == pos else -2.0))


def features(t: Task, zero: ArmRun, memory: EpisodicMemory) -> Features:
    """``z`` from the zero-shot verdicts (never the reference); ``v`` from the approved examples."""
    from allure.memory import embed
    from allure.memory._nearest import embedding_text

    pos = t.spec.positive_label
    z = {it.id: item_z(zero.verdicts.get(it.id), pos) for it in t.items}
    examples = memory.all()
    ex_vecs = embed([embedding_text(ex.response, ex.task) for ex in examples])
    it_vecs = embed([embedding_text(it.response, it.task) for it in t.items])
    own = [{j for j, ex in enumerate(examples) if ex.item_id == it.id} for it in t.items]
    votes = memory_vote(it_vecs, ex_vecs, [ex.correct_label for ex in examples], pos, k=K, exclude=own)
    return Features(z, {it.id: v for it, v in zip(t.items, votes, strict=True)})


def polarity_project(args: argparse.Namespace, name: str) -> Path:
    """The run store of a task's reversed question: one for every seed that splits the same items
    again (the question is asked zero-shot, so its calls do not depend on the split or the memory).
    It starts from the saved snapshot (:func:`polarity_snapshot`) when it has no store yet."""
    project = args.project / f"{name}-polarity-items{args.items_seed}"
    restore_store(project, name, polarity_snapshot(project))
    return project


def polarity_snapshot(project: Path) -> Path:
    """Where the reversed question's calls are saved, gzipped, after a run that sent some (a later
    session, on another machine, resumes from them)."""
    return RESULTS / f"readout.{project.name}.db.gz"


def reversed_arm(t: Task, project: Path) -> tuple[ArmRun, int]:
    """The polarity variant (``[evaluator] polarity_prompt`` of the task's spec): one zero-shot call
    per item with the reversed question, each verdict read back in the judge's terms as the pass
    pipeline reads it (:meth:`allure.evaluator.PolarityVariant.read_back`); the calls sent."""
    from allure.evaluator import polarity_variant

    variant = polarity_variant(t.spec)
    assert variant is not None, f"{t.name}: the task's spec has no polarity_prompt"
    project.mkdir(parents=True, exist_ok=True)
    bench = Bench(t, project, EpisodicMemory.open(str(project / "memory")))
    arm = ArmSpec(name="reversed", example_ids=[], prompt=t.spec.evaluator.polarity_prompt)
    run = bench.study("reversed", t.items, [arm])["reversed"]
    if bench.calls:
        snapshot_store(project, polarity_snapshot(project))
    back = {i: variant.read_back(v) for i, v in run.verdicts.items()}
    return ArmRun("reversed question (read back)", back, run.blocks, run.calls, run.wall_s), bench.calls


def as_label(t: Task, s: str) -> Label:
    return next(lab for lab in t.spec.label_set if str(lab) == s)


def readout_arm(
    t: Task,
    zero: ArmRun,
    feats: Features,
    fit_items: list[Item],
    names: tuple[str, ...],
    title: str,
    **kw: object,
) -> tuple[ArmRun, FittedReadout | None]:
    """The read-out fitted on ``fit_items`` (their references), applied to every item; its P(pos) as the score."""
    y = [t.reference[it.id] for it in fit_items]
    keep = [(it, r) for it, r in zip(fit_items, y, strict=True) if r is not None]
    labels = [r for _, r in keep]
    if kw.get("shuffle"):
        labels = random.Random(int(str(kw.get("seed", 0)))).sample(labels, len(labels))
    fitted = fit_readout(feats.matrix([it for it, _ in keep], names), labels, names)
    if fitted is None:
        return ArmRun(f"{title} (not fitted)", zero.verdicts, zero.blocks, zero.calls, zero.wall_s), None
    x = feats.matrix(t.items, names)
    pred = fitted.predict(x)
    p = fitted.prob(x, t.spec.positive_label)
    verdicts = {
        it.id: v.model_copy(update={"prob_positive": p[i]})
        for i, it in enumerate(t.items)
        if (v := zero.verdicts.get(it.id)) is not None
    }
    lab = {it.id: as_label(t, pred[i]) for i, it in enumerate(t.items)}
    return ArmRun(title, verdicts, zero.blocks, zero.calls, zero.wall_s, lab), fitted


def knn_arm(t: Task, zero: ArmRun, feats: Features) -> ArmRun:
    mine = [it for it in t.ids("mine") if t.reference[it.id] is not None]
    train = feats.matrix(mine, ("z",))
    got = knn_labels(
        train,
        [t.reference[it.id] for it in mine],
        feats.matrix(t.items, ("z",)),
        k=K,
        exclude=[{j for j, m in enumerate(mine) if m.id == it.id} for it in t.items],
    )
    return ArmRun(
        "kNN prompting (z)",
        zero.verdicts,
        zero.blocks,
        zero.calls,
        zero.wall_s,
        {it.id: g for it, g in zip(t.items, got, strict=True)},
    )


def vote_arm(t: Task, zero: ArmRun, feats: Features) -> ArmRun:
    pos = t.spec.positive_label
    neg = next(lab for lab in t.spec.label_set if lab != pos)
    verdicts = {i: v.model_copy(update={"prob_positive": feats.vote[i]}) for i, v in zero.verdicts.items()}
    lab = {it.id: pos if feats.vote[it.id] > 0.5 else neg for it in t.items}
    return ArmRun("memory vote", verdicts, zero.blocks, zero.calls, zero.wall_s, lab)


def dev_better(t: Task, base: ArmRun, new: ArmRun) -> tuple[bool, str]:
    """The loop's guard on dev: ``new`` adopted only when significantly better (one-sided, 0.05)."""
    dev = [it for it in t.ids("dev") if t.reference[it.id] is not None]
    refs = [t.reference[it.id] for it in dev]
    thin = too_few(list(t.spec.label_set), refs, 10)
    if thin:
        return False, f"dev holds {thin}: kept"
    c = objective_difference(
        refs,
        [base.label(it.id) for it in dev],
        [new.label(it.id) for it in dev],
        labels=t.spec.label_set,
        alternative="greater",
    )
    ok = c.delta is not None and c.delta > 0 and (c.p_value or 1.0) < 0.05
    return (
        ok,
        f"dev {c.value_a:.3f} -> {c.value_b:.3f}, one-sided p = {c.p_value:.3g}: {'adopted' if ok else 'kept'}",
    )


def loop_default(bench: Bench, zero: ArmRun, run_icl: bool) -> ArmRun:
    """The loop before its read-out: default strategy + auto calibration + the one-sided guard;
    held-out ICL calls only if adopted. ``run_icl`` false: the ICL pass is not run (its calls are not
    stored), computed as if the guard kept zero-shot."""
    t = bench.task
    dev, held = t.ids("dev"), t.ids("heldout")
    policy = RetrievalPolicy(kind="same_problem_type", sources=["mistake"])
    zero_cal = calibrated(bench, zero, t.ids("dev", "heldout"))
    if not run_icl:
        return ArmRun(
            "loop default before read-out (ICL pass not run for this seed: as if the guard kept zero-shot)",
            zero_cal.verdicts,
            zero_cal.blocks,
            zero_cal.calls,
            zero_cal.wall_s,
            zero_cal.labels,
        )
    on_dev = bench.study("default-dev", dev, [ArmSpec(name="default", policy=policy)])["default"]
    dev_cal = calibrated(bench, on_dev, dev)
    ok, why = dev_better(t, zero_cal, dev_cal)
    print(f"  loop default guard: {why}", flush=True)
    if not ok:
        return ArmRun(
            f"loop default before read-out (guard kept zero-shot; {why})",
            zero_cal.verdicts,
            zero_cal.blocks,
            zero_cal.calls,
            zero_cal.wall_s,
            zero_cal.labels,
        )
    both = bench.study("default-held", held, [ArmSpec(name="default", policy=policy)])["default"]
    merged = ArmRun(
        "default",
        {**on_dev.verdicts, **both.verdicts},
        {**on_dev.blocks, **both.blocks},
        on_dev.calls + both.calls,
        on_dev.wall_s + both.wall_s,
    )
    cal = calibrated(bench, merged, dev + held)
    return ArmRun(
        f"loop default before read-out (examples adopted; {why})",
        cal.verdicts,
        cal.blocks,
        cal.calls,
        cal.wall_s,
        cal.labels,
    )


def curve(t: Task, zero: ArmRun, memory: EpisodicMemory, seed: int) -> tuple[list[ArmRun], list[str]]:
    """The learning curve of ``read-out (z + vote)`` (the library's: :func:`allure.evaluator.readout_curve`,
    as ``allure study run learning-curve`` runs it): fitted on the first n audit items (mine + dev)
    of CURVE_DRAWS seeded review orders, the vote counting only the examples of those n items. One
    arm per size (its first order, for the arms table) and one line per size (the mean over orders
    with its interval, the delta vs zero-shot and the orders' merged p, Holm over the sizes)."""
    from allure.evaluator import VoteSource, readout_curve
    from allure.memory import embed
    from allure.memory._nearest import embedding_text

    audit = [it for it in t.ids("mine", "dev") if t.reference[it.id] is not None]
    held = t.ids("heldout")
    sizes = [n for n in CURVE if n <= len(audit)]
    examples = memory.all()
    cache: dict[str, np.ndarray] = {}

    def embed_items(items: list[Item]) -> np.ndarray:
        todo = [it for it in items if it.id not in cache]
        for it, v in zip(todo, embed([embedding_text(it.response, it.task) for it in todo]), strict=True):
            cache[it.id] = v
        return np.array([cache[it.id] for it in items])

    vote = VoteSource(
        embed([embedding_text(ex.response, ex.task) for ex in examples]),
        [ex.correct_label for ex in examples],
        [ex.item_id for ex in examples],
        embed_items,
    )
    draws = readout_curve(
        audit,
        held,
        zero.verdicts,
        {it.id: t.reference[it.id] for it in audit},
        sizes=sizes,
        repeats=CURVE_DRAWS,
        labels=list(t.spec.label_set),
        positive=t.spec.positive_label,
        vote=vote,
        seed=seed,
    )
    y = [t.reference[it.id] for it in held]
    zero_labels = [zero.label(it.id) for it in held]

    def labels_of(d: CurveDraw) -> list[Label | None]:
        return [d.labels.get(it.id) for it in held] if d.fitted else zero_labels

    points = curve_points(
        [
            curve_point(
                y, zero_labels, [labels_of(d) for d in draws if d.size == n], size=n, labels=t.spec.label_set
            )
            for n in sizes
        ]
    )
    arms = [
        ArmRun(
            f"curve: read-out (z + vote), {d.size} audit items (order 1 of {CURVE_DRAWS})",
            {
                i: v.model_copy(update={"prob_positive": d.probs[i]}) if i in d.probs else v
                for i, v in zero.verdicts.items()
            },
            zero.blocks,
            zero.calls,
            zero.wall_s,
            dict(zip([it.id for it in held], labels_of(d), strict=True)),
        )
        for d in draws
        if d.repeat == 0
    ]
    lines = [
        f"- curve n = {p.size} ({p.draws} orders): balanced accuracy {p.mean:.3f} [{p.ci_low:.3f}, {p.ci_high:.3f}] "
        f"(orders {p.low:.3f} to {p.high:.3f}), delta vs zero-shot {p.delta:+.3f} [{p.delta_low:+.3f}, "
        f"{p.delta_high:+.3f}], merged p = {p.p_value:.3g}, Holm over the sizes {p.p_holm:.3g}"
        if None
        not in (
            p.mean,
            p.ci_low,
            p.ci_high,
            p.low,
            p.high,
            p.delta,
            p.delta_low,
            p.delta_high,
            p.p_value,
            p.p_holm,
        )
        else f"- curve n = {p.size}: undefined"
        for p in points
    ]
    lines.append(
        "- curve rows: fitted on the first n audit items (mine + dev) and scored on held-out; their dev BA "
        "column is zero-shot's (dev items are in the curve's pool)"
    )
    return arms, lines


def primary_rows(t: Task, rows: list[Row], arms: list[ArmRun], zero: ArmRun) -> str:
    """Row 1 (loop default) keeps its unadjusted p (the primary test); the others are Holm-adjusted among themselves."""
    held = t.ids("heldout")
    y = [t.reference[it.id] for it in held]
    raw = [
        objective_difference(
            y, [zero.label(it.id) for it in held], [a.label(it.id) for it in held], labels=t.spec.label_set
        ).p_value
        for a in arms[1:]
    ]
    rows[1].p_holm = raw[0]
    for r, p in zip(rows[2:], holm_adjust(raw[1:]), strict=True):
        r.p_holm = p
    r = rows[1]
    if r.delta_value is None or r.ci is None:
        return "primary: loop default vs zero-shot: undefined"
    return (
        f"primary: loop default vs zero-shot, balanced accuracy delta {r.delta_value:+.3f} "
        f"[{r.ci[0]:+.3f}, {r.ci[1]:+.3f}], p = {raw[0]:.3g}"
        + (" (significant at 0.05)" if (raw[0] or 1.0) < 0.05 else " (not significant at 0.05)")
    )


def run_task(t: Task, project: Path, seed: int, with_loop: bool, polarity: Path | None) -> tuple[str, int]:
    t0 = time.perf_counter()
    project.mkdir(parents=True, exist_ok=True)
    restore_store(project, t.name)
    memory = EpisodicMemory.open(str(project / "memory"))
    bench = Bench(t, project, memory)
    counts = {s: len(t.ids(s)) for s in ("mine", "dev", "heldout")}
    print(f"== {t.name} seed {seed}: {counts} ==", flush=True)
    zero = bench.study("zero-shot", t.items, [ArmSpec(name="zero-shot", example_ids=[])])["zero-shot"]
    zero = ArmRun("zero-shot", zero.verdicts, zero.blocks, zero.calls, zero.wall_s)
    mine_memory(bench, zero)
    feats = features(t, zero, memory)
    mine = t.ids("mine")
    arms: list[ArmRun] = []
    fits: list[str] = []
    for names, title in (
        (("z",), "read-out (z)"),
        (("vote",), "read-out (vote)"),
        (("z", "vote"), "read-out (z + vote)"),
    ):
        arm, fitted = readout_arm(t, zero, feats, mine, names, title)
        arms.append(arm)
        if fitted:
            fits.append(f"- {title}: {fitted.describe()}")
    polar, sent = polarity_arms(t, zero, feats, mine, polarity, fits)
    best = max(arms, key=lambda a: dev_score(t, a))
    ok, why = dev_better(t, zero, best)
    auto = ArmRun(
        f"read-out auto ({best.name if ok else 'zero-shot'}; {why})",
        *(
            (best.verdicts, best.blocks, best.calls, best.wall_s, best.labels)
            if ok
            else (zero.verdicts, zero.blocks, zero.calls, zero.wall_s, {})
        ),
    )
    controls = [
        readout_arm(t, zero, feats, mine, ("z", "vote"), "c", shuffle=True, seed=1000 + r)[0]
        for r in range(20)
    ]
    curve_arms, curve_lines = curve(t, zero, memory, seed)
    others = [
        *arms,
        *polar,
        knn_arm(t, zero, feats),
        vote_arm(t, zero, feats),
        auto,
        *curve_arms,
    ]
    # the loop's default (readout = "auto"): the read-out of the active pass (zero-shot kept: z alone,
    # fitted when the memory was empty; examples adopted: z and the memory vote, z here zero-shot's)
    # replaces the loop's labels only when the guard's one-sided test finds it better on dev
    base = loop_default(bench, zero, with_loop)
    named = {a.name: a for a in arms}
    if "adopted" in base.name:  # examples adopted (their vote is mined from the mine split): the dev rule
        cand = named["read-out (z + vote)"]
        ok2, why2 = dev_better(t, base, cand)
    else:
        cand, ok2, why2 = crossfit_readout(t, base, feats, seed)
    pick = cand if ok2 else base
    loop = ArmRun(
        f"loop default ({cand.name} {'adopted' if ok2 else 'not adopted'}: {why2})",
        pick.verdicts,
        pick.blocks,
        base.calls,
        base.wall_s,
        pick.labels,
    )
    all_arms = [zero, loop, base, *others]
    rows, _ = table(t, all_arms, zero)
    primary = primary_rows(t, rows, all_arms, zero)
    text = render(t, rows, primary).replace("### ", f"### seed {seed}, ", 1)
    text += (
        "\n"
        + "\n".join(fits + curve_lines)
        + (
            f"\n- control: read-out (z + vote) fitted on 20 permutations of the mine labels: {control_line(t, controls)}; "
            "a single permutation can land on either sign of an informative feature, the mean is chance\n"
        )
    )
    text += (
        f"\n{bench.calls + sent} calls sent for this task and seed in this run, "
        f"{time.perf_counter() - t0:.0f} s\n"
    )
    print(text, flush=True)
    return text, bench.calls + sent


def crossfit_readout(t: Task, base: ArmRun, feats: Features, seed: int) -> tuple[ArmRun, bool, str]:
    """The loop's ``readout = "auto"`` under its default ``[loop] folds = 5``: every audit item (mine +
    dev) labelled out of fold by a read-out on ``z`` fitted on the other folds (the library's
    ``cross_folds``: seeded, stratified by reference label), compared with ``base``'s labels by the
    guard's one-sided test (alpha 0.05, >= 10 of each label); the arm is the read-out fitted on every
    audit item (held-out never seen)."""
    audit = [it for it in t.ids("mine", "dev") if t.reference[it.id] is not None]
    refs = {it.id: t.reference[it.id] for it in audit}
    folds = cross_folds(refs, {it.id: "audit" for it in audit}, 5, seed)
    oof: dict[str, Label | None] = {}
    for j in sorted(set(folds.values())):
        fit = [it for it in audit if folds[it.id] != j]
        test = [it for it in audit if folds[it.id] == j]
        fitted = fit_readout(feats.matrix(fit, ("z",)), [refs[it.id] for it in fit], ("z",))
        pred = fitted.predict(feats.matrix(test, ("z",))) if fitted else None
        oof.update({it.id: as_label(t, pred[i]) if pred else base.label(it.id) for i, it in enumerate(test)})
    arm, _ = readout_arm(t, base, feats, audit, ("z",), "read-out (z), fitted on the audit split")
    y = [refs[it.id] for it in audit]
    thin = too_few(list(t.spec.label_set), y, 10)
    if thin:
        return arm, False, f"the audit split holds {thin}: kept"
    c = objective_difference(
        y,
        [base.label(it.id) for it in audit],
        [oof[it.id] for it in audit],
        labels=t.spec.label_set,
        alternative="greater",
    )
    ok = c.delta is not None and c.delta > 0 and (c.p_value or 1.0) < 0.05
    return (
        arm,
        ok,
        f"audit split out of fold over 5 folds (n = {len(audit)}) {c.value_a:.3f} -> {c.value_b:.3f}, "
        f"one-sided p = {c.p_value:.3g}: {'adopted' if ok else 'kept'}",
    )


def polarity_arms(
    t: Task, zero: ArmRun, feats: Features, mine: list[Item], project: Path | None, fits: list[str]
) -> tuple[list[ArmRun], int]:
    """The polarity variant's arms (none without ``project``): the reversed question read back, and
    the read-outs with its feature ``z_reversed`` (their calls: zero-shot's and the reversed ones)."""
    if project is None:
        return [], 0
    rev, sent = reversed_arm(t, project)
    feats.z_reversed = {it.id: item_z(rev.verdicts.get(it.id), t.spec.positive_label) for it in t.items}
    out = [rev]
    for names, title in (
        (("z", "z_reversed"), "read-out (z + reversed)"),
        (("z", "z_reversed", "vote"), "read-out (z + reversed + vote)"),
    ):
        arm, fitted = readout_arm(t, zero, feats, mine, names, title)
        out.append(replace(arm, calls=arm.calls + rev.calls, wall_s=arm.wall_s + rev.wall_s))
        if fitted:
            fits.append(f"- {title}: {fitted.describe()}")
    return out, sent


def control_line(t: Task, controls: list[ArmRun]) -> str:
    """Mean (min, max) balanced accuracy of the shuffled-label fits on dev and on held-out."""
    from allure.metrics import objective_value

    held = t.ids("heldout")
    dev = [dev_score(t, a) for a in controls]
    ho = [
        objective_value(
            [t.reference[it.id] for it in held], [a.label(it.id) for it in held], labels=t.spec.label_set
        )
        or 0.0
        for a in controls
    ]
    return (
        f"dev balanced accuracy mean {np.mean(dev):.3f} (min {min(dev):.3f}, max {max(dev):.3f}), held-out mean "
        f"{np.mean(ho):.3f} (min {min(ho):.3f}, max {max(ho):.3f})"
    )


def dev_score(t: Task, arm: ArmRun) -> float:
    from bench_icl_strategies import dev_score as score

    return score(t, arm)


def resplit(t: Task, seed: int, dev_share: float) -> Task:
    """The same items, split again with ``seed`` as the strategies bench splits (CogEval: whole
    tasks stay in one split): a second draw of mine / dev / held-out over items already labelled."""
    n_held = sum(1 for s in t.split.values() if s == "heldout")
    groups: dict[str, list[Item]] = {}
    for it in sorted(t.items, key=lambda x: x.id):
        groups.setdefault(it.task if t.name == "cogeval" else it.id, []).append(it)
    keys = sorted(groups)
    random.Random(seed).shuffle(keys)
    split: dict[str, str] = {}
    audit: list[Item] = []
    held = 0
    for k in keys:
        if held < n_held:
            split.update({it.id: "heldout" for it in groups[k]})
            held += len(groups[k])
        else:
            audit.extend(groups[k])
    n_dev = round(dev_share * len(audit))
    split.update({it.id: "dev" if i < n_dev else "mine" for i, it in enumerate(audit)})
    return Task(t.name, t.spec, t.items, t.reference, split, t.extract)


def make_task(name: str, seed: int, args: argparse.Namespace) -> Task:
    """``seed``'s task: the strategies bench's draw for ``--items-seed``, split again when ``seed`` differs."""
    makers = {"halueval": halueval_task, "cogeval": cogeval_task}
    args.seed = args.items_seed
    t = makers[name](args, args.model)
    return t if seed == args.items_seed else resplit(t, seed, args.dev_share)


def project_for(args: argparse.Namespace, name: str, seed: int) -> Path:
    """The run store and memory of a task and seed (a re-split has its own: its memory differs)."""
    tail = "" if seed == args.items_seed else f"-items{args.items_seed}"
    return args.project / f"{name}-s{seed}{tail}"


def uncached(project: Path, t: Task, study: str = "zero-shot") -> int:
    """Items of ``t`` with no stored call of ``study`` yet (its prompt is the same across studies)."""
    db = project_db_path(project)
    if not db.exists():
        return len(t.items)
    with sqlite3.connect(db) as c:
        done = {
            r[0]
            for r in c.execute(
                "SELECT DISTINCT v.item_id FROM verdicts v WHERE v.run_id LIKE ?", (f"%{study}%",)
            )
        }
    return sum(1 for it in t.items if it.id not in done)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", default="halueval,cogeval")
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--items", type=int, default=300)
    ap.add_argument("--audit", type=int, default=300)
    ap.add_argument("--dev-share", type=float, default=0.4)
    ap.add_argument("--candidates", type=int, default=6)
    ap.add_argument("--max-chars", type=int, default=400)
    ap.add_argument("--max-chars-cogeval", type=int, default=200)
    ap.add_argument("--loop-seeds", default="0,1", help="seeds whose loop default's ICL pass is run")
    ap.add_argument(
        "--items-seed",
        type=int,
        default=0,
        help="seed of the item draw; another --seeds value splits the same items again (0 new zero-shot calls)",
    )
    ap.add_argument(
        "--polarity-tasks",
        default=None,
        help="tasks whose polarity variant (the reversed question, one call per item) is asked; default: --tasks",
    )
    ap.add_argument("--project", type=Path, default=ROOT / ".allure-bench" / "readout")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--out", type=Path, default=RESULTS / "readout.md")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    loop_seeds = {int(s) for s in args.loop_seeds.split(",") if s}
    polar = set((args.tasks if args.polarity_tasks is None else args.polarity_tasks).split(",")) & set(
        args.tasks.split(",")
    )
    # cached work first: each (task, seed)'s zero-shot and read-out arms, then the loop default's ICL calls
    plan = []
    for seed in seeds:
        for name in args.tasks.split(","):
            t = make_task(name, seed, args)
            project = project_for(args, name, seed)
            restore_store(project, name)
            n = uncached(project, t)
            plan.append((name, seed, n))
    # the reversed question's calls: once per task (every seed splits the same items again)
    rev = {
        n: uncached(polarity_project(args, n), make_task(n, args.items_seed, args), "reversed") for n in polar
    }
    print(
        "plan: "
        + "; ".join(f"{n} seed {s}: {u} uncached zero-shot calls" for n, s, u in plan)
        + "".join(f"; {n}: {u} uncached reversed-question calls (polarity variant)" for n, u in rev.items())
        + f"; ~{(sum(u for *_, u in plan) + sum(rev.values())) * 3 / 3600:.1f} h at ~3 s a call, plus the "
        "loop default's ICL calls on dev (and held-out if the guard adopts)",
        flush=True,
    )
    texts: dict[tuple[str, int], str] = {}
    # the file as the earlier run left it, read once: this run's own writes are not an earlier run
    earlier = earlier_sections(args.out, {(n, s) for n, s, _ in plan})
    total = 0
    order = sorted(plan, key=lambda p: (p[2] > 0, p[1], p[2]))
    for name, seed, _ in order:
        t = make_task(name, seed, args)
        text, calls = run_task(
            t,
            project_for(args, name, seed),
            seed,
            seed in loop_seeds,
            polarity_project(args, name) if name in polar else None,
        )
        texts[(name, seed)] = text
        total += calls
        write(args, texts, total, earlier)
    print(f"calls sent in this run: {total}" + ("\nsecond run: 0 calls" if total == 0 else ""))
    return 0


def write(
    args: argparse.Namespace,
    texts: dict[tuple[str, int], str],
    total: int,
    earlier: tuple[dict[tuple[str, int], str], str, str],
) -> None:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT
    ).stdout
    header = (
        "# A learned read-out on the embedded judge (issue 34)\n\n"
        f"`python benchmarks/bench_readout.py --tasks {args.tasks} --seeds {args.seeds} --items {args.items} "
        f"--loop-seeds {args.loop_seeds or EMPTY}` "
        f"at commit {commit.strip()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"{total} calls sent in this run. Finished: {', '.join(f'{n} seed {s}' for n, s in texts)}.\n\n"
        f"Items: the strategies bench's draw of seed {args.items_seed} (its stored zero-shot calls); a seed "
        f"other than {args.items_seed} splits the same items again into mine / dev / held-out (a second draw "
        "of the split and of the memory, not of the items). The loop default's ICL pass (its ICL calls) is run for "
        f"seed(s) {args.loop_seeds} only; for the others the loop default is computed as if the guard kept "
        "zero-shot (as it did on seed 0 of both tasks), then calibration auto and read-out auto on dev.\n\n"
        "The `primary:` line is the one pre-registered comparison per task and seed (loop default vs "
        "zero-shot, two-sided paired permutation test on balanced accuracy, alpha 0.05, unadjusted); every "
        "other arm is exploratory (its p Holm-adjusted over the exploratory arms).\n\n"
    )
    kept, source, notes = earlier
    if kept:
        header += (
            f"Kept from an earlier run (not run again in this one): {', '.join(f'{n} seed {s}' for n, s in sorted(kept))}; "
            f"that run: {source}\n\n"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    every = {**kept, **texts}
    args.out.write_text(header + "\n".join(every[k] for k in sorted(every)) + notes)


def earlier_sections(
    out: Path, texts: Collection[tuple[str, int]]
) -> tuple[dict[tuple[str, int], str], str, str]:
    """The sections of ``out`` for the (task, seed)s this run did not run, the command line (with
    its commit and date) of the run that wrote them, and the notes written after it (``## ``, kept
    at the end while any of its sections is kept)."""
    if not out.is_file():
        return {}, "", ""
    old, notes = out.read_text(), ""
    if "\n## " in old:
        old, rest = old.split("\n## ", 1)
        notes = "\n## " + rest
    kept: dict[tuple[str, int], str] = {}
    for part in re.split(r"(?m)^(?=### seed \d+, )", old)[1:]:
        m = re.match(r"### seed (\d+), (\w+):", part)
        if m and (m.group(2), int(m.group(1))) not in texts:
            kept[(m.group(2), int(m.group(1)))] = part[:-1] if part.endswith("\n\n") else part
    first = next((ln for ln in old.splitlines() if ln.startswith("`python benchmarks/bench_readout.py")), "")
    earlier = next((ln for ln in old.splitlines() if ln.startswith("Kept from an earlier run")), "")
    source = first.split("; ", 1)[0] or "unknown"
    return kept, source + (f" (sections it kept: {earlier})" if earlier else ""), notes if kept else ""


if __name__ == "__main__":
    sys.exit(main())
