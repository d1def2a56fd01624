"""Fixtures of the store tests: a real PostgreSQL server (one per session) and a fresh database per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

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
