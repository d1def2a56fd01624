"""Output paths and the webhook URL are checked before a re-audit runs (issue 27, group 4).

A bad ``--markdown``, ``--junit``, ``--json`` or ``--notify`` is exit 2 with no traceback and no
re-audit recorded; a webhook that fails after the work is reported on stderr and in the JSON
record, and the gate's exit status stays what the gate said.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from allure.store import project_db_path
from tests.cli_run import run_cli
from tests.reaudit.helpers import reaudit_in, write_reaudit_spec

pytestmark = pytest.mark.integration


def reaudit_rows(project: Path) -> int:
    db = project_db_path(project)
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM reaudits").fetchone()[0])


@pytest.fixture(scope="module")
def reaudited(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with one replay re-audit of set ``nightly`` (its spec ``reaudit.toml``), run once
    for the module; each test that needs it works on a copy (:func:`project`)."""
    root = tmp_path_factory.mktemp("reaudited")
    spec = write_reaudit_spec(root, None, kind="replay")
    assert reaudit_in(root, spec).returncode == 0
    return root


@pytest.fixture
def project(reaudited: Path, tmp_path: Path) -> Path:
    """A fresh copy of :func:`reaudited`'s project, for one test to change."""
    root = tmp_path / "p"
    shutil.copytree(reaudited, root)
    return root


@pytest.mark.parametrize(
    ("option", "value", "words"),
    [
        ("--markdown", "/proc/nope/x.md", "option '--markdown'"),
        ("--junit", "audit-spec-as-folder/x.xml", "is a file"),
        ("--json", ".", "this is a folder"),
        ("--notify", "http://[::1", "not a valid URL"),
        ("--notify", "file:///etc/passwd", "only http:// and https://"),
    ],
)
def test_bad_output_is_refused_before_any_work(project: Path, option: str, value: str, words: str) -> None:
    spec = project / "reaudit.toml"
    (project / "audit-spec-as-folder").write_text("a file")
    before = reaudit_rows(project)
    res = reaudit_in(project, spec, option, value)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr and words in res.stderr and "fix:" in res.stderr, res.stderr
    assert reaudit_rows(project) == before == 1


def test_webhook_failing_after_the_work_keeps_the_gate_status(tmp_path: Path) -> None:
    spec = write_reaudit_spec(tmp_path, None, kind="replay")
    hook = "http://127.0.0.1:9/hook"  # nothing listens on the discard port
    res = reaudit_in(tmp_path, spec, "--notify", hook, "--json", "r.json")
    assert res.returncode == 0, res.stderr  # the gate passed; the webhook's failure does not change that
    assert "warning:" in res.stderr and "webhook POST failed" in res.stderr
    record = json.loads((tmp_path / "r.json").read_text())
    assert "webhook POST failed" in record["notify_error"]
    assert reaudit_rows(tmp_path) == 1


def test_history_plot_and_memory_map_into_an_unwritable_place(project: Path) -> None:
    res = run_cli(
        project,
        "history",
        "nightly",
        "--project",
        str(project),
        "--plot",
        "/proc/nope/p.png",
        project=False,
    )
    assert res.returncode == 2 and "option '--plot'" in res.stderr and "Traceback" not in res.stderr
    res = run_cli(
        project, "memory", "map", "--project", str(project), "--out", "/proc/nope/m.png", project=False
    )
    assert res.returncode == 2 and "option '--out'" in res.stderr and "Traceback" not in res.stderr, (
        res.stderr
    )
