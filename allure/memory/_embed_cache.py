"""Embeddings kept on disk by text: a process whose texts were all embedded before never loads the model.

Loading the embedding model costs seconds of CPU in every process (importing torch, transformers and
sentence-transformers, then reading the weights), and the processes a user starts after a run embed
the same texts again: a resumed run, a re-audit, ``allure doctor --rebuild-memory``, a study over the
stored calls. The cache is one SQLite file per model and package version in ``ALLURE_EMBED_CACHE``
(default ``$ALLURE_CACHE_DIR/embeddings``, else ``~/.cache/allure/embeddings``; ``off`` turns it
off). A vector is kept as the model gave it (float32 bytes), keyed by the SHA-256 of its text, so a
text embedded once gives the same vector in every later process.

The cache never decides what is computed, only whether the model loads: a vector of the wrong size
is a miss, and a cache that cannot be read or written (a read-only disk, a damaged file, a full disk)
is said once in the log and left alone, the texts embedded by the model.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import sqlite3
import threading
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import numpy as np

from allure.errors import MemoryStoreError
from allure.settings import cache_root, load_settings

log = logging.getLogger(__name__)

OFF = "off"
"""The value of ``ALLURE_EMBED_CACHE`` that turns the cache off."""

_CHUNK = 500
"""Keys looked up by one ``SELECT`` (SQLite's limit on bound parameters is higher)."""

_warned = threading.Event()


def cache_file(model: str, package: str) -> Path | None:
    """The cache file of ``model`` shipped in ``package`` (its installed version in the name), or
    ``None`` when ``ALLURE_EMBED_CACHE=off``."""
    settings = load_settings(error=MemoryStoreError)
    if settings.embed_cache.strip().lower() == OFF:
        return None
    folder = (
        Path(settings.embed_cache).expanduser()
        if settings.embed_cache
        else cache_root(error=MemoryStoreError) / "embeddings"
    )
    return folder / f"{model}-{_version(package)}.sqlite"


@functools.cache
def _version(package: str) -> str:
    """The installed version of ``package`` (read from its metadata once a process, not at each embed)."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "unknown"


def _key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path, timeout=30)
    try:
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL)")
    except sqlite3.Error:
        con.close()
        raise
    return con


def _said(path: Path, exc: Exception) -> None:
    if not _warned.is_set():
        _warned.set()
        log.warning(
            "the embedding cache %s is not used (%s: %s); texts are embedded by the model",
            path,
            type(exc).__name__,
            exc,
        )


def cached_embed(
    texts: list[str], compute: Callable[[list[str]], np.ndarray], *, path: Path | None, dim: int
) -> np.ndarray:
    """``compute(texts)``, with the vectors of texts embedded before read from ``path`` and the new
    ones written there. ``compute`` is called once, on the distinct texts not in the cache, and not
    at all when every text is there."""
    if path is None:
        return compute(texts)
    keys = [_key(t) for t in texts]
    found: dict[bytes, np.ndarray] = {}
    try:
        con = _connect(path)
    except (sqlite3.Error, OSError) as exc:
        _said(path, exc)
        return compute(texts)
    try:
        distinct = list(dict.fromkeys(keys))
        for start in range(0, len(distinct), _CHUNK):
            chunk = distinct[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            for key, blob in con.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", chunk):
                if len(blob) == 4 * dim:  # else a miss: embedded again and written over
                    found[bytes(key)] = np.frombuffer(blob, dtype=np.float32)
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
        if missing:
            fresh = np.asarray(compute(list(missing.values())), dtype=np.float32)
            found.update(zip(missing, fresh, strict=True))
            try:
                with con:
                    con.executemany(
                        "INSERT OR REPLACE INTO vectors (key, vector) VALUES (?, ?)",
                        [(k, found[k].tobytes()) for k in missing],
                    )
            except sqlite3.Error as exc:  # the vectors are computed: only keeping them failed
                _said(path, exc)
    except sqlite3.Error as exc:
        _said(path, exc)
        return compute(texts)
    finally:
        con.close()
    return np.stack([found[k] for k in keys])  # a new float32 array: the cached vectors are read-only views
