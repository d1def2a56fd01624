"""Data never reaches the terminal raw: every command that prints data, and report.md, show escape
sequences and Rich markup from a dataset literally (issue: OSC title/link, ESC[2J, colours)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from allure.safe_text import markup_escape, one_line, safe_json, visible
from tests.cli_run import allure
from tests.specs import audit_toml, memory_and_loop

HOSTILE = (
    "\x1b]0;pwned\x07"  # OSC 0: window title
    "\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\"  # OSC 8: hyperlink
    "\x1b[2J\x1b[31mred\x1b[0m"  # clear screen, colour
    "\x9b31mc1"  # C1 CSI
    "[bold]markup[/bold][link=http://evil.example]x[/link]"
)
RAW = ("\x1b", "\x07", "\x9b", "\x9d")
WIDE = {"COLUMNS": "200"}
"""A terminal 200 columns wide."""


def assert_safe(text: str) -> None:
    for ch in RAW:
        assert ch not in text, (repr(ch), text[:500])


def test_visible_and_friends() -> None:
    assert visible("a\x1b[2Jb\n\tc\x9b") == "a\u241b[2Jb\n\tc\\x9b"
    assert one_line("a\nb\tc\x07", width=5) == "a⏎ b…"
    doc = json.dumps({"x": "\x1b\x9b\x7f"}, ensure_ascii=False)
    assert "\x9b" in doc and json.loads(safe_json(doc)) == {"x": "\x1b\x9b\x7f"}
    assert_safe(safe_json(doc))
    assert markup_escape("[bold]x[/bold]\x1b") == "\\[bold]x\\[/bold]\u241b"


@pytest.fixture(scope="module")
def hostile_project(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """A replay audit (auto-approved, so memory fills) over items whose ids, problem types,
    generators and responses carry escape sequences and markup."""
    proj = tmp_path_factory.mktemp("hostile")
    rows = []
    for i in range(12):
        rows.append(
            {
                "uid": f"item-{i}-{HOSTILE}",
                "question": f"q{i} {HOSTILE}",
                "answer": f"Answer: {i % 3} {HOSTILE}",
                "gold": [f"Answer: {i % 2}"],
                "kind": f"type{i % 2}-{HOSTILE}",
                "model": f"gen{i % 2}-{HOSTILE}",
                "judge": 1,
            }
        )
    (proj / "items.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (proj / "audit.toml").write_text(
        audit_toml(
            "hostile",
            top="auto_approve = true",
            rest=memory_and_loop(max_iterations=2, heldout_fraction=0.3, bootstrap_resamples=100),
        )
    )
    res = allure("audit", "audit.toml", cwd=proj, env=WIDE)
    assert res.returncode == 0, res.stderr
    return proj, res


@pytest.mark.integration
def test_audit_output_and_report_md(hostile_project: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    proj, res = hostile_project
    assert_safe(res.stdout + res.stderr)
    [report] = list(proj.glob(".allure/runs/*/report.md"))
    md = report.read_text()
    assert_safe(md)
    assert "type0-\u241b]0;pwned" in md  # the problem-type table shows the data, made visible


@pytest.mark.integration
@pytest.mark.parametrize(
    "args",
    [
        ["memory", "list"],
        ["memory", "list", "--json"],
        ["memory", "stats"],
        ["memory", "stats", "--json"],
        ["runs"],
    ],
)
def test_commands_that_print_data(
    hostile_project: tuple[Path, subprocess.CompletedProcess[str]], args: list[str]
) -> None:
    proj, _ = hostile_project
    res = allure(*args, cwd=proj, env=WIDE)
    assert res.returncode == 0, res.stderr
    assert_safe(res.stdout + res.stderr)
    if args[:2] == ["memory", "list"] and "--json" not in args:
        assert "\u241b]0;pwned" in res.stdout and "[bold]markup[/bold]" in res.stdout
    if "--json" in args:
        json.loads(res.stdout.splitlines()[0])
        assert "\\u001b]0;pwned" in res.stdout  # the data itself is intact, escaped as JSON


@pytest.mark.integration
def test_memory_show_and_an_error_naming_hostile_data(
    hostile_project: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    proj, _ = hostile_project
    listed = allure("memory", "list", "--json", cwd=proj, env=WIDE)
    example_id = json.loads(listed.stdout.splitlines()[0])["id"]
    res = allure("memory", "show", example_id, cwd=proj, env=WIDE)
    assert res.returncode == 0, res.stderr
    assert_safe(res.stdout + res.stderr)
    assert "item-" in res.stdout
    missing = allure("memory", "show", f"nope-{HOSTILE}", cwd=proj, env=WIDE)
    assert missing.returncode == 2
    assert_safe(missing.stdout + missing.stderr)
    assert "nope-" in missing.stderr and "fix:" in missing.stderr


@pytest.mark.integration
def test_runs_never_cuts_an_id_when_piped(
    hostile_project: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    proj, audit = hostile_project
    run_id = next(w for w in audit.stdout.split() if w.startswith("run-"))
    res = allure("runs", cwd=proj, env={"COLUMNS": "40"}, timeout=60)
    assert run_id in res.stdout, res.stdout


def test_every_cli_printer_goes_through_the_safe_helpers() -> None:
    """Command modules print only via allure.cli._common (echo, echo_json, say, cell, stdout_console)."""
    cli = Path(__file__).resolve().parents[2] / "allure" / "cli"
    offenders = []
    for path in sorted(cli.glob("*.py")):
        if path.name in ("_common.py", "main.py"):
            continue
        text = path.read_text()
        for needle in ("typer.echo(", "typer.secho(", "print(", "Console("):
            lines = [
                i for i, line in enumerate(text.splitlines(), 1) if needle in line and ".print(" not in line
            ]
            offenders += [f"{path.name}:{i} {needle}" for i in lines]
    assert not offenders, offenders
