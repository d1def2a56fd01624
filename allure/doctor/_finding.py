"""One finding of ``allure doctor``, the runs a check covers, and where a project keeps its files
(shared by the checks and the repairs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from allure import __version__
from allure.errors import StoreError
from allure.store import SCHEMA_VERSION, RunRecord
from allure.store.reader import StoreReader

RUN_STORE = Path(".allure") / "allure.db"
CHECKPOINTS = Path(".allure") / "checkpoints.db"
DEFAULT_MEMORY = ".allure/memory"

UNFINISHED = ("paused", "running", "interrupted", "failed")
"""Run statuses that continue from a checkpoint."""


class Finding(BaseModel):
    """The result of one check."""

    check: str
    """What was checked: ``run store``, ``checkpoints``, ``memory``, ``lease``."""
    ok: bool
    """Whether it is healthy."""
    where: str
    """The file, folder or run it is about."""
    message: str
    """What was found."""
    fix: str = ""
    """How to repair it (empty when healthy)."""


def integrity_finding(check: str, where: object, status: str, fix: str) -> Finding:
    """The finding of an SQLite integrity check (``status`` as ``PRAGMA integrity_check`` says it):
    healthy when it is ``ok``, else with ``fix``."""
    ok = status == "ok"
    return Finding(
        check=check, ok=ok, where=str(where), message=f"integrity: {status}", fix="" if ok else fix
    )


def newer_schema_finding(store: StoreReader, where: str) -> Finding | None:
    """A failed finding when the store's schema version is above the one this allure reads (it was
    written by a newer allure); ``None`` otherwise, or when the version cannot be read (the
    integrity check says why)."""
    try:
        version = store.version()
    except Exception:  # noqa: BLE001 - a damaged store is reported by its integrity check
        return None
    if version <= SCHEMA_VERSION:
        return None
    return Finding(
        check="run store",
        ok=False,
        where=where,
        message=f"schema version {version} is newer than this allure ({__version__}) reads (up to "
        f"{SCHEMA_VERSION}): the store was written by a newer allure, one whose store schema is "
        f"version {version} or later; runs, checkpoints and leases were not checked",
        fix=f"open this project with the allure that wrote it, or upgrade (pip install -U allure) to a "
        f"release that reads schema version {version}",
    )


def chosen_runs(runs: list[RunRecord], run_id: str | None, where: str) -> list[RunRecord]:
    """``runs``, or only ``run_id`` of them.

    Raises:
        StoreError: ``run_id`` is not one of ``runs`` (and there are runs).
    """
    if run_id is None:
        return runs
    chosen = [r for r in runs if r.id == run_id]
    if not chosen and runs:
        raise StoreError(
            f"unknown run {run_id!r}",
            where=where,
            fix=f"use one of: {', '.join(r.id for r in runs[-5:])}; `allure runs` lists them",
        )
    return chosen


def memory_location(project: Path, spec: dict[str, Any] | None) -> str:
    """The memory a run spec names, resolved against the project (a URL is kept)."""
    loc = str(((spec or {}).get("memory") or {}).get("location") or DEFAULT_MEMORY)
    if "://" in loc or Path(loc).is_absolute():
        return loc
    return str(project / loc)
