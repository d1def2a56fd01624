"""Start and resume audit runs: the loop graph compiled with a checkpointer.

The checkpoints live beside the run store: the project's ``.allure/checkpoints.db`` (SQLite) with
the SQLite store, and the same PostgreSQL database (LangGraph's ``PostgresSaver``, its own tables)
when the store is on PostgreSQL (``[store] url`` / ``ALLURE_STORE_URL``), so a run paused on one
machine resumes in a process on another.

Everything that can be wrong with the input (spec, dataset, gold check, evaluator settings)
is checked before the first write, so a bad input leaves the store and the memory untouched.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph.types import Command

from allure._fault import fault_point
from allure.config import AuditSpec, parse_spec
from allure.errors import StoreError, Terminated
from allure.graphs.graph import build_graph
from allure.graphs.prepare import prepare_audit
from allure.graphs.state import AuditContext
from allure.store import (
    RunLease,
    RunStore,
    advisory_key,
    as_lost,
    open_project_store,
    pg_connect,
    reconnect_s,
    remember_store_url,
)

CHECKPOINTS = Path(".allure") / "checkpoints.db"


@dataclass
class RunOutcome:
    """Where a run stands after :func:`start_run` or :func:`resume_run` returns."""

    run_id: str
    status: str
    """``paused`` (waiting at review) or ``done``."""
    run_dir: Path
    n_pending: int = 0
    stop_reason: str = ""
    report: dict[str, str] = field(default_factory=dict)
    """Paths of report.md, report.json, metrics.png once done."""
    interrupt: dict[str, Any] | None = None
    """The review payload when paused."""


@contextmanager
def _compiled(project_dir: Path, store: RunStore) -> Iterator[Any]:
    """The loop graph with the checkpointer beside ``store`` (SQLite file, or its PostgreSQL database)."""
    if store.url:
        with _postgres_saver(store) as saver:
            yield build_graph().compile(checkpointer=saver)
        return
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = project_dir / CHECKPOINTS
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        yield build_graph().compile(checkpointer=SqliteSaver(conn))
    finally:
        conn.close()


@contextmanager
def _postgres_saver(store: RunStore) -> Iterator[Any]:
    """LangGraph's ``PostgresSaver`` on the store's database, its tables created or migrated once
    (under an advisory lock: two processes starting at once do not both create them).

    The saver draws its connections from a small pool that checks a connection before handing it
    out, so a restarted server or a terminated backend costs a new connection, not the run (a pool
    that gets none within ``reconnect_s()`` ends the run as interrupted, see :func:`_drive`)."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import ConnectionPool

    from allure.urls import redact_urls

    assert store.url is not None
    options: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    try:
        conn = pg_connect(store.url, store.where, **options)
    except psycopg.Error as exc:
        raise StoreError(
            f"cannot connect to the PostgreSQL checkpoint store ({redact_urls(str(exc)).strip()})",
            where=store.where,
            fix="check that the server runs and the store URL is right",
        ) from exc
    with conn:
        key = advisory_key("checkpoints-setup")
        conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        try:
            PostgresSaver(conn).setup()
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
    pool: Any = ConnectionPool(
        store.url,
        min_size=1,
        max_size=2,
        kwargs=options,
        check=ConnectionPool.check_connection,
        timeout=reconnect_s(),
        name="allure-checkpoints",
        open=True,
    )
    try:
        yield PostgresSaver(pool)
    finally:
        pool.close()


def _checkpoint_fix(run_id: str) -> str:
    return (
        f"restore {CHECKPOINTS} from a backup and run `allure resume {run_id}` again, or start the audit "
        "anew with `allure audit` (stored evaluator calls are re-used, so nothing is paid twice)"
    )


def _checkpoint_errors() -> tuple[type[BaseException], ...]:
    """The errors of an unreadable checkpoint store (SQLite's, and psycopg's where installed)."""
    try:
        import psycopg
    except ImportError:  # pragma: no cover - psycopg is a dependency
        return (sqlite3.DatabaseError,)
    return (sqlite3.DatabaseError, psycopg.Error)


