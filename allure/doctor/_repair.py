"""Repairs that ``allure doctor`` offers (the checks are :mod:`allure.doctor`'s): rebuild a memory's
Chroma index (``allure doctor --rebuild-memory``).

:func:`rebuild_memory` writes a new Chroma store from the examples the old one holds (read from its
SQLite file by the memory's own reader, which survives a lost or corrupt index and refuses rows a
segment has not caught up on), or, when that file cannot be trusted, from the approved candidates
in the run store; the old folder is kept beside it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError

from allure._io import raised_as
from allure.doctor._finding import RUN_STORE, memory_location
from allure.errors import MemoryStoreError
from allure.models import IclExample


class RebuildResult(BaseModel):
    """What :func:`rebuild_memory` did."""

    location: str
    """The memory folder rebuilt."""
    source: Literal["memory", "run store"]
    """Where the examples came from: the old memory's SQLite file, or the run store's approvals."""
    examples: int
    """Examples written to the new memory."""
    moved_to: str
    """Where the old folder was moved (empty when there was none)."""


def stored_examples(location: str, collection: str = "icl_examples") -> list[IclExample]:
    """The examples a Chroma store's SQLite file holds for ``collection`` (the index is not read),
    read by the memory's own reader (:func:`allure.memory.read_examples_json`): rows it would not
    trust (a segment behind its write-ahead log) are not trusted here either.

    Raises:
        MemoryStoreError: the file is missing or unreadable.
    """
    from allure.memory import CHROMA_DB_FILE, read_examples_json

    db = Path(location) / CHROMA_DB_FILE
    if not db.is_file():
        raise MemoryStoreError("no Chroma database here", where=str(db), fix="name the memory folder")
    rows = read_examples_json(location, collection)
    if rows is None:
        raise MemoryStoreError(
            "the stored examples cannot be trusted (not the known Chroma schema, the collection "
            "absent, or logged writes its segment has not applied)",
            where=str(db),
            fix="rebuild from the run store instead (allure falls back to it)",
        )
    with raised_as(
        MemoryStoreError,
        "cannot read the stored examples",
        where=str(db),
        fix="rebuild from the run store instead (allure falls back to it)",
        catch=ValidationError,
    ):
        return [IclExample.model_validate_json(js) for _id, js in rows if js]


def approved_in_store(project: Path, location: str) -> list[IclExample]:
    """Approved candidates of every run in the project whose memory is ``location`` (newest decision wins)."""
    from allure.store import RunStore

    store = RunStore(Path(project) / RUN_STORE, create=False)
    try:
        found: dict[str, IclExample] = {}
        for run in store.list_runs():
            if memory_location(Path(project), run.spec) != location:
                continue
            for ex in store.candidates(run.id, status="approved"):
                found[ex.id] = ex
    finally:
        store.close()
    return list(found.values())


def rebuild_memory(project: Path, location: str, collection: str = "icl_examples") -> RebuildResult:
    """Write a new Chroma store at ``location`` from the examples the old one holds, or (when its
    SQLite file is unreadable) from the run store's approved candidates; the old folder is moved to
    ``LOCATION.broken-TIMESTAMP``.

    Raises:
        MemoryStoreError: ``location`` is a server URL, or no source holds an example.
    """
    from allure.memory import EpisodicMemory

    if "://" in location:
        raise MemoryStoreError(
            "a memory on a Chroma server is rebuilt on that server",
            where=location,
            fix="restore the server's data, or import an export: `allure memory import FILE --memory URL`",
        )
    source: Literal["memory", "run store"] = "memory"
    try:
        examples = stored_examples(location, collection)
    except MemoryStoreError:
        examples = []
    if not examples:
        source = "run store"
        examples = approved_in_store(project, location)
    if not examples:
        raise MemoryStoreError(
            "no stored example to rebuild the memory from (neither its SQLite file nor the run store holds one)",
            where=location,
            fix="import an export instead: `allure memory import FILE`",
        )
    path = Path(location)
    moved = ""
    if path.exists():
        target = path.with_name(f"{path.name}.broken-{time.strftime('%Y%m%dT%H%M%S')}")
        path.rename(target)
        moved = str(target)
    mem = EpisodicMemory.open(location, collection=collection, create=True)
    mem.add(ex for ex in examples if ex.decision == "approve")
    return RebuildResult(location=location, source=source, examples=mem.count(), moved_to=moved)
