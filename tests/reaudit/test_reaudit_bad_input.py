"""Bad input to ``allure reaudit``: a clear error naming the field, exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from allure.store import RunStore, project_db_path
from tests.cli_run import run_cli
from tests.reaudit.helpers import reaudit_in, write_reaudit_spec

pytestmark = pytest.mark.integration


def _snapshot(project: Path) -> dict[str, int]:
    """Every file under the project's .allure/ with its size (empty when there is none)."""
    root = project / ".allure"
    return (
        {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}
        if root.exists()
        else {}
    )


def test_unknown_set_name_without_store(tmp_path: Path) -> None:
    res = run_cli(tmp_path, "reaudit", "nosuch", "--project", str(tmp_path), project=False)
    assert res.returncode == 2, res.stderr
    assert "unknown frozen set 'nosuch'" in res.stderr and "allure freeze" in res.stderr
    assert not (tmp_path / ".allure").exists()


def test_unknown_set_name_with_store(tmp_path: Path) -> None:
    spec = write_reaudit_spec(tmp_path, None, kind="replay")
    assert run_cli(tmp_path, "reaudit", str(spec), "--project", str(tmp_path), project=False).returncode == 0
    before = _snapshot(tmp_path)
    res = run_cli(tmp_path, "reaudit", "nightlyy", "--project", str(tmp_path), project=False)
    assert res.returncode == 2
    assert "unknown frozen set 'nightlyy'" in res.stderr and "known sets: nightly" in res.stderr
    assert _snapshot(tmp_path) == before
    assert run_cli(tmp_path, "history", "nightlyy", "--project", str(tmp_path), project=False).returncode == 2


def test_gate_metric_that_does_not_exist(tmp_path: Path) -> None:
    spec = write_reaudit_spec(tmp_path, None, kind="replay", gate="[gate.min]\nacuracy = 0.7\n")
    res = run_cli(tmp_path, "reaudit", str(spec), "--project", str(tmp_path), project=False)
    assert res.returncode == 2
    assert (
        "unknown gate metric 'acuracy'" in res.stderr
        and f"{spec}:" in res.stderr
        and "field 'gate.min'" in res.stderr
    )
    assert "accuracy" in res.stderr  # the fix lists the known metrics
    assert not (tmp_path / ".allure").exists()


def test_threshold_outside_unit_interval(tmp_path: Path) -> None:
    spec = write_reaudit_spec(tmp_path, None, kind="replay", gate="[gate.max_drop]\naccuracy = 1.5\n")
    res = run_cli(tmp_path, "reaudit", str(spec), "--project", str(tmp_path), project=False)
    assert res.returncode == 2
    assert "gate.max_drop.accuracy = 1.5 is outside [0, 1]" in res.stderr
    assert not (tmp_path / ".allure").exists()


def test_baseline_of_another_set(tmp_path: Path) -> None:
    a = write_reaudit_spec(tmp_path, None, kind="replay", name="a.toml", set_name="set-a")
    assert run_cli(tmp_path, "reaudit", str(a), "--project", str(tmp_path), project=False).returncode == 0
    b = write_reaudit_spec(tmp_path, None, kind="replay", name="b.toml", set_name="set-b")
    assert run_cli(tmp_path, "reaudit", str(b), "--project", str(tmp_path), project=False).returncode == 0
    store = RunStore(project_db_path(tmp_path))
    a_id = store.reaudit_docs("set-a")[0]["id"]
    store.close()
    pinned = write_reaudit_spec(
        tmp_path, None, kind="replay", name="b2.toml", set_name="set-b", gate=f'[gate]\nbaseline = "{a_id}"\n'
    )
    before = _snapshot(tmp_path)
    res = run_cli(tmp_path, "reaudit", str(pinned), "--project", str(tmp_path), project=False)
    assert res.returncode == 2
    assert f"baseline '{a_id}' is a re-audit of set 'set-a', not of 'set-b'" in res.stderr
    assert _snapshot(tmp_path) == before
    unknown = write_reaudit_spec(
        tmp_path, None, kind="replay", name="b3.toml", set_name="set-b", gate='[gate]\nbaseline = "ra-nope"\n'
    )
    res = run_cli(tmp_path, "reaudit", str(unknown), "--project", str(tmp_path), project=False)
    assert res.returncode == 2 and "unknown baseline re-audit 'ra-nope'" in res.stderr
    assert _snapshot(tmp_path) == before


def test_notify_env_variable_not_set(tmp_path: Path) -> None:
    spec = write_reaudit_spec(tmp_path, None, kind="replay")
    res = reaudit_in(tmp_path, spec, "--notify", "env:NO_SUCH_HOOK")
    assert res.returncode == 2 and "NO_SUCH_HOOK is not set" in res.stderr
    assert not (tmp_path / ".allure").exists()


def test_spec_without_reaudit_table(tmp_path: Path) -> None:
    spec = write_reaudit_spec(tmp_path, None, kind="replay")
    text = spec.read_text().replace("[reaudit]", "").replace('set = "nightly"\nsplit = "all"\nprobe = 0', "")
    spec.write_text(text)
    res = run_cli(tmp_path, "reaudit", str(spec), "--project", str(tmp_path), project=False)
    assert res.returncode == 2 and "no [reaudit] table" in res.stderr
    assert not (tmp_path / ".allure").exists()