def _checked_snapshot(graph: Any, project: Path, run: Any, where: str = "") -> Any:
    """The run's last checkpoint, read before anything is written.

    Raises:
        StoreError: the checkpoint database is unreadable, or a run that got past its first
            checkpoint (paused, or evaluated at least once) has none: resuming it would
            silently restart it from scratch.
    """
    path = where or str(project / CHECKPOINTS)
    try:
        snapshot = graph.get_state({"configurable": {"thread_id": run.id}})
    except _checkpoint_errors() as exc:
        raise StoreError(
            f"the checkpoint of run {run.id} cannot be read ({exc})",
            where=str(path),
            fix=_checkpoint_fix(run.id),
        ) from exc
    if not snapshot.next and not snapshot.interrupts and (run.status == "paused" or run.iteration > 0):
        raise StoreError(
            f"run {run.id} is {run.status} at iteration {run.iteration} but its checkpoint is missing",
            where=str(path),
            fix=_checkpoint_fix(run.id),
        )
    return snapshot


def _check_evaluator(spec: AuditSpec) -> None:
    """What the backend kind needs in place before a run (an OpenAI evaluator without a local
    ``base_url``: its API key in the environment)."""
    from allure.evaluator import backend_kind

    backend_kind(spec.evaluator.kind).check(spec)


def _drive(graph: Any, inp: Any, run_id: str, ctx: AuditContext) -> RunOutcome:
    config = {"configurable": {"thread_id": run_id}}
    store = ctx.store
    store.update_run(run_id, status="running")
    try:
        # durability "sync": each step's checkpoint is written before the next step starts. LangGraph's
        # default ("async") writes it in the background, so a run killed early in its first pass (its
        # iteration already in the run store) could have no checkpoint yet and could not be resumed:
        # seen under load, the fault-point test's kill at `evaluate` then failed its resume (exit 2)
        result = graph.invoke(inp, config, context=ctx, durability="sync")
    except BaseException as exc:
        from allure.evaluator import redact

        secret = os.environ.get(ctx.spec.evaluator.api_key_env, "")
        lost = as_lost(exc, store.where) if store.url else None  # the PostgreSQL server went away
        try:
            store.update_run(
                run_id,
                status="interrupted" if isinstance(exc, KeyboardInterrupt | Terminated) or lost else "failed",
                info={"error": redact(f"{type(exc).__name__}: {exc}", [secret])},
            )
        except StoreError:
            if lost is None:
                raise  # (a server still away: the run reads interrupted once its lease is dead)
        if lost is not None and lost is not exc:
            raise lost from exc
        raise
    interrupts = result.get("__interrupt__") if isinstance(result, dict) else None
    if interrupts:
        payload = interrupts[0].value
        store.update_run(run_id, status="paused", run_dir=str(ctx.run_dir))
        return RunOutcome(
            run_id, "paused", ctx.run_dir, n_pending=int(payload.get("n_pending", 0)), interrupt=payload
        )
    run = store.get_run(run_id)
    report = {
        k: str(ctx.run_dir / f)
        for k, f in (("md", "report.md"), ("json", "report.json"), ("png", "metrics.png"))
    }
    return RunOutcome(
        run_id, run.status, ctx.run_dir, stop_reason=str(run.info.get("stop_reason", "")), report=report
    )


def _context(
    spec: AuditSpec,
    store: RunStore,
    project_dir: Path,
    run_id: str,
    progress: Callable[[str], None] | None,
    eval_progress: Callable[[int, int], None] | None,
    lease: RunLease,
) -> AuditContext:
    from allure.memory import EpisodicMemory

    memory = EpisodicMemory.open_at(
        spec.memory.location, project_dir=project_dir, collection=spec.memory.collection
    )
    return AuditContext(
        spec=spec,
        store=store,
        memory=memory,
        project_dir=project_dir,
        run_dir=project_dir / ".allure" / "runs" / run_id,
        progress=progress,
        eval_progress=eval_progress,
        lease_token=lease.token,
    )


