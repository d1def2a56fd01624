"""``RunStore``: the one handle on a project's run store, made of one part per concern."""

from __future__ import annotations

from pathlib import Path

from allure.store._calls import CallsStore
from allure.store._leases import LeasesStore
from allure.store._metrics import MetricsStore
from allure.store._readouts import ReadoutsStore
from allure.store._reaudits import ReauditsStore
from allure.store._review_claims import ReviewClaimsStore
from allure.store._url import store_url

DEFAULT_DB = Path(".allure") / "allure.db"
"""The run store's path inside a project folder."""


def project_db_path(project_dir: str | Path = ".") -> Path:
    """The run store of a project directory."""
    return Path(project_dir) / DEFAULT_DB


def open_project_store(project_dir: str | Path = ".", *, create: bool = True, url: str = "") -> RunStore:
    """The run store of a project directory: its SQLite file, or the PostgreSQL database that
    ``ALLURE_STORE_URL``, ``url`` (a spec's ``[store] url``) or the project's ``.allure/store.toml``
    names (see :mod:`allure.store._url`).

    Raises:
        StoreError: the store is missing (and ``create`` is False), unreachable, or damaged.
    """
    return RunStore(project_db_path(project_dir), create=create, url=store_url(project_dir, url) or None)


class RunStore(ReadoutsStore, CallsStore, ReviewClaimsStore, MetricsStore, ReauditsStore, LeasesStore):
    """A thread-safe handle on one run-store database (runs and items, the call cache, review and
    reviewers' claims, metrics, frozen sets and re-audits, leases).

    Opening it upgrades an older database in place (see :mod:`allure.store._schema`); every
    write commits at once.

    Args:
        path: The database file (with ``url``: the project's store path, the anchor of files kept beside it).
        create: Create the store when missing (else raise :class:`~allure.errors.StoreError`).
        url: A ``postgresql://`` URL: the store lives in that PostgreSQL database (see
            :func:`open_project_store`, which finds the URL of a project).
    """
