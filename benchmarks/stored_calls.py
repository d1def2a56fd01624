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

from allure.store import open_project_store, project_db_path

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
    """The calls of the zero-shot pass of ``raw`` (a spec dict) that ``project``'s store cannot answer:
    every item in each order the pass asks (a pair's swapped order too) and the block's content-free
    calls (contextual calibration); starts no server. Counted here rather than by the product's
    ``allure.graphs.plan.plan_audit``: the loop bench runs under the registered rule's code
    (``allure/`` at 14b03a8), which predates it."""
    from allure.config import parse_spec
    from allure.dataset import load_items
    from allure.evaluator import open_evaluator
    from allure.metrics import CONTENT_FREE
    from allure.passes import content_free_item, swapped_order, swaps_positions
    from allure.prompts import load_prompt_set

    spec = parse_spec(raw, source=source)
    items = load_items(spec.dataset, label_set=spec.label_set, synonyms=spec.label_synonyms)
    cf = [content_free_item(items[0], "plan", k, text) for k, text in enumerate(CONTENT_FREE)]
    if swaps_positions(spec, load_prompt_set(spec.evaluator.prompt).pairwise, items):
        # a pairwise pass asks both orders of each pair: the swapped order is a call of its own
        items = [*items, *swapped_order(items, spec.label_set)]
    store = open_project_store(project, create=True)
    try:
        with open_evaluator(spec, store, items, lazy_start=True) as ev:
            zero, free = ev.plan(items, lambda _: []), ev.plan(cf, lambda _: [])
    finally:
        store.close()
    return ZeroShotPlan(spec, len(items), zero.uncached + free.uncached, zero.cached_latency_s)
