"""``allure review``: approve, reject or correct a paused run's candidate ICL examples."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path

import typer

from allure.cli._common import echo, project_folder
from allure.cli._serve_review import serve_review, served_session
from allure.errors import ReviewError
from allure.models import IclExample
from allure.store import RunRecord, RunStore, open_project_store


def _pick_run(store: RunStore, run: str | None) -> RunRecord:
    if run is not None:
        return store.get_run(run)
    paused = store.latest_run(status="paused")
    if paused is None:
        raise ReviewError(
            "no run is paused at review",
            where=str(store.path),
            fix="start one with `allure audit SPEC.toml`, or name a run: `allure review RUN`",
        )
    return paused


def memory_similar(
    location: str | None, collection: str, project: Path, k: int = 3
) -> Callable[[IclExample], list[tuple[IclExample, float]]]:
    """A ``similar`` callable for the review app over the run's memory, opened on first use.

    The memory (Chroma and the embedding model) is imported and opened lazily, in the
    app's worker thread, so the review screen opens at once.
    """
    lock = threading.Lock()
    opened: list[object] = []

    def similar(example: IclExample) -> list[tuple[IclExample, float]]:
        from allure.memory import EpisodicMemory

        with lock:
            if not opened:
                opened.append(
                    EpisodicMemory.open_at(location, project_dir=project, collection=collection, create=False)
                )
            memory = opened[0]
            assert isinstance(memory, EpisodicMemory)
            return memory.similar(example.response, k=k)

    return similar


def review(
    ctx: typer.Context,
    run: str | None = typer.Argument(
        None, help="The run to review (default: the newest run paused at review)."
    ),
    project: Path = typer.Option(
        Path("."), "--project", "-p", help="The project directory holding .allure/.", callback=project_folder
    ),
    export: Path | None = typer.Option(
        None, "--export", help="Write the pending candidates to this JSONL file instead of opening the UI."
    ),
    import_: Path | None = typer.Option(
        None, "--import", help="Record the decisions in this JSONL file instead of opening the UI."
    ),
    reviewer: str | None = typer.Option(
        None,
        "--reviewer",
        help="Name recorded with each decision (default: $ALLURE_REVIEWER, else the OS user).",
    ),
    wait: bool = typer.Option(
        False, "--wait", help="With --import: wait while another process writes the run, instead of exit 2."
    ),
    serve: bool = typer.Option(
        False, "--serve", help="Serve the review app as a web page (one app per browser tab) until Ctrl+C."
    ),
    host: str = typer.Option("127.0.0.1", "--host", help="With --serve: the address to listen on."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="With --serve: the port (0: any free)."),
    allow_remote: bool = typer.Option(
        False, "--allow-remote", help="With --serve: allow a non-loopback --host (no authentication!)."
    ),
) -> None:
    """Review the pending ICL examples of a run paused at review, then resume it."""
    from allure.decisions import export_pending, import_review_decisions

    if export is not None and import_ is not None:
        raise ReviewError("--export and --import cannot be used together", fix="run them one after the other")
    if serve and (export is not None or import_ is not None):
        raise ReviewError("--serve cannot be used with --export or --import", fix="run them one at a time")
    store = open_project_store(project, create=False)
    try:
        record = _pick_run(store, run)
        if export is not None:
            n = export_pending(store, record.id, export)
            echo(f"exported {n} pending candidates of {record.id} to {export}")
            return
        if import_ is not None:
            n = import_review_decisions(store, record.id, import_, reviewer=reviewer, wait=wait)
            left = store.candidate_counts(record.id)["pending"]
            echo(f"recorded {n} decisions for {record.id}; {left} pending")
            if not left:
                echo(f"continue the loop with: allure resume {record.id}")
            return
        if serve:
            _check_reviewable(store, record)
            store.close()
            serve_review(ctx, record.id, project, host, port, allow_remote)
            return
        _open_ui(store, record, project, reviewer)
    finally:
        store.close()


def _check_reviewable(store: RunStore, record: RunRecord) -> None:
    if store.candidate_counts(record.id)["pending"] == 0 and record.status != "paused":
        raise ReviewError(
            f"run {record.id} has no pending candidates (status {record.status})",
            where=str(store.path),
            fix="review a run paused at review; `allure review` picks the newest one",
        )


def _open_ui(store: RunStore, record: RunRecord, project: Path, reviewer: str | None) -> None:
    _check_reviewable(store, record)
    if not (sys.stdin.isatty() and sys.stdout.isatty()) and not served_session():
        raise ReviewError(
            "`allure review` needs a terminal",
            fix=f"without one: `allure review {record.id} --export pending.jsonl`, edit, then `--import`",
        )
    from allure.config import MemorySpec
    from allure.tui import create_app

    memory = MemorySpec.model_validate(record.spec.get("memory") or {})
    app = create_app(
        store,
        record.id,
        similar=memory_similar(memory.location, memory.collection, project.resolve()),
        reviewer=reviewer,
        project_dir=project.resolve(),
    )
    with store.acquire_lease(record.id, "review"):  # one writer: no resume or import meanwhile
        app.run()


def register(app: typer.Typer) -> None:
    """Add ``allure review`` to the CLI."""
    app.command("review")(review)
