"""A frozen set is checked against its content hash on every read (issue 27, group 6): a hand-edited
or truncated set is exit 2 naming the set, the version and what changed; nothing is recorded."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from allure.store import project_db_path
from tests.cli_run import run_cli
from tests.reaudit.helpers import reaudit_in, write_reaudit_spec

pytestmark = pytest.mark.integration


def relabel(doc: dict) -> None:
    first = doc["items"][0]
    first["reference_label"] = 1 - int(first["reference_label"])


def truncate(doc: dict) -> None:
    del doc["items"][-1]


def rehash(doc: dict) -> None:
    relabel(doc)
    doc["content_hash"] = "0" * 16  # the JSON's own hash edited too: the table's pinned hash still tells


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (relabel, ["hash to"]),
        (truncate, ["holds 23 items where 24 were pinned"]),
        (rehash, ["recorded hash 0000000000000000 is not the pinned"]),
    ],
)
def test_edited_set_is_refused(tmp_path: Path, edit: Callable[[dict], None], words: list[str]) -> None:
    spec = write_reaudit_spec(tmp_path, None, kind="replay")
    assert reaudit_in(tmp_path, spec).returncode == 0
    db = project_db_path(tmp_path)
    with sqlite3.connect(db) as conn:
        doc = json.loads(conn.execute("SELECT set_json FROM frozen_sets").fetchone()[0])
        edit(doc)
        conn.execute("UPDATE frozen_sets SET set_json = ?", (json.dumps(doc),))
        before = conn.execute("SELECT COUNT(*) FROM reaudits").fetchone()[0]
    for args in (["reaudit", str(spec)], ["reaudit", "nightly"], ["history", "nightly"]):
        res = run_cli(tmp_path, *args, "--project", str(tmp_path), project=False)
        assert res.returncode == 2, res.stderr
        assert "Traceback" not in res.stderr
        assert "frozen set 'nightly' v1 does not match its content hash" in res.stderr, res.stderr
        for w in words:
            assert w in res.stderr, res.stderr
        assert "fix:" in res.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM reaudits").fetchone()[0] == before
