"""A browser tab's review app (``allure review --serve``) whose tab is gone ends and frees its claims:
the server closed its pipes, SIGTERM while nobody reads its output, the idle limit; and a real
headless Chromium killed mid-session (its tab's app gone, another browser then gets the candidates).

The app process is started as textual-serve starts it (Textual's web driver, stdin and stdout
pipes), so each way a tab can vanish is made exactly; the last test goes through the real server.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from allure.cli._serve_review import WEB_DRIVER
from allure.store import RunStore, project_db_path
from tests.cli_run import cli_argv, cli_env
from tests.conftest import wait_for
from tests.tui.review_helpers import make_run
from tests.tui.serve_helpers import Serving, free_port, serving

pytestmark = pytest.mark.integration

RUN = "run-review"
BOUND_S = 30.0
"""How soon a vanished tab's app must be gone and its claims free."""


def claims(project: Path) -> dict[str, str]:
    store = RunStore(project_db_path(project), create=False)
    try:
        return store.candidate_claims(RUN)
    finally:
        store.close()


@contextmanager
def served_app(project: Path, *args: str) -> Iterator[subprocess.Popen[bytes]]:
    """The review app of one browser tab, started as textual-serve starts it; it has drawn and
    claimed its candidates when this yields. Killed on the way out if still there."""
    env = cli_env({"TEXTUAL_DRIVER": WEB_DRIVER, "COLUMNS": "120", "ROWS": "40", "ALLURE_REVIEWER": "tab"})
    argv = cli_argv("review", RUN, "--project", str(project), *args)
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    try:
        assert proc.stdout is not None
        for _ in range(10):
            if proc.stdout.readline() == b"__GANGLION__\n":
                break
        else:
            raise AssertionError(
                f"the app did not start: {proc.stderr.read().decode() if proc.stderr else ''}"
            )
        wait_for(lambda: len(claims(project)) == 2, "the tab's claims")
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def drain(stream: object) -> None:
    """Read ``stream`` to its end in a thread (a server that keeps up with the app's output)."""
    threading.Thread(target=lambda: stream.read(), daemon=True).start()  # type: ignore[attr-defined]


def test_an_app_whose_server_closed_its_pipes_ends_and_frees_its_claims(tmp_path: Path) -> None:
    make_run(tmp_path, 2).close()
    with served_app(tmp_path) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()
        proc.stdout.close()  # the server went away without a word
        proc.wait(BOUND_S)
        assert claims(tmp_path) == {}


def test_sigterm_ends_an_app_nobody_reads_and_frees_its_claims(tmp_path: Path) -> None:
    make_run(tmp_path, 2).close()
    with served_app(tmp_path) as proc:
        assert proc.stdin is not None
        # the server stopped reading (its client is gone) but holds the pipes: the app's writes
        # block once the pipe is full; a resize makes it redraw everything
        for size in range(60, 200, 7):
            payload = f'{{"type": "resize", "width": {size}, "height": {size // 2}}}'.encode()
            proc.stdin.write(b"M" + len(payload).to_bytes(4, "big") + payload)
            proc.stdin.flush()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(BOUND_S) == 0
        assert claims(tmp_path) == {}


def _threads_taking_sigterm(pid: int) -> list[str]:
    """The threads of ``pid`` that do not block SIGTERM (the guard's, while it waits for it)."""
    bit = 1 << (signal.SIGTERM - 1)
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        blocked = next(
            line.split()[1]
            for line in (task / "status").read_text().splitlines()
            if line.startswith("SigBlk")
        )
        if not int(blocked, 16) & bit:
            out.append(f"{task.name} ({(task / 'comm').read_text().strip()})")
    return out


def test_sigterm_is_blocked_in_every_thread_but_the_guards(tmp_path: Path) -> None:
    """A thread started before the block (numpy's BLAS pool) would take SIGTERM into Textual's own
    hook, which asks an app stuck on a full pipe to exit and never forces it."""
    make_run(tmp_path, 2).close()
    with served_app(tmp_path) as proc:
        assert len(_threads_taking_sigterm(proc.pid)) <= 1, _threads_taking_sigterm(proc.pid)


def test_an_idle_tab_ends_after_the_idle_limit_and_frees_its_claims(tmp_path: Path) -> None:
    make_run(tmp_path, 2).close()
    with served_app(tmp_path, "--idle-timeout", "3") as proc:
        drain(proc.stdout)
        started = time.monotonic()
        assert proc.wait(BOUND_S) == 0
        assert time.monotonic() - started >= 2.0  # not before its limit (3 s from the app's start)
        assert claims(tmp_path) == {}
        assert proc.stderr is not None and b"--idle-timeout" in proc.stderr.read()


def _session_apps(server: Serving) -> list[int]:
    """The review app processes the server started (its process group, but the server and shells)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == server.proc.pid:
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        pgid = int(stat.rsplit(")", 1)[1].split()[2])
        if pgid == server.proc.pid and b"allure.cli.main" in cmdline and b"--serve" not in cmdline:
            found.append(int(entry.name))
    return found


@contextmanager
def chromium_at(url: str) -> Iterator[tuple[subprocess.Popen[bytes], object]]:
    """A headless system Chromium, started as its own process group, with a page open at ``url``."""
    from playwright.sync_api import sync_playwright

    from tests.tui.test_browser_review import chromium

    port = free_port()
    profile = tempfile.mkdtemp(prefix="allure-chromium-")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
    proc = subprocess.Popen(
        [chromium(), *flags, f"--remote-debugging-port={port}", f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        with sync_playwright() as pw:
            browser = None
            deadline = time.monotonic() + 60
            while browser is None:
                try:
                    browser = pw.chromium.connect_over_cdp(f"http://127.0.0.1:{port}")
                except Exception:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise
                    time.sleep(0.2)
            page = browser.contexts[0].new_page()
            page.goto(url)
            page.wait_for_selector("body.-first-byte", state="attached", timeout=60_000)
            yield proc, page
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


@pytest.mark.browser
def test_a_killed_browser_frees_its_tab_and_another_browser_gets_the_candidates(tmp_path: Path) -> None:
    from tests.tui.test_browser_review import drawn_screen

    make_run(tmp_path, 3).close()
    with serving(tmp_path, RUN, "--port", "0", "--reviewer", "ann") as server:
        with chromium_at(server.url) as (browser, page):
            wait_for(lambda: len(claims(tmp_path)) == 3, "the first tab's claims")
            drawn_screen(page)
            page.click("#terminal")
            page.keyboard.press("a")  # mid-session: one decision made
            wait_for(lambda: len(claims(tmp_path)) == 2, "the decision in the store")
            assert len(_session_apps(server)) == 1
            os.killpg(browser.pid, signal.SIGKILL)  # the browser dies abruptly, every process of it
            killed = time.monotonic()
            wait_for(lambda: not _session_apps(server) and not claims(tmp_path), "the tab's end", BOUND_S)
            assert time.monotonic() - killed < BOUND_S
        store = RunStore(project_db_path(tmp_path), create=False)
        try:
            decided = [(c.decision, c.reviewer) for c in store.candidates(RUN) if c.decision is not None]
            assert decided == [("approve", "ann")]  # made before the browser died: kept
            pending = {c.id for c in store.candidates(RUN) if c.decision is None}
        finally:
            store.close()
        assert len(pending) == 2
        with chromium_at(server.url):
            wait_for(lambda: set(claims(tmp_path)) == pending, "the second browser's claims")
            assert len(_session_apps(server)) == 1
