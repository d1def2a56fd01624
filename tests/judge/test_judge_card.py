"""The card says which judge was exported: the zero-shot one a guard kept, and a warning first when
the held-out claim found the adopted judge worse than zero-shot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_run import audit_ok, run_cli
from tests.conftest import start_scripted_server, write_spec

pytestmark = pytest.mark.integration


def _audit_and_export(tmp: Path, **loop: object) -> tuple[dict, str]:
    """A two-pass audit on a server whose examples make it pass every item, exported: (card, output)."""
    with start_scripted_server(tmp, "--examples-hurt") as srv:
        audit_ok(tmp, write_spec(tmp, srv.base_url, max_iterations=2, **loop), timeout=300)
    res = run_cli(tmp, "judge", "export", "--out", str(tmp / "j"))
    assert res.returncode == 0, res.stdout + res.stderr
    return json.loads((tmp / "j" / "card.json").read_text()), res.stdout + res.stderr


def test_a_run_whose_guard_kept_zero_shot_exports_the_zero_shot_judge(tmp_path: Path) -> None:
    card, _ = _audit_and_export(tmp_path)
    assert card["zero_shot"] and card["iteration"] == card["adopted_iteration"] == 1
    assert "guard kept" in card["judge"] and card["examples"] == 0
    assert (tmp_path / "j" / "examples.jsonl").read_text() == ""
    assert any("not adopted" in reason for reason in card["guard"].values())
    assert "guard kept" in (tmp_path / "j" / "card.md").read_text().splitlines()[0]


def test_an_adopted_judge_worse_than_zero_shot_is_said_on_the_terminal_and_first_in_the_card(
    tmp_path: Path,
) -> None:
    card, out = _audit_and_export(tmp_path, guard=False)
    assert not card["zero_shot"] and card["iteration"] == 2
    assert card["claim"]["delta"] is not None and card["claim"]["delta"] < 0
    first = (tmp_path / "j" / "card.md").read_text().splitlines()[0]
    assert first.startswith("WARNING: on the held-out split this judge scored worse")
    assert "--zero-shot" in first and first in out