def start_run(
    spec: AuditSpec,
    project_dir: str | Path = ".",
    *,
    progress: Callable[[str], None] | None = None,
    eval_progress: Callable[[int, int], None] | None = None,
) -> RunOutcome:
    """Run the ALLURE loop on ``spec`` until it stops or pauses for review."""
    from allure.evaluator import warm_http_client

    project = Path(project_dir).resolve()
    _check_evaluator(spec)
    warm_http_client(spec)  # loads while the run prepares
    prepared = prepare_audit(spec, project)
    store = open_project_store(project, url=spec.store.url)
    if store.url and store.url == spec.store.url.strip():  # later commands (resume, runs, review) find it
        remember_store_url(project, spec.store.url)
    lease: RunLease | None = None
    try:
        run_id = store.create_run(spec.model_dump(mode="json"))
        lease = store.acquire_lease(run_id, "audit")
        fault_point("load")
        prepared.store_in(store, run_id)
        if progress:
            progress(f"run {run_id}: {len(prepared.items)} items, {prepared.n_heldout} held out")
        ctx = _context(spec, store, project, run_id, progress, eval_progress, lease)
        ctx.remember_prepared(run_id, prepared)
        with _compiled(project, store) as graph:
            return _drive(graph, {"run_id": run_id, "iteration": 0, "history": []}, run_id, ctx)
    finally:
        if lease is not None:
            lease.release()
        store.close()


def resume_run(
    project_dir: str | Path,
    run_id: str,
    *,
    decisions_file: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
    eval_progress: Callable[[int, int], None] | None = None,
    wait: bool = False,
) -> RunOutcome:
    """Continue a run: one paused at review (with decisions from the store and ``decisions_file``),
    or one that was killed or failed (from its last checkpoint; stored calls are not sent again).

    The run's lease is taken first (one writer per run): another live process writing the run is
    an error, or, with ``wait``, waited for.

    Raises:
        RunBusyError: another process writes the run (and ``wait`` is False).
        StoreError: the run is done, or its checkpoint is missing or unreadable (nothing is changed).
    """
    from allure.decisions import import_decisions

    project = Path(project_dir).resolve()
    store = open_project_store(project, create=False)
    lease: RunLease | None = None
    try:
        first = store.get_run(run_id)  # an unknown run is an error before any lease is taken
        if first.info.get("kind") == "study":
            raise StoreError(
                f"{run_id} is a study, not an audit run: `allure resume` takes the id of a run "
                "(`allure runs` lists them)",
                where=f"argument RUN_ID {run_id}",
                fix="continue a study by running the same `allure study ...` command again (with "
                f"--name {run_id}): its stored calls are reused and nothing is paid twice",
            )
        lease = store.acquire_lease(run_id, "resume", wait=wait)
        run = store.get_run(run_id)
        if run.status == "done":
            raise StoreError(
                f"run {run_id} is already done", where=store.where, fix="start a new run with `allure audit`"
            )
        spec = parse_spec(_with_its_rule(run.spec), source=f"run {run_id} spec", strict=False)
        from allure.evaluator import warm_http_client

        warm_http_client(spec)  # loads while the run's checkpoint is read
        if (
            not store.url
            and not (project / CHECKPOINTS).is_file()
            and (run.status == "paused" or run.iteration > 0)
        ):
            raise StoreError(
                f"run {run_id} is {run.status} at iteration {run.iteration} but its checkpoint is missing "
                f"({CHECKPOINTS} does not exist)",
                where=str(project / CHECKPOINTS),
                fix=_checkpoint_fix(run_id),
            )
        ctx = _context(spec, store, project, run_id, progress, eval_progress, lease)
        with _compiled(project, store) as graph:
            snapshot = _checked_snapshot(graph, project, run, store.where if store.url else "")
            if decisions_file is not None:  # only once the checkpoint is known to be good
                n = import_decisions(store, run_id, decisions_file)
                if progress:
                    progress(f"imported {n} decisions from {decisions_file}")
            if snapshot.interrupts:
                inp: Any = Command(resume={"decisions": []})
            elif snapshot.next:
                inp = None
            else:  # killed before the first checkpoint
                inp = {"run_id": run_id, "iteration": 0, "history": []}
            return _drive(graph, inp, run_id, ctx)
    finally:
        if lease is not None:
            lease.release()
        store.close()


def _with_its_rule(stored: dict[str, Any]) -> dict[str, Any]:
    """A stored spec as its run started: every stored spec is a full dump, so one whose ``[loop]`` has
    no ``folds`` was stored before cross-fitting existed and resumes under the dev-split rule it
    started with (``folds = 0``), not under today's default."""
    loop = stored.get("loop")
    if isinstance(loop, dict) and "folds" not in loop:
        return {**stored, "loop": {**loop, "folds": 0}}
    return stored
