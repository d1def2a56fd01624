"""Fixtures of the store tests: a real PostgreSQL server (one per session) and a fresh database per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from allure.store import RunStore
from tests.pg import fresh_database, postgres_server


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """The URL of a throw-away PostgreSQL server (started once per test session)."""
    with postgres_server() as url:
        yield url


@pytest.fixture
def pg_url(pg_server: str) -> str:
    """The URL of a new, empty database on the session's server."""
    return fresh_database(pg_server)


class Backend:
    """Opens run stores on one back end: SQLite files in ``tmp_path``, or databases on the test server."""

    def __init__(self, name: str, tmp_path: Path, server: str | None) -> None:
        self.name = name
        self.tmp_path = tmp_path
        self.server = server
        self.urls: dict[str, str] = {}

    @property
    def pg(self) -> bool:
        """Whether this is the PostgreSQL back end."""
        return self.name == "postgresql"

    def url(self, name: str = "s.db") -> str | None:
        """The database URL of store ``name`` (created empty on first use); None on SQLite."""
        if self.server is None:
            return None
        if name not in self.urls:
            self.urls[name] = fresh_database(self.server)
        return self.urls[name]

    def open(self, name: str = "s.db", *, create: bool = True) -> RunStore:
        """The store ``name`` (the same one each time it is opened)."""
        return RunStore(self.tmp_path / name, create=create, url=self.url(name))


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """Each store test once per back end: a SQLite file, and a database on a real PostgreSQL server."""
    server = request.getfixturevalue("pg_server") if request.param == "postgresql" else None
    return Backend(request.param, tmp_path, server)
