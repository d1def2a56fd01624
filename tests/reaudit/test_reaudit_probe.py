"""The provider-drift probe against the scripted server (issue 27, group 5).

The server answers the opposite grade while a file exists: a provider that changed the model
behind the same name, which the fingerprint cannot see. Unchanged: the second re-audit sends only
the probe's N fresh calls and reports no drift. Changed: the probe disagrees beyond the model's
repeat noise, the re-audit reports provider drift (summary, JSON, JUnit), runs the whole set
fresh (stored beside the old calls), and the history shows which re-audit used which calls.
"""

from __future__ import annotations

import json
import sqlite3
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from allure.reaudit import judge_drift
from allure.store import project_db_path
from tests.cli_run import run_cli
from tests.conftest import ScriptedServer, start_scripted_server
from tests.reaudit.helpers import write_reaudit_spec

pytestmark = pytest.mark.integration

N_ITEMS = 24  # write_items: 12 per problem type
PROBE = 6


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ScriptedServer]:
    srv = start_scripted_server(tmp_path, "--invert-if-file", str(tmp_path / "invert"))
    try:
        yield srv
    finally:
        srv.stop()


def stored_calls(project: Path) -> int:
    with sqlite3.connect(project_db_path(project)) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0])


def reaudit(tmp: Path, srv: ScriptedServer, *extra: str) -> tuple[dict, int, str]:
    """Run one re-audit; its JSON record, the requests it sent, its stderr."""
    sent = len(srv.requests())
    spec = tmp / "reaudit.toml"
    res = run_cli(
        tmp,
        "reaudit",
        str(spec),
        "--project",
        str(tmp),
        "--json",
        "r.json",
        "--junit",
        "j.xml",
        *extra,
        project=False,
    )
    assert res.returncode in (0, 1), res.stderr
    return json.loads((tmp / "r.json").read_text()), len(srv.requests()) - sent, res.stdout + res.stderr


def test_judge_drift_by_hand() -> None:
    # 6 probe items, noise 0 -> p0 = 1/12; P(X >= 6) = (1/12)^6 ~ 3.3e-7: drift
    p, drift = judge_drift(6, 6, 0.0, 0.05)
    assert drift and p == pytest.approx((1 / 12) ** 6)
    # 1 of 6 with noise 0: P(X >= 1) = 1 - (11/12)^6 ~ 0.41: not beyond the noise
    p, drift = judge_drift(1, 6, 0.0, 0.05)
    assert not drift and p == pytest.approx(1 - (11 / 12) ** 6)
    assert judge_drift(0, 6, 0.5, 0.05) == (1.0, False)


def test_unchanged_provider_costs_only_the_probe(tmp_path: Path, server: ScriptedServer) -> None:
    write_reaudit_spec(tmp_path, server.base_url, probe=PROBE)
    first, sent, _ = reaudit(tmp_path, server)
    # the whole set, the probe, and the noise measurement (once per fingerprint)
    assert sent == N_ITEMS + 2 * PROBE
    assert first["probe"]["drift"] is False and first["probe"]["noise_rate"] == 0.0
    assert first["probe"]["noise_from"] == first["id"]
    second, sent, out = reaudit(tmp_path, server)
    assert sent == PROBE and second["stats"]["calls"] == PROBE
    assert second["probe"] == {**second["probe"], "n": PROBE, "disagreements": 0, "drift": False}
    assert second["probe"]["noise_from"] == first["id"]  # the noise is not measured again
    assert second["generation"] == "" and second["fresh_reason"] == ""
    assert "no provider drift: 0 of 6" in out


def test_changed_provider_is_drift_and_a_full_fresh_run(tmp_path: Path, server: ScriptedServer) -> None:
    write_reaudit_spec(tmp_path, server.base_url, probe=PROBE)
    first, _, _ = reaudit(tmp_path, server)
    calls_before = stored_calls(tmp_path)
    (tmp_path / "invert").write_text("the provider swapped the model")
    second, sent, out = reaudit(tmp_path, server)
    assert second["probe"]["drift"] is True and second["probe"]["disagreements"] == PROBE
    assert sent == N_ITEMS  # the probe's 6, then the other 18 items fresh (the probe's re-used)
    assert second["fresh_reason"] == "provider drift" and second["generation"] == f"fresh:{second['id']}"
    flipped = [i for i, lab in first["labels"].items() if second["labels"][i] != lab]
    assert len(flipped) == N_ITEMS  # every verdict is the new model's
    assert stored_calls(tmp_path) == calls_before + N_ITEMS  # beside the old calls, not over them
    assert "provider drift: 6 of 6" in out
    summary = (tmp_path / ".allure" / "reaudits" / second["id"] / "summary.md").read_text()
    assert "Provider drift:" in summary
    props = {p.get("name"): p.get("value") for p in ET.parse(tmp_path / "j.xml").iter("property")}
    assert props["provider_drift"] == "true" and props["generation"] == second["generation"]

    # the next re-audit reads the fresh generation: no drift, only the probe's calls
    third, sent, _ = reaudit(tmp_path, server)
    assert sent == PROBE and third["probe"]["drift"] is False
    assert third["generation"] == second["generation"] and third["labels"] == second["labels"]

    # --fresh asks every item again
    fourth, sent, _ = reaudit(tmp_path, server, "--fresh")
    assert sent == N_ITEMS and fourth["probe"] is None and fourth["fresh_reason"] == "--fresh"

    hist = run_cli(
        tmp_path, "history", "nightly", "--project", str(tmp_path), "--export", "h.csv", project=False
    )
    assert hist.returncode == 0, hist.stderr
    rows = (tmp_path / "h.csv").read_text().splitlines()[1:]
    assert [r.split(",")[-2:] for r in rows] == [
        ["stored", "0/6"],
        ["fresh (provider drift)", "6/6 DRIFT"],
        [f"stored {second['generation']}", "0/6"],
        ["fresh (--fresh)", ""],
    ]


def test_replay_and_default_probe_sizes(tmp_path: Path) -> None:
    write_reaudit_spec(tmp_path, None, kind="replay", probe=None)
    res = run_cli(
        tmp_path, "reaudit", "reaudit.toml", "--project", str(tmp_path), "--json", "r.json", project=False
    )
    assert res.returncode == 0, res.stderr
    assert json.loads((tmp_path / "r.json").read_text())["probe"] is None


def test_probe_default_by_kind() -> None:
    from allure.config import parse_spec
    from allure.reaudit import probe_size

    def spec(**evaluator: object) -> object:
        return parse_spec({"dataset": {"path": "x.jsonl"}, "evaluator": evaluator})

    assert probe_size(spec(kind="openai", base_url="http://127.0.0.1:9/v1")) == 20  # type: ignore[arg-type]
    assert probe_size(spec(kind="replay")) == 0  # type: ignore[arg-type]
    assert probe_size(spec(kind="local")) == 0  # type: ignore[arg-type]
