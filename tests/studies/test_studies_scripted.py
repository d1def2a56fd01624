"""Studies against the scripted OpenAI-compatible server, whose grading depends on the ICL examples.

The server grades strictly (the correct answer must appear in the response) only when the prompt
carries the examples it was scripted to need; otherwise it is fooled by responses that mention a
"room" (ALLURE's *keywords* failure mode). The dataset has 20 such responses in 60 items.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from allure.memory import EpisodicMemory
from allure.studies import ablation, list_studies, load_study, sweep
from tests.cli_run import TEST_KEY, cli_args, cli_env, run_cli
from tests.conftest import start_scripted_server, write_dataset, write_spec
from tests.memory.memory_examples import make_example

pytestmark = pytest.mark.integration

N_PER_TYPE = 30  # 60 items: 20 correct, 20 wrong that mention "room", 20 plain wrong

MEMORY = {
    "keywords": ["Room 1, Room 3, Room 6", "The rooms are room 2 and room 5.", "Reward in room 7, room 4."],
    "partial_correctness": ["1, left, 2, left, 6", "Go from 1 to 2 and then stop.", "The path is 1, 4."],
    "gibberish": ["zxq blorf 77 ## mnop qq", "asdf ;; lkj 0x0 ??? @@", "qwop qwop qwop 9 9 9 %%"],
}


def _project(tmp: Path, base_url: str) -> Path:
    spec = write_spec(tmp, base_url)
    write_dataset(tmp / "items.jsonl", n_per_type=N_PER_TYPE)
    mem = EpisodicMemory.open(str(tmp / "memory"))
    n = 0
    exs = []
    for mode, texts in MEMORY.items():
        for text in texts:
            exs.append(make_example(n, mode=mode, response=text, correct_label=n % 2))
            n += 1
    mem.add(exs)
    return spec


def test_ablation_finds_the_needed_cluster_and_rerun_sends_nothing(tmp_path: Path) -> None:
    # keep-alive: the arms re-use pooled connections across passes (regression: "Event loop is closed")
    with start_scripted_server(tmp_path, "--strict-if-example", "room", "--keep-alive") as srv:
        spec = _project(tmp_path, srv.base_url)
        proj = tmp_path / "proj"
        lines: list[str] = []
        study = ablation(proj, spec=spec, say=lines.append)
        assert study.n_items == 60
        names = [r.arm.name for r in study.arms]
        assert names == ["full", "-partial_correctness", "-keywords", "-gibberish", "zero-shot"]
        skipped = {c.name for c in study.clusters if c.skipped}
        assert skipped == {"lengthy_argument", "parroting", "other"}  # listed, not ablated
        by = {r.arm.name: r for r in study.arms}
        assert by["full"].metrics.accuracy == 1.0
        # Only the keywords examples teach the judge: removing them costs exactly the 20 'room' items.
        worse = {r.arm.name for r in study.arms if r.comparison and r.comparison.significant}
        assert worse == {"-keywords", "zero-shot"}
        kw = by["-keywords"].comparison
        assert kw is not None and (kw.mcnemar.b, kw.mcnemar.c) == (20, 0) and kw.direction == "worse"
        assert kw.accuracy.delta == pytest.approx(-20 / 60)
        for arm in ("-partial_correctness", "-gibberish"):
            c = by[arm].comparison
            assert c is not None and (c.mcnemar.b, c.mcnemar.c, c.p_holm) == (0, 0, 1.0)
            assert any("not significant at n = 60" in f and arm in f for f in study.findings)
        errors = {
            r.arm.name: sum(g.errors for g in r.metrics.errors_by_problem_type or []) for r in study.arms
        }
        assert errors == {
            "full": 0,
            "-partial_correctness": 0,
            "-keywords": 20,
            "-gibberish": 0,
            "zero-shot": 20,
        }
        assert len(study.arms) == 5 and all(r.metrics.n_unparsed == 0 for r in study.arms)  # no failed call
        sent = len(srv.requests())
        # full, -partial, -gibberish hold the keywords examples; -keywords and zero-shot differ per prompt
        assert sent == study.calls == sum(r.calls for r in study.arms) > 0
        assert any("not yet stored" in line for line in lines)
        out = proj / ".allure" / "studies" / study.id
        for f in ("study.json", "study.md", "ablation.png", "errors_by_problem_type.png"):
            assert (out / f).stat().st_size > 0, f
        md = (out / "study.md").read_text()
        assert "significantly worse" in md and "-keywords" in md
        df = study.to_pandas()
        assert df.loc["-keywords", "errors"] == 20 and bool(df.loc["-keywords", "significant"])
        # Same command again: same study id, every prompt from the store, no call sent.
        again = ablation(proj, spec=spec)
        assert again.id == study.id and again.calls == 0 and len(srv.requests()) == sent
        assert [s.id for s in list_studies(proj)] == [study.id]
        assert load_study(proj, study.id).arms[2].comparison == again.arms[2].comparison


def test_sweep_curve_follows_the_scripted_dependence(tmp_path: Path) -> None:
    # Strict grading from 4 examples on: x = 0 and 2 are fooled by the 20 'room' items, 4 and 8 are not.
    with start_scripted_server(tmp_path, "--strict-min-examples", "4") as srv:
        spec = _project(tmp_path, srv.base_url)
        study = sweep(tmp_path / "proj", spec=spec, sizes="0,2,4,8", repeats=2)
        mean = {p.size: p.mean for p in study.sweep if p.metric == "accuracy"}
        assert mean == pytest.approx({0: 40 / 60, 2: 40 / 60, 4: 1.0, 8: 1.0})
        pts = {p.size: p for p in study.sweep if p.metric == "accuracy"}
        assert pts[4].repeats == 2 and pts[4].values == [1.0, 1.0]
        draws = {r.arm.name: r.arm.example_ids for r in study.arms}
        assert len(draws["x=8 #0"]) == 8 and draws["x=2 #0"] != draws["x=2 #1"]
        sig = {r.arm.name for r in study.arms if r.comparison and r.comparison.significant}
        assert sig == {"x=4 #0", "x=4 #1", "x=8 #0", "x=8 #1"}
        assert (tmp_path / "proj" / ".allure" / "studies" / study.id / "sweep.png").stat().st_size > 0
        # balanced draws: equal shares of correct labels 0 and 1 (the memory holds both)
        bal = sweep(tmp_path / "proj", spec=spec, sizes="4", repeats=1, balance="label")
        mem = {ex.id: ex for ex in EpisodicMemory.open(str(tmp_path / "memory")).all()}
        arm = next(r for r in bal.arms if r.arm.size == 4)
        assert sorted(mem[i].correct_label for i in arm.arm.example_ids) == [0, 0, 1, 1]


def test_context_budget_drops_examples_instead_of_failing(tmp_path: Path) -> None:
    # The server refuses prompts over 300 words (HTTP 400). System turn 74 words + item ~34, each
    # example ~39, plus 8 per message: 9 examples (~620) do not fit, 3 do (~290).
    with start_scripted_server(tmp_path, "--ctx", "300", "--strict-if-example", "room") as srv:
        spec = _project(tmp_path, srv.base_url)
        study = ablation(tmp_path / "proj", spec=spec, clusters=["keywords"], max_prompt_tokens=300)
        full = study.arms[0]
        assert study.token_counter == "server /tokenize"
        assert full.dropped > 0 and full.prompts_with_drops == 60
        assert full.mean_examples == 3 and full.dropped == 60 * 6
        assert len(full.dropped_by_item) == 60 and set(full.dropped_by_item.values()) == {6}
        assert len(study.arms) == 3 and all(r.metrics.n_unparsed == 0 for r in study.arms)  # no call failed
        sent = srv.requests()
        assert len(sent) >= 60 and all(b["body"]["messages"] and len(str(b["body"]).split()) for b in sent)
        assert "dropped" in (tmp_path / "proj" / ".allure" / "studies" / study.id / "study.md").read_text()


def test_sigkill_mid_study_then_rerun_sends_no_stored_call(tmp_path: Path) -> None:
    with start_scripted_server(tmp_path, "--strict-if-example", "room", "--delay", "0.05") as srv:
        spec = _project(tmp_path, srv.base_url)
        proc = subprocess.Popen(
            cli_args(tmp_path, "study", "ablation", "--spec", str(spec)), env=cli_env(TEST_KEY), cwd=tmp_path
        )
        deadline = time.time() + 120
        while len(srv.requests()) < 90 and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert proc.poll() is None, "the study finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        first = srv.requests()
        db = tmp_path / "proj" / ".allure" / "allure.db"
        with sqlite3.connect(db) as c:
            stored = c.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
        assert not (tmp_path / "proj" / ".allure" / "studies").exists()  # outputs come at the end only
        res = run_cli(tmp_path, "study", "ablation", "--spec", str(spec), timeout=300)
        assert res.returncode == 0, res.stderr
        second = srv.requests()[len(first) :]
        prompts = {str(r["body"]["messages"]) for r in srv.requests()}
        # Every distinct prompt is sent once, except the one in flight at the kill (not stored).
        assert len(second) == len(prompts) - stored
        assert len(first) - stored <= 1
        stored_prompts = {str(r["body"]["messages"]) for r in first}
        assert sum(str(r["body"]["messages"]) in stored_prompts for r in second) <= len(first) - stored
        with sqlite3.connect(db) as c:
            rows = c.execute("SELECT COUNT(*), COUNT(DISTINCT iteration || item_id) FROM verdicts").fetchone()
        assert rows == (5 * 60, 5 * 60)  # 5 arms x 60 items, no duplicate row
        assert "significantly worse" in res.stdout + res.stderr


def test_arm_equal_to_an_audit_iteration_sends_no_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from allure.config import load_spec
    from allure.graphs import start_run

    with start_scripted_server(tmp_path) as srv:
        spec = write_spec(tmp_path, srv.base_url, max_iterations=1)
        monkeypatch.setenv("ALLURE_TEST_KEY", "k")
        run = start_run(load_spec(spec).model_copy(update={"auto_approve": True}), tmp_path / "proj")
        assert run.status == "done"
        before = len(srv.requests())
        study = ablation(tmp_path / "proj", from_run=run.run_id)
        assert study.source == {"run": run.run_id, "split": "heldout"}
        zero = next(r for r in study.arms if r.arm.name == "zero-shot")
        # the audit's first pass was zero-shot over every item: the held-out ones are all stored
        assert zero.calls == 0 and zero.cache_hits == study.n_items > 0
        assert len(srv.requests()) - before == study.calls == sum(r.calls for r in study.arms)
