"""The review app: approve, reject or correct the pending ICL examples of a paused run.

Build it with :func:`create_app`; the CLI (``allure review``) and the tests both do.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, TypeVar

from rich.text import Text
from textual import events, on
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Header, Static

from allure.decisions import default_reviewer
from allure.errors import AllureError
from allure.labels import Label
from allure.models import IclExample, ReviewDecisionKind
from allure.store import ReviewClaims, RunStore
from allure.tui._keys import HELP, REVIEW_ACTIONS, REVIEW_BINDINGS
from allure.tui._queue import QueueFilter, ReviewQueue, review_round
from allure.tui._similar import SimilarFn, SimilarLookup, SimilarRows
from allure.tui._text import visible
from allure.tui.screens.modals import (
    CommentInput,
    EditDialog,
    FilterPicker,
    HelpScreen,
    ModePicker,
    ResumeOffer,
)
from allure.tui.screens.resume import ResumeFn, ResumeScreen
from allure.tui.widgets.candidate_view import CandidateView
from allure.tui.widgets.queue_table import QUEUE_HEADER, QueueTable

_V = TypeVar("_V")
"""What an edit dialog returns (a failure mode, a comment)."""


class ReviewApp(App[None]):
    """The auditor's terminal UI over one run's review round."""

    CSS_PATH = "review.tcss"
    TITLE = "allure review"
    BINDINGS = REVIEW_BINDINGS

    def __init__(
        self,
        queue: ReviewQueue,
        *,
        similar: SimilarFn | None = None,
        resume: ResumeFn | None = None,
        project_dir: Path | None = None,
    ) -> None:
        super().__init__()
        self.queue = queue
        self.store = queue.store
        self.run_id = queue.run_id
        self._similar = SimilarLookup(similar, self.call_from_thread)
        self._resume = resume
        self.project_dir = project_dir or self.store.path.parent.parent
        self._current: str | None = None
        self.sub_title = visible(self.run_id)
        self.last_input_at: float | None = None
        """When the reviewer last pressed a key or used the mouse (``time.monotonic``; ``None``: not
        yet); a served tab idle too long is ended (:mod:`allure.cli._served_app`)."""

    @property
    def busy(self) -> bool:
        """Whether the loop is being resumed from this app (a served tab is not idle meanwhile)."""
        return any(w.group == "resume" and not w.is_finished for w in list(self.workers))

    async def on_event(self, event: events.Event) -> None:
        """Note the time of every key press and mouse event, then handle the event as usual."""
        if isinstance(event, events.InputEvent):
            self.last_input_at = time.monotonic()
        await super().on_event(event)

    def compose(self) -> ComposeResult:
        """Header, progress line, queue beside the detail pane, footer."""
        yield Header(icon="⚖")
        yield Static(id="progress")
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield Static(Text(QUEUE_HEADER, style="bold"), id="queue-head")
                yield QueueTable(id="queue")
            yield CandidateView(id="view")
        yield Footer()

    def on_mount(self) -> None:
        """Fill the queue and go to the first pending candidate."""
        self._reload_table()
        table = self.query_one(QueueTable)
        table.focus()
        first = self.queue.next_pending(None, self.queue.visible_ids())
        if first is not None:
            table.select(first)
        self._show(first or table.current_id())
        if self.queue.pending == 0:
            self.call_after_refresh(self._offer_resume)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Review keys act only on the queue screen (not under the resume screen)."""
        return not (action in REVIEW_ACTIONS and isinstance(self.screen, ResumeScreen))

    # -- drawing -----------------------------------------------------------------------------------
    def _reload_table(self) -> None:
        ids = self.queue.visible_ids()
        rows = []
        for cid in ids:
            shown, edited = self.queue.shown(cid)
            rows.append((self.queue.position[cid] + 1, shown, edited))
        self.query_one(QueueTable).load(rows)
        self._update_progress()

    def _update_progress(self) -> None:
        q = self.queue
        text = Text.assemble(
            ("decided ", ""),
            (f"{q.decided}/{len(q)}", "bold"),
            (f"   pending {q.pending}", "yellow"),
            ("   reviewer ", ""),
            (visible(q.reviewer), "bold"),
            ("   labels ", ""),
            ("/".join(str(v) for v in q.label_set), "bold"),
            end="",
        )
        if q.filter is not None:
            text.append(f"   filter {q.filter.field}=", style="cyan")
            text.append(visible(q.filter.value), style="bold cyan")
            text.append(f" ({len(q.visible_ids())})", style="cyan")
        self.query_one("#progress", Static).update(text)

    def _show(self, candidate_id: str | None) -> None:
        view = self.query_one(CandidateView)
        self._current = candidate_id
        if candidate_id is None:
            view.show_empty("No candidate to show (the filter may hide them all: press f).")
            return
        shown, edited = self.queue.shown(candidate_id)
        view.show(
            shown,
            edited=edited,
            number=self.queue.position[candidate_id] + 1,
            total=len(self.queue),
            proposed=self.queue.get(candidate_id).correct_label,
        )
        self._refresh_similar(shown)

    def _refresh_row(self, candidate_id: str) -> None:
        shown, edited = self.queue.shown(candidate_id)
        self.query_one(QueueTable).refresh_candidate(shown, edited)
        self._update_progress()

    # -- similar examples ------------------------------------------------------------------------
    @property
    def similar_pending(self) -> int:
        """How many similar-example lookups are still running."""
        return len(self._similar.busy)

    def _refresh_similar(self, example: IclExample) -> None:
        self.query_one(CandidateView).show_similar(self._similar.request(example, self._similar_ready))

    def _similar_ready(self, candidate_id: str, result: SimilarRows | str) -> None:
        if candidate_id == self._current:
            self.query_one(CandidateView).show_similar(result)

    # -- events and actions ------------------------------------------------------------------------
    @on(QueueTable.Highlighted, "#queue")
    def _highlighted(self, event: QueueTable.Highlighted) -> None:
        if event.candidate_id != self._current:
            self._show(event.candidate_id)

    def _guard(self, fn: Callable[[str], object]) -> bool:
        """Run ``fn(current id)``, turning an :class:`AllureError` into a notification."""
        if self._current is None:
            self.bell()
            return False
        try:
            fn(self._current)
        except AllureError as exc:
            self.notify(exc.render(), severity="error", markup=False)
            return False
        return True

    def action_decide(self, kind: ReviewDecisionKind) -> None:
        """Approve or reject the current candidate, then go to the next pending one."""
        cid = self._current
        if cid is None or not self._guard(lambda c: self.queue.decide(c, kind)):
            return
        self._refresh_row(cid)
        nxt = self.queue.next_pending(cid, self.queue.visible_ids())
        table = self.query_one(QueueTable)
        if nxt is not None and nxt != cid:
            table.select(nxt)
        self._show(nxt or cid)
        if self.queue.pending == 0:
            self._offer_resume()

    def _edited(self) -> None:
        if self._current is not None:
            self._refresh_row(self._current)
            self._show(self._current)

    def action_edit_label(self) -> None:
        """Cycle the correct label within the run's label set."""
        if self._guard(self.queue.cycle_label):
            self._edited()

    def _edit_in_dialog(
        self, dialog: Callable[[IclExample], EditDialog[_V]], apply: Callable[[str, _V], None]
    ) -> None:
        """Open ``dialog`` on the current candidate as shown; ``apply(id, value)`` to what it returns
        (nothing when it is cancelled)."""
        if self._current is None:
            return
        cid = self._current

        def done(value: _V | None) -> None:
            if value is not None and self._guard(lambda c: apply(cid, value)):
                self._edited()

        self.push_screen(dialog(self.queue.shown(cid)[0]), done)

    def action_pick_mode(self) -> None:
        """Choose the failure mode in a dialog."""
        self._edit_in_dialog(lambda ex: ModePicker(ex.failure_mode), self.queue.set_failure_mode)

    def action_comment(self) -> None:
        """Write a comment in a dialog."""
        self._edit_in_dialog(lambda ex: CommentInput(ex.comment), self.queue.set_comment)

    def action_undo(self) -> None:
        """Undo this session's last decision and go back to that candidate."""
        cid = self.queue.undo()
        if cid is None:
            self.notify("nothing to undo in this session", severity="warning")
            return
        self._refresh_row(cid)
        self.query_one(QueueTable).select(cid)
        self._show(cid)

    def action_move(self, step: int) -> None:
        """Go to the next (``1``) or previous (``-1``) candidate."""
        self.query_one(QueueTable).action_cursor(step)

    def action_toggle_task(self) -> None:
        """Show or hide the task."""
        self.query_one(CandidateView).toggle_task()

    def action_scroll_response(self, lines: int) -> None:
        """Scroll the response."""
        self.query_one(CandidateView).scroll_response(lines)

    def action_filter(self) -> None:
        """Filter the queue in a dialog."""

        def chosen(value: QueueFilter | Literal["clear"] | None) -> None:
            if value is None:
                return
            self.queue.filter = None if value == "clear" else value
            keep = self._current
            self._reload_table()
            ids = self.queue.visible_ids()
            target = keep if keep in ids else self.queue.next_pending(None, ids) or (ids[0] if ids else None)
            if target is not None:
                self.query_one(QueueTable).select(target)
            self._show(target)

        self.push_screen(FilterPicker(self.queue.filter_values()), chosen)

    def action_help(self) -> None:
        """Show the key bindings."""
        self.push_screen(HelpScreen(HELP))

    # -- resuming ----------------------------------------------------------------------------------
    def _offer_resume(self) -> None:
        """This reviewer's queue is decided: claim more, else offer to resume when nothing is pending."""
        if self.queue.more():
            self._reload_table()
            nxt = self.queue.next_pending(self._current, self.queue.visible_ids())
            if nxt is not None:
                self.query_one(QueueTable).select(nxt)
                self._show(nxt)
            return
        if self.store.get_run(self.run_id).status != "paused":
            return
        counts = self.store.candidate_counts(self.run_id)
        if counts["pending"]:
            self.notify(
                f"Nothing left for {self.queue.reviewer}: {counts['pending']} pending with other reviewers "
                "or waiting for a second review (see `allure review RUN --agreement`); q quits.",
                markup=False,
            )
            return
        self.push_screen(ResumeOffer(counts["approved"], counts["rejected"]), self._answered)

    def _answered(self, resume: bool | None) -> None:
        if not resume:
            self.notify("Resume later with `allure resume RUN`; q quits.", markup=False)
            return
        screen = ResumeScreen(self.store, self.run_id, project_dir=self.project_dir, resume=self._resume)
        self.push_screen(screen, lambda _: self._after_resume())

    def _after_resume(self) -> None:
        """Back from the resume screen: reload the queue (the run may have paused again)."""
        old = self.queue
        self.queue = ReviewQueue(
            self.store,
            self.run_id,
            old.claims.opening() if old.claims else review_round(self.store, self.run_id),
            reviewer=old.reviewer,
            label_set=old.label_set,
            claims=old.claims,
        )
        self._similar.clear()
        self._current = None
        self.on_mount()


