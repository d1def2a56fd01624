"""Does the loop make a judge better, as a user runs it? ``allure.audit`` per task and item draw, on
the embedded judge; every figure is read from the run's own ``report.json`` (issue 43).

Per task and draw, a project of its own (``.allure-bench/loop/<task>-d<draw>``) and one run started
as a user starts ``allure audit SPEC --auto-approve``:

- the spec: the task's worked example (``examples/*.toml``; the CogEval grader with the embedded judge
  in place of the replay; the pairwise judge's spec is written here, there is no dataset of pairs to
  ship), its ``[dataset] path`` pointed at the draw's rows, ``[loop] heldout_fraction = 0.5``,
  ``max_iterations = 2`` (zero-shot, then the memory of the approved examples), ``seed`` = the split
  seed of ``benchmarks/preregistered.toml``; every other setting the product's default;
- the draw: tasks of at least 1,200 items (CogEval, HaluEval, RTE) have two disjoint draws of 600
  (draw 1 of CogEval and HaluEval: the 600 items whose zero-shot calls the strategies bench stored;
  draw 2 and RTE's draws: seeded samples of the other items); the small sets are run whole, once.

What the rule is and what is compared is fixed in ``benchmarks/preregistered.toml`` (committed before
any held-out figure of this bench was read). A draw's calls are made under the decision rule's code
(``allure/`` at the commit named there): the bench refuses a new draw when ``allure/`` differs,
unless ``--exploratory`` (then every line it writes says so); a recorded draw is read again from its
stored calls and must give its recorded primary figures (else it says so and exits 1).

After each draw the exploratory arms (:mod:`loop_arms`: the memory, the read-out and calibration each
alone, and the read-out's learning curve) are computed from its stored calls by the product's
studies, and written beside the primary line.

Calls. Every call is stored in the project's run store as it returns (a killed run resumes from
there) and the store is copied, gzipped, to ``benchmarks/results/loop.<task>-d<draw>.db.gz`` every
few minutes and at the end of each run, so a rerun on another machine sends 0 calls and starts no
server. Before anything runs the bench prints its plan: per task and draw the items, the zero-shot
calls the store cannot answer (the product's own planner), an estimate of the memory pass's calls
(one a prompted item; they depend on what is approved) and the time at the stored or assumed
seconds a call; ``--plan`` stops there.

Written: ``benchmarks/results/loop.md``, one ``primary:`` line per task and draw (the pre-registered
comparison, from report.json ``primary``), what the run adopted and why, calls and wall time.

Registrations. ``--registration benchmarks/preregistered_2.toml`` runs registration 2: the rule this
checkout ships, on new draws of the tasks with items enough (``new_items_after``: no item of an
earlier registration's draws; :data:`POOLS`), its draws' files named ``loop.r2-<task>-d<n>.*``, its
results ``loop_r2.md`` and its README table between markers of its own; and its registered
``secondary`` arms (:data:`SECONDARY`: the loop with the memory as a vote only), each run after the
draw's default run in the same project and compared with the zero-shot judge and with the loop's
judge on the held-out items, Holm over a draw's secondary comparisons.

Usage::

    PYTHONPATH=. .venv/bin/python benchmarks/bench_loop.py --plan
    PYTHONPATH=. .venv/bin/python benchmarks/bench_loop.py --registration benchmarks/preregistered_2.toml --plan
    PYTHONPATH=. .venv/bin/python benchmarks/bench_loop.py --tasks cb,summeval [--max-new-calls 2000]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gzip
import json
import math
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
import tomllib
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_readout import Result, _f, cost_line, primary_line  # noqa: E402
from loop_arms import exploratory, lines  # noqa: E402
from stored_calls import RESULTS, ROOT, ServerRefused, server_starts, snapshot, zero_shot_plan  # noqa: E402

import allure  # noqa: E402
from allure.store import project_db_path  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
PREREG = ROOT / "benchmarks" / "preregistered.toml"
README = ROOT / "README.md"
TABLE_BEGIN = "<!-- bench_loop's table: written by benchmarks/bench_loop.py from its records -->"
TABLE_END = "<!-- end of bench_loop's table -->"
SAVE_EVERY_S = 300.0
"""How often a running task's store is copied to ``benchmarks/results`` (and at each run's end)."""


@dataclass(frozen=True)
class Draw:
    """One (task, draw): the items' ids and where their rows were written."""

    task: str
    number: int
    ids: list[str]
    seed: int
    prefix: str = ""
    """The registration's key prefix (``r2-``; registration 1's draws have none)."""

    @property
    def key(self) -> str:
        return f"{self.prefix}{self.task}-d{self.number}"


@dataclass(frozen=True)
class Task:
    """A judge task: its worked example, how its draws' rows are chosen and written."""

    name: str
    title: str
    example: str
    seconds_a_call: float
    """Assumed when the store holds no latency yet (2 cores, the 1.5B judge)."""
    draws: Callable[[dict[str, Any]], list[list[str]]]
    """The ids of each draw, from the task's pre-registered table."""
    write: Callable[[Path, list[str]], Path]
    """Writes the rows of those ids into a project folder; returns the file."""
    spec: Callable[[dict[str, Any], Path], dict[str, Any]] = lambda raw, data: raw
    """Changes to the worked example's spec beyond its data file (the judge, id column)."""


# ---- the tasks' rows -------------------------------------------------------------------------------

COGEVAL = SHARED / "cogeval_cogmaps" / "cogeval_conversations.jsonl.gz"
HALUEVAL = SHARED / "halueval_general" / "general_data.json"
ZHAO = SHARED / "zhao2021_cb_rte_trec"


def _need(path: Path) -> Path:
    if not path.is_file():
        raise SystemExit(f"missing {path}: the bench reads ../shared/data")
    return path


def _snapshot_ids(task: str) -> list[str]:
    """The 600 items whose zero-shot calls the strategies bench stored (a draw's first 600)."""
    tmp = ROOT / ".allure-bench" / "loop" / f"_{task}-snapshot.db"
    if not tmp.is_file():
        tmp.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(snapshot(task), "rb") as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst)
    from allure.store import RunStore

    store = RunStore(tmp, create=False)
    try:
        return [it.id for it in store.items(f"{task}-zero-shot")]
    finally:
        store.close()


def _sample(pool: list[str], n: int, seed: int, strata: dict[str, str] | None = None) -> list[str]:
    """``n`` ids of ``pool``, seeded; evenly across ``strata`` (round robin) when given."""
    rng = random.Random(seed)
    if strata is None:
        return sorted(rng.sample(sorted(pool), n))
    queues: dict[str, list[str]] = defaultdict(list)
    for i in sorted(pool):
        queues[strata[i]].append(i)
    for q in queues.values():
        rng.shuffle(q)
    out: list[str] = []
    while len(out) < n and any(queues.values()):
        for key in sorted(queues):
            if queues[key] and len(out) < n:
                out.append(queues[key].pop())
    return sorted(out)


