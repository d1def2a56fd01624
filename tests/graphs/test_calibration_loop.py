"""``[evaluator] calibration`` through the real loop (subprocess CLI) against the scripted server.

With ``--lean 0.25`` the scripted grader's label probabilities lean to ``1`` (P(1) = 0.55 for the
responses it grades 0): it answers ``score: 1`` to every item. Contextual calibration divides by the
content-free distribution (P(1) = 0.75) and gives back its grades, which the same server without
the lean writes as they are. The parsed labels stay in the store beside the calibrated ones.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from allure.store import RunStore, project_db_path
from tests.cli_run import run_cli
from tests.conftest import start_scripted_server, write_dataset, write_spec

pytestmark = pytest.mark.integration


def _audit(
    tmp: Path, *server_args: str, calibration: str = "none", n_per_type: int = 0, **loop: object
) -> tuple[dict[str, object], str, int]:
    """Run a one-pass audit; (item id -> label, stdout + stderr, requests sent). ``n_per_type``:
    a larger dataset (``write_dataset``), e.g. for a dev split with 10 items of each label."""
    tmp.mkdir(parents=True, exist_ok=True)
    srv = start_scripted_server(tmp, *server_args)
    try:
        spec = write_spec(
            tmp,
            srv.base_url,
            calibration=calibration,
            **{"max_iterations": 1, "heldout_fraction": 0.34, **loop},
        )
        if n_per_type:
            write_dataset(tmp / "items.jsonl", n_per_type=n_per_type)
        res = run_cli(tmp, "audit", str(spec), "--auto-approve", timeout=300)
        assert res.returncode == 0, res.stdout + res.stderr
        n = len(srv.requests())
    finally:
        srv.stop()
    store = RunStore(project_db_path(tmp / "proj"), create=False)
    try:
        (run,) = store.list_runs()
        verdicts = store.verdicts(run.id, 1)
    finally:
        store.close()
    return {i: v.label for i, v in verdicts.items() if not i.startswith("#")}, res.stdout + res.stderr, n


def test_contextual_calibration_undoes_a_label_prior_lean(tmp_path: Path) -> None:
    graded, _, _ = _audit(tmp_path / "plain")
    assert set(graded.values()) == {0, 1}  # the scripted judge's own grades
    leaned, _, n_leaned = _audit(tmp_path / "leaned", "--lean", "0.25")
    assert set(leaned.values()) == {1}  # the lean makes it pass everything
    calibrated, out, n_cal = _audit(tmp_path / "cal", "--lean", "0.25", calibration="contextual")
    assert calibrated == graded
    # one zero-shot block: 3 content-free calls, not one per item
    assert n_cal == n_leaned + 3
    changed = sum(v == 0 for v in graded.values())
    assert f"{changed} of {len(graded)} labels changed" in out
    # the parsed label stays in the store beside the calibrated one
    db = project_db_path(tmp_path / "cal" / "proj")
    with sqlite3.connect(db) as c:
        rows = c.execute(
            "SELECT v.label_json, c.label FROM verdicts v JOIN calls c ON c.id = v.call_id "
            "WHERE v.item_id NOT LIKE '#%'"
        ).fetchall()
    assert 0 < sum(lj is not None for lj, _ in rows) == changed <= len(rows)
    assert all(json.loads(lj) == 0 and raw == 1 for lj, raw in rows if lj is not None)
    report = json.loads(
        next((tmp_path / "cal" / "proj" / ".allure" / "runs").glob("*/report.json")).read_text()
    )
    assert report["iterations"][-1]["calibration"]["changed"] == changed


def test_calibration_on_a_server_without_logprobs_says_so_and_keeps_the_labels(tmp_path: Path) -> None:
    leaned, out, n = _audit(tmp_path / "nolp", "--lean", "0.25", "--no-logprobs", calibration="contextual")
    assert set(leaned.values()) == {1}
    assert out.count("evaluator returned no logprobs for any call") == 1
    assert "labels kept as parsed" in out


def test_a_study_arm_takes_calibration_and_shares_the_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Arms raw and contextual on the leaning server: the calibrated arm adds only its 3
    content-free calls and gets the judge's own grades back."""
    from allure.config import load_spec
    from allure.memory import EpisodicMemory
    from allure.studies import ArmSpec, ArmsStudy, run_study
    from tests.studies.helpers import study_source

    srv = start_scripted_server(tmp_path, "--lean", "0.25")
    try:
        spec = load_spec(write_spec(tmp_path, srv.base_url, heldout_fraction=0.34))
        prepared, src = study_source(spec, tmp_path)
        arms = [
            ArmSpec(name="raw", example_ids=[]),
            ArmSpec(name="cal", example_ids=[], calibration="contextual"),
        ]
        monkeypatch.setenv("ALLURE_TEST_KEY", "k")
        memory = EpisodicMemory.open(str(tmp_path / "memory"))
        study = run_study(tmp_path / "proj", src, memory, ArmsStudy(arms, reference="raw"))
    finally:
        srv.stop()
    by = {r.arm.name: r for r in study.arms}
    n = len(prepared.items)
    # the calibrated arm's only calls are its block's 3 content-free ones (the items' are shared)
    assert (by["raw"].calls, by["cal"].calls) == (n, 3) and len(srv.requests()) == n + 3
    assert by["raw"].metrics.predicted_shares == {"0": 0.0, "1": 1.0}  # the lean: every item labelled 1
    assert by["cal"].calibration is not None and by["cal"].calibration["cf_calls"] == 3
    assert by["cal"].calibration["changed"] > 0
    assert (by["cal"].metrics.accuracy or 0) > (by["raw"].metrics.accuracy or 0)
    md = (tmp_path / "proj" / ".allure" / "studies" / study.id / "study.md").read_text()
    assert f"- cal: contextual, {by['cal'].calibration['changed']} labels changed" in md