def create_app(
    store: RunStore,
    run_id: str,
    *,
    similar: SimilarFn | None = None,
    reviewer: str | None = None,
    resume: ResumeFn | None = None,
    project_dir: Path | None = None,
    label_set: Sequence[Label] | None = None,
    claims: ReviewClaims | None = None,
) -> ReviewApp:
    """Build the review app over the current review round of ``run_id``.

    Args:
        store: The project's run store.
        run_id: The run to review (raises :class:`~allure.errors.StoreError` if unknown).
        similar: Finds the memory examples most similar to a candidate; ``None`` hides them.
        reviewer: The name recorded with each decision (default: ``$ALLURE_REVIEWER``, else the OS user).
        resume: Continues the loop once every candidate is decided (default:
            ``allure.graphs.runner.resume_run``, imported when needed).
        project_dir: The project directory handed to ``resume`` (default: the store's).
        label_set: The labels the correct label cycles through (default: the run spec's
            ``label_set``, else ``[0, 1]``).
        claims: A reviewer session (several reviewers on one run): the queue holds the candidates
            it claims, a batch at a time, and decisions carry its reviewer's name; ``None``: the
            whole review round.

    Returns:
        The app, ready for ``run()`` or ``run_test()``.
    """
    run = store.get_run(run_id)
    labels = list(label_set if label_set is not None else run.spec.get("label_set") or [0, 1])
    queue = ReviewQueue(
        store,
        run_id,
        claims.opening() if claims else review_round(store, run_id),
        reviewer=claims.reviewer if claims else default_reviewer(reviewer),
        label_set=labels,
        claims=claims,
    )
    return ReviewApp(queue, similar=similar, resume=resume, project_dir=project_dir)
