"""The robustness tests' project: the small dataset's spec against a server, and a memory of three
*keywords* examples (``robust_spec``); ``paired_spec`` adds the ``pair`` column the consistency
study pairs items by (``1stepPath-j`` with ``2stepPath-j``)."""

from __future__ import annotations

import json
from pathlib import Path

from allure.memory import EpisodicMemory
from allure.prompts import load_prompt_set
from tests.conftest import write_spec
from tests.memory.memory_examples import make_example


def robust_spec(tmp: Path, base_url: str) -> Path:
    """``tmp/audit.toml`` against ``base_url``, its dataset, and ``tmp/memory`` with 3 examples."""
    spec = write_spec(tmp, base_url)
    EpisodicMemory.open(str(tmp / "memory")).add(
        [make_example(n, mode="keywords", response=f"Room 1, Room {n}", correct_label=0) for n in range(3)]
    )
    return spec


def lost_placeholder(tmp: Path, placeholder: str, replacement: str) -> Path:
    """``tmp/mine``: the ``grader`` prompt set with ``placeholder`` in its user turn written as ``replacement``."""
    mine = tmp / "mine"
    mine.mkdir()
    base = load_prompt_set("grader")
    (mine / "system.txt").write_text(base.system)
    (mine / "assistant.txt").write_text(base.assistant)
    (mine / "user.txt").write_text(base.user.replace(placeholder, replacement))
    return mine


def paired_spec(tmp: Path, base_url: str) -> Path:
    """:func:`robust_spec` with each item naming its paired item in the column ``pair``."""
    spec = robust_spec(tmp, base_url)
    data = tmp / "items.jsonl"
    rows = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    for r in rows:
        kind, j = r["uid"].split("-")
        r["pair"] = f"{'2stepPath' if kind == '1stepPath' else '1stepPath'}-{j}"
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return spec