def test_auto_calibration_chooses_on_dev_undoes_the_lean_and_keeps_a_sound_judge_as_parsed(
    tmp_path: Path,
) -> None:
    """``auto`` scores none / contextual / prior / offset on the dev split: on the leaning server
    a correction wins (the lean gives every dev item one label, so ``none`` is the worst, and dev
    holds at least 10 items of each label: the rise is significant); on the plain server nothing
    beats the parsed labels, and they stay."""
    big = {"n_per_type": 40, "dev_fraction": 0.7, "folds": 0}  # the dev split rule (folds = 0)
    graded, plain_out, n_plain = _audit(tmp_path / "plain", calibration="auto", **big)
    assert set(graded.values()) == {0, 1}
    assert "calibration (auto: none)" in plain_out and "chose none on dev" in plain_out
    assert "0 of" in plain_out.split("calibration (auto: none)")[1].split("\n")[0]
    leaned, out, _ = _audit(tmp_path / "leaned", "--lean", "0.25", calibration="auto", **big)
    line = next(x for x in out.splitlines() if "calibration (auto:" in x)
    assert "calibration (auto: none)" not in line, line
    assert "chose " in line and "on dev (n = " in line
    assert leaned == graded  # the judge's own grades back
    report = json.loads(
        next((tmp_path / "leaned" / "proj" / ".allure" / "runs").glob("*/report.json")).read_text()
    )
    cal = report["iterations"][-1]["calibration"]
    assert cal["mode"] == "auto" and cal["chosen"] in ("contextual", "prior", "offset")
    assert cal["choice"]["scores"]["none"] < cal["choice"]["scores"][cal["chosen"]]
    assert n_plain > 0


def test_auto_calibration_chooses_out_of_fold_when_cross_fitted(tmp_path: Path) -> None:
    """The default ``[loop] folds = 5``: ``auto`` chooses on every audit item, each labelled by the
    modes as fitted on the other folds; the leaning server's correction wins there too."""
    leaned, out, n = _audit(tmp_path, "--lean", "0.25", calibration="auto", n_per_type=40)
    line = next(x for x in out.splitlines() if "calibration (auto:" in x)
    assert "calibration (auto: none)" not in line, line
    assert "on the audit split out of fold (5 folds) (n = 52)" in line, line
    report = json.loads(next((tmp_path / "proj" / ".allure" / "runs").glob("*/report.json")).read_text())
    cal = report["iterations"][-1]["calibration"]
    assert cal["choice"]["n"] == 52 and cal["chosen"] in ("contextual", "prior", "offset")
    assert n == 80 + cal["cf_calls"]  # one call an item: the folds share the pass's calls
