"""Progress when stderr is not a terminal (issue 27, group 14): a plain line at most once a minute with
calls done/total, elapsed, time left and errors; a pairwise pass's figures cover both orders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from allure.cli._common import PlainProgress, progress_bar
from allure.store import RunStore
from tests.cli_run import run_cli
from tests.conftest import start_scripted_server
from tests.evaluator.test_runner import _evaluator, _items, scripted_chat
from tests.graphs.test_judge_shapes import PAIRWISE_LIVE, write_pairwise_csv


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_at_most_one_line_a_minute_with_the_figures() -> None:
    clock, lines = Clock(), []
    p = PlainProgress("evaluating", clock=clock, out=lines.append)
    p(0, 100, 0)
    for done in range(1, 60):
        clock.t += 1.0  # one call a second: 59 calls in 59 s, no line yet
        p(done, 100, 0)
    assert lines == []
    clock.t += 1.0
    p(60, 100, 2)  # 60 s: the first line; 40 calls left at 1 call/s
    assert lines == ["evaluating: 60/100 calls, elapsed 1m00s, about 40s left, 2 error(s) so far"]
    clock.t += 30.0
    p(90, 100, 2)
    assert len(lines) == 1  # 30 s later: still one line
    clock.t += 30.0
    p(0, 50, 0)  # a new pass (the swapped order) restarts the estimate, not the elapsed time
    clock.t += 60.0
    p(30, 50, 1)
    assert lines[-1] == "evaluating: 30/50 calls, elapsed 3m00s, about 40s left, 1 error(s) so far"
    p(0, 20, 0)  # another pass whose first call pays for its ICL block: no estimate from it alone
    clock.t += 60.0
    p(1, 20, 0)
    assert lines[-1] == "evaluating: 1/20 calls, elapsed 4m00s, time left unknown, 0 error(s) so far"
    clock.t += 60.0
    p(11, 20, 0)
    assert lines[-1] == "evaluating: 11/20 calls, elapsed 5m00s, about 1m38s left, 0 error(s) so far"


def test_progress_bar_is_plain_off_a_terminal() -> None:
    with progress_bar("evaluating") as bar:  # pytest captures stderr: not a terminal
        assert isinstance(bar, PlainProgress)


@pytest.mark.integration
def test_the_runner_reports_errors_so_far(tmp_path: Path) -> None:
    srv = start_scripted_server(tmp_path, "--die-after", "2")
    try:
        chat = scripted_chat(srv.base_url, timeout_s=5, max_tokens=8)
        ev = _evaluator(chat, RunStore(tmp_path / "a.db"), concurrency=1, max_retries=0, timeout_s=5)
        seen: list[tuple[int, int, int]] = []

        class Recorder:
            with_errors = True

            def __call__(self, done: int, total: int, errors: int = 0) -> None:
                seen.append((done, total, errors))

        res = ev.evaluate("r", 1, _items(5), lambda it: [], progress=Recorder())
        assert res.stats.errors == 3  # the server died after two answers
        assert seen[-1] == (5, 5, 3)
    finally:
        srv.stop()


@pytest.mark.integration
def test_a_pairwise_pass_counts_both_orders(tmp_path: Path) -> None:
    srv = start_scripted_server(tmp_path, "--delay", "0.05")
    try:
        write_pairwise_csv(tmp_path / "pairs.csv", n=8)
        (tmp_path / "audit.toml").write_text(PAIRWISE_LIVE.format(url=srv.base_url))
        res = run_cli(tmp_path, "audit", "audit.toml", timeout=300)
        assert res.returncode == 0, res.stderr
        [report] = list((tmp_path / "proj").glob(".allure/runs/*/report.json"))
        it = json.loads(report.read_text())["iterations"][-1]
        assert it["calls"] == 16
        assert it["wall_s"] >= 16 * 0.05  # 16 calls of at least 50 ms each: both orders' time
    finally:
        srv.stop()
