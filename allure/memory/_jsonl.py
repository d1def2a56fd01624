"""Export and import the memory as JSON lines, one :class:`IclExample` per line.

An export is sorted by id and written atomically; importing it into an empty
memory and exporting again gives the same bytes. An import file is validated whole
before anything is written: a bad line leaves the memory untouched.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from allure._io import atomic_write_lines
from allure.errors import MemoryStoreError
from allure.memory._store import EpisodicMemory
from allure.models import IclExample

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
    p = Path(path)
    if not p.is_file():
        raise MemoryStoreError("file not found", where=str(p), fix="pass an existing JSONL file")
    out: list[IclExample] = []
    seen: dict[str, int] = {}
    with p.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{p}:{lineno}"
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                raise MemoryStoreError(f"malformed JSON ({exc.msg})", where=where, fix=_FIX) from exc
            if not isinstance(raw, dict):
                raise MemoryStoreError("expected a JSON object", where=where, fix=_FIX)
            try:
                ex = IclExample.model_validate(raw)
            except ValidationError as exc:
                err = exc.errors()[0]
                field = ".".join(str(x) for x in err["loc"]) or "(line)"
                raise MemoryStoreError(err["msg"], where=f"{where}, field '{field}'", fix=_FIX) from exc
            if ex.decision != "approve":
                raise MemoryStoreError(
                    f"decision is {ex.decision!r}; only approved examples enter memory",
                    where=f"{where}, field 'decision'",
                    fix='set "decision": "approve" after reviewing it, or drop the line',
                )
            if ex.id in seen:
                raise MemoryStoreError(
                    f"example {ex.id} appears twice (also on line {seen[ex.id]})",
                    where=f"{where}, field 'id'",
                    fix="keep one line per id",
                )
            seen[ex.id] = lineno
            out.append(ex)
    return out


def import_jsonl(memory: EpisodicMemory, path: str | Path) -> tuple[int, int]:
    """Validate ``path`` whole, then upsert its examples.

    Returns:
        ``(examples read, of which new to the memory)``.
    """
    examples = read_examples_jsonl(path)
    return len(examples), memory.add(examples)
