"""The robustness tests' project: the small dataset's spec against a server, and a memory of three
*keywords* examples (``robust_spec``); ``paired_spec`` adds the ``pair`` column the consistency
study pairs items by (``1stepPath-j`` with ``2stepPath-j``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from allure.memory import EpisodicMemory
from allure.prompts import load_prompt_set
from tests.cli_run import run_cli
from tests.conftest import ScriptedServer, start_scripted_server, write_spec
from tests.memory.memory_examples import make_example

TWO_STEP = r"path to room 4\d\?"
"""The 2stepPath items' tasks (a path to room 4x), which the scripted server is told to treat otherwise."""

VARY = ("--vary-on", TWO_STEP)
"""The server's sampled answers to the 2stepPath items change with the seed."""


def worse_when(phrase: str) -> tuple[str, ...]:
    """The server grades the 2stepPath items wrong when the prompt holds ``phrase``."""
    return ("--worse-when", phrase, "--worse-on", TWO_STEP)


@contextmanager
def robust_project(
    tmp: Path, *server_args: str, paired: bool = False
) -> Iterator[tuple[ScriptedServer, Path]]:
    """A scripted server started with ``server_args`` and :func:`robust_spec` (:func:`paired_spec`
    when ``paired``) against it: ``with robust_project(tmp, *VARY) as (srv, spec):``."""
    with start_scripted_server(tmp, *server_args) as srv:
        yield srv, (paired_spec if paired else robust_spec)(tmp, srv.base_url)


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


def refuses_lost_placeholder(tmp: Path, placeholder: str, replacement: str, study: str, option: str) -> str:
    """``allure study STUDY OPTION mine`` with :func:`lost_placeholder`'s prompt set (``placeholder``
    written as ``replacement``): exit 2 naming it, with the fix, no traceback and no study written. Its stderr."""
    spec = robust_spec(tmp, "http://127.0.0.1:9/v1")
    mine = lost_placeholder(tmp, placeholder, replacement)
    res = run_cli(tmp, "study", study, "--spec", str(spec), option, str(mine))
    assert res.returncode == 2 and f"lost placeholder(s) ['{placeholder}']" in res.stderr, res.stderr
    assert "fix:" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp / "proj" / ".allure" / "studies").exists()
    return res.stderr
