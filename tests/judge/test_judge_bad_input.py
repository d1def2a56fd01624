"""Bad input to ``allure judge label`` / ``export``: exit 2 naming the file and the field, the fix,
nothing written and no call sent."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_run import audit_ok, run_cli
from tests.conftest import ScriptedServer, server_fixture, start_scripted_server, write_spec

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A bundle exported from a one-pass audit (the folder holding it and ``items.jsonl``)."""
    tmp = tmp_path_factory.mktemp("bundle")
    with start_scripted_server(tmp) as srv:
        audit_ok(tmp, write_spec(tmp, srv.base_url, max_iterations=1), timeout=300)
    res = run_cli(tmp, "judge", "export", "--out", str(tmp / "judge"))
    assert res.returncode == 0, res.stdout + res.stderr
    yield tmp


server = server_fixture("server")


def _label(root: Path, work: Path, judge: Path, data: Path, srv: ScriptedServer, *extra: str):  # type: ignore[no-untyped-def]
    return run_cli(
        work, "judge", "label", str(data), "--judge", str(judge), "--base-url", srv.base_url, *extra
    )


def _copy(bundle: Path, tmp: Path) -> Path:
    shutil.copytree(bundle / "judge", tmp / "judge")
    return tmp / "judge"


def test_a_file_edited_after_export_is_refused(bundle: Path, tmp_path: Path, server: ScriptedServer) -> None:
    judge = _copy(bundle, tmp_path)
    (judge / "prompts" / "system.txt").write_text("You are lenient.\n")
    res = _label(bundle, tmp_path, judge, bundle / "items.jsonl", server, "--out", str(tmp_path / "v.jsonl"))
    assert res.returncode == 2
    assert "system.txt" in res.stderr and "changed after export" in res.stderr and "fix:" in res.stderr
    assert not (tmp_path / "v.jsonl").exists() and server.requests() == []


def test_a_missing_bundle_and_a_missing_file_are_refused(
    bundle: Path, tmp_path: Path, server: ScriptedServer
) -> None:
    res = _label(bundle, tmp_path, tmp_path / "nowhere", bundle / "items.jsonl", server)
    assert res.returncode == 2 and "no judge bundle here" in res.stderr
    judge = _copy(bundle, tmp_path)
    (judge / "examples.jsonl").unlink()
    res = _label(bundle, tmp_path, judge, bundle / "items.jsonl", server)
    assert res.returncode == 2 and "examples.jsonl" in res.stderr and "missing" in res.stderr
    assert server.requests() == []


def test_a_bundle_from_a_newer_allure_is_refused(
    bundle: Path, tmp_path: Path, server: ScriptedServer
) -> None:
    judge = _copy(bundle, tmp_path)
    manifest = json.loads((judge / "manifest.json").read_text())
    (judge / "manifest.json").write_text(json.dumps({**manifest, "allure_version": "99.0.0"}))
    res = _label(bundle, tmp_path, judge, bundle / "items.jsonl", server)
    assert res.returncode == 2
    assert "allure 99.0.0" in res.stderr and "allure_version" in res.stderr and "upgrade" in res.stderr
    assert server.requests() == []


def test_data_without_a_column_the_prompt_needs_is_refused(
    bundle: Path, tmp_path: Path, server: ScriptedServer
) -> None:
    rows = [json.loads(x) for x in (bundle / "items.jsonl").read_text().splitlines()]
    data = tmp_path / "new.jsonl"
    data.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "question"}) + "\n" for r in rows))
    res = _label(bundle, tmp_path, bundle / "judge", data, server, "--out", str(tmp_path / "v.csv"))
    assert res.returncode == 2
    assert str(data) in res.stderr and "field 'question'" in res.stderr and "task" in res.stderr
    assert "fix:" in res.stderr
    assert not (tmp_path / "v.csv").exists() and server.requests() == []


def test_a_label_column_outside_the_judges_label_set_is_refused_and_a_good_one_gives_agreement(
    bundle: Path, tmp_path: Path, server: ScriptedServer
) -> None:
    rows = [json.loads(x) for x in (bundle / "items.jsonl").read_text().splitlines()]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        "".join(json.dumps({**r, "label": "maybe" if i == 3 else 1}) + "\n" for i, r in enumerate(rows))
    )
    res = _label(bundle, tmp_path, bundle / "judge", bad, server, "--out", str(tmp_path / "v.jsonl"))
    assert res.returncode == 2
    assert f"{bad}:4" in res.stderr and "label" in res.stderr and "fix:" in res.stderr
    assert not (tmp_path / "v.jsonl").exists() and server.requests() == []
    good = tmp_path / "good.jsonl"
    good.write_text("".join(json.dumps({**r, "label": r["judge"]}) + "\n" for r in rows))
    res = _label(bundle, tmp_path, bundle / "judge", good, server)
    assert res.returncode == 0, res.stderr
    assert "agreement with the data's label column:" in res.stdout and f"/{len(rows)} (" in res.stdout


def test_an_output_that_cannot_be_written_is_refused_before_any_call(
    bundle: Path, tmp_path: Path, server: ScriptedServer
) -> None:
    (tmp_path / "afile").write_text("x")
    for out, said in (
        (tmp_path / "afile" / "v.jsonl", "is a file"),
        (tmp_path / "v.txt", "unknown output kind"),
    ):
        res = _label(bundle, tmp_path, bundle / "judge", bundle / "items.jsonl", server, "--out", str(out))
        assert res.returncode == 2 and said in res.stderr and "--out" in res.stderr, res.stderr
        assert not out.exists()
    assert server.requests() == []


def test_export_never_overwrites_a_folder_that_is_not_a_bundle(bundle: Path, tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    res = run_cli(bundle, "judge", "export", "--out", str(tmp_path / "mine"))
    assert res.returncode == 2 and "not a judge bundle" in res.stderr
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["notes.txt"]
