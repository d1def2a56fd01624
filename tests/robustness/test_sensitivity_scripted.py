"""``allure study sensitivity`` against the scripted server, scripted to flip its grade when a phrase is in the prompt.

The server grades the 2stepPath items (their tasks ask for a path "to room 4x") wrong whenever the
system prompt holds a phrase that exactly one rule-based rephrasing introduces; the study must name
that rephrasing and exactly those items, in both conditions, and a re-run sends nothing.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from allure.prompts import SYNONYMS, load_prompt_set, rule_rephrasings
from allure.robustness import reproducibility, sensitivity_study
from allure.studies import load_study
from tests.cli_run import run_cli as _cli
from tests.robustness.specs import refuses_lost_placeholder, robust_project, robust_spec, worse_when

pytestmark = pytest.mark.integration


def _marker() -> tuple[str, int]:
    """A phrase in exactly one of the 3 rephrasings (seed 0) and that rephrasing's q."""
    reph = rule_rephrasings(load_prompt_set("grader"), 3, seed=0)
    for _, new in SYNONYMS:
        having = [q for q, r in enumerate(reph, start=2) if new in r.texts["system.txt"]]
        if len(having) == 1:
            return new, having[0]
    raise AssertionError("no phrase marks a single rephrasing")


def test_sensitivity_finds_the_rephrasing_and_the_items_it_flips(tmp_path: Path) -> None:
    marker, q = _marker()
    with robust_project(tmp_path, *worse_when(marker)) as (srv, spec):
        proj = tmp_path / "proj"
        lines: list[str] = []
        study = sensitivity_study(proj, spec=spec, rephrasings=4, seed=0, say=lines.append)
        assert study.kind == "sensitivity" and study.n_items == 12
        assert len(study.arms) == 8 and any("not yet stored" in line for line in lines)
        r = study.sensitivity
        assert r is not None and [v.q for v in r.prompts] == [1, 2, 3, 4]
        flipped = {(f.condition, f.q): set(f.item_ids) for f in r.flips if f.flips}
        two_step = {f"2stepPath-{j}" for j in range(6)}
        # zero-shot the judge already passes the 'Room' answers (j = 1, 4): flipping them changes nothing
        fooled = {"2stepPath-1", "2stepPath-4"}
        assert flipped == {("memory", q): two_step, ("zero-shot", q): two_step - fooled}
        # 3 of 4 rephrasings agree on each flipped item: S = H(3/4, 1/4) / ln 2; the others 0.
        h = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25)) / math.log(2)
        assert {it.item_id for it in r.most_sensitive} == two_step
        assert len(r.most_sensitive) == len(two_step) > 0
        assert all(it.sensitivity["memory"] == pytest.approx(h) for it in r.most_sensitive)
        mem = next(c for c in r.conditions if c.condition == "memory")
        assert mem.mean_sensitivity == pytest.approx(h * 6 / 12) and mem.n_classes == 2
        assert r.difference == pytest.approx(h * (6 - 4) / 12)  # more sensitive with the memory here
        assert any(f"rho_{q}" in f for f in study.findings)
        out = proj / ".allure" / "studies" / study.id
        for f in ("study.json", "study.md", "sensitivity.png", "errors_by_problem_type.png"):
            assert (out / f).stat().st_size > 0, f
        assert not (out / "ablation.png").exists()  # the ablation's plot is the ablation's own
        assert json.loads((out / "study.json").read_text())["version"] == 2
        assert "sizes" not in json.loads((out / "study.json").read_text())  # no other kind's fields
        md = (out / "study.md").read_text()
        assert "## Sensitivity and consistency" in md and "2stepPath-0" in md
        assert (
            json.loads((out / "study.json").read_text())["sensitivity"]["prompts"][q - 1]["method"] == "rules"
        )
        assert (proj / ".allure" / "prompts" / r.prompts[q - 1].name / "user.txt").is_file()
        sent = len(srv.requests())
        assert sent == study.calls > 0
        again = sensitivity_study(proj, spec=spec, rephrasings=4, seed=0)
        assert again.id == study.id and again.calls == 0 and len(srv.requests()) == sent
        assert load_study(proj, study.id).sensitivity == again.sensitivity
        # ReQuest reproducibility between arms: the flipping rephrasing agrees on half the items.
        same = reproducibility(proj, f"{study.id}@rho1 +memory", f"{study.id}@rho1 +memory")
        assert (same.perrr, same.prerr, same.kind) == (100.0, 1.0, "intra-model")
        flip = reproducibility(proj, f"{study.id}@rho1 +memory", f"{study.id}@rho{q} +memory")
        assert flip.prerr == pytest.approx(6 / 12) and set(flip.disagreements) == two_step
        assert flip.f1_a == 1.0 and flip.perrr is not None and flip.perrr < 100.0
        # Two labellings over different items: exit 2, naming the items, nothing written.
        small = sensitivity_study(proj, spec=spec, split="heldout", rephrasings=2, seed=0)
        assert small.n_items < study.n_items
        before = sorted(p.name for p in (proj / ".allure" / "studies").iterdir())
        res = _cli(
            tmp_path, "study", "reproducibility", f"{study.id}@rho1 +memory", f"{small.id}@rho1 +memory"
        )
        assert res.returncode == 2 and "label different items" in res.stderr and "fix:" in res.stderr
        assert sorted(p.name for p in (proj / ".allure" / "studies").iterdir()) == before


def test_a_rephrasing_that_lost_a_placeholder_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    assert "user.txt" in refuses_lost_placeholder(
        tmp_path, "{gold_answers}", "the answer", "sensitivity", "--prompts"
    )
    assert not (tmp_path / "proj" / ".allure" / "allure.db").exists()


@pytest.mark.parametrize(("args", "needle"), [(["--rephrasings", "1"], "Q counts the original")])
def test_q_below_two_is_refused(tmp_path: Path, args: list[str], needle: str) -> None:
    spec = robust_spec(tmp_path, "http://127.0.0.1:9/v1")
    res = _cli(tmp_path, "study", "sensitivity", "--spec", str(spec), *args)
    assert res.returncode == 2 and needle in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "proj" / ".allure").exists()
