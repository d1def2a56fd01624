"""``RunStore``: the one handle on a project's run store, made of one part per concern."""

from __future__ import annotations

from pathlib import Path

from allure.store._calls import CallsStore
from allure.store._leases import LeasesStore
from allure.store._metrics import MetricsStore
from allure.store._reaudits import ReauditsStore
from allure.store._review import ReviewStore
from allure.store._runs import RunsStore

DEFAULT_DB = Path(".allure") / "allure.db"
"""The run store's path inside a project folder."""


def project_db_path(project_dir: str | Path = ".") -> Path:
    """The run store of a project directory."""
    return Path(project_dir) / DEFAULT_DB


class RunStore(RunsStore, CallsStore, ReviewStore, MetricsStore, ReauditsStore, LeasesStore):
    """A thread-safe handle on one run-store database (runs and items, the call cache, review, metrics,
    frozen sets and re-audits, leases).

    Opening it upgrades an older database in place (see :mod:`allure.store._schema`); every
    write commits at once.

    Args:
        path: The database file.
        create: Create the file when missing (else raise :class:`~allure.errors.StoreError`).
    """
