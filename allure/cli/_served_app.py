"""A browser tab's review app (``allure review --serve``) that ends when its tab is gone.

textual-serve runs one app process per tab and talks to it over the process's stdin and stdout.
When the tab goes away abruptly (a killed browser, a closed laptop lid, a dropped network), the
server may stop reading the app's output without ending the app: the app then blocks writing to a
full pipe, or spins redrawing into a closed one, and its claims' heartbeat keeps the candidates
from every other reviewer. :class:`SessionGuard` is a thread beside the app that ends it when

- the server closed its side of the pipes (stdin hung up, or stdout has no reader);
- the app's event loop stopped answering for :data:`STALL_S` (blocked on a client that reads nothing);
- nobody pressed a key or clicked for the idle limit (``allure review --serve --idle-timeout``),
  unless the app is busy (resuming the loop);
- SIGTERM arrived (blocked in every thread from the process's first line, :mod:`allure.cli.main`,
  and taken by the guard, so it works whatever the app's main thread is doing; a thread started
  before the block, numpy's BLAS pool among them, would take it into Textual's own hook, which asks
  an app that cannot answer to exit and never forces it).

It asks the app to exit; an app that has not ended :data:`GRACE_S` later has its claims released
on a connection of their own and the process ends at once (``os._exit``): the claims are free
either way.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.app import App

    from allure.store import ReviewClaims

IDLE_TIMEOUT_S = 1800.0
"""Default idle limit of a served review tab: no key press or click for this long ends it."""

STALL_S = 60.0
"""The app's event loop not answering for this long: it is stuck on a client that reads nothing."""

GRACE_S = 5.0
"""How long an app asked to exit may take before its claims are released and the process ends."""

POLL_S = 0.5
"""How often the guard looks."""


def pipes_lost(stdin_fd: int = 0, stdout_fd: int = 1) -> str | None:
    """Why the server's pipes are gone (stdin hung up, stdout without a reader), or ``None``."""
    poller = select.poll()
    poller.register(stdin_fd, select.POLLIN | select.POLLHUP)
    poller.register(stdout_fd, 0)  # POLLERR and POLLHUP are always reported
    for fd, event in poller.poll(0):
        if fd == stdout_fd and event & (select.POLLERR | select.POLLHUP):
            return "the server no longer reads the app's output"
        if fd == stdin_fd and event & select.POLLHUP and not event & select.POLLIN:
            return "the server closed the app's input"
    return None


def block_sigterm() -> None:
    """Block SIGTERM in this thread and every thread it starts from now on (they inherit it), so that
    only the guard takes it (:func:`signal.sigtimedwait`). Call it before any thread of the session
    starts (the claims' heartbeat included): a thread that does not block it could take the signal."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})


class SessionGuard:
    """Ends a served review app whose tab is gone (see the module's docstring); a context manager
    around ``app.run()`` in the main thread."""

    def __init__(self, app: App[Any], claims: ReviewClaims, idle_s: float = IDLE_TIMEOUT_S) -> None:
        self.app = app
        self.claims = claims
        self.idle_s = idle_s
        self.why: str | None = None
        """Why the guard ended the session (``None``: it did not)."""
        self._done = threading.Event()
        self._started = self._answered = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="allure-served-guard", daemon=True)

    def __enter__(self) -> SessionGuard:
        block_sigterm()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(timeout=GRACE_S + 5)

    def _idle_for(self) -> float:
        last = getattr(self.app, "last_input_at", None)
        return time.monotonic() - (last if last is not None else self._started)

    def _answer(self) -> None:
        self._answered = time.monotonic()

    def _reason(self) -> str | None:
        if signal.sigtimedwait({signal.SIGTERM}, POLL_S) is not None:
            return "SIGTERM"
        if self._done.is_set():
            return None
        lost = pipes_lost()
        if lost:
            return lost
        if self._idle_for() > self.idle_s and not getattr(self.app, "busy", False):
            return f"no key press or click for {self.idle_s:g} s (--idle-timeout)"
        if self.app.is_running and time.monotonic() - self._answered > STALL_S:
            return f"the app did not answer for {STALL_S:g} s"
        return None

    def _run(self) -> None:
        from textual import events
        from textual.messages import ExitApp

        running = False
        while not self._done.is_set():
            if not running and self.app.is_running:  # the stall clock starts with the app
                running, self._answered = True, time.monotonic()
            why = self._reason()
            if why is None:
                if running:
                    self.app.post_message(events.Callback(callback=self._answer))
                continue
            self.why = why
            self.app.post_message(ExitApp())
            if self._done.wait(GRACE_S):
                return
            self._force()

    def _force(self) -> None:
        """Release the claims on a connection of their own and end the process now."""
        try:
            n = self.claims.abandon()
            sys.stderr.write(f"review session ended ({self.why}): {n} candidates released\n")
        finally:
            sys.stderr.flush()
            os._exit(0)
