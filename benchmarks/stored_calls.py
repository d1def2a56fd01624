"""What the benches that run the product over stored calls share: a fresh project whose run store is
a saved snapshot, and the embedded server's starts counted (or refused) while the product runs."""

from __future__ import annotations

import gzip
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from allure.store import project_db_path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def snapshot(task: str) -> Path:
    """The saved run store of ``task``'s stored calls (written by the strategies bench's first run)."""
    return RESULTS / f"icl_strategies.{task}.db.gz"


def fresh_project(project: Path, snap: Path) -> None:
    """An empty project folder whose run store is ``snap`` (nothing of an earlier run: no memory, no run)."""
    if not snap.is_file():
        raise SystemExit(f"missing {snap}: the stored calls this bench runs on")
    shutil.rmtree(project, ignore_errors=True)
    db = project_db_path(project)
    db.parent.mkdir(parents=True)
    with gzip.open(snap, "rb") as src, open(db, "wb") as dst:
        shutil.copyfileobj(src, dst)


class ServerRefused(RuntimeError):
    """The product asked for the embedded server while the bench may send no call."""


@contextmanager
def server_starts(*, refuse: bool = False) -> Iterator[list[int]]:
    """Counts the embedded server's starts inside the block; with ``refuse`` a start raises
    :class:`ServerRefused` instead (the product starts the server only for a call, or a prompt's
    token count, the store cannot answer). A measurement: nothing else changes."""
    from allure.evaluator.local import LocalServer

    starts: list[int] = []
    start = LocalServer.start

    def counted(self: Any, *a: Any, **kw: Any) -> Any:
        starts.append(1)
        if refuse:
            raise ServerRefused("the store cannot answer every call: the embedded server would start")
        return start(self, *a, **kw)

    LocalServer.start = counted  # type: ignore[method-assign]
    try:
        yield starts
    finally:
        LocalServer.start = start  # type: ignore[method-assign]


@dataclass(frozen=True)
class ZeroShotPlan:
    """What a run's zero-shot pass needs beyond the store, by the product's own planner."""

    spec: Any
    """The parsed spec (:class:`allure.config.AuditSpec`)."""
    items: int
    """Calls a pass makes: one an item, two a pair when the pass also asks the swapped order."""
    uncached: int
    """Every item's zero-shot call and the content-free calls the store cannot answer."""
    latency_s: float | None
    """The stored calls' mean latency (``None``: none stored)."""


def zero_shot_plan(raw: dict[str, Any], project: Path, source: str) -> ZeroShotPlan:
    """The calls of the first pass of ``raw`` (a spec dict) that ``project``'s store cannot answer, by
    the product's own planner (:func:`allure.graphs.plan.plan_audit`, ``allure audit --plan``: every
    item in every order the loop asks, and calibration's content-free calls); starts no server."""
    from allure.config import parse_spec
    from allure.graphs.plan import plan_audit

    spec = parse_spec(raw, source=source)
    got = plan_audit(spec, project)
    return ZeroShotPlan(spec, got.items * got.orders, got.not_stored, got.stored_latency_s)
