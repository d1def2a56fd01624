"""SQLite run store. See the package docstring."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from allure.errors import ReviewError, StoreError
from allure.models import IclExample, Item, ReviewDecision, Split, Verdict, stable_hash, utcnow
from allure.store._reaudits import REAUDIT_SCHEMA, ReauditTables

if TYPE_CHECKING:
    from allure.metrics import SplitMetrics

DEFAULT_DB = Path(".allure") / "allure.db"

RunStatus = Literal["running", "paused", "done", "failed"]
"""``paused``: waiting at review; ``done``: the loop ended; ``failed``: it stopped on an error."""

CandidateStatus = Literal["pending", "approved", "rejected"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    status TEXT NOT NULL,
    iteration INTEGER NOT NULL DEFAULT 0,
    spec_json TEXT NOT NULL,
    run_dir TEXT NOT NULL DEFAULT '',
    memory_version TEXT NOT NULL DEFAULT '',
    info_json TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS items (
    run_id TEXT NOT NULL,
    item_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    split TEXT NOT NULL,
    reference_label INTEGER,
    item_json TEXT NOT NULL,
    PRIMARY KEY (run_id, item_id)
);
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    prompt_hash TEXT NOT NULL,
    item_id TEXT NOT NULL,
    model TEXT NOT NULL,
    params_json TEXT NOT NULL,
    status TEXT NOT NULL,
    label INTEGER,
    raw_output TEXT NOT NULL,
    prob_positive REAL,
    error TEXT,
    icl_ids_json TEXT NOT NULL,
    latency_s REAL NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cached_tokens INTEGER NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS calls_hash ON calls(prompt_hash);
CREATE TABLE IF NOT EXISTS verdicts (
    run_id TEXT NOT NULL,
    iteration INTEGER NOT NULL,
    item_id TEXT NOT NULL,
    call_id INTEGER NOT NULL,
    cache_hit INTEGER NOT NULL,
    PRIMARY KEY (run_id, iteration, item_id)
);
CREATE TABLE IF NOT EXISTS candidates (
    run_id TEXT NOT NULL,
    id TEXT NOT NULL,
    iteration INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    status TEXT NOT NULL,
    example_json TEXT NOT NULL,
    PRIMARY KEY (run_id, id)
);
CREATE TABLE IF NOT EXISTS decisions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    candidate_id TEXT NOT NULL,
    action TEXT NOT NULL,
    decision_json TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS memory_versions (
    run_id TEXT NOT NULL,
    iteration INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    ids_json TEXT NOT NULL,
    PRIMARY KEY (run_id, iteration)
);
CREATE TABLE IF NOT EXISTS metrics (
    run_id TEXT NOT NULL,
    iteration INTEGER NOT NULL,
    split TEXT NOT NULL,
    metrics_json TEXT NOT NULL,
    PRIMARY KEY (run_id, iteration, split)
);
"""


def project_db_path(project_dir: str | Path = ".") -> Path:
    """The run store of a project directory."""
    return Path(project_dir) / DEFAULT_DB


class RunRecord(BaseModel):
    """One row of the ``runs`` table."""

    id: str
    """The run id (also the LangGraph ``thread_id``)."""
    created_at: str
    """Creation time."""
    updated_at: str
    """Last status change."""
    status: RunStatus
    """Where the run stands."""
    iteration: int
    """The current (or last) loop iteration, from 1."""
    spec: dict[str, Any]
    """The audit spec the run was started with (JSON form)."""
    run_dir: str
    """The folder holding its report."""
    memory_version: str
    """The memory version the last evaluation used."""
    info: dict[str, Any]
    """Free-form extra facts (stop reason, errors)."""


