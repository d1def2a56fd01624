"""Rephrasings written by the evaluator from a meta-prompt file, checked, in a sensitivity study.

The scripted server rewrites the meta-prompt's text by seed: sample 0 loses ``{response}`` (the check
refuses it), sample 1 writes "Work out whether". Scripted with ``--worse-when "Work out whether"`` the
study must find that the LLM-written rho_2 flips the 2stepPath items.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from allure.robustness import sensitivity_study
from tests.cli_run import run_cli
from tests.robustness.specs import robust_project, robust_spec, worse_when

pytestmark = pytest.mark.integration

META = "Rewrite this prompt text in other words. Keep every {placeholder} and quoted answer as is.\n<<<\n{text}\n>>>\n"


def test_llm_rephrasings_are_checked_and_used(tmp_path: Path) -> None:
    with robust_project(tmp_path, *worse_when("Work out whether")) as (srv, spec):
        meta = tmp_path / "meta.txt"
        meta.write_text(META)
        proj = tmp_path / "proj"
        study = sensitivity_study(proj, spec=spec, rephrasings=2, meta_prompt=meta)
        r = study.sensitivity
        assert r is not None
        v = r.prompts[1]
        assert v.method == "llm" and v.rules == ["meta:meta.txt"] and v.name.startswith("grader~llm2s0-")
        assert len(v.rejected) == 1 and "lost placeholder(s) ['{response}']" in v.rejected[0]
        system = (Path(v.path) / "system.txt").read_text()
        assert "Work out whether" in system and "{{" not in system
        flips = {(f.condition, f.q): set(f.item_ids) for f in r.flips if f.flips}
        assert flips[("memory", 2)] == {f"2stepPath-{j}" for j in range(6)}
        sent = len(srv.requests())
        again = sensitivity_study(proj, spec=spec, rephrasings=2, meta_prompt=meta)
        assert again.id == study.id and again.calls == 0 and len(srv.requests()) == sent


def test_a_meta_prompt_without_its_placeholder_is_refused(tmp_path: Path) -> None:
    spec = robust_spec(tmp_path, "http://127.0.0.1:9/v1")
    meta = tmp_path / "meta.txt"
    meta.write_text("Rewrite the prompt.\n")
    res = run_cli(
        tmp_path, "study", "sensitivity", "--spec", str(spec), "-q", "2", "--meta-prompt", str(meta)
    )
    assert res.returncode == 2 and "holds {text} 0 times" in res.stderr and "fix:" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "proj" / ".allure" / "studies").exists()
    assert not (tmp_path / "proj" / ".allure" / "prompts").exists()
