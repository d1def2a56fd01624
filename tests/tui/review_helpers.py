"""Helpers of the review app tests: fixed runs and candidates, the screen as text."""

from __future__ import annotations

import asyncio
import html
import re
import time
from pathlib import Path
from typing import Any

from textual.app import App
from textual.pilot import Pilot

from allure.models import FAILURE_MODES, IclExample
from allure.store import RunStore, project_db_path

TRICKY = "[bold red]x[/] [link=file:///etc/passwd]y[/link] \x1b[31mred\x1b[0m"


def make_examples(n: int, *, run_id: str = "run-review") -> list[IclExample]:
    """``n`` fixed candidates with varied modes, problem types and generators."""
    out = []
    for i in range(n):
        item = f"item-{i:04d}"
        out.append(
            IclExample(
                id=IclExample.make_id(item, i % 2),
                item_id=item,
                run_id=run_id,
                task=f"Task {i}: find the shortest path from room 1 to room 6 in the maze.",
                response=f"Response {i}: go from 1 to 3, then 6.\n"
                + "\n".join(f"step {k}" for k in range(12)),
                gold_answers=["1, 3, 6"],
                correct_label=i % 2,
                wrong_label=1 - i % 2,
                evaluator_output=f"score: {1 - i % 2}",
                problem_type=["1stepPath", "valuePath", "nstepPath"][i % 3],
                generator=["gpt-4", "llama"][i % 2],
                failure_mode=FAILURE_MODES[i % len(FAILURE_MODES)],
                failure_reason=f"rule {i % len(FAILURE_MODES)} fired",
            )
        )
    return out


def make_run(
    project: Path, n: int, *, run_id: str = "run-review", label_set: list[int] | None = None
) -> RunStore:
    """A project with one run paused at review holding ``n`` pending candidates."""
    store = RunStore(project_db_path(project))
    spec: dict[str, object] = {"name": "demo", "memory": {"location": str(project / "no-memory")}}
    if label_set is not None:
        spec["label_set"] = label_set
    store.create_run(spec, run_id=run_id)
    store.update_run(run_id, status="paused", iteration=1)
    store.add_candidates(run_id, 1, make_examples(n, run_id=run_id))
    return store


_SVG_TEXT = re.compile(
    r'<text[^>]*?x="([\d.]+)"[^>]*?clip-path="url\(#[\w-]+-line-(\d+)\)"[^>]*>([^<]*)</text>'
)


def screen_text(app: App[object]) -> str:
    """The characters on the app's screen, line by line (read back from its SVG screenshot)."""
    rows: dict[int, dict[int, str]] = {}
    for m in _SVG_TEXT.finditer(app.export_screenshot()):
        cell = round(float(m[1]) / 12.2)
        rows.setdefault(int(m[2]), {})[cell] = html.unescape(m[3]).replace("\xa0", " ")
    lines = []
    for row in sorted(rows):
        line = ""
        for col, text in sorted(rows[row].items()):
            line = line.ljust(col) + text
        lines.append(line.rstrip())
    return "\n".join(lines)


async def settle(pilot: Pilot[Any], timeout: float = 60.0) -> None:
    """Wait for the similar-example lookups and the workers, then for the screen to settle; fail
    loudly when they are not done within ``timeout`` s."""
    app = pilot.app
    deadline = time.monotonic() + timeout
    while getattr(app, "similar_pending", 0):
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{app.similar_pending} similar-example lookup(s) still pending after {timeout:g} s"
            )
        await asyncio.sleep(0.02)
    try:
        await asyncio.wait_for(app.workers.wait_for_complete(), max(deadline - time.monotonic(), 1.0))
    except TimeoutError:
        raise AssertionError(f"the app's workers were still running after {timeout:g} s") from None
    await pilot.pause()
