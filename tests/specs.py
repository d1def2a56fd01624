"""The audit specs the tests write, from one builder: the ``[dataset]`` table over the small
path-finding dataset's columns (``tests/conftest.py:write_dataset``: ``uid``, ``question``,
``answer``, ``gold``, ``kind``, ``model``, ``judge``), an ``[evaluator]`` and whatever tables follow.

Every spec a test writes by hand had these lines spelled out again; a test that edits a spec's text
(``replace('kind = "replay"', ...)``) still finds each line as it was written.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

COLUMNS = {
    "id": "uid",
    "task": "question",
    "response": "answer",
    "gold_answers": "gold",
    "problem_type": "kind",
    "generator": "model",
    "recorded_label": "judge",
}
"""A spec's column name -> the small dataset's column."""

REPLAY = 'kind = "replay"'
"""The ``[evaluator]`` of a replay of the recorded labels (column ``judge``): no server."""


def audit_toml(
    name: str,
    *,
    evaluator: str = REPLAY,
    rest: str = "",
    top: str = "",
    path: str = "items.jsonl",
    columns: Iterable[str] = COLUMNS,
) -> str:
    """An audit spec's text: ``name`` (and the ``top`` lines, e.g. ``auto_approve = true``), the
    ``[dataset]`` at ``path`` with ``columns`` (keys of :data:`COLUMNS`), the ``[evaluator]`` body
    ``evaluator``, then ``rest`` (the other tables, as TOML)."""
    cols = "".join(f'{key} = "{COLUMNS[key]}"\n' for key in columns)
    return (
        f'\nname = "{name}"\n{top}\n[dataset]\npath = "{path}"\n[dataset.columns]\n{cols}\n'
        f"[evaluator]\n{evaluator.strip()}\n\n{rest.strip()}\n"
    )


def memory_and_loop(*, memory: str | None = None, **loop: object) -> str:
    """``[memory]`` (its ``location`` when given) with ``kind = "all"`` retrieval, and ``[loop]`` with
    ``loop``'s keys (values written as JSON, which TOML reads alike for numbers, strings and booleans)."""
    location = f'[memory]\nlocation = "{memory}"\n' if memory is not None else ""
    lines = "".join(f"{key} = {json.dumps(value)}\n" for key, value in loop.items())
    return f'{location}[memory.retrieval]\nkind = "all"\n\n[loop]\n{lines}'


SCRIPTED = 'kind = "openai"\nmodel = "scripted"\nbase_url = "{url}"\napi_key_env = "ALLURE_TEST_KEY"\n'
"""The ``[evaluator]`` lines of the scripted server at ``{url}``: a template (``.format(url=...)``)."""

ONE_PASS = '[memory]\nlocation = "memory"\n[loop]\nmax_iterations = 1\nheldout_fraction = 0\n'
"""The memory and ``[loop]`` of a one-pass audit that holds nothing out."""

PAIR_COLUMNS = 'task = "prompt"\nresponse = "response_a"\nresponse_b = "response_b"\n'
"""A pairwise dataset's task and two responses (``[dataset.columns]``)."""