def cogeval_rows() -> dict[str, dict[str, Any]]:
    rows = {}
    with gzip.open(_need(COGEVAL), "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                rows[row["path"]] = row
    return rows


def cogeval_pool(pre: dict[str, Any]) -> tuple[list[str], dict[str, str] | None]:
    """CogEval's items under the registered response length, drawn evenly across problem types."""
    return _cogeval_pool(pre["max_response_chars"])


@functools.cache
def _cogeval_pool(max_response_chars: int) -> tuple[list[str], dict[str, str] | None]:
    """Read once a process: a later registration's draws read the earlier one's too."""
    from allure.dataset import DatasetSpec, load_items

    spec = DatasetSpec(path=str(_need(COGEVAL)), format="cogeval", max_response_chars=max_response_chars)
    items = load_items(spec)
    return [it.id for it in items], {it.id: str(it.problem_type) for it in items}


def cogeval_draws(pre: dict[str, Any]) -> list[list[str]]:
    """Draw 1: the strategies bench's 600 (responses of at most 200 characters, evenly across problem
    types); draw 2: 600 other items under the same rule, seeded."""
    first = _snapshot_ids("cogeval")
    ids, strata = cogeval_pool(pre)
    return [first, *fresh_draws((ids, strata), {**pre, "draw_seeds": pre["draw_seeds"][1:]}, set(first))]


def write_cogeval(project: Path, ids: list[str]) -> Path:
    keep, out = set(ids), project / "cogeval-draw.jsonl.gz"
    with (
        gzip.open(_need(COGEVAL), "rt", encoding="utf-8") as fh,
        gzip.open(out, "wt", encoding="utf-8") as dst,
    ):
        for line in fh:
            if line.strip() and json.loads(line).get("path") in keep:
                dst.write(line if line.endswith("\n") else line + "\n")
    return out


def halueval_pool(pre: dict[str, Any]) -> tuple[list[str], dict[str, str] | None]:
    """HaluEval's lines (items are named by line), drawn without strata."""
    with open(_need(HALUEVAL), encoding="utf-8") as fh:
        return [f"line-{n}" for n, line in enumerate(fh, start=1) if line.strip()], None


def halueval_draws(pre: dict[str, Any]) -> list[list[str]]:
    """Draw 1: the strategies bench's 600; draw 2: 600 other lines, seeded (items are named by line)."""
    first = _snapshot_ids("halueval")
    rest = sorted(set(halueval_pool(pre)[0]) - set(first))
    return [first, _sample(rest, pre["draw_size"], pre["draw_seeds"][1])]


def write_halueval(project: Path, ids: list[str]) -> Path:
    keep, out = set(ids), project / "halueval-draw.jsonl"
    with open(_need(HALUEVAL), encoding="utf-8") as fh, open(out, "w", encoding="utf-8") as dst:
        for n, line in enumerate(fh, start=1):
            if f"line-{n}" in keep:
                dst.write(json.dumps({**json.loads(line), "item_id": f"line-{n}"}, ensure_ascii=False) + "\n")
    return out


def _zhao_rows(task: str) -> dict[str, dict[str, Any]]:
    """RTE or CB, train and validation together, ids ``train-<idx>`` / ``val-<idx>``."""
    rows = {}
    for part in ("train", "val"):
        with open(_need(ZHAO / task / f"{part}.jsonl"), encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    row = json.loads(line)
                    rows[f"{part}-{row['idx']}"] = {**row, "idx": f"{part}-{row['idx']}"}
    return rows


def rte_pool(pre: dict[str, Any]) -> tuple[list[str], dict[str, str] | None]:
    """RTE's 2,767 labelled pairs (train and validation), drawn stratified by label."""
    rows = _zhao_rows("rte")
    return list(rows), {i: r["label"] for i, r in rows.items()}


def rte_draws(pre: dict[str, Any]) -> list[list[str]]:
    """Two disjoint draws of 600 of RTE's 2,767 labelled pairs, stratified by label, seeded."""
    return fresh_draws(rte_pool(pre), pre, set())


def fresh_draws(
    pool: tuple[list[str], dict[str, str] | None], pre: dict[str, Any], exclude: set[str]
) -> list[list[str]]:
    """One seeded draw of ``draw_size`` per ``draw_seeds`` from the pool's ids not in ``exclude``, each
    disjoint from the draws before it (stratified as the pool says)."""
    ids, strata = pool
    rest, out = [i for i in ids if i not in exclude], []
    for seed in pre["draw_seeds"]:
        if len(rest) < pre["draw_size"]:
            raise SystemExit(
                f"{len(rest)} items left for a draw of {pre['draw_size']}: fewer draws, or smaller"
            )
        draw = _sample(rest, pre["draw_size"], seed, strata)
        out.append(draw)
        taken = set(draw)
        rest = [i for i in rest if i not in taken]
    return out


POOLS: dict[str, Callable[[dict[str, Any]], tuple[list[str], dict[str, str] | None]]] = {
    "cogeval": cogeval_pool,
    "halueval": halueval_pool,
    "rte": rte_pool,
}
"""The tasks with items enough for new draws (a later registration's), and how each is drawn."""


def _write_zhao(task: str) -> Callable[[Path, list[str]], Path]:
    def write(project: Path, ids: list[str]) -> Path:
        rows, out = _zhao_rows(task), project / f"{task}-draw.jsonl"
        out.write_text("".join(json.dumps(rows[i]) + "\n" for i in ids), encoding="utf-8")
        return out

    return write


def _whole(rows: Callable[[], dict[str, Any] | list[str]]) -> Callable[[dict[str, Any]], list[list[str]]]:
    return lambda pre: [sorted(rows())]


def _example_data(example: str) -> Path:
    raw = tomllib.loads((ROOT / "examples" / example).read_text())
    return (ROOT / "examples" / raw["dataset"]["path"]).resolve()


def _copy_example_data(example: str) -> Callable[[Path, list[str]], Path]:
    """A small set run whole: its file as shipped."""

    def write(project: Path, ids: list[str]) -> Path:
        src = _need(_example_data(example))
        out = project / src.name
        shutil.copyfile(src, out)
        return out

    return write


def _example_ids(example: str) -> Callable[[], list[str]]:
    def ids() -> list[str]:
        from allure.config import load_spec

        spec = load_spec(ROOT / "examples" / example)
        from allure.dataset import load_items

        return [
            it.id for it in load_items(spec.dataset, base_dir=ROOT / "examples", label_set=spec.label_set)
        ]

    return ids


@functools.cache
def _pairs(n: int, max_chars: int, seed: int) -> dict[str, Any]:
    """The CogEval right/wrong pairs of the pre-registration, by id (read once: all of CogEval)."""
    from bench_pairwise_debias import build_pairs

    return {it.id: it for it in build_pairs(_need(COGEVAL), n, max_chars, seed)}


def _registered_pairs() -> dict[str, Any]:
    pre = prereg()["task"]["pairwise"]
    return _pairs(pre["pairs"], pre["max_response_chars"], pre["seed"])


def pairwise_ids(pre: dict[str, Any]) -> list[list[str]]:
    return [list(_pairs(pre["pairs"], pre["max_response_chars"], pre["seed"]))]


def write_pairs(project: Path, ids: list[str]) -> Path:
    pairs = _registered_pairs()
    out = project / "cogeval-pairs.jsonl"
    out.write_text(
        "".join(
            json.dumps(
                {
                    "id": i,
                    "prompt": pairs[i].task,
                    "response_a": pairs[i].response,
                    "response_b": pairs[i].response_b,
                    "better": pairs[i].gold_label,
                    "problem_type": pairs[i].problem_type,
                }
            )
            + "\n"
            for i in ids
        ),
        encoding="utf-8",
    )
    return out


def _embedded(raw: dict[str, Any], data: Path) -> dict[str, Any]:
    return {**raw, "evaluator": {}}  # the embedded judge (the product's default), not the replay


def _id_column(column: str) -> Callable[[dict[str, Any], Path], dict[str, Any]]:
    def spec(raw: dict[str, Any], data: Path) -> dict[str, Any]:
        raw["dataset"]["columns"] = {**raw["dataset"].get("columns", {}), "id": column}
        return raw

    return spec


PAIRWISE_SPEC = {
    "name": "cogeval-pairwise",
    "label_set": ["A", "B"],
    "dataset": {
        "columns": {
            "id": "id",
            "task": "prompt",
            "response": "response_a",
            "response_b": "response_b",
            "gold_label": "better",
            "problem_type": "problem_type",
        }
    },
    "evaluator": {
        "prompt": "pairwise",
        "rubric": "The better response is the one that gives the correct answer to the task.",
    },
}

TASKS = {
    t.name: t
    for t in [
        Task("cogeval", "CogEval (grader)", "cogeval_replay.toml", 3.0, cogeval_draws, write_cogeval, _embedded),
        Task(
            "halueval", "HaluEval general", "halueval_general.toml", 3.0, halueval_draws, write_halueval,
            _id_column("item_id"),
        ),
        Task("rte", "RTE", "rte_nli.toml", 3.0, rte_draws, _write_zhao("rte")),
        Task("cb", "CB (3 labels)", "cb_nli.toml", 3.0, _whole(lambda: _zhao_rows("cb")), _write_zhao("cb")),
        Task(
            "qags", "QAGS-CNNDM", "qags_cnndm.toml", 15.0, _whole(_example_ids("qags_cnndm.toml")),
            _copy_example_data("qags_cnndm.toml"),
        ),
        Task(
            "summeval", "SummEval", "summeval_consistency.toml", 15.0,
            _whole(_example_ids("summeval_consistency.toml")), _copy_example_data("summeval_consistency.toml"),
        ),
        Task("pairwise", "CogEval pairs (pairwise)", "", 4.0, pairwise_ids, write_pairs),
    ]
}  # fmt: skip


# ---- the pre-registration --------------------------------------------------------------------------


def prereg() -> dict[str, Any]:
    """The registration the bench runs (``--registration``; default ``benchmarks/preregistered.toml``)."""
    return tomllib.loads(PREREG.read_text())


def key_prefix() -> str:
    """Its draws' key prefix (``r2-``): a later registration's draws are files of their own."""
    return str(prereg().get("key_prefix", ""))


def draws_of(name: str, pre: dict[str, Any]) -> list[list[str]]:
    """The ids of each draw of task ``name``: registration 1's own rule per task, or, for a registration
    naming ``new_items_after``, seeded draws of the items none of those registrations drew."""
    tpre = pre["task"][name]
    earlier = pre.get("new_items_after")
    if not earlier:
        return TASKS[name].draws(tpre)
    if name not in POOLS:
        raise SystemExit(f"{name}: no items beyond the ones drawn before (new draws: {', '.join(POOLS)})")
    used: set[str] = set()
    for rel in earlier:
        old = tomllib.loads((ROOT / rel).read_text())
        if name in old.get("task", {}):
            used.update(i for draw in TASKS[name].draws(old["task"][name]) for i in draw)
    return fresh_draws(POOLS[name](tpre), tpre, used)


def rule_changed(commit: str) -> str:
    """What under ``allure/`` differs from the pre-registered rule's commit ("" when nothing)."""
    out = subprocess.run(
        ["git", "diff", "--stat", commit, "--", "allure"], capture_output=True, text=True, cwd=ROOT
    )
    if out.returncode != 0:
        return f"cannot compare with {commit}: {out.stderr.strip()}"
    return out.stdout.strip()


# ---- one run ---------------------------------------------------------------------------------------


@dataclass
class Planned:
    task: Task
    draw: Draw
    project: Path
    spec: dict[str, Any]
    zero_uncached: int
    memory_calls: int
    seconds_a_call: float
    memory_seconds_a_call: float = 0.0
    """A memory-pass call (its prompt carries the examples: thousands of tokens more to read)."""

    @property
    def estimate_s(self) -> float:
        memory_s = self.memory_seconds_a_call or self.seconds_a_call
        return self.zero_uncached * self.seconds_a_call + self.memory_calls * memory_s

    @property
    def items(self) -> int:
        return len(self.draw.ids)


def saved(key: str) -> Path:
    return RESULTS / f"loop.{key}.db.gz"


def saved_tokens(key: str) -> Path:
    """The draw's prompt token counts (the embedded tokenizer's, kept beside the store in
    ``.allure/token-counts/``): a memory pass fits its examples to the context by them, so a rerun
    without them would start the server to count again, though it sends no call."""
    return RESULTS / f"loop.{key}.tokens.json"


def save_tokens(project: Path, key: str) -> None:
    """Copy the project's token counts (file name -> text digest -> tokens) into results."""
    folder = project_db_path(project).parent / "token-counts"
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not files:
        return
    counts = {f.name: json.loads(f.read_text()) for f in files}
    part = saved_tokens(key).with_suffix(".part")
    part.write_text(json.dumps(counts, sort_keys=True) + "\n")
    part.replace(saved_tokens(key))


def restore_tokens(project: Path, key: str) -> None:
    """Write the draw's saved token counts into a project seeded from its saved store."""
    path = saved_tokens(key)
    if not path.is_file():
        return
    folder = project_db_path(project).parent / "token-counts"
    folder.mkdir(parents=True, exist_ok=True)
    for name, counts in json.loads(path.read_text()).items():
        (folder / name).write_text(json.dumps(counts, sort_keys=True))


def open_project(task: Task, draw: Draw, root: Path) -> Path:
    """The draw's project: resumed when it is there; else seeded from the saved calls of this draw
    (or, for a first draw, the strategies bench's snapshot), else empty."""
    project = root / draw.key
    db = project_db_path(project)
    if db.is_file():
        return project
    db.parent.mkdir(parents=True, exist_ok=True)
    seed = saved(draw.key)
    if not seed.is_file() and not draw.prefix and draw.number == 1 and task.name in ("cogeval", "halueval"):
        seed = snapshot(task.name)
    if seed.is_file():
        with gzip.open(seed, "rb") as src, open(db, "wb") as dst:
            shutil.copyfileobj(src, dst)
        restore_tokens(project, draw.key)
    return project


def save(project: Path, key: str) -> None:
    """Copy the project's store (a consistent snapshot, while the run writes) gzipped into results."""
    db = project_db_path(project)
    if not db.is_file():
        return
    tmp_db = db.with_suffix(".copy")
    src, dst = sqlite3.connect(db, timeout=60), sqlite3.connect(tmp_db)
    try:
        src.backup(dst)
    finally:
        src.close()
        dst.close()
    out = saved(key)
    part = out.with_suffix(".part")
    with open(tmp_db, "rb") as fh, gzip.open(part, "wb", compresslevel=9) as gz:
        shutil.copyfileobj(fh, gz)
    part.replace(out)
    tmp_db.unlink()
    save_tokens(project, key)


@contextmanager
def saving(project: Path, key: str) -> Iterator[None]:
    """Save the store every :data:`SAVE_EVERY_S` while the block runs, and once at its end."""
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(SAVE_EVERY_S):
            try:
                save(project, key)
            except sqlite3.Error as exc:  # a busy store: the next round tries again
                print(f"note: saving {key} failed ({exc}); retrying later", file=sys.stderr)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        save(project, key)


def audit_spec(task: Task, data: Path, pre: dict[str, Any], split_seed: int) -> dict[str, Any]:
    raw = (
        json.loads(json.dumps(PAIRWISE_SPEC))
        if not task.example
        else tomllib.loads((ROOT / "examples" / task.example).read_text())
    )
    raw["dataset"] = {k: v for k, v in raw["dataset"].items() if k != "limit"} | {"path": str(data)}
    raw = task.spec(raw, data)
    raw["loop"] = {
        "max_iterations": pre["max_iterations"],
        "heldout_fraction": pre["heldout_fraction"],
        "seed": split_seed,
        "objective": pre["task"][task.name]["objective"],
    }
    raw["auto_approve"] = True
    return raw


ICL_SLOWER = 3.0
"""A memory-pass call against a zero-shot one when the store holds none yet: the prompt carries 8
examples (CB, cb-d1 on 2 shared cores: 7,600-token prompts, 20-32 s a call beside zero-shot calls
of 150-210 tokens at 6-13 s; the block itself is read once per fold)."""


def memory_progress(project: Path) -> tuple[int, float | None]:
    """Items the loop's runs already hold a memory-pass verdict for, and the median seconds of those
    calls (else of any stored call whose prompt carried examples; ``None``: none stored)."""
    db = project_db_path(project)
    if not db.is_file():
        return 0, None
    con = sqlite3.connect(db)
    ours = "run_id LIKE 'run-%' AND iteration >= 2"  # the loop's runs (a snapshot's runs are named)
    icl = "status = 'ok' AND latency_s > 0 AND id IN (SELECT call_id FROM call_examples)"
    try:
        done = con.execute(f"SELECT COUNT(DISTINCT item_id) FROM verdicts WHERE {ours}").fetchone()[0]
        lat = sorted(
            x
            for (x,) in con.execute(
                f"SELECT latency_s FROM calls WHERE {icl} AND id IN "
                f"(SELECT call_id FROM verdicts WHERE {ours})"
            )
        ) or sorted(x for (x,) in con.execute(f"SELECT latency_s FROM calls WHERE {icl}"))
    except sqlite3.Error:  # a store not made yet
        return 0, None
    finally:
        con.close()
    return int(done or 0), (lat[len(lat) // 2] if lat else None)


def plan(task: Task, draw: Draw, project: Path, raw: dict[str, Any]) -> Planned:
    """The zero-shot pass's calls the store cannot answer (:func:`zero_shot_plan`); the memory pass
    at one call an item not yet answered (its prompts depend on the approvals), at the stored
    seconds of such calls, else :data:`ICL_SLOWER` times a zero-shot call."""
    z = zero_shot_plan(raw, project, f"bench_loop ({draw.key})")
    done, memory_s = memory_progress(project)
    memory = max(0, z.items - done) if z.spec.loop.max_iterations > 1 else 0
    zero_s = z.latency_s or task.seconds_a_call
    return Planned(task, draw, project, raw, z.uncached, memory, zero_s, memory_s or ICL_SLOWER * zero_s)


def fresh_memory(project: Path) -> None:
    """Empty the draw's memory before its run: the pre-registered loop starts zero-shot (pass 1) and
    prompts pass 2 with what pass 1's mistakes gave. A run interrupted earlier (or a rerun) left its
    approvals in the project's memory, which a new run would start from (a zero-shot baseline, then
    two memory passes: another design). Its approvals are in the store; the new run makes them again
    (``--auto-approve``), and its calls are the stored ones."""
    shutil.rmtree(project / ".allure" / "memory", ignore_errors=True)


def run_one(p: Planned, *, reread: bool = False, save: bool = True) -> Result:
    """One ``allure.audit`` of the draw. ``reread``: a recorded draw read again at code other than the
    rule's: it must be answered from the stored calls (the embedded server is refused, so nothing is
    sent: :class:`stored_calls.ServerRefused` when the calls at this code differ) and the saved store
    is left as it was. ``save=False``: the saved store is left as it was (an exploratory run beside a
    record made under the rule)."""
    fresh_memory(p.project)
    t0 = time.perf_counter()
    with contextlib.ExitStack() as stack:
        if save and not reread:
            stack.enter_context(saving(p.project, p.draw.key))
        starts = stack.enter_context(server_starts(refuse=reread))
        outcome = allure.audit(p.spec, project=p.project)
        wall = time.perf_counter() - t0
        report = allure.open_project(p.project).run(outcome.run_id).report()
    return Result(p, outcome.run_id, report, wall, len(starts))


# ---- a registration's secondary comparisons --------------------------------------------------------


def vote_only_spec(raw: dict[str, Any]) -> dict[str, Any]:
    """The draw's spec with ``[memory.retrieval] max_examples = 0``: pass 2's prompts carry no example
    (they are pass 1's: the store answers them) and its read-out reads the approved examples' vote."""
    out = json.loads(json.dumps(raw))
    memory = out.setdefault("memory", {})
    memory["retrieval"] = {**memory.get("retrieval", {}), "max_examples": 0}
    return out


SECONDARY: dict[str, tuple[str, Callable[[dict[str, Any]], dict[str, Any]]]] = {
    "vote_only": ("vote only", vote_only_spec),
}
"""A registration's ``secondary`` arms: a name, its title and the spec it runs (the same loop, another
setting). Each is compared with the zero-shot judge and with the loop's judge on the held-out items."""


def final_heldout(project: Path, run_id: str) -> dict[str, tuple[Any, Any, str]]:
    """Held-out item id -> (reference label, the run's final judge's label, its task group), as the
    run's primary comparison reads them (the active pass's labels, after calibration and read-out)."""
    from allure.dataset import task_groups
    from allure.store import open_project_store

    store = open_project_store(project, create=False)
    try:
        info = store.get_run(run_id).info
        final = store.verdicts(run_id, int(info["active_iteration"]))
        held = store.items(run_id, split="heldout")
        refs = store.reference_labels(run_id)
    finally:
        store.close()
    groups = task_groups(held)
    return {
        it.id: (refs.get(it.id), final[it.id].label if it.id in final else None, groups[it.id]) for it in held
    }


def versus(
    a: dict[str, tuple[Any, Any, str]], b: dict[str, tuple[Any, Any, str]], *, objective: str, labels: Any
) -> dict[str, Any]:
    """B's final judge against A's on their common held-out items with a reference label: the product's
    paired comparison (two-sided; the responses to one task one unit)."""
    from allure.metrics import objective_difference

    ids = sorted(i for i in set(a) & set(b) if a[i][0] is not None)
    cmp = objective_difference(
        [a[i][0] for i in ids],
        [a[i][1] for i in ids],
        [b[i][1] for i in ids],
        objective=objective,  # type: ignore[arg-type]
        labels=labels,
        groups=[a[i][2] for i in ids],
    )
    keep = ("objective", "n", "value_a", "value_b", "delta", "ci_low", "ci_high", "p_value", "alternative")
    return {k: getattr(cmp, k) for k in keep} | {"n_discordant": cmp.n_discordant}


def secondary_of(p: Planned, r: Result) -> dict[str, Any] | None:
    """The registration's secondary arms on the draw (none: ``None``): each one ``allure.audit`` of its
    spec in the draw's project (from an empty memory of its own, ``.allure/memory-<arm>``; the store
    answers what the draw's calls asked),
    compared with the zero-shot judge (its report's primary) and with the loop's judge, Holm over all
    of a draw's secondary comparisons."""
    names = prereg().get("secondary") or []
    if not names:
        return None
    from allure.metrics import holm_adjust

    objective = prereg()["task"][p.task.name]["objective"]
    default = final_heldout(p.project, r.run_id)
    got: dict[str, Any] = {}
    for name in names:
        title, make = SECONDARY[name]
        raw = make(p.spec)
        # a memory of its own, empty: the default run's Chroma client may still hold the project's
        # memory folder open in this process (deleting it underneath breaks the next open)
        location = p.project / ".allure" / f"memory-{name}"
        shutil.rmtree(location, ignore_errors=True)
        raw["memory"] = {**raw.get("memory", {}), "location": str(location)}
        t0 = time.perf_counter()
        with saving(p.project, p.draw.key):
            outcome = allure.audit(raw, project=p.project)
        report = allure.open_project(p.project).run(outcome.run_id).report()
        got[name] = {
            "title": title,
            "run_id": outcome.run_id,
            "vs_zero_shot": dict((report.get("primary") or {}).get("objective") or {}),
            "vs_loop": versus(
                default,
                final_heldout(p.project, outcome.run_id),
                objective=objective,
                labels=p.spec.get("label_set"),
            ),
            "adopted": adopted_cell({"report": table_facts(report)}),
            "calls": sum(int(it.get("calls") or 0) for it in report.get("iterations") or []),
            "wall_s": round(time.perf_counter() - t0, 1),
        }
    tests = [(c, k) for c in got.values() for k in ("vs_zero_shot", "vs_loop")]
    p_values = [c[k].get("p_value") for c, k in tests]
    adjusted = holm_adjust([1.0 if v is None else float(v) for v in p_values])
    for (c, k), adj in zip(tests, adjusted, strict=True):
        c[k]["p_holm"] = adj
    return got


def secondaries_of(p: Planned, r: Result) -> dict[str, Any] | None:
    """:func:`secondary_of`; a failure is said and leaves them out (the primary record stands)."""
    try:
        return secondary_of(p, r)
    except Exception as exc:  # noqa: BLE001
        print(f"note: {p.draw.key}: the secondary arms failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None


def _comparison(o: dict[str, Any]) -> str:
    return (
        f"{str(o.get('objective', '-')).replace('_', ' ')} {_f(o.get('value_a'))} -> {_f(o.get('value_b'))}, "
        f"delta {_f(o.get('delta'), '+.3f')} [95% CI {_f(o.get('ci_low'), '+.3f')}, {_f(o.get('ci_high'), '+.3f')}], "
        f"p = {_f(o.get('p_value'), '.3g')}, Holm p = {_f(o.get('p_holm'), '.3g')}, n = {o.get('n', '-')}"
    )


def secondary_lines(key: str, secondary: dict[str, Any] | None) -> list[str]:
    """The section's registered secondary lines (Holm over the draw's secondary comparisons)."""
    out = []
    for c in (secondary or {}).values():
        out += [
            f"secondary: {key}: {c['title']} against the zero-shot judge: {_comparison(c['vs_zero_shot'])}",
            f"secondary: {key}: {c['title']} against the loop's judge: {_comparison(c['vs_loop'])}",
            f"- {c['title']} (run `{c['run_id']}`): adopted {c['adopted']}; calls sent {c['calls']}, "
            f"{float(c['wall_s']) / 60:.0f} min",
        ]
    return out


def secondary_table(recs: list[dict[str, Any]]) -> list[str]:
    """The registered secondary comparisons, one row per draw and arm (none recorded: no table)."""
    rows = [(rec["key"], c) for rec in recs for c in (rec.get("secondary") or {}).values()]
    if not rows:
        return []

    def cell(o: dict[str, Any]) -> str:
        return (
            f"{_f(o.get('value_a'))} -> {_f(o.get('value_b'))}, {_f(o.get('delta'), '+.3f')} "
            f"[{_f(o.get('ci_low'), '+.3f')}, {_f(o.get('ci_high'), '+.3f')}], p {_f(o.get('p_value'), '.3g')} "
            f"(Holm {_f(o.get('p_holm'), '.3g')})"
        )

    return [
        "| task, draw | secondary arm | against the zero-shot judge | against the loop's judge | adopted | calls sent |",
        "|---|---|---|---|---|---|",
        *(
            f"| {key} | {c['title']} | {cell(c['vs_zero_shot'])} | {cell(c['vs_loop'])} | {c['adopted']} | {c['calls']} |"
            for key, c in rows
        ),
        "",
    ]


# ---- the results file ------------------------------------------------------------------------------


def section(
    r: Result, off_rule: bool, arms: dict[str, Any] | None = None, secondary: dict[str, Any] | None = None
) -> str:
    d = r.planned.draw
    tag = " (exploratory: the rule differs from the pre-registered commit)" if off_rule else ""
    decisions = str(r.report.get("decisions") or "-").removeprefix("decisions: ")
    return "\n".join(
        [
            f"### {r.planned.task.title}, draw {d.number} ({len(d.ids)} items, split seed {d.seed}; run `{r.run_id}`)",
            "",
            f"primary: {d.key}: {primary_line(r)}{tag}",
            *secondary_lines(d.key, secondary),
            "",
            *choice_lines(r.report),
            memory_line(r.report),
            f"- decision data: {str(r.report.get('decision_data') or '-').removeprefix('decision data: ')}",
            f"- decisions: {decisions}",
            f"- cost: {cost_line(r)}",
            *(lines(arms) if arms else []),
            "",
        ]
    )


def choice_lines(report: dict[str, Any]) -> list[str]:
    """Each pass's calibration and read-out choice, as report.json says it, and whether that pass is
    the loop's judge (a pass whose memory the guard refused is not: its choices were not adopted)."""
    active = report.get("active_iteration")
    out = []
    for it in report.get("iterations") or []:
        n = it.get("iteration")
        cal, rd = it.get("calibration") or {}, it.get("readout") or {}
        choice = cal.get("choice") or {}
        role = "the loop's judge" if n == active else "not the loop's judge"
        out.append(
            f"- pass {n} ({role}): calibration `{cal.get('mode', '-')}`: {cal.get('chosen', '-')} "
            f"({choice.get('line') or cal.get('note') or 'no choice recorded'}); "
            f"read-out: {rd.get('decision') or 'none recorded'}"
        )
    return out


def memory_line(report: dict[str, Any]) -> str:
    """The section's memory line: the approvals after each pass and the guard's decisions."""
    its = report.get("iterations") or []
    approved = [int((it.get("candidates") or {}).get("approved", 0) or 0) for it in its]
    guard = report.get("guard") or ["no memory decision recorded"]
    return (
        f"- memory: examples approved after each pass {approved} (a pass's prompts carry those of the "
        f"passes before it); {'; '.join(guard)}"
    )


SECTION_CHOICES = re.compile(r"(?m)^- (?:adopted(?: \(last pass\))?|pass \d+ \([^)]*\)|memory): .*\n")
"""A record's section lines of its passes' choices and its memory (an older record wrote the last
pass's choices only, as "adopted")."""


def refreshed_section(section: str, report: dict[str, Any]) -> str:
    """``section`` with its passes' choice lines and its memory line written again from ``report``."""
    new = "".join(f"{line}\n" for line in [*choice_lines(report), memory_line(report)])
    at = SECTION_CHOICES.search(section)
    if at is None:
        return section
    return (
        SECTION_CHOICES.sub("", section[: at.start()]) + new + SECTION_CHOICES.sub("", section[at.start() :])
    )


def table_facts(report: dict[str, Any]) -> dict[str, Any]:
    """What README's table needs from report.json besides the primary comparison."""
    its = report.get("iterations") or []
    zero = report.get("zero_shot_iteration")
    first = next((it for it in its if it.get("iteration") == zero), its[0] if its else {})
    held = (first.get("splits") or {}).get("heldout") or {}
    audit = (first.get("splits") or {}).get("audit") or {}
    return {
        "n_audit": audit.get("n"),
        "n_heldout": held.get("n"),
        "heldout_shares": held.get("reference_shares"),
        "zero_auc": held.get("auc"),
        "zero_auc_source": held.get("auc_source"),
        "zero_shot_iteration": zero,
        "active_iteration": report.get("active_iteration"),
        "calibration": [(it.get("calibration") or {}).get("chosen") for it in its],
        "calibration_p": [_calibration_p(it.get("calibration") or {}) for it in its],
        "readout": [(it.get("readout") or {}).get("decision") for it in its],
        "readout_changed": [(it.get("readout") or {}).get("changed") for it in its],
        "guard": report.get("guard"),
        "decisions": report.get("decisions"),
        "approved": sum(int((it.get("candidates") or {}).get("approved", 0) or 0) for it in its),
    }


def _calibration_p(cal: dict[str, Any]) -> float | None:
    """The Holm-adjusted p of the calibration mode a pass adopted (None where it kept none)."""
    return ((cal.get("choice") or {}).get("p_holm") or {}).get(cal.get("chosen"))


def record_path(key: str) -> Path:
    return RESULTS / f"loop.{key}.json"


def load_record(key: str) -> dict[str, Any] | None:
    path = record_path(key)
    return json.loads(path.read_text()) if path.is_file() else None


def record(
    r: Result,
    off_rule: bool,
    commit: str,
    arms: dict[str, Any] | None = None,
    made: dict[str, Any] | None = None,
    secondary: dict[str, Any] | None = None,
) -> None:
    """The draw's section and figures, kept beside its calls (``loop.<task>-d<draw>.json``): the
    results file is rebuilt from every draw run so far, whichever sitting ran it. ``made``: the
    record of the run under the rule's code that this one reproduced (its commit, time and wall
    time are kept; ``reproduced`` says where and when it was read again)."""
    o = (r.report.get("primary") or {}).get("objective") or {}
    its = r.report.get("iterations") or []
    out = {
        "key": r.planned.draw.key,
        "commit": commit,
        "exploratory": off_rule,
        "written": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "run_id": r.run_id,
        "primary": o,
        "report": table_facts(r.report),
        "calls": sum(int(it.get("calls") or 0) for it in its),
        "cache_hits": sum(int(it.get("cache_hits") or 0) for it in its),
        "wall_s": round(r.wall_s, 1),
        "estimate_s": round(r.planned.estimate_s, 1),
        "server_starts": r.server_starts,
        "arms": arms,
        "arms_commit": commit if arms else None,
        "secondary": secondary,
        "section": section(r, off_rule, arms, secondary),
    }
    if made is not None:
        out["reproduced"] = (
            f"at {commit} ({out['written']}): {out['calls']} calls sent, the same primary figures"
        )
        out["estimate_s"] = None  # the plan of the run that made the calls is in its record, or its log
        kept = ("commit", "written", "wall_s", "estimate_s", "server_starts", "calls", "cache_hits")
        out.update({k: made[k] for k in kept if k in made})
        if arms is None and made.get("arms") is not None:  # read again without its arms (--no-arms)
            out.update(
                arms=made["arms"], arms_commit=made.get("arms_commit"), section=made.get("section", "")
            )
        if "cache_hits" not in made:  # a record written before hits were kept: its cost line says them
            out["cache_hits"] = _hits_of(str(made.get("section", "")))
        cost = next((x for x in str(made.get("section", "")).splitlines() if x.startswith("- cost:")), None)
        if cost is not None:  # the cost of the run that made the calls, not of the read-back
            out["section"] = "\n".join(
                cost if x.startswith("- cost:") else x for x in out["section"].splitlines()
            )
    record_path(r.planned.draw.key).write_text(json.dumps(out, indent=1) + "\n")


def _pval(text: str | None) -> str:
    m = re.search(r"p = ([0-9.e-]+)", text or "")
    return m.group(1) if m else "-"


def adopted_cell(rec: dict[str, Any]) -> str:
    """What the loop's final judge is made of, from its record's report facts, with each decision's p:
    the memory when the active pass is not zero-shot, and the active pass's own calibration and
    read-out (a refused pass's choices are not the judge's)."""
    f = rec.get("report") or {}
    zero, active = f.get("zero_shot_iteration"), f.get("active_iteration")
    got = []
    if active not in (None, zero):
        got.append(f"memory ({_pval(' '.join(f.get('guard') or []))})")
    k = active - zero if isinstance(active, int) and isinstance(zero, int) else 0

    def of(name: str) -> Any:
        values = f.get(name) or []
        return values[k] if 0 <= k < len(values) else None

    chosen, chosen_p = of("calibration"), of("calibration_p")
    if chosen not in (None, "none"):
        got.append(f"calibration {chosen}" + (f" (Holm p {chosen_p:.3g})" if chosen_p is not None else ""))
    decision = of("readout")
    if decision and "kept" not in decision and (of("readout_changed") or 0) > 0:
        got.append(f"read-out ({_pval(decision)})")
    return ", ".join(got) or "nothing (zero-shot kept)"


MDE_CHANGED = 0.5
"""The share of held-out labels a judge is assumed to change for the minimum detectable effect: the
loop's judge changed about half wherever it adopted anything (rte-d1 150 of 300, rte-d2 149,
halueval-d1 160, cb-d1 93 of 153)."""
Z_MDE = 1.959964 + 0.841621
"""z of a two-sided 0.05 test plus z of 80 % power."""


def mde(n_by_label: dict[str, int], objective: str, changed: float = MDE_CHANGED) -> float | None:
    """The minimum detectable effect of a paired comparison on these held-out items: the difference
    the test finds with 80 % power at a two-sided 0.05 when ``changed`` of the labels differ between
    the judges (normal approximation to the paired test, item by item: responses to one task moving
    together make it larger). Accuracy: ``Z sqrt(changed / n)``; balanced accuracy, the mean of the
    labels' recalls: ``Z sqrt(changed * sum_c 1 / (K^2 n_c))``; macro F1 is given balanced accuracy's."""
    counts = [c for c in n_by_label.values() if c > 0]
    if not counts:
        return None
    if objective == "accuracy":
        return Z_MDE * math.sqrt(changed / sum(counts))
    k = len(counts)
    return Z_MDE * math.sqrt(changed * sum(1 / (k * k * c) for c in counts))


def _mde_cell(rec: dict[str, Any]) -> str:
    """``; MDE 0.16`` for a task run whole, once (a small set: how large an effect its test could see)."""
    name = rec["key"].rsplit("-d", 1)[0].removeprefix(key_prefix())
    if len(prereg()["task"].get(name, {}).get("draw_seeds", [0])) > 1:
        return ""
    f, o = rec.get("report") or {}, rec.get("primary") or {}
    n, shares = f.get("n_heldout"), f.get("heldout_shares") or {}
    if not n or not shares:
        return ""
    got = mde({k: round(v * n) for k, v in shares.items()}, str(o.get("objective", "balanced_accuracy")))
    return "" if got is None else f"; MDE {got:.2f}"


def table(records: list[dict[str, Any]]) -> list[str]:
    """README's table: one row per task and draw; a task run whole, once, with its minimum detectable
    effect (:func:`mde`) beside its p."""
    rows = [
        "| task, draw (objective) | n audit / held-out (held-out label shares) | zero-shot (AUC of its scores) | "
        "the loop's judge | "
        "primary delta [95% CI], p | adopted (decision p) | calls used (sent in the last sitting), its wall "
        "(planned) |",
        "|---|---|---|---|---|---|---|",
    ]
    for rec in records:
        o, f = rec.get("primary") or {}, rec.get("report") or {}
        shares = ", ".join(f"{k} {v:.2f}" for k, v in (f.get("heldout_shares") or {}).items())
        # an AUC of hard labels (a pass calibrated, so without the judge's scores) is its balanced
        # accuracy again, not how the zero-shot judge's probabilities rank the items
        auc = None if f.get("zero_auc_source") == "hard_labels" else f.get("zero_auc")
        rows.append(
            f"| {rec['key']} ({str(o.get('objective', '-')).replace('_', ' ')}) | {f.get('n_audit', '-')} / {f.get('n_heldout', '-')} ({shares}) | "
            f"{_f(o.get('value_a'))} ({_f(auc)}) | {_f(o.get('value_b'))} | "
            f"{_f(o.get('delta'), '+.3f')} [{_f(o.get('ci_low'), '+.3f')}, {_f(o.get('ci_high'), '+.3f')}], "
            f"p {_f(o.get('p_value'), '.3g')}{_mde_cell(rec)} | {adopted_cell(rec)} | "
            f"{_calls(rec)}, {float(rec.get('wall_s') or 0) / 60:.0f} min{_planned(rec)} |"
        )
    return rows


def _calls(rec: dict[str, Any]) -> str:
    """The calls the run used (the store's answers included: the draw's calls in all its sittings), and
    those it sent itself."""
    sent = rec.get("calls")
    hits = rec.get("cache_hits")
    if hits is None:  # a record written before hits were kept: its cost line says them
        hits = _hits_of(str(rec.get("section", "")))
    return f"{int(sent or 0) + hits} ({sent})" if hits is not None else f"{sent} sent"


def _hits_of(section: str) -> int | None:
    m = re.search(r"answered from the store (\d+)", section)
    return int(m.group(1)) if m else None


def _planned(rec: dict[str, Any]) -> str:
    est = rec.get("estimate_s")
    return "" if est is None else f" (planned {float(est) / 60:.0f})"


def records() -> list[dict[str, Any]]:
    """Every draw's record so far, in the tasks' order."""
    return [rec for key in all_keys() if (rec := load_record(key)) is not None]


def all_keys() -> list[str]:
    """The pre-registered draws, in the tasks' order."""
    pre, prefix = prereg()["task"], key_prefix()
    return [
        f"{prefix}{t}-d{d}"
        for t in TASKS
        if t in pre
        for d in range(1, len(pre[t].get("draw_seeds", [0])) + 1)
    ]


def results_file() -> Path:
    """The registration's results file (``loop.md``; a later registration names its own)."""
    return RESULTS / str(prereg().get("results", "loop.md"))


def table_markers() -> tuple[str, str]:
    """README's markers around the registration's table (registration 1's are :data:`TABLE_BEGIN`
    and :data:`TABLE_END`)."""
    name = key_prefix().rstrip("-")
    if not name:
        return TABLE_BEGIN, TABLE_END
    return (
        f"<!-- bench_loop's table, registration {name}: written by benchmarks/bench_loop.py from its records -->",
        f"<!-- end of bench_loop's table, registration {name} -->",
    )


def not_run(recs: list[dict[str, Any]]) -> list[str]:
    done = {r["key"] for r in recs}
    return [k for k in all_keys() if k not in done]


def write(rule: str) -> Path:
    """``loop.md`` from every draw's record, in the tasks' order; README's table too."""
    recs = records()
    out = results_file()
    body = [
        "# The loop as a user runs it, per task and item draw (bench_loop.py)",
        "",
        f"Pre-registered in `benchmarks/{PREREG.name}` (decision rule at commit {rule}). "
        f"{len(recs)} draws run so far"
        + "".join(
            f"{', ' if n else ': '}{r['key']} at {r['commit']} ({r['written']})" for n, r in enumerate(recs)
        )
        + f". Not yet run: {', '.join(not_run(recs)) or 'none'}.",
        "",
        "Each `primary:` line is the run's pre-registered comparison read from its report.json: the loop's "
        "final judge against the zero-shot judge's parsed labels on the held-out split, the task's objective, "
        "alpha 0.05, two-sided. "
        + (
            "Each `secondary:` line is registered too (Holm over a draw's secondary comparisons). "
            if prereg().get("secondary")
            else ""
        )
        + "Everything else is exploratory.",
        "",
        *table(recs),
        "",
        *secondary_table(recs),
        *(r["section"] for r in recs),
    ]
    out.write_text("\n".join(body))
    write_readme(recs)
    return out


def write_readme(recs: list[dict[str, Any]]) -> None:
    """README's table between its two markers (left alone when README has none)."""
    if not README.is_file():
        return
    text = README.read_text()
    begin, end = table_markers()
    if begin not in text or end not in text:
        return
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    missing = not_run(recs)
    block = [
        "",
        *table(recs),
        "",
        *secondary_table(recs),
        f"{len(recs)} of {len(all_keys())} pre-registered draws run"
        + (f"; not yet run: {', '.join(missing)}." if missing else "."),
        "",
    ]
    README.write_text(head + begin + "\n".join(block) + end + tail)


def main() -> int:
    global PREREG  # --registration: every function reads the registration it names
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", default=None, help=f"of {', '.join(TASKS)} (default: the registration's)")
    ap.add_argument(
        "--registration",
        type=Path,
        default=PREREG,
        help="the pre-registration to run (default benchmarks/preregistered.toml; registration 2: "
        "benchmarks/preregistered_2.toml)",
    )
    ap.add_argument("--draws", default="1,2", help="which draws of the two-draw tasks")
    ap.add_argument("--plan", action="store_true", help="print the plan and stop")
    ap.add_argument(
        "--write",
        action="store_true",
        help="rewrite loop.md and README's table from the records, run nothing",
    )
    ap.add_argument(
        "--refresh",
        action="store_true",
        help="re-read each record's table facts from its run's report.json under --project (a record "
        "written by an older bench), rewrite the tables, run nothing",
    )
    ap.add_argument("--max-new-calls", type=int, default=0, help="refuse to start when the runs need more")
    ap.add_argument("--exploratory", action="store_true", help="run although the rule's code changed")
    ap.add_argument("--no-arms", action="store_true", help="leave out the exploratory arms (item 4)")
    ap.add_argument("--project", type=Path, default=ROOT / ".allure-bench" / "loop")
    args = ap.parse_args()
    PREREG = args.registration.resolve()
    try:
        pre = prereg()
    except OSError as e:
        ap.error(
            f"--registration {args.registration}: cannot read it ({e.strerror}); name a registration file"
        )
    except tomllib.TOMLDecodeError as e:
        ap.error(f"--registration {args.registration}: not TOML ({e}); fix the file or name another")
    tasks = args.tasks.split(",") if args.tasks else [t for t in TASKS if t in pre["task"]]
    if args.refresh:
        for rec in records():
            path = args.project / rec["key"] / ".allure" / "runs" / str(rec.get("run_id")) / "report.json"
            if path.is_file():
                report = json.loads(path.read_text())
                rec["report"] = table_facts(report)
                if rec.get("section"):
                    rec["section"] = refreshed_section(rec["section"], report)
                record_path(rec["key"]).write_text(json.dumps(rec, indent=1) + "\n")
                print(f"refreshed {rec['key']} from {path}")
            else:
                print(f"kept {rec['key']}: no {path}")
    if args.write or args.refresh:
        print(f"wrote {write(pre['rule_commit'])}")
        return 0
    changed = rule_changed(pre["rule_commit"])
    if changed and not args.exploratory:
        print(
            f"note: allure/ differs from the pre-registered rule ({pre['rule_commit']}): a draw recorded under "
            "the rule is read again from its stored calls (nothing sent; its record kept) and must give the "
            "same judges (their objective values and the items they differ on; the interval and p follow "
            "this code's methods); a new "
            f"draw is refused (run it from a checkout of {pre['rule_commit']}: `git worktree add ../allure-rule "
            f"{pre['rule_commit']}`, then copy its benchmarks/results/loop.* here).\n{changed}",
            flush=True,
        )
    plans = []
    for name in tasks:
        task, tpre = TASKS[name], pre["task"][name]
        for number, ids in enumerate(draws_of(name, pre), start=1):
            if len(tpre.get("draw_seeds", [0])) > 1 and str(number) not in args.draws.split(","):
                continue
            draw = Draw(name, number, ids, tpre["split_seeds"][number - 1], key_prefix())
            project = open_project(task, draw, args.project)
            data = task.write(project, ids)
            plans.append(plan(task, draw, project, audit_spec(task, data, pre, draw.seed)))
    need = sum(p.zero_uncached + p.memory_calls for p in plans)
    print("plan:")
    for p in plans:
        print(
            f"  {p.draw.key}: {len(p.draw.ids)} items, split seed {p.draw.seed}; zero-shot calls not stored "
            f"{p.zero_uncached}, memory pass about {p.memory_calls}; ~{p.estimate_s / 60:.0f} min at "
            f"{p.seconds_a_call:.1f} s a zero-shot call, {p.memory_seconds_a_call:.1f} s a memory-pass call"
        )
    print(f"  in all about {need} calls, ~{sum(p.estimate_s for p in plans) / 3600:.1f} h", flush=True)
    if args.plan:
        return 0
    if need > args.max_new_calls:
        print(f"refused: about {need} new calls, --max-new-calls is {args.max_new_calls}", file=sys.stderr)
        return 2
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    head, failed = commit.stdout.strip(), 0
    for p in plans:
        made = load_record(p.draw.key)
        under_rule = made is not None and not made.get("exploratory")
        if changed and not args.exploratory and not under_rule:
            print(
                f"== {p.draw.key}: refused (a new draw, and allure/ is not the rule's code)", file=sys.stderr
            )
            failed += 1
            continue
        print(f"== {p.draw.key}: allure.audit ... (estimate {p.estimate_s / 60:.0f} min)", flush=True)
        reread = bool(changed and not args.exploratory)
        try:
            r = run_one(p, reread=reread, save=not (changed and under_rule))
        except ServerRefused:
            print(
                f"== {p.draw.key}: NOT re-read at {head}: this code asks the judge prompts the rule's run did "
                f"not (a decision differs, so other examples reach the prompts); nothing sent, the record "
                f"is left as it was (re-read it from a checkout of {pre['rule_commit']})",
                file=sys.stderr,
            )
            failed += 1
            continue
        arms = None if args.no_arms else arms_of(p, r)
        if changed and not args.exploratory:
            assert made is not None
            got, want = (r.report.get("primary") or {}).get("objective") or {}, made.get("primary") or {}
            if not same_primary(got, want, keys=SAME_LABELS):
                print(
                    f"== {p.draw.key}: NOT reproduced at {head}: primary {got} differs from the record made at "
                    f"{made.get('commit')}: {want}; the record is left as it was",
                    file=sys.stderr,
                )
                failed += 1
                continue
            # the same labels from the stored calls; the record keeps the rule's figures (this code's
            # interval and p may differ where their method changed: said here, not recorded)
            print(
                f"== {p.draw.key}: re-read at {head}, 0 calls sent: the same judge ({want.get('value_a'):.3f} -> "
                f"{want.get('value_b'):.3f}); this code's interval [{got.get('ci_low'):+.3f}, "
                f"{got.get('ci_high'):+.3f}], p {got.get('p_value'):.3g}; the record's (the rule's) "
                f"[{want.get('ci_low'):+.3f}, {want.get('ci_high'):+.3f}], p {want.get('p_value'):.3g}; "
                "the record is left as it was",
                flush=True,
            )
            continue
        elif changed and under_rule:
            # --exploratory beside a record made under the rule: said, never written over it
            print(
                f"== {p.draw.key}: exploratory at {head}; the record "
                f"made under the rule at {made.get('commit') if made else '?'} is left as it was",
                flush=True,
            )
            print(section(r, True, arms), flush=True)
            continue
        else:
            # the checkout's allure/ is the rule's when unchanged (a worktree of a later commit with
            # allure/ checked out at the rule's commit, so that the bench is the latest): say so
            record(
                r,
                bool(changed),
                head if changed else f"{head}, allure/ at {pre['rule_commit']}",
                arms,
                secondary=secondaries_of(p, r),
            )
        print(load_record(p.draw.key)["section"], flush=True)  # type: ignore[index]
        print(f"wrote {write(pre['rule_commit'])}", flush=True)
    return 1 if failed else 0


def arms_of(p: Planned, r: Result) -> dict[str, Any] | None:
    """The draw's exploratory arms (:mod:`loop_arms`); a failure is said and leaves them out."""
    try:
        with saving(p.project, p.draw.key):
            return exploratory(p.project, r.run_id, r.report, prereg()["task"][p.task.name]["objective"])
    except Exception as exc:  # noqa: BLE001  the primary record stands without its arms
        print(
            f"note: {p.draw.key}: the exploratory arms failed: {type(exc).__name__}: {exc}", file=sys.stderr
        )
        return None


SAME_FIGURES = (
    "objective",
    "n",
    "value_a",
    "value_b",
    "delta",
    "ci_low",
    "ci_high",
    "p_value",
    "alternative",
)
"""Every figure of a primary comparison."""
SAME_LABELS = ("objective", "n", "value_a", "value_b", "delta", "n_discordant", "alternative")
"""The figures the judges' labels fix (a re-read at other code must give these; its interval and p
follow that code's methods)."""


def same_primary(got: dict[str, Any], want: dict[str, Any], *, keys: tuple[str, ...] = SAME_FIGURES) -> bool:
    """Whether two primary comparisons give the same ``keys`` (floats to 1e-9)."""
    for k in keys:
        a, b = got.get(k), want.get(k)
        if isinstance(a, float) and isinstance(b, float):
            if abs(a - b) > 1e-9:
                return False
        elif a != b:
            return False
    return bool(want)


if __name__ == "__main__":
    sys.exit(main())
