"""Export and import the memory as JSON lines, one :class:`IclExample` per line.

An export is sorted by id and written atomically; importing it into an empty
memory and exporting again gives the same bytes. An import file is validated whole
before anything is written: a bad line leaves the memory untouched.
"""

from __future__ import annotations

from pathlib import Path

from allure._io import atomic_write_lines
from allure.errors import MemoryStoreError
from allure.memory._store import EpisodicMemory
from allure.models import IclExample
from allure.records import read_records

_FIX = (
    'each line must be one IclExample JSON object, e.g. {"id": "icl-...", "item_id": "...", '
    '"response": "...", "correct_label": 1, "failure_mode": "keywords", "decision": "approve"}'
)


def example_line(ex: IclExample) -> str:
    """One example as a JSON line (no trailing newline)."""
    return ex.model_dump_json()


def export_jsonl(memory: EpisodicMemory, path: str | Path) -> int:
    """Write every example of ``memory`` to ``path`` (sorted by id, atomic); returns the count."""
    target = Path(path)
    examples = memory.refresh()
    atomic_write_lines(target, (example_line(ex) for ex in examples))
    return len(examples)


def read_examples_jsonl(path: str | Path) -> list[IclExample]:
    """Parse and validate a memory JSONL file.

    Raises:
        MemoryStoreError: naming the file, line and field, for a missing file, malformed
            JSON, an invalid or unapproved example, or an id given twice.
    """
    records = read_records(
        path,
        IclExample,
        error=MemoryStoreError,
        fix=_FIX,
        what="memory export file",
        kind="jsonl",
        unique=("id", lambda ex: ex.id),
    )
    for lineno, ex in records:
        if ex.decision != "approve":
            raise MemoryStoreError(
                f"decision is {ex.decision!r}; only approved examples enter memory",
                where=f"{path}:{lineno}, field 'decision'",
                fix='set "decision": "approve" after reviewing it, or drop the line',
            )
    return [ex for _, ex in records]


def import_jsonl(memory: EpisodicMemory, path: str | Path) -> tuple[int, int]:
    """Validate ``path`` whole, then upsert its examples.

    Returns:
        ``(examples read, of which new to the memory)``.
    """
    examples = read_examples_jsonl(path)
    return len(examples), memory.add(examples)
