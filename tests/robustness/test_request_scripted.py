"""``allure study request`` (ReQuest) against the scripted server.

The server answers the ReQuest prompt with a two-step procedure that starts "Read the response.";
scripted with ``--worse-when`` on that phrase, it grades the 2stepPath items wrong under the
procedure prompt: PreRR 6/12, and exactly those items disagree.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from allure.prompts import load_prompt_set
from allure.robustness import request_study
from allure.studies import load_study
from tests.robustness.specs import refuses_lost_placeholder, robust_project, worse_when

pytestmark = pytest.mark.integration


def test_request_runs_the_procedure_the_evaluator_wrote(tmp_path: Path) -> None:
    with robust_project(tmp_path, *worse_when("Read the response.")) as (srv, spec):
        proj = tmp_path / "proj"
        study = request_study(proj, spec=spec)
        r = study.request
        assert (
            study.kind == "request"
            and r is not None
            and [a.arm.name for a in study.arms] == ["original", "procedure"]
        )
        assert r.procedure.startswith("1. Read the response.") and r.written_by == "scripted"
        system = (Path(r.procedure_prompt) / "system.txt").read_text()
        assert system.startswith(load_prompt_set("grader").system.strip()) and "Read the response." in system
        x = r.reproducibility
        assert x.kind == "intra-model" and x.n_items == 12 and x.prerr == pytest.approx(6 / 12)
        assert set(x.disagreements) == {f"2stepPath-{j}" for j in range(6)}
        assert x.perrr is not None and x.perrr < 100.0
        asked = [
            b
            for b in srv.requests()
            if "You were given this grading prompt" in b["body"]["messages"][-1]["content"]
        ]
        assert len(asked) == 1 and len(srv.requests()) == study.calls + 1
        assert "## ReQuest" in (proj / ".allure" / "studies" / study.id / "study.md").read_text()
        assert any("PreRR = 0.500" in f for f in study.findings)
        again = request_study(proj, spec=spec)
        assert again.calls == 0 and len(srv.requests()) == study.calls + 1 and again.request == study.request
        assert load_study(proj, study.id).request == study.request
        # The procedure prompt set re-used as given (as another evaluator would run it), zero-shot:
        # nothing is asked again.
        given = request_study(proj, spec=spec, procedure_from=Path(r.procedure_prompt).name, zero_shot=True)
        assert given.id != study.id and len(given.arms) == 2 and all(a.mean_examples == 0 for a in given.arms)
        assert given.request is not None and given.request.procedure == r.procedure
        assert given.request.written_by == "scripted"
        assert len(srv.requests()) == study.calls + 1 + given.calls
        assert not any(
            "You were given" in b["body"]["messages"][-1]["content"] for b in srv.requests()[-given.calls :]
        )


def test_a_procedure_prompt_that_lost_a_placeholder_is_refused(tmp_path: Path) -> None:
    refuses_lost_placeholder(tmp_path, "{response}", "the response", "request", "--procedure-from")
