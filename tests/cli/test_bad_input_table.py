"""One table of bad inputs through the real CLI (issue 27): every case exits 2, prints no traceback,
names the place and a fix, and leaves ``.allure/`` as it was.

Most cases run in this process through Typer's ``CliRunner`` (with the same AllureError handling as
``allure.cli.main.main``), so the table costs seconds; a handful run as a real subprocess. Before
and after each case the project's file listing and the run store's row counts are compared.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import allure.prompts as allure_prompts
from allure.cli.main import app
from allure.errors import AllureError
from tests.cli_run import run_cli
from tests.conftest import replay_spec_text
from tests.test_spec_ranges import CASES as SPEC_CASES
from tests.test_spec_ranges import SPEC

PROJECT = "proj"
ESC = "a\x1bb\x07"


@contextlib.contextmanager
def chdir(path: Path) -> Iterator[None]:
    old = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def in_process(cwd: Path, args: list[str]) -> tuple[int | str, str]:
    """``allure ARGS`` through CliRunner: (exit status, stdout and stderr); an exception that is not an
    AllureError or SystemExit is returned as the status ``crash: TYPE``."""
    with chdir(cwd):
        res = CliRunner().invoke(app, args, env={"COLUMNS": "200", "ALLURE_TEST_KEY": "k"})
    out = res.output + (res.stderr if res.stderr_bytes is not None and res.stderr not in res.output else "")
    exc = res.exception
    if isinstance(exc, AllureError):
        return exc.exit_code, out + "error: " + exc.render()
    if exc is None or isinstance(exc, SystemExit):
        return res.exit_code, out
    import traceback

    return f"crash: {type(exc).__name__}", out + "".join(traceback.format_exception(exc))


def snapshot(root: Path) -> tuple[list[str], dict[str, int]]:
    """Every path under ``root/.allure`` and the row count of every table of the run store."""
    base = root / ".allure"
    listing = sorted(
        str(p.relative_to(base))
        for p in base.rglob("*")
        if not p.name.endswith(("-wal", "-shm", "-journal")) and "chroma" not in p.name
    )
    counts: dict[str, int] = {}
    db = base / "allure.db"
    if db.exists():
        with contextlib.closing(sqlite3.connect(db)) as conn:
            for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
                counts[table] = conn.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]
    return listing, counts


def spec_with(good: str, bad: str, *, reaudit: bool = False) -> str:
    text = SPEC.replace(good, bad, 1).replace('location = "mem"', 'location = ".allure/memory"')
    text = text.replace('response = "answer"', 'response = "answer"\nrecorded_label = "judge"')
    return text + ('\n[reaudit]\nset = "nightly"\nsplit = "all"\n' if reaudit else "")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str | Path]:
    """A project with a finished replay run (memory filled), a frozen set ``nightly`` with one re-audit,
    a study whose study.md was deleted, and the files the cases name."""
    root = tmp_path_factory.mktemp("bad-table")
    good = replay_spec_text(root, auto_approve=True)
    (root / "good.toml").write_text(good + '\n[reaudit]\nset = "nightly"\nsplit = "all"\n')
    res = run_cli(root, "audit", "good.toml")
    assert res.returncode == 0, res.stderr
    run_id = next(w for w in res.stdout.split() if w.startswith("run-"))
    res = run_cli(root, "reaudit", "good.toml")
    assert res.returncode == 0, res.stderr
    (root / "a-file").write_text("not a folder")
    (root / "bad.jsonl").write_text('{"id": "x", "decision": "maybe"}\nnot json\n')
    (root / "empty.csv").write_text("")
    (root / "dup.csv").write_text("label,Label,text\n1,0,a\n0,1,b\n")
    (root / "blank-header.csv").write_text("text,,label\na,1,0\nb,0,1\n")
    (root / "noreaudit.toml").write_text(spec_with("x", "x"))
    for i, (g, b, _field, _fix) in enumerate(SPEC_CASES):
        (root / f"bad{i}.toml").write_text(spec_with(g, b))
    _issue_36_files(root, good)
    res = run_cli(root, "study", "ablation", "--from-run", run_id)
    assert res.returncode == 0, res.stderr
    study = next(d for d in (root / PROJECT / ".allure" / "studies").iterdir())
    (study / "study.md").unlink()  # deleted by hand: `study show` said FileNotFoundError
    return {"root": root, "run": run_id, "study": study.name}


def _issue_36_files(root: Path, good: str) -> None:
    """The files of issue 36's cases: data rows that cannot work, prompt sets and a meta-prompt that
    are not UTF-8 or cannot judge, a prompt set whose rephrasing.json is not JSON (in ``proj2``)."""
    rows = [json.loads(x) for x in (root / "items.jsonl").read_text().splitlines()]
    for name, column, value in (
        ("null-response", "answer", None),
        ("list-response", "answer", ["Answer: 1", "9"]),
        ("bool-label", "judge", True),
    ):
        bad = [rows[0], {**rows[1], column: value}, *rows[2:]]  # line 2
        (root / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in bad))
        (root / f"{name}.toml").write_text(good.replace('path = "items.jsonl"', f'path = "{name}.jsonl"'))
    for folder, system in (
        ("noresp", "Reply with score: X, X one of {labels}."),
        ("badutf8", "Judge \udcff"),
    ):
        (root / folder).mkdir()
        (root / folder / "system.txt").write_bytes(system.encode("utf-8", "surrogateescape"))
        (root / folder / "user.txt").write_text(
            "Task: {task}" + ("" if folder == "noresp" else " {response}")
        )
        (root / folder / "assistant.txt").write_text("score: {label}")
    (root / "meta-bad.txt").write_bytes(b"Rephrase this \xff\xfe: {text}")
    (root / "latin1.csv").write_bytes("question,answer,label\nwas ist das?,gr\xfc\xdfe,1\n".encode("latin-1"))
    saved = root / "proj2" / ".allure" / "prompts" / "grader~r2s0"
    saved.mkdir(parents=True)
    for f in ("system.txt", "user.txt", "assistant.txt"):
        (saved / f).write_text((Path(allure_prompts.__file__).parent / "grader" / f).read_text())
    (saved / "rephrasing.json").write_text('{"source": "grader", "method": ')


P = ["--project", PROJECT]

# (args, words the message must hold); {run} is the base run's id
TABLE: list[tuple[list[str], list[str]]] = [
    *[
        (["validate", f"bad{i}.toml"], [f"bad{i}.toml", f"field '{c[2]}'", c[3]])
        for i, c in enumerate(SPEC_CASES)
    ],
    *[
        (["audit", f"bad{i}.toml", *P], [f"bad{i}.toml", f"field '{c[2]}'"])
        for i, c in enumerate(SPEC_CASES[:10])
    ],
    (["validate", "missing.toml"], ["missing.toml", "not found"]),
    (["audit", "missing.toml", *P], ["missing.toml"]),
    (["study", "ablation", "--from-run", "run-nope", *P], ["run-nope"]),
    (["study", "ablation", "--from-run", "{run}", "--name", "../../../evil", *P], ["--name", "'/'"]),
    (["study", "ablation", "--from-run", "{run}", "--name", "/tmp/evil", *P], ["--name", "'/'"]),
    (["study", "ablation", "--from-run", "{run}", "--name", ESC, *P], ["--name", "control characters"]),
    (["study", "ablation", "--from-run", "{run}", "--by", "nope", *P], ["--by"]),
    (["study", "sweep", "--from-run", "{run}", "--repeats", "0", *P], ["--repeats"]),
    (["study", "sweep", "--from-run", "{run}", "--repeats", "1000", *P], ["--repeats"]),
    (["study", "sweep", "--from-run", "{run}", "--sizes", "a,b", *P], ["--sizes"]),
    (["study", "sweep", "--from-run", "{run}", "--sizes", "0,1", "--name", "../x", *P], ["--name"]),
    (["study", "show", "nope", *P], ["nope"]),
    (["freeze", "run-nope", "--name", "s1", *P], ["run-nope"]),
    (["freeze", "{run}", "--name", "../x", *P], ["--name", "'/'"]),
    (["freeze", "{run}", "--name", "/abs/x", *P], ["--name", "'/'"]),
    (["freeze", "{run}", "--name", ESC, *P], ["--name", "control characters"]),
    (["freeze", "{run}", "--name", "ok", "--split", "nope", *P], ["--split"]),
    (["reaudit", "no-such-set", *P], ["no-such-set"]),
    (["reaudit", "noreaudit.toml", *P], ["no [reaudit] table"]),
    (["reaudit", "good.toml", "--markdown", "/proc/nope/x.md", *P], ["--markdown"]),
    (["reaudit", "good.toml", "--junit", "a-file/x.xml", *P], ["--junit", "is a file"]),
    (["reaudit", "good.toml", "--json", ".", *P], ["--json", "folder"]),
    (["reaudit", "good.toml", "--notify", "http://[::1", *P], ["--notify"]),
    (["reaudit", "good.toml", "--notify", "ftp://x", *P], ["--notify"]),
    (["reaudit", "good.toml", "--notify", "env:NO_SUCH_VAR_27", *P], ["NO_SUCH_VAR_27"]),
    (["history", "no-such-set", *P], ["no-such-set"]),
    (["history", "nightly", "--plot", "/proc/nope/p.png", *P], ["--plot"]),
    (["history", "nightly", "--export", "a-file/h.csv", *P], ["--export"]),
    (["prompts", "show", "nope", *P], ["nope"]),
    (["prompts", "rephrase", "nope", *P], ["nope"]),
    (["prompts", "rephrase", "grader", "--count", "0", *P], ["--count"]),
    (["prompts", "rephrase", "grader", "--count", "1000", *P], ["--count"]),
    (["prompts", "diff", "grader", "nope", *P], ["nope"]),
    (["init", "missing.jsonl", "-o", "x.toml"], ["missing.jsonl"]),
    (["init", "empty.csv", "-o", "x.toml"], ["empty.csv"]),
    (["init", "items.jsonl", "-o", "good.toml"], ["good.toml", "never overwrites"]),
    (["init", "proj", "-o", "x.toml"], ["proj"]),
    (["init", "dup.csv", "-o", "x.toml"], ["dup.csv:1", "differ only by case"]),
    (["init", "blank-header.csv", "-o", "x.toml"], ["blank-header.csv:1", "header cell 2 is empty"]),
    (["memory", "show", "nope", *P], ["nope"]),
    (["memory", "map", "--out", "/proc/nope/m.png", *P], ["--out"]),
    (["memory", "import", "missing.jsonl", *P], ["missing.jsonl"]),
    (["memory", "import", "bad.jsonl", *P], ["bad.jsonl"]),
    (["review", "{run}", "--import", "missing.jsonl", *P], ["{run}", "not paused"]),
    (["review", "run-nope", "--import", "bad.jsonl", *P], ["run-nope"]),
    (["resume", "run-nope", *P], ["run-nope"]),
    # issue 36: data rows that cannot work (group 2), tracebacks (3), wrong option names (6), others (7)
    (["validate", "null-response.toml"], ["null-response.jsonl:2", "field 'answer'", "response is missing"]),
    (["validate", "list-response.toml"], ["list-response.jsonl:2", "field 'answer'", "a JSON list"]),
    (["validate", "bool-label.toml"], ["bool-label.jsonl:2", "field 'judge'", "is a boolean"]),
    (["audit", "null-response.toml", *P], ["null-response.jsonl:2", "field 'answer'"]),
    (["audit", "good.toml", "--project", "/proc/allure-36/proj"], ["/proc/allure-36/proj", "--project"]),
    (["prompts", "show", "./badutf8", *P], ["badutf8/system.txt:1", "not UTF-8", "byte 0xff"]),
    (
        ["study", "sensitivity", "--from-run", "{run}", "-q", "3", "--meta-prompt", "meta-bad.txt", *P],
        ["meta-bad.txt:1", "not UTF-8"],
    ),
    (["study", "show", "{study}", *P], ["study.md", "missing"]),
    (["prompts", "list", "--project", "proj2"], ["rephrasing.json:1", "not JSON"]),
    (["study", "sensitivity", "--from-run", "{run}", "-q", "99999", *P], ["--rephrasings (-q)", "2 to 51"]),
    (["study", "entropy", "--from-run", "{run}", "-q", "1", *P], ["--rephrasings (-q)", "2 to 51"]),
    (["study", "entropy", "--from-run", "{run}", "-k", "100000", *P], ["--samples", "at most 100"]),
    (["study", "consistency", "--from-run", "{run}", "-t", "inf", *P], ["--temperature", "at most 2"]),
    (["prompts", "rephrase", "./noresp", *P], ["noresp/user.txt", "{response}"]),
    (["prompts", "rephrase", "grader", "--labels", "", *P], ["--labels", "0 label(s)"]),
    (["prompts", "rephrase", "grader", "--labels", "1", *P], ["--labels", "1 label(s)"]),
    (["prompts", "rephrase", "grader", "--labels", "yes,no,yes", *P], ["--labels", "yes twice"]),
    (["prompts", "rephrase", "grader", "--count", "99", *P], ["option --count", "1 to 50"]),
    (["reaudit", "good.toml", "--notify", "", *P], ["--notify", "empty"]),
    (["reaudit", "good.toml", "--notify", "env:", *P], ["--notify", "names no environment variable"]),
    (["memory", "stats", "--clusters", "0", *P], ["--clusters", "from 2 to"]),
    (["init", "latin1.csv", "-o", "x.toml"], ["latin1.csv:2", "not UTF-8"]),
    (
        ["study", "sensitivity", "--from-run", "{run}", "--prompts", "nope", *P],
        ["option --prompts", "'nope'"],
    ),
    (
        ["study", "request", "--from-run", "{run}", "--procedure-from", "nope", *P],
        ["option --procedure-from"],
    ),
    (
        ["study", "entropy", "--from-run", "{run}", "--conditions", "foo", *P],
        ["option --conditions", "'foo'"],
    ),
    (["prompts", "diff", "grader", "nope", *P], ["argument B", "'nope'"]),
]


def test_the_table_is_big_enough() -> None:
    assert len(TABLE) >= 60
    commands = {args[0] for args, _ in TABLE}
    assert {
        "validate",
        "audit",
        "study",
        "freeze",
        "reaudit",
        "history",
        "prompts",
        "init",
        "memory",
        "review",
    } <= commands


@pytest.mark.integration
@pytest.mark.parametrize(
    ("args", "words"), TABLE, ids=[" ".join(a[:3]).replace("\x1b", "ESC") for a, _ in TABLE]
)
def test_bad_input(base: dict[str, str | Path], args: list[str], words: list[str]) -> None:
    root = Path(base["root"])
    argv = [a.replace("{run}", str(base["run"])).replace("{study}", str(base["study"])) for a in args]
    before = snapshot(root / PROJECT)
    code, out = in_process(root, argv)
    assert code == 2, (code, out)
    assert "Traceback" not in out, out
    for w in words:
        assert w.replace("{run}", str(base["run"])).replace("{study}", str(base["study"])) in out, (w, out)
    assert "fix:" in out or "--help" in out, out  # our fix, or Typer's usage line for an option it checked
    assert snapshot(root / PROJECT) == before
    for stray in ("evil", "x.toml"):
        assert not (root / stray).exists() and not Path("/tmp/evil").exists()


@pytest.mark.integration
@pytest.mark.parametrize(
    "args",
    [
        ["validate", "bad0.toml"],
        ["reaudit", "good.toml", "--markdown", "/proc/nope/x.md"],
        ["study", "ablation", "--from-run", "{run}", "--name", "../../../evil"],
        ["freeze", "{run}", "--name", ESC],
        ["prompts", "show", "./badutf8"],
        ["study", "show", "{study}"],
        ["validate", "list-response.toml"],
    ],
)
def test_bad_input_in_a_real_process(base: dict[str, str | Path], args: list[str]) -> None:
    root = Path(base["root"])
    before = snapshot(root / PROJECT)
    argv = [a.replace("{run}", str(base["run"])).replace("{study}", str(base["study"])) for a in args]
    res = run_cli(root, *argv, project=False) if argv[0] == "validate" else run_cli(root, *argv)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr and "fix:" in res.stderr and "\x1b" not in res.stderr
    assert snapshot(root / PROJECT) == before