class RunStore(ReauditTables):
    """A thread-safe handle on one run-store database; every write commits at once."""

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(path)
        if not self.path.exists() and not create:
            raise StoreError(
                "no run store here",
                where=str(self.path),
                fix="run `allure audit` in this project directory first, or pass --project DIR",
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        try:
            self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)
            self._conn.executescript(REAUDIT_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"cannot open the run store ({exc})",
                where=str(self.path),
                fix="the file is not a valid allure database; move it away and re-run",
            ) from exc

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                yield self._conn
                self._conn.commit()
            except BaseException:
                self._conn.rollback()
                raise

    def _query(self, sql: str, args: Iterable[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return list(self._conn.execute(sql, tuple(args)).fetchall())

    # -- runs -------------------------------------------------------------------------------------
    def create_run(self, spec: dict[str, Any], *, run_id: str | None = None, run_dir: str = "") -> str:
        """Register a new run and return its id."""
        now = utcnow()
        rid = run_id or f"run-{now[:19].replace(':', '').replace('-', '')}-{stable_hash(spec, now, length=6)}"
        with self._tx() as c:
            c.execute(
                "INSERT INTO runs (id, created_at, updated_at, status, spec_json, run_dir) VALUES (?,?,?,?,?,?)",
                (rid, now, now, "running", json.dumps(spec, default=str), run_dir),
            )
        return rid

    def get_run(self, run_id: str) -> RunRecord:
        """The run ``run_id``; raises :class:`StoreError` naming the known runs if absent."""
        rows = self._query("SELECT * FROM runs WHERE id = ?", (run_id,))
        if not rows:
            known = [r.id for r in self.list_runs()[-5:]]
            raise StoreError(
                f"unknown run {run_id!r}",
                where=str(self.path),
                fix=f"use one of: {', '.join(known) or '(no runs yet)'}; `allure runs` lists them",
            )
        return self._run_from_row(rows[0])

    @staticmethod
    def _run_from_row(row: tuple[Any, ...]) -> RunRecord:
        rid, created, updated, status, iteration, spec_json, run_dir, mem, info = row
        return RunRecord(
            id=rid,
            created_at=created,
            updated_at=updated,
            status=status,
            iteration=iteration,
            spec=json.loads(spec_json),
            run_dir=run_dir,
            memory_version=mem,
            info=json.loads(info),
        )

    def list_runs(self) -> list[RunRecord]:
        """All runs, oldest first."""
        return [self._run_from_row(r) for r in self._query("SELECT * FROM runs ORDER BY created_at, rowid")]

    def latest_run(self, status: RunStatus | None = None) -> RunRecord | None:
        """The newest run, optionally with the given status."""
        runs = [r for r in self.list_runs() if status is None or r.status == status]
        return runs[-1] if runs else None

    def update_run(
        self,
        run_id: str,
        *,
        status: RunStatus | None = None,
        iteration: int | None = None,
        run_dir: str | None = None,
        memory_version: str | None = None,
        info: dict[str, Any] | None = None,
    ) -> None:
        """Update some fields of a run (``info`` is merged)."""
        run = self.get_run(run_id)
        merged = {**run.info, **(info or {})}
        with self._tx() as c:
            c.execute(
                "UPDATE runs SET status=?, iteration=?, run_dir=?, memory_version=?, info_json=?, updated_at=? "
                "WHERE id=?",
                (
                    status or run.status,
                    run.iteration if iteration is None else iteration,
                    run.run_dir if run_dir is None else run_dir,
                    run.memory_version if memory_version is None else memory_version,
                    json.dumps(merged, default=str),
                    utcnow(),
                    run_id,
                ),
            )

    # -- items ------------------------------------------------------------------------------------
    def add_items(
        self, run_id: str, items: list[Item], splits: dict[str, Split], reference: dict[str, int | None]
    ) -> None:
        """Store a run's items with their split and reference label (idempotent)."""
        with self._tx() as c:
            c.executemany(
                "INSERT OR IGNORE INTO items (run_id, item_id, seq, split, reference_label, item_json) VALUES (?,?,?,?,?,?)",
                [
                    (run_id, it.id, i, splits[it.id], reference.get(it.id), it.model_dump_json())
                    for i, it in enumerate(items)
                ],
            )

    def items(self, run_id: str, split: Split | None = None) -> list[Item]:
        """A run's items in dataset order."""
        sql = (
            "SELECT item_json FROM items WHERE run_id=?" + (" AND split=?" if split else "") + " ORDER BY seq"
        )
        args = (run_id, split) if split else (run_id,)
        return [Item.model_validate_json(r[0]) for r in self._query(sql, args)]

    def splits(self, run_id: str) -> dict[str, Split]:
        """Item id -> split."""
        return {r[0]: r[1] for r in self._query("SELECT item_id, split FROM items WHERE run_id=?", (run_id,))}

    def reference_labels(self, run_id: str) -> dict[str, int | None]:
        """Item id -> reference label (``None`` where the gold check could not decide)."""
        return {
            r[0]: r[1]
            for r in self._query("SELECT item_id, reference_label FROM items WHERE run_id=?", (run_id,))
        }

    # -- evaluator calls (the cache) ----------------------------------------------------------------
    def lookup_call(self, prompt_hash: str) -> tuple[int, Verdict] | None:
        """The stored successful-or-unparsed call for ``prompt_hash``, if any (errors are not cached)."""
        rows = self._query(
            "SELECT * FROM calls WHERE prompt_hash=? AND status != 'error' ORDER BY id DESC LIMIT 1",
            (prompt_hash,),
        )
        return (rows[0][0], self._verdict_from_call(rows[0])) if rows else None

    def lookup_calls(self, prompt_hashes: Iterable[str]) -> dict[str, tuple[int, Verdict]]:
        """Batch form of :meth:`lookup_call`."""
        hashes = list(dict.fromkeys(prompt_hashes))
        out: dict[str, tuple[int, Verdict]] = {}
        for start in range(0, len(hashes), 500):
            chunk = hashes[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for row in self._query(
                f"SELECT * FROM calls WHERE prompt_hash IN ({marks}) AND status != 'error' ORDER BY id", chunk
            ):
                out[row[1]] = (row[0], self._verdict_from_call(row))
        return out

    @staticmethod
    def _verdict_from_call(row: tuple[Any, ...]) -> Verdict:
        (
            _id,
            ph,
            item_id,
            model,
            _params,
            status,
            label,
            raw,
            prob,
            err,
            icl,
            lat,
            pt,
            ct,
            cached,
            _created,
        ) = row
        return Verdict(
            item_id=item_id,
            label=label,
            status=status,
            raw_output=raw,
            prob_positive=prob,
            error=err,
            prompt_hash=ph,
            model=model,
            icl_ids=json.loads(icl),
            latency_s=lat,
            prompt_tokens=pt,
            completion_tokens=ct,
            cached_tokens=cached,
        )

    def record_call(self, verdict: Verdict, params: dict[str, Any]) -> int:
        """Write one evaluator call at once; returns its id."""
        return self.record_calls([verdict], params)[0]

    def record_calls(self, verdicts: list[Verdict], params: dict[str, Any]) -> list[int]:
        """Write evaluator calls in one transaction; returns their ids in order."""
        params_json = json.dumps(params, sort_keys=True, default=str)
        now = utcnow()
        ids = []
        with self._tx() as c:
            for v in verdicts:
                cur = c.execute(
                    "INSERT INTO calls (prompt_hash, item_id, model, params_json, status, label, raw_output, "
                    "prob_positive, error, icl_ids_json, latency_s, prompt_tokens, completion_tokens, cached_tokens, "
                    "created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        v.prompt_hash,
                        v.item_id,
                        v.model,
                        params_json,
                        v.status,
                        v.label,
                        v.raw_output,
                        v.prob_positive,
                        v.error,
                        json.dumps(v.icl_ids),
                        v.latency_s,
                        v.prompt_tokens,
                        v.completion_tokens,
                        v.cached_tokens,
                        now,
                    ),
                )
                ids.append(int(cur.lastrowid or 0))
        return ids

    def record_verdict(
        self, run_id: str, iteration: int, call_id: int, item_id: str, *, cache_hit: bool
    ) -> None:
        """Link a call to a run's iteration (replaces an earlier link for the same item)."""
        self.record_verdicts(run_id, iteration, [(call_id, item_id, cache_hit)])

    def record_verdicts(self, run_id: str, iteration: int, rows: list[tuple[int, str, bool]]) -> None:
        """Batch form of :meth:`record_verdict`: ``(call_id, item_id, cache_hit)`` tuples."""
        with self._tx() as c:
            c.executemany(
                "INSERT OR REPLACE INTO verdicts (run_id, iteration, item_id, call_id, cache_hit) VALUES (?,?,?,?,?)",
                [(run_id, iteration, item_id, call_id, int(hit)) for call_id, item_id, hit in rows],
            )

    def verdicts(self, run_id: str, iteration: int) -> dict[str, Verdict]:
        """Item id -> verdict of a run's iteration."""
        rows = self._query(
            "SELECT v.cache_hit, c.* FROM verdicts v JOIN calls c ON c.id = v.call_id "
            "WHERE v.run_id=? AND v.iteration=?",
            (run_id, iteration),
        )
        out = {}
        for row in rows:
            v = self._verdict_from_call(row[1:])
            v.cache_hit = bool(row[0])
            out[v.item_id] = v
        return out

    def call_count(self) -> int:
        """Number of calls stored (all runs)."""
        return int(self._query("SELECT COUNT(*) FROM calls")[0][0])

    def calls_with_example(self, example_id: str) -> list[tuple[str, Verdict, int | None]]:
        """``(run_id, verdict, reference_label)`` for every run verdict whose prompt carried ``example_id``."""
        rows = self._query(
            "SELECT v.run_id, i.reference_label, c.* FROM verdicts v JOIN calls c ON c.id = v.call_id "
            "LEFT JOIN items i ON i.run_id = v.run_id AND i.item_id = v.item_id "
            "WHERE c.icl_ids_json LIKE ?",
            (f'%"{example_id}"%',),
        )
        return [(r[0], self._verdict_from_call(r[2:]), r[1]) for r in rows]

    # -- candidates and review ----------------------------------------------------------------------
    def add_candidates(self, run_id: str, iteration: int, examples: list[IclExample]) -> int:
        """Store proposed ICL examples as pending; already known ids are kept as they are. Returns how many were new."""
        with self._tx() as c:
            start = c.execute("SELECT COUNT(*) FROM candidates WHERE run_id=?", (run_id,)).fetchone()[0]
            before = c.total_changes
            c.executemany(
                "INSERT OR IGNORE INTO candidates (run_id, id, iteration, seq, status, example_json) VALUES (?,?,?,?,?,?)",
                [
                    (run_id, ex.id, iteration, start + i, "pending", ex.model_dump_json())
                    for i, ex in enumerate(examples)
                ],
            )
            return c.total_changes - before

    def candidates(
        self, run_id: str, *, status: CandidateStatus | None = None, iteration: int | None = None
    ) -> list[IclExample]:
        """A run's candidates in proposal order, with their current decision applied."""
        sql = "SELECT example_json FROM candidates WHERE run_id=?"
        args: list[Any] = [run_id]
        if status:
            sql += " AND status=?"
            args.append(status)
        if iteration is not None:
            sql += " AND iteration=?"
            args.append(iteration)
        return [IclExample.model_validate_json(r[0]) for r in self._query(sql + " ORDER BY seq", args)]

    def candidate_counts(self, run_id: str, iteration: int | None = None) -> dict[str, int]:
        """Status -> count."""
        sql = "SELECT status, COUNT(*) FROM candidates WHERE run_id=?"
        args: list[Any] = [run_id]
        if iteration is not None:
            sql += " AND iteration=?"
            args.append(iteration)
        counts = {"pending": 0, "approved": 0, "rejected": 0}
        counts.update({r[0]: r[1] for r in self._query(sql + " GROUP BY status", args)})
        return counts

    def record_decision(
        self, run_id: str, decision: ReviewDecision, *, label_set: Iterable[int] | None = None
    ) -> IclExample:
        """Apply and log one review decision at once; returns the updated example."""
        rows = self._query(
            "SELECT example_json FROM candidates WHERE run_id=? AND id=?", (run_id, decision.candidate_id)
        )
        if not rows:
            raise ReviewError(
                f"unknown candidate {decision.candidate_id!r} in run {run_id}",
                where="candidate_id",
                fix="use an id from `allure review RUN --export pending.jsonl`",
            )
        labels = set(label_set) if label_set is not None else None
        if decision.label is not None and labels is not None and decision.label not in labels:
            raise ReviewError(
                f"label {decision.label} is not in the label set {sorted(labels)}",
                where=f"candidate {decision.candidate_id}, field 'label'",
                fix=f"use one of {sorted(labels)}",
            )
        ex = IclExample.model_validate_json(rows[0][0])
        ex.decision = decision.decision
        if decision.label is not None:
            ex.correct_label = decision.label
        if decision.failure_mode is not None:
            ex.failure_mode = decision.failure_mode
            ex.failure_reason = f"set by reviewer {decision.reviewer}".strip()
        ex.comment = decision.comment
        ex.reviewer = decision.reviewer
        ex.decided_at = decision.decided_at
        status = "approved" if decision.decision == "approve" else "rejected"
        with self._tx() as c:
            c.execute(
                "INSERT INTO decisions (run_id, candidate_id, action, decision_json, created_at) VALUES (?,?,?,?,?)",
                (run_id, decision.candidate_id, "decide", decision.model_dump_json(), utcnow()),
            )
            c.execute(
                "UPDATE candidates SET status=?, example_json=? WHERE run_id=? AND id=?",
                (status, ex.model_dump_json(), run_id, decision.candidate_id),
            )
        return ex

    def undo_decision(self, run_id: str, candidate_id: str, original: IclExample) -> None:
        """Put a decided candidate back to pending with its proposed content ``original``; logged."""
        with self._tx() as c:
            c.execute(
                "INSERT INTO decisions (run_id, candidate_id, action, decision_json, created_at) VALUES (?,?,?,?,?)",
                (run_id, candidate_id, "undo", "{}", utcnow()),
            )
            c.execute(
                "UPDATE candidates SET status='pending', example_json=? WHERE run_id=? AND id=?",
                (original.model_dump_json(), run_id, candidate_id),
            )

    def decision_log(self, run_id: str) -> list[dict[str, Any]]:
        """Every decision and undo of a run, oldest first."""
        rows = self._query(
            "SELECT candidate_id, action, decision_json, created_at FROM decisions WHERE run_id=? ORDER BY id",
            (run_id,),
        )
        return [
            {"candidate_id": r[0], "action": r[1], "decision": json.loads(r[2]), "at": r[3]} for r in rows
        ]

    # -- memory versions ----------------------------------------------------------------------------
    def record_memory_version(self, run_id: str, iteration: int, content_hash: str, ids: list[str]) -> None:
        """Name the memory an iteration's prompts drew from: its example ids and content hash."""
        with self._tx() as c:
            c.execute(
                "INSERT OR REPLACE INTO memory_versions (run_id, iteration, content_hash, ids_json) "
                "VALUES (?,?,?,?)",
                (run_id, iteration, content_hash, json.dumps(sorted(ids))),
            )

    def memory_versions(self, run_id: str) -> dict[int, tuple[str, list[str]]]:
        """Iteration -> (content hash, sorted example ids) of the memory it used."""
        rows = self._query(
            "SELECT iteration, content_hash, ids_json FROM memory_versions WHERE run_id=? ORDER BY iteration",
            (run_id,),
        )
        return {r[0]: (r[1], json.loads(r[2])) for r in rows}

    # -- metrics ------------------------------------------------------------------------------------
    def record_metrics(self, run_id: str, iteration: int, split: str, metrics: SplitMetrics) -> None:
        """Store the metrics of one iteration and split."""
        with self._tx() as c:
            c.execute(
                "INSERT OR REPLACE INTO metrics (run_id, iteration, split, metrics_json) VALUES (?,?,?,?)",
                (run_id, iteration, split, metrics.model_dump_json()),
            )

    def metrics(self, run_id: str) -> dict[int, dict[str, SplitMetrics]]:
        """Iteration -> split -> metrics, in iteration order."""
        from allure.metrics import SplitMetrics  # numpy stays unloaded until metrics are read

        rows = self._query(
            "SELECT iteration, split, metrics_json FROM metrics WHERE run_id=? ORDER BY iteration, split",
            (run_id,),
        )
        out: dict[int, dict[str, SplitMetrics]] = {}
        for it, split, blob in rows:
            out.setdefault(it, {})[split] = SplitMetrics.model_validate_json(blob)
        return out
