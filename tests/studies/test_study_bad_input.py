"""Bad input to ``allure study``: a one-line error with the fix, exit 2, nothing written."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from allure.memory import EpisodicMemory
from tests.cli_run import run_cli
from tests.conftest import write_spec
from tests.memory.memory_examples import make_example

pytestmark = pytest.mark.integration


def study(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(tmp, "study", *args)


def assert_clean_failure(tmp: Path, res: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr
    error_lines = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(error_lines) == 1, res.stderr
    for n in needles:
        assert n in res.stderr, (n, res.stderr)
    assert "fix:" in res.stderr
    assert not (tmp / "proj" / ".allure" / "studies").exists()
    db = tmp / "proj" / ".allure" / "allure.db"
    if db.exists():  # an existing store holds no study run
        import sqlite3

        with sqlite3.connect(db) as c:
            assert c.execute("SELECT COUNT(*) FROM runs WHERE info_json LIKE '%study%'").fetchone()[0] == 0


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    path = write_spec(tmp_path, "http://127.0.0.1:9/v1")
    EpisodicMemory.open(str(tmp_path / "memory")).add(
        [make_example(n, mode=m) for n, m in enumerate(["keywords", "keywords", "gibberish"])]
    )
    return path


def test_unknown_run(tmp_path: Path, spec: Path) -> None:
    (tmp_path / "proj" / ".allure").mkdir(parents=True)
    from allure.store import RunStore

    RunStore(tmp_path / "proj" / ".allure" / "allure.db").close()
    assert_clean_failure(tmp_path, study(tmp_path, "ablation", "--from-run", "run-nope"), "run-nope")


def test_no_store_for_run(tmp_path: Path) -> None:
    assert_clean_failure(tmp_path, study(tmp_path, "ablation", "--from-run", "run-nope"), "no run store")


def test_unknown_study(tmp_path: Path) -> None:
    assert_clean_failure(tmp_path, study(tmp_path, "show", "ablation-nope"), "unknown study 'ablation-nope'")


def test_empty_memory(tmp_path: Path) -> None:
    path = write_spec(tmp_path, "http://127.0.0.1:9/v1")
    EpisodicMemory.open(str(tmp_path / "memory"))  # created, empty
    assert_clean_failure(tmp_path, study(tmp_path, "ablation", "--spec", str(path)), "holds no example")


def test_missing_memory(tmp_path: Path) -> None:
    path = write_spec(tmp_path, "http://127.0.0.1:9/v1")
    res = study(tmp_path, "ablation", "--spec", str(path))
    assert_clean_failure(tmp_path, res)
    assert not (tmp_path / "memory").exists()


@pytest.mark.parametrize("sizes", ["0,-2", "2,x", "1.5", "0", ""])
def test_bad_sizes(tmp_path: Path, spec: Path, sizes: str) -> None:
    assert_clean_failure(tmp_path, study(tmp_path, "sweep", "--spec", str(spec), "--sizes", sizes), "--sizes")


def test_size_beyond_memory_and_bad_repeats(tmp_path: Path, spec: Path) -> None:
    res = study(tmp_path, "sweep", "--spec", str(spec), "--sizes", "0,8")
    assert_clean_failure(tmp_path, res, "exceeds the memory's 3 examples")
    res = study(tmp_path, "sweep", "--spec", str(spec), "--sizes", "0,2", "--repeats", "0")
    assert_clean_failure(tmp_path, res, "--repeats")


def test_unknown_cluster(tmp_path: Path, spec: Path) -> None:
    res = study(tmp_path, "ablation", "--spec", str(spec), "--clusters", "keywords,shouting")
    assert_clean_failure(tmp_path, res, "'shouting'", "keywords")


def test_unknown_by_and_split(tmp_path: Path, spec: Path) -> None:
    assert_clean_failure(tmp_path, study(tmp_path, "ablation", "--spec", str(spec), "--by", "colour"), "--by")
    res = study(tmp_path, "ablation", "--spec", str(spec), "--split", "train")
    assert_clean_failure(tmp_path, res, "--split")


def test_no_source(tmp_path: Path) -> None:
    assert_clean_failure(tmp_path, study(tmp_path, "ablation"), "--from-run")


@pytest.mark.parametrize(
    ("kind", "params", "needle"),
    [
        ("sweep", ["--param", "repeats=x"], "repeats 'x' is not a number"),
        ("sweep", ["--param", "sizes=0,-1"], "--sizes"),
        ("ablation", ["--param", "by=colour"], "by 'colour' is not known"),
        ("ablation", ["--param", "clusters=shouting"], "'shouting'"),
        ("sweep", ["--param", "size=0,2"], "did you mean `sizes`"),
        ("sweep", ["--param", "balance=colour"], "balance 'colour' is not known"),
        ("sensitivity", ["--param", "rephrasing=3"], "did you mean `rephrasings`"),
        ("entropy", ["--param", "samples=1"], "at least 2 samples per prompt"),
        ("consistency", ["--param", "temperature=hot"], "temperature 'hot' is not a number"),
        ("request", ["--param", "zero_shot=maybe"], "zero_shot 'maybe' is not yes or no"),
        ("arms", [], "needs its arms"),
        ("arms", ["--param", "file=nosuch.json"], "cannot read the arms"),
    ],
)
def test_study_run_checks_a_kinds_params_before_anything_is_written(
    tmp_path: Path, spec: Path, kind: str, params: list[str], needle: str
) -> None:
    assert_clean_failure(tmp_path, study(tmp_path, "run", kind, "--spec", str(spec), *params), needle)
