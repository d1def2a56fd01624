"""An audit on a PostgreSQL store ([store] url): it pauses in one process and resumes in another
from the LangGraph checkpoint kept in the same database; nothing is written to the SQLite files."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from allure.store import RunStore, open_project_store
from allure.store._url import STORE_POINTER
from tests.cli_run import allure

pytestmark = pytest.mark.integration

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "v0_paused"


def _allure(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return allure(*args, cwd=cwd, env={"ALLURE_STORE_URL": None})  # the spec's [store] url decides


def _project(tmp_path: Path, url: str) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    shutil.copy(FIXTURE / "items.jsonl", project / "items.jsonl")
    text = (FIXTURE / "audit.toml").read_text().replace('name = "v0-fixture"', 'name = "pg-audit"')
    (project / "audit.toml").write_text(text + f'\n[store]\nurl = "{url}"\n')
    return project


def test_a_paused_run_resumes_in_another_process_from_postgres(tmp_path: Path, pg_url: str) -> None:
    # the URL carries a password (trust auth ignores it): it must not be stored anywhere
    url = pg_url.replace("allure@", "allure:pw-s3cret@")
    project = _project(tmp_path, url)
    res = _allure("audit", "audit.toml", "--project", str(project), cwd=project)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "paused for review" in res.stdout
    allure_dir = project / ".allure"
    assert not (allure_dir / "allure.db").exists() and not (allure_dir / "checkpoints.db").exists()
    pointer = (project / STORE_POINTER).read_text()
    assert "pw-s3cret" not in pointer and pg_url.split("@")[1] in pointer

    store = RunStore(project / "x.db", create=False, url=pg_url)
    run = store.latest_run(status="paused")
    assert run is not None and run.spec["name"] == "pg-audit"
    assert "pw-s3cret" not in json.dumps(run.spec)  # the stored spec keeps the URL without its password
    n_calls = store.call_count()
    assert store._query("SELECT COUNT(*) AS n FROM checkpoints")[0]["n"] > 0  # PostgresSaver's table
    pending = store.candidates(run.id, status="pending")
    assert pending
    decisions = project / "decisions.jsonl"
    decisions.write_text(
        "\n".join(json.dumps({"candidate_id": c.id, "decision": "approve"}) for c in pending)
    )

    # another process, given only the project folder: it finds the store through .allure/store.toml
    res = _allure("resume", run.id, "--decisions", str(decisions), "--project", str(project), cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert store.get_run(run.id).status == "done"
    assert set(store.metrics(run.id)) == {1, 2}
    second = store.verdicts(run.id, 2)
    splits = store.splits(
        run.id
    )  # cross-fitted: held-out items see every example, audit items the other folds' examples
    assert len(second) == 12 and all(
        len(v.icl_ids) == len(pending) if splits[i] == "heldout" else len(v.icl_ids) <= len(pending)
        for i, v in second.items()
    )
    assert any(splits[i] == "heldout" for i in second)
    assert store.call_count() > n_calls  # the second iteration's prompts carry the examples
    assert not (allure_dir / "allure.db").exists() and not (allure_dir / "checkpoints.db").exists()
    again = open_project_store(project, create=False)  # the library finds it the same way
    assert again.url == pg_url and again.get_run(run.id).status == "done"  # the pointer: no password
    again.close()
    store.close()
