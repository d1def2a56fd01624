"""``allure review --serve`` in a real headless Chromium: the page loads from the server alone (no
internet), the review app draws, a key press records a decision in the run store.

Needs Chromium (Debian: ``apt-get install -y chromium``; ``.ci/run`` installs it). Where it is
missing the test fails: it is never skipped. Playwright drives the system Chromium (Playwright's
own browsers are never downloaded).
"""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from PIL import Image

from allure.store import RunStore, project_db_path
from tests.cli_run import allure
from tests.conftest import wait_for
from tests.graphs.test_run_guards import write_replay_spec
from tests.tui.review_helpers import make_run
from tests.tui.serve_helpers import free_port, serving, stop

if TYPE_CHECKING:
    from playwright.sync_api import Page, Route

pytestmark = [pytest.mark.integration, pytest.mark.browser]

REVIEWER = "web-tester"
RUN = "run-review"


def chromium() -> str:
    """The system Chromium's executable (``$ALLURE_CHROMIUM``, else ``chromium`` on the PATH)."""
    for name in (os.environ.get("ALLURE_CHROMIUM"), "chromium", "chromium-browser"):
        path = shutil.which(name) if name else None
        if path:
            return path
    pytest.fail("Chromium is missing: install it (apt-get install -y chromium) or set $ALLURE_CHROMIUM")


def busy(png: bytes) -> tuple[int, float]:
    """How many colours a screenshot has, and the share of its pixels not in its commonest colour."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    counts = image.getcolors(maxcolors=1 << 24) or []
    top = max(n for n, _ in counts)
    return len(counts), 1 - top / (image.width * image.height)


@pytest.fixture
def paused_replay(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A project whose replay audit paused at review with pending candidates; its run id."""
    res = allure("audit", str(write_replay_spec(tmp_path)), "--project", str(tmp_path), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    store = RunStore(project_db_path(tmp_path), create=False)
    run = store.list_runs()[-1]
    assert run.status == "paused" and store.candidate_counts(run.id)["pending"] >= 2
    store.close()
    yield tmp_path, run.id


def _decisions(project: Path, run: str) -> list[tuple[str | None, str]]:
    store = RunStore(project_db_path(project), create=False)
    try:
        return [(c.decision, c.reviewer) for c in store.candidates(run)]
    finally:
        store.close()


@contextmanager
def browser_page(base: str) -> Iterator[tuple[Page, list[str]]]:
    """A page of a headless system Chromium that may fetch only from ``base`` (else the URL is
    recorded in the list and the request aborted: the page must work with no internet)."""
    from playwright.sync_api import sync_playwright

    executable = chromium()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 800})
            elsewhere: list[str] = []

            def only_the_server(route: Route) -> None:
                if route.request.url.startswith(base):
                    route.continue_()
                else:
                    elsewhere.append(route.request.url)
                    route.abort()

            page.route("**/*", only_the_server)
            yield page, elsewhere
        finally:
            browser.close()


def drawn_screen(page: Page) -> bytes:
    """Wait until the app in ``page`` has drawn and stopped changing; its screenshot."""
    page.wait_for_selector("body.-first-byte, body.-closed", state="attached", timeout=60_000)
    closed = page.evaluate("document.body.classList.contains('-closed')")
    assert not closed, "the session ended before the app drew (see the server's output)"
    shots: list[bytes] = [page.screenshot()]

    def drawn() -> bool:
        shots.append(page.screenshot())
        return shots[-1] == shots[-2] and busy(shots[-1])[1] > 0.02

    wait_for(drawn, "the app on the page")
    return shots[-1]


def test_review_in_headless_chromium_records_a_decision(paused_replay: tuple[Path, str]) -> None:
    project, run = paused_replay
    before = _decisions(project, run)
    port = free_port()
    base = f"http://127.0.0.1:{port}/"
    with (
        serving(project, run, "--port", str(port), "--reviewer", REVIEWER) as server,
        browser_page(base) as (page, elsewhere),
    ):
        assert server.url == base
        page.goto(base)
        first = drawn_screen(page)
        colours, ink = busy(first)
        assert colours > 50 and ink > 0.02, (colours, ink)  # text in several colours, not a blank page
        shot = project / "review-page.png"
        shot.write_bytes(first)
        assert Image.open(shot).size == (1200, 800)

        page.click("#terminal")  # the keyboard goes to the terminal
        page.keyboard.press("a")
        wait_for(lambda: _decisions(project, run)[0] == ("approve", REVIEWER), "the approval in the store")
        wait_for(lambda: page.screenshot() != first, "the page to show the decision", timeout=20)
        assert elsewhere == []  # nothing fetched from a CDN
        page.close()
        assert stop(server) == 0, server.output()  # Ctrl+C: a clean exit, no app process left

    after = _decisions(project, run)
    assert after[0] == ("approve", REVIEWER) and after[1:] == before[1:]  # one key, one decision
    store = RunStore(project_db_path(project), create=False)
    try:
        assert store.get_run(run).status == "paused"
    finally:
        store.close()


def test_a_tab_that_cannot_open_the_review_shows_why_until_closed(tmp_path: Path) -> None:
    store = make_run(tmp_path, 0)  # paused, nothing pending yet: the server starts
    try:
        with serving(tmp_path, RUN, "--port", "0") as server, browser_page(server.url) as (page, _):
            store.update_run(RUN, status="done")  # meanwhile the run ended: a new tab cannot review it
            page.goto(server.url)
            shot = drawn_screen(page)  # an error page, not a closed session
            (tmp_path / "error-page.png").write_bytes(shot)
            colours, ink = busy(shot)
            assert colours > 20 and ink > 0.02
            assert page.evaluate("document.body.classList.contains('-closed')") is False
            page.click("#terminal")
            page.keyboard.press("q")
            page.wait_for_selector("body.-closed", state="attached", timeout=30_000)  # "Session ended."
            assert stop(server) == 0
        assert "has no pending candidates" in server.output()
    finally:
        store.close()
