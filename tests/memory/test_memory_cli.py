"""``allure memory ...`` against a real memory directory and run store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from memory_examples import make_example, mixed_examples
from typer.testing import CliRunner

from allure.cli.main import app
from allure.errors import MemoryStoreError
from allure.memory import EpisodicMemory
from allure.models import Item, Verdict
from allure.store import RunStore, project_db_path
from tests.cli_run import allure

runner = CliRunner()


def _mem(tmp_path: Path) -> EpisodicMemory:
    mem = EpisodicMemory.open(str(tmp_path / ".allure" / "memory"))
    mem.add(mixed_examples())
    return mem


def _run(tmp_path: Path, *args: str):  # type: ignore[no-untyped-def]
    return runner.invoke(app, ["memory", *args, "--project", str(tmp_path)])


@pytest.mark.integration
def test_list_stats_and_env_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _mem(tmp_path)
    res = _run(tmp_path, "list")
    assert res.exit_code == 0, res.output
    assert res.stdout.count("icl-") == 13 and "13 example(s)" in res.output
    res = _run(tmp_path, "list", "--mode", "gibberish", "--json")
    assert [json.loads(line)["failure_mode"] for line in res.stdout.splitlines()] == ["gibberish"] * 3

    res = _run(tmp_path, "stats")
    assert res.exit_code == 0, res.output
    for mode, n in [("partial_correctness", 3), ("keywords", 3), ("lengthy_argument", 2), ("parroting", 2)]:
        assert any(line.split() == [mode, str(n)] for line in res.stdout.splitlines()), mode
    assert "ARI" in res.stdout and "NMI" in res.stdout and "size 13" in res.stdout
    stats = json.loads(_run(tmp_path, "stats", "--json", "--clusters", "3").stdout)
    assert stats["stats"]["by_problem_type"] == {"1stepPath": 7, "valuePath": 6}
    assert stats["clusters"]["n_clusters"] == 3

    other = tmp_path / "elsewhere"
    EpisodicMemory.open(str(other)).add([make_example(1)])
    monkeypatch.setenv("ALLURE_MEMORY", str(other))
    assert _run(tmp_path, "list").stdout.count("icl-") == 1


def test_show_counts_the_verdicts_that_carried_the_example(tmp_path: Path) -> None:
    mem = _mem(tmp_path)
    ex = mem.all()[0]
    store = RunStore(project_db_path(tmp_path))
    rid = store.create_run({"x": 1}, run_id="run-a")
    items = [Item(id=f"i{n}", task="t", response="r") for n in range(3)]
    store.add_items(rid, items, dict.fromkeys(["i0", "i1", "i2"], "heldout"), {"i0": 1, "i1": 0, "i2": 1})
    for it, label, icl in [("i0", 1, [ex.id]), ("i1", 1, [ex.id, "icl-x"]), ("i2", 1, ["icl-x"])]:
        [cid] = store.record_calls([Verdict(item_id=it, label=label, prompt_hash=f"h-{it}", icl_ids=icl)], {})
        store.record_verdicts(rid, 1, [(cid, it, False)])
    store.close()
    res = _run(tmp_path, "show", ex.id)
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout.split("\n\n")[0])["id"] == ex.id
    # i0: label 1 vs reference 1 -> right; i1: 1 vs 0 -> wrong; i2 did not carry it
    assert "carried it: 2; right 1 of 2" in res.stdout


@pytest.mark.slow
def test_export_import_delete(tmp_path: Path) -> None:
    mem = _mem(tmp_path)
    out = tmp_path / "mem.jsonl"
    assert _run(tmp_path, "export", str(out)).exit_code == 0
    target = tmp_path / "copy"
    res = runner.invoke(app, ["memory", "import", str(out), "--memory", str(target)])
    assert res.exit_code == 0 and "13 new" in res.stdout
    assert EpisodicMemory.open(str(target)).version().content_hash == mem.version().content_hash

    first = mem.all()[0].id
    assert "deleted 1" in _run(tmp_path, "delete", first).stdout
    res = _run(tmp_path, "delete", "--all")
    assert isinstance(res.exception, MemoryStoreError) and "--yes" in str(res.exception)
    res = _run(tmp_path, "delete", "icl-unknown", mem.all()[1].id)
    assert isinstance(res.exception, MemoryStoreError)
    assert mem.count() == 12  # nothing deleted by the failed command
    assert "deleted 12" in _run(tmp_path, "delete", "--all", "--yes").stdout
    assert mem.count() == 0


def test_import_with_a_bad_line_leaves_the_memory_unchanged(tmp_path: Path) -> None:
    mem = _mem(tmp_path)
    before = mem.version()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(make_example(70).model_dump_json() + "\n" + '{"id": "x", "response": 3}\n')
    res = _run(tmp_path, "import", str(bad))
    assert isinstance(res.exception, MemoryStoreError)
    assert f"{bad}:2" in str(res.exception)
    assert mem.version() == before


@pytest.mark.slow
def test_map_writes_a_png(tmp_path: Path) -> None:
    _mem(tmp_path)
    out = tmp_path / "map.png"
    res = _run(tmp_path, "map", "--out", str(out))
    assert res.exit_code == 0, res.output
    assert out.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.integration
def test_missing_or_corrupt_memory_exits_2(tmp_path: Path) -> None:
    args = ("memory", "list", "--project", str(tmp_path))
    proc = allure(*args, env={"ALLURE_MEMORY": None}, timeout=120)
    assert proc.returncode == 2 and "no episodic memory here" in proc.stderr
    bad = tmp_path / ".allure" / "memory"
    bad.mkdir(parents=True)
    (bad / "chroma.sqlite3").write_text("garbage")
    proc = allure(*args, env={"ALLURE_MEMORY": None}, timeout=120)
    assert proc.returncode == 2 and "corrupt" in proc.stderr
    assert (bad / "chroma.sqlite3").read_text() == "garbage"


def test_list_is_bounded_by_limit_and_says_how_many_more(tmp_path: Path) -> None:
    _mem(tmp_path)
    res = _run(tmp_path, "list", "--limit", "5")
    assert res.exit_code == 0, res.output
    assert res.stdout.count("icl-") == 5
    assert "5 of 13 example(s) shown; 8 more: --all, or --limit N" in res.output
    res = _run(tmp_path, "list", "--all", "--limit", "5")
    assert res.stdout.count("icl-") == 13


def test_stats_on_an_empty_memory_is_a_clean_error(tmp_path: Path) -> None:
    EpisodicMemory.open(str(tmp_path / ".allure" / "memory"))
    res = _run(tmp_path, "stats")
    assert isinstance(res.exception, MemoryStoreError), res.output  # main() turns it into exit 2
    assert "holds no examples" in str(res.exception) and res.exception.fix
