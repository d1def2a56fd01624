"""``allure review``: approve, reject or correct a paused run's candidate ICL examples."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path

import typer

from allure.cli._common import echo, project_folder
from allure.cli._serve_review import serve_review, served_session
from allure.cli._served_app import IDLE_TIMEOUT_S, SessionGuard, block_sigterm
from allure.errors import ReviewError, RunBusyError
from allure.models import IclExample
from allure.store import CLAIM_BATCH, ReviewClaims, RunRecord, RunStore, open_project_store


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
    double_review: float | None = typer.Option(
        None,
        "--double-review",
        metavar="SHARE",
        help="Send this share (0..1) of the pending candidates to two different reviewers; such a candidate "
        "is decided when both agree (a disagreement stays pending for adjudication).",
    ),
    agreement: bool = typer.Option(
        False, "--agreement", help="Print Cohen's kappa of the double review and list the disagreements."
    ),
    batch: int = typer.Option(
        CLAIM_BATCH,
        "--batch",
        min=1,
        help="Candidates the app claims at a time (other reviewers get the rest).",
    ),
    idle_timeout: float = typer.Option(
        IDLE_TIMEOUT_S,
        "--idle-timeout",
        min=1,
        metavar="SECONDS",
        help="With --serve: a browser tab with no key press or click for this long releases its "
        "candidates and closes.",
    ),
) -> None:
    """Review the pending ICL examples of a run paused at review, then resume it.

    Several reviewers can review one run at once: each gets candidates no other reviewer holds.
    """
    from allure.decisions import export_pending, import_review_decisions

    if export is not None and import_ is not None:
        raise ReviewError("--export and --import cannot be used together", fix="run them one after the other")
    if serve and (export is not None or import_ is not None):
        raise ReviewError("--serve cannot be used with --export or --import", fix="run them one at a time")
    store = open_project_store(project, create=False)
    try:
        record = _pick_run(store, run)
        if agreement:
            from allure.decisions import render_agreement, review_agreement

            echo(render_agreement(record.id, review_agreement(store, record.id)))
            return
        if double_review is not None:
            n = store.mark_double_review(record.id, double_review)
            echo(f"{n} candidates of {record.id} go to two reviewers")
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
        _open_ui(store, record, project, reviewer, batch, idle_timeout)
    finally:
        store.close()


def _check_reviewable(store: RunStore, record: RunRecord) -> None:
    if store.candidate_counts(record.id)["pending"] == 0 and record.status != "paused":
        raise ReviewError(
            f"run {record.id} has no pending candidates (status {record.status})",
            where=str(store.path),
            fix="review a run paused at review; `allure review` picks the newest one",
        )


def _open_ui(
    store: RunStore,
    record: RunRecord,
    project: Path,
    reviewer: str | None,
    batch: int = CLAIM_BATCH,
    idle_timeout: float = IDLE_TIMEOUT_S,
) -> None:
    if served_session():
        block_sigterm()  # before any thread starts (imports start some): only the session's guard takes it
    _check_reviewable(store, record)
    holder = store.lease_holder(record.id)
    if holder is not None and holder.alive():  # an audit, resume or import writes the run
        raise RunBusyError(
            f"run {record.id} is in use by {holder.describe()}",
            where=store.where,
            fix="wait until it ends (reviewers do not block each other: each claims its own candidates)",
        )
    if not (sys.stdin.isatty() and sys.stdout.isatty()) and not served_session():
        raise ReviewError(
            "`allure review` needs a terminal",
            fix=f"without one: `allure review {record.id} --export pending.jsonl`, edit, then `--import`",
        )
    from allure.config import MemorySpec
    from allure.decisions import default_reviewer
    from allure.tui import create_app

    memory = MemorySpec.model_validate(record.spec.get("memory") or {})
    # each reviewer claims the candidates it shows, a batch at a time; quitting releases them
    with ReviewClaims(store, record.id, default_reviewer(reviewer), batch=batch) as claims:
        app = create_app(
            store,
            record.id,
            similar=memory_similar(memory.location, memory.collection, project.resolve()),
            project_dir=project.resolve(),
            claims=claims,
        )
        if not served_session():
            app.run()
            return
        with SessionGuard(app, claims, idle_timeout) as guard:  # a tab gone: its claims freed, the app ended
            app.run()
        if guard.why:
            echo(f"review session ended ({guard.why}); its candidates were released", err=True)


def register(app: typer.Typer) -> None:
    """Add ``allure review`` to the CLI."""
    app.command("review")(review)
