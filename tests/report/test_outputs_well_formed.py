"""Every report allure writes stays well-formed when the data is hostile (issue 27, group 3).

Items whose id, problem type and response hold ESC, BEL, ``<&>``, backticks and pipes go through
a replay audit (``report.md``), a replay re-audit (``--junit``, ``--markdown``, ``--json``,
``summary.md``) and an ablation study (``study.md``); each output is parsed: the XML with an XML
parser, every Markdown table row has as many cells as its header, the JSON with ``json``.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from allure.reaudit import Flip, GateCheck, ReauditRecord, junit_xml, markdown_summary
from allure.safe_text import for_output, markdown_cell, markdown_code, xml_text
from tests.cli_run import run_cli
from tests.specs import COLUMNS, audit_toml, memory_and_loop

NASTY = "\x1b[2J\x07<b>&amp;`tick`|pipe|\ud800"
"""ESC, BEL, markup, an entity, backticks, pipes and a lone surrogate."""


def cells(row: str) -> int:
    """Cells of a Markdown table row: pipes not escaped by a backslash, minus the outer two."""
    return len(re.findall(r"(?<!\\)\|", row)) - 1


def assert_tables_well_formed(md: str) -> None:
    """Every table row has its header's cell count; no raw control character anywhere."""
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", md), repr(md[:300])
    header: int | None = None
    for line in md.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        if header is None:
            header = cells(line)
            continue
        assert cells(line) == header, line


def test_each_kind_of_output() -> None:
    text = "a\x1b\x07<&>`b`|c\ud800"
    escaped = xml_text(text).replace("&", "&amp;").replace("<", "&lt;")
    assert ET.fromstring(f"<x a='{escaped}'/>").get("a") == xml_text(
        text
    )  # well-formed, read back as written
    assert for_output(text, "xml") == xml_text(text)
    row = f"| {markdown_cell(text)} | {markdown_code(text)} |"
    assert cells(row) == 2, row
    assert markdown_code("x") == "`x`" and markdown_code("a`b") == "``a`b``"
    assert "\x1b" not in for_output(text, "terminal") and "\\[" in for_output("[b]", "markup")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("nasty")
    rows = []
    for i in range(16):
        nasty = NASTY.replace("\ud800", "")  # JSON on disk must be encodable; the surrogate is for unit use
        rows.append(
            {
                "uid": f"i{i}-{nasty}",
                "question": f"q{i} {nasty}",
                "answer": f"Answer: {i % 3} {nasty}",
                "gold": [f"Answer: {i % 2}"],
                "kind": f"t{i % 2}\x1b\x07{nasty}",
                "judge": int(i % 3 != 2),
            }
        )
    (tmp / "items.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp / "audit.toml").write_text(
        audit_toml(
            "nasty",
            top="auto_approve = true",
            columns=[c for c in COLUMNS if c != "generator"],
            rest=memory_and_loop(max_iterations=2, heldout_fraction=0.3, bootstrap_resamples=100)
            + '[reaudit]\nset = "nasty"\nsplit = "all"\n[gate.min]\naccuracy = 0.1\n',
        )
    )
    res = run_cli(tmp, "audit", "audit.toml")
    assert res.returncode == 0, res.stderr
    return tmp


@pytest.mark.integration
def test_run_report_markdown(project: Path) -> None:
    [report] = list((project / "proj").glob(".allure/runs/*/report.md"))
    assert_tables_well_formed(report.read_text(encoding="utf-8"))


@pytest.mark.integration
def test_replay_reaudit_outputs_parse(project: Path) -> None:
    res = run_cli(
        project, "reaudit", "audit.toml", "--junit", "j.xml", "--markdown", "s.md", "--json", "r.json"
    )
    assert res.returncode == 0, res.stderr
    tree = ET.parse(project / "j.xml")  # raises on a control character
    names = [c.get("name") or "" for c in tree.iter("testcase")]
    assert any(n.startswith("t0\u241b\u2407") for n in names), names  # ESC, BEL made visible
    assert_tables_well_formed((project / "s.md").read_text(encoding="utf-8"))
    record = ReauditRecord.model_validate_json((project / "r.json").read_text(encoding="utf-8"))
    assert any(k.startswith("i0-\x1b") for k in record.labels)  # the JSON keeps the data itself

    # the same record with a failed check and flips named by hostile data (the summary's flip table)
    flip = Flip(
        item_id=NASTY,
        problem_type=NASTY,
        reference_label=1,
        baseline_label=1,
        label=None,
        failure_mode="other",
        failure_reason=NASTY,
    )
    check = GateCheck(name=f"problem_type {NASTY}", kind="problem_type", metric="accuracy", passed=False)
    check.message = NASTY
    gate = record.gate.model_copy(
        update={"status": "regression", "checks": [check], "flips_to_wrong": [flip], "baseline_id": "ra-x"}
    )
    bad = record.model_copy(update={"gate": gate, "changes": [NASTY], "set_change": NASTY})
    ET.fromstring(junit_xml(bad))
    assert_tables_well_formed(markdown_summary(bad))


@pytest.mark.integration
def test_study_markdown(project: Path) -> None:
    runs = sorted((project / "proj" / ".allure" / "runs").iterdir())
    res = run_cli(project, "study", "ablation", "--from-run", runs[0].name)
    assert res.returncode == 0, res.stderr
    [study] = list((project / "proj").glob(".allure/studies/*/study.md"))
    assert_tables_well_formed(study.read_text(encoding="utf-8"))
