"""Studies made by an older allure are found again by the same command: the projects under
``fixtures/`` were made at commit 0d22bc6 (id format 1) and at b8cb9d6 (format 2, main before the id
payload was named; ``fixtures/README.md``); today's code, running the same ``allure study`` commands,
resumes each under its pinned id and ``allure study list`` shows no second study."""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.cli_run import allure
from tests.studies.fixtures.make_id_fixture import study_args, write_memory

pytestmark = pytest.mark.integration  # runs `allure study` in a process

FIXTURES = Path(__file__).resolve().parent / "fixtures"

PINNED = {
    "ids_0d22bc6": {"sweep:0,1": "sweep-cf3b158f", "ablation": "ablation-be55c86e"},
    "ids_b8cb9d6": {"sweep:0,1": "sweep-ae58115c", "ablation": "ablation-0de945f9"},
}
"""Fixture project -> the study command (``make_id_fixture.study_args``) -> the id that commit gave it."""


def _project(tmp: Path, fixture: Path) -> tuple[Path, str]:
    """A copy of the fixture project (its store and studies under ``.allure/``, its memory rebuilt)
    and its audit run's id."""
    (tmp / ".allure").mkdir()
    shutil.copy(fixture / "allure.db", tmp / ".allure" / "allure.db")
    shutil.copytree(fixture / "studies", tmp / ".allure" / "studies")
    write_memory(tmp)
    with sqlite3.connect(tmp / ".allure" / "allure.db") as db:
        runs = [r for (r,) in db.execute("SELECT id FROM runs") if r.startswith("run-")]
    assert len(runs) == 1, runs
    return tmp, runs[0]


@pytest.mark.parametrize("made_at", sorted(PINNED))
def test_a_study_made_by_an_older_allure_is_found_again_by_the_same_command(
    tmp_path: Path, made_at: str
) -> None:
    pinned = PINNED[made_at]
    assert sorted(p.name for p in (FIXTURES / made_at / "studies").iterdir()) == sorted(pinned.values())
    root, run_id = _project(tmp_path, FIXTURES / made_at)
    for command, sid in pinned.items():
        res = allure("study", *study_args(command, run_id), cwd=root)
        assert res.returncode == 0, res.stdout + res.stderr
        assert f"study {sid}: " in res.stderr and f"files in .allure/studies/{sid}\n" in res.stdout, (
            res.stdout
        )
    listed = allure("study", "list", "--project", str(root))
    assert listed.returncode == 0, listed.stderr
    assert sorted(re.findall(r"^(\w+-[0-9a-f]{8}) ", listed.stdout, re.M)) == sorted(pinned.values())
    assert f"{len(pinned)} study(ies)" in listed.stderr
