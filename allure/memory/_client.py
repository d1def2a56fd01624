"""Open a Chroma client from a memory location: a directory or an ``http://host:port`` URL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from allure.errors import MemoryStoreError
from allure.urls import redact_url, url_problem

CHROMA_DB_FILE = "chroma.sqlite3"
"""The file that marks a directory as an embedded Chroma store."""


DEFAULT_LOCATION = str(Path(".allure") / "memory")
"""The memory of a project, relative to its folder."""


def is_url(location: str) -> bool:
    """True when ``location`` names a Chroma server rather than a directory."""
    return location.startswith(("http://", "https://"))


LOCATION_FIX = (
    'give a folder (e.g. location = ".allure/memory") or a Chroma server\'s http:// or https:// '
    'address (e.g. location = "http://127.0.0.1:8000")'
)
"""How to write a memory location, for :func:`location_problem`'s errors."""


def location_problem(location: str) -> str | None:
    """What makes ``location`` unusable as a memory (a URL that is not a Chroma server's http(s)
    address), in words; ``None`` when it is fine. The one check of a spec's ``memory.location`` and
    of every memory opened (:meth:`~allure.memory.EpisodicMemory.open`: the Python API, ``--memory``)."""
    if "://" in location and (problem := url_problem(location)):
        return f"{problem}: {redact_url(location)!r}"
    return None


def resolve_location(location: str | None, project_dir: str | Path) -> str:
    """Where a memory is: a server URL as it is, a relative folder under ``project_dir``, or
    the project's :data:`DEFAULT_LOCATION` when ``location`` is empty."""
    if location and is_url(location):
        return location
    path = Path(location or DEFAULT_LOCATION)
    return str(path if path.is_absolute() else Path(project_dir) / path)


def _settings() -> Any:
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False, allow_reset=False)


def open_client(location: str, *, create: bool) -> Any:
    """A Chroma client for ``location``.

    Args:
        location: A directory (embedded ``PersistentClient``) or ``http://host:port`` (``HttpClient``).
        create: Create a missing directory; otherwise a missing store is an error.

    Raises:
        MemoryStoreError: The directory is missing (and ``create`` is false), is not a
            Chroma store, or the server does not answer.
    """
    import chromadb

    if is_url(location):
        return _http_client(chromadb, location)
    path = Path(location)
    if create and not (path / CHROMA_DB_FILE).exists():
        with _creation_lock(path):  # two processes creating one new memory: one creates, one opens
            return _open_dir(chromadb, path, create=create)
    return _open_dir(chromadb, path, create=create)


@contextmanager
def _creation_lock(path: Path) -> Iterator[None]:
    """An exclusive lock (a lock file beside ``path``) held while a new store is created."""
    try:
        import fcntl
    except ImportError:  # no fcntl (Windows): no cross-process lock
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f".{path.name}.create-lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _open_dir(chromadb: Any, path: Path, *, create: bool) -> Any:
    db_file = path / CHROMA_DB_FILE
    if path.exists() and not path.is_dir():
        raise MemoryStoreError(
            "the memory location is a file, not a directory",
            where=str(path),
            fix="pass a directory (or an http://host:port Chroma server) with --memory",
        )
    if not db_file.exists():
        if not create:
            raise MemoryStoreError(
                "no episodic memory here",
                where=str(path),
                fix="check --memory / ALLURE_MEMORY, or create one with `allure audit` or `allure memory import FILE`",
            )
        if path.exists() and any(path.iterdir()):
            raise MemoryStoreError(
                f"the directory is not empty and holds no {CHROMA_DB_FILE}: it is not a Chroma store",
                where=str(path),
                fix="pass an empty or new directory for a new memory",
            )
    elif not _looks_like_sqlite(db_file):
        raise MemoryStoreError(
            f"{CHROMA_DB_FILE} is not a SQLite database: the memory is corrupt",
            where=str(db_file),
            fix="restore the memory from an export (`allure memory import FILE`) into a new directory",
        )
    path.mkdir(parents=True, exist_ok=True)
    try:
        return chromadb.PersistentClient(path=str(path), settings=_settings())
    except Exception as exc:  # chromadb raises many types (sqlite, rust bindings) for a bad store
        raise MemoryStoreError(
            f"cannot open the Chroma store ({type(exc).__name__}: {exc})",
            where=str(path),
            fix="the directory is not a valid Chroma store; restore from an export into a new directory",
        ) from exc


def _looks_like_sqlite(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(16) == b"SQLite format 3\x00"


def _http_client(chromadb: Any, location: str) -> Any:
    url = urlparse(location)
    if not url.hostname:
        raise MemoryStoreError(
            "the memory URL has no host",
            where=location,
            fix="use http://HOST:PORT, e.g. http://127.0.0.1:8000",
        )
    port = url.port or (443 if url.scheme == "https" else 8000)
    try:
        client = chromadb.HttpClient(
            host=url.hostname, port=port, ssl=url.scheme == "https", settings=_settings()
        )
        client.heartbeat()
    except Exception as exc:  # connection errors surface as several chromadb (and its HTTP client's) types
        raise MemoryStoreError(
            f"the Chroma server does not answer ({type(exc).__name__}: {exc})",
            where=location,
            fix="start it with `chroma run --path DIR --host HOST --port PORT`, or check the URL",
        ) from exc
    return client
