"""``benchmarks/bench_loop.py``'s item draws (issue 43): every pre-registered task is one the bench
runs, the two draws of a large task are disjoint, seeded and of the registered size, and the RTE draws
keep the label shares; the pairwise task's spec is one the product accepts."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_loop  # noqa: E402


def test_every_preregistered_task_is_a_bench_task() -> None:
    pre = bench_loop.prereg()
    assert sorted(pre["task"]) == sorted(bench_loop.TASKS)
    assert pre["alpha"] == 0.05 and pre["alternative"] == "two-sided"
    for name, task in pre["task"].items():
        assert task["objective"] in ("balanced_accuracy", "macro_f1", "accuracy", "kappa"), name


def test_rte_draws_are_disjoint_seeded_and_keep_the_label_shares() -> None:
    pre = bench_loop.prereg()["task"]["rte"]
    first, second = bench_loop.rte_draws(pre)
    assert len(first) == len(second) == pre["draw_size"] == 600
    assert not set(first) & set(second)
    assert bench_loop.rte_draws(pre) == [first, second]  # the same draws again
    rows = bench_loop._zhao_rows("rte")
    for draw in (first, second):
        shares = Counter(rows[i]["label"] for i in draw)
        assert abs(shares["entailment"] - shares["not_entailment"]) <= 2, shares


def test_halueval_second_draw_is_new_items() -> None:
    pre = bench_loop.prereg()["task"]["halueval"]
    first, second = bench_loop.halueval_draws(pre)
    assert len(first) == len(second) == 600
    assert not set(first) & set(second)


@pytest.mark.parametrize("name", [pytest.param("pairwise", marks=pytest.mark.slow), "cb", "rte"])
def test_a_tasks_spec_is_one_the_product_accepts(name: str, tmp_path: Path) -> None:
    from allure.config import parse_spec

    task, pre = bench_loop.TASKS[name], bench_loop.prereg()
    ids = task.draws(pre["task"][name])[0][:20]
    data = task.write(tmp_path, ids)
    spec = parse_spec(bench_loop.audit_spec(task, data, pre, 0), source=name)
    assert spec.loop.max_iterations == 2 and spec.loop.heldout_fraction == 0.5
    assert spec.loop.objective == pre["task"][name]["objective"]
    from allure.dataset import load_items

    items = load_items(spec.dataset, label_set=spec.label_set, synonyms=spec.label_synonyms)
    assert sorted(it.id for it in items) == sorted(ids)


def test_a_draws_record_and_the_results_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's report.json becomes the draw's record and a ``primary:`` line of ``loop.md``."""
    monkeypatch.setattr(bench_loop, "RESULTS", tmp_path)
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\nbefore\n{bench_loop.TABLE_BEGIN}\nold table\n{bench_loop.TABLE_END}\nafter\n")
    monkeypatch.setattr(bench_loop, "README", readme)
    task = bench_loop.TASKS["cb"]
    draw = bench_loop.Draw("cb", 1, ["a", "b", "c"], 0)
    planned = bench_loop.Planned(task, draw, tmp_path, {}, 3, 3, 3.0)
    report = {
        "primary": {
            "objective": {
                "objective": "macro_f1",
                "value_a": 0.5,
                "value_b": 0.6,
                "delta": 0.1,
                "ci_low": 0.02,
                "ci_high": 0.18,
                "p_value": 0.012,
                "n": 150,
            }
        },
        "iterations": [
            {
                "calibration": {"mode": "auto", "chosen": "none"},
                "readout": {"decision": "not adopted"},
                "candidates": {"approved": 4},
                "calls": 12,
                "cache_hits": 3,
                "wall_s": 2.0,
            }
        ],
    }
    bench_loop.record(bench_loop.Result(planned, "run-1", report, 5.0, 1), False, "abc1234")
    text = bench_loop.write("abc1234").read_text()
    line = next(x for x in text.splitlines() if x.startswith("primary: cb-d1:"))
    assert "macro f1 0.500 -> 0.600, delta +0.100 [95% CI +0.020, +0.180], p = 0.012" in line
    assert "n = 150" in line and "1 draws run so far: cb-d1 at abc1234" in text
    assert (
        "examples approved after each pass [4]" in text and "calls sent 12, answered from the store 3" in text
    )
    row = next(x for x in text.splitlines() if x.startswith("| cb-d1 (macro f1) |"))
    shown = readme.read_text()  # README's table: the same row, between the markers, the rest kept
    assert row in shown and "old table" not in shown and shown.startswith("# x\n\nbefore\n")
    assert shown.endswith(f"{bench_loop.TABLE_END}\nafter\n")
    assert "1 of 10 pre-registered draws run; not yet run: cogeval-d1, cogeval-d2," in shown
    assert (
        "| 0.500 (-) | 0.600 | +0.100 [+0.020, +0.180], p 0.012 | nothing (zero-shot kept) | 15 (12), 0 min (planned 0) |"
        in row
    )


def test_a_read_back_draw_keeps_the_record_of_the_run_that_made_its_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A later checkout reads a recorded draw again: the same primary figures keep the record's commit
    and cost and say where it was reproduced; other figures are not the same primary."""
    monkeypatch.setattr(bench_loop, "RESULTS", tmp_path)
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\nbefore\n{bench_loop.TABLE_BEGIN}\nold table\n{bench_loop.TABLE_END}\nafter\n")
    monkeypatch.setattr(bench_loop, "README", readme)
    task = bench_loop.TASKS["cb"]
    planned = bench_loop.Planned(task, bench_loop.Draw("cb", 1, ["a"], 0), tmp_path, {}, 0, 0, 3.0)
    primary = {
        "objective": "macro_f1",
        "n": 150,
        "value_a": 0.5,
        "value_b": 0.6,
        "delta": 0.1,
        "p_value": 0.01,
    }
    made = {
        "key": "cb-d1",
        "commit": "rule123",
        "written": "then",
        "wall_s": 900.0,
        "calls": 612,
        "server_starts": 1,
        "primary": primary,
        "section": "x\n- cost: calls sent 612, the first run\ny",
    }
    report = {"primary": {"objective": primary}, "iterations": [{"calls": 0, "cache_hits": 612}]}
    bench_loop.record(bench_loop.Result(planned, "run-1", report, 4.0, 0), False, "later99", made=made)
    got = bench_loop.load_record("cb-d1")
    assert got is not None and got["commit"] == "rule123" and got["calls"] == 612 and got["wall_s"] == 900.0
    assert got["reproduced"].startswith("at later99") and "0 calls sent" in got["reproduced"]
    assert "- cost: calls sent 612, the first run" in got["section"]
    assert bench_loop.same_primary(dict(primary), primary)
    assert not bench_loop.same_primary({**primary, "p_value": 0.02}, primary)
    assert not bench_loop.same_primary(primary, {})


def test_the_plan_prices_memory_pass_calls_from_the_stored_ones(tmp_path: Path) -> None:
    """Memory-pass calls already answered are not planned again; their stored median latency prices
    the rest (a real store's schema, rows written by SQL)."""
    import sqlite3

    from allure.store import RunStore, project_db_path

    assert bench_loop.memory_progress(tmp_path / "none") == (0, None)
    db = project_db_path(tmp_path)
    db.parent.mkdir(parents=True)
    RunStore(db).close()
    con = sqlite3.connect(db)
    for i, (lat, icl) in enumerate([(3.0, False), (20.0, True), (30.0, True), (25.0, True)], start=1):
        con.execute(
            "INSERT INTO calls (id, prompt_hash, item_id, model, params_json, status, raw_output, latency_s, "
            "prompt_tokens, completion_tokens, cached_tokens, created_at) "
            "VALUES (?, ?, ?, 'm', '{}', 'ok', 'x', ?, 1, 1, 0, 'now')",
            (i, f"h{i}", f"it{i}", lat),
        )
        con.execute(
            "INSERT INTO verdicts (run_id, iteration, item_id, call_id, cache_hit) VALUES ('run-1', ?, ?, ?, 0)",
            (2 if icl else 1, f"it{i}", i),
        )
        if icl:
            con.execute("INSERT INTO call_examples (call_id, position, example_id) VALUES (?, 0, 'e')", (i,))
    # a snapshot's run (named, not ``run-...``) is not the loop's: its items are not done, its calls
    # price the pass only when the loop's runs have none
    con.execute(
        "INSERT INTO verdicts (run_id, iteration, item_id, call_id, cache_hit) VALUES ('x', 2, 'it9', 1, 0)"
    )
    con.commit()
    con.close()
    assert bench_loop.memory_progress(tmp_path) == (3, 25.0)


def test_a_draws_run_starts_from_an_empty_memory(tmp_path: Path) -> None:
    """An interrupted run's approvals left in the project's memory would make the next run another
    design (a zero-shot baseline and two memory passes): the bench empties it first."""
    memory = tmp_path / ".allure" / "memory"
    (memory / "chroma").mkdir(parents=True)
    (memory / "chroma" / "data.bin").write_bytes(b"x")
    (tmp_path / ".allure" / "allure.db").write_bytes(b"")
    bench_loop.fresh_memory(tmp_path)
    assert not memory.exists() and (tmp_path / ".allure" / "allure.db").is_file()


def _two_passes(active: int) -> dict[str, object]:
    """A report of two passes: pass 1 adopted its read-out; pass 2 chose contextual calibration."""
    return {
        "zero_shot_iteration": 1,
        "active_iteration": active,
        "guard": [f"iteration 2's memory not adopted: one-sided p = 0.964; keeping iteration {active}"],
        "iterations": [
            {
                "iteration": 1,
                "calibration": {"mode": "auto", "chosen": "none", "choice": {"line": "kept none"}},
                "readout": {"decision": "read-out (auto): adopted out of fold (p = 0.0156)", "changed": 11},
                "candidates": {"approved": 20},
            },
            {
                "iteration": 2,
                "calibration": {
                    "mode": "auto",
                    "chosen": "contextual",
                    "choice": {"line": "adopted contextual", "p_holm": {"contextual": 0.00419}},
                },
                "readout": {"decision": "read-out (auto): the parsed labels kept", "changed": 0},
                "candidates": {"approved": 0},
            },
        ],
    }


def test_what_a_draw_adopted_is_its_judges_pass_not_a_refused_one() -> None:
    """cogeval-d2: pass 2 chose contextual calibration and the guard refused it; the judge is pass 1
    with its read-out, and neither the table nor the section says contextual was adopted."""
    refused = _two_passes(active=1)
    assert bench_loop.adopted_cell({"report": bench_loop.table_facts(refused)}) == "read-out (0.0156)"
    lines = bench_loop.choice_lines(refused)
    assert lines[0].startswith("- pass 1 (the loop's judge)") and "adopted out of fold" in lines[0]
    assert lines[1].startswith("- pass 2 (not the loop's judge)") and "contextual" in lines[1]
    old = "### x\n\n- adopted (last pass): calibration contextual\n- adopted (last pass): read-out kept\n- memory: 20\n- cost: c\n"
    new = bench_loop.refreshed_section(old, refused)
    assert "adopted (last pass)" not in new and new.count("- pass ") == 2 and new.endswith("- cost: c\n")
    assert "- memory: examples approved after each pass [20, 0]" in new
    adopted = _two_passes(active=2)  # had the guard adopted pass 2, its own choices are the judge's
    assert bench_loop.adopted_cell({"report": bench_loop.table_facts(adopted)}).startswith("memory (")
    assert "calibration contextual (Holm p 0.00419)" in bench_loop.adopted_cell(
        {"report": bench_loop.table_facts(adopted)}
    )


# ---- registration 2: new items, the shipped rule, a registered secondary arm ----------------------

R2 = ROOT / "benchmarks" / "preregistered_2.toml"


def _use_r2(monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setattr(bench_loop, "PREREG", R2)
    return bench_loop.prereg()


def test_registration_2_draws_only_new_items(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each task's two draws are of the registered size, disjoint, seeded, and hold no item of any
    registration-1 draw of that task."""
    r1 = bench_loop.prereg()
    pre = _use_r2(monkeypatch)
    assert pre["new_items_after"] == ["benchmarks/preregistered.toml"] and pre["secondary"] == ["vote_only"]
    assert bench_loop.all_keys() == [f"r2-{t}-d{d}" for t in ("cogeval", "halueval", "rte") for d in (1, 2)]
    for name in ("halueval", "rte"):
        first, second = bench_loop.draws_of(name, pre)
        assert len(first) == len(second) == 600 and not set(first) & set(second)
        old = {i for draw in bench_loop.TASKS[name].draws(r1["task"][name]) for i in draw}
        assert len(old) == 1200 and not (set(first) | set(second)) & old, name
        assert bench_loop.draws_of(name, pre) == [first, second]  # the same draws again
    rows = bench_loop._zhao_rows("rte")
    for draw in bench_loop.draws_of("rte", pre):
        shares = Counter(rows[i]["label"] for i in draw)
        assert abs(shares["entailment"] - shares["not_entailment"]) <= 2, shares


def test_a_task_with_no_items_left_is_refused_a_new_draw(monkeypatch: pytest.MonkeyPatch) -> None:
    pre = {**_use_r2(monkeypatch), "task": {"cb": {"objective": "macro_f1", "split_seeds": [0]}}}
    with pytest.raises(SystemExit, match="cb: no items beyond"):
        bench_loop.draws_of("cb", pre)
    small = {"draw_size": 5, "draw_seeds": [1, 2, 3]}
    with pytest.raises(SystemExit, match="2 items left for a draw of 5"):
        bench_loop.fresh_draws(([f"i{n}" for n in range(14)], None), small, {"i0", "i1"})


def test_the_vote_only_spec_changes_the_retrieval_only() -> None:
    raw = {"memory": {"retrieval": {"kind": "top_k"}}, "loop": {"max_iterations": 2}}
    out = bench_loop.vote_only_spec(raw)
    assert out == {
        "memory": {"retrieval": {"kind": "top_k", "max_examples": 0}},
        "loop": {"max_iterations": 2},
    }
    assert raw["memory"]["retrieval"] == {"kind": "top_k"}  # the draw's own spec is left alone
    from allure.config import parse_spec

    spec = parse_spec(
        {"label_set": [0, 1], "dataset": {"path": "x.jsonl"}, **bench_loop.vote_only_spec({})}, source="t"
    )
    assert spec.memory.retrieval.max_examples == 0


def test_versus_is_the_paired_grouped_comparison_of_two_judges() -> None:
    """Items with no reference are left out; two judges that agree everywhere differ by nothing;
    responses to one task are one unit (a group of moved labels is one swap)."""
    refs = [1, 0] * 20
    a = {f"i{n}": (refs[n], refs[n] if n % 5 else 1 - refs[n], f"g{n // 2}") for n in range(40)}
    a["x"] = (None, 1, "gx")
    same = bench_loop.versus(a, a, objective="balanced_accuracy", labels=[0, 1])
    assert same["n"] == 40 and same["delta"] == 0 and same["p_value"] == 1 and same["n_discordant"] == 0
    right = {i: (r, r, g) for i, (r, _, g) in a.items()}
    better = bench_loop.versus(a, right, objective="balanced_accuracy", labels=[0, 1])
    assert better["delta"] == pytest.approx(0.2) and better["n_discordant"] == 8
    assert better["value_a"] == pytest.approx(0.8) and better["value_b"] == 1.0 and better["p_value"] < 0.05


def test_registration_2s_results_file_readme_table_and_secondary_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A registration-2 draw writes its own record and results file, its table between its own README
    markers (registration 1's left alone), and its secondary comparisons with their Holm p."""
    _use_r2(monkeypatch)
    monkeypatch.setattr(bench_loop, "RESULTS", tmp_path)
    begin, end = bench_loop.table_markers()
    assert begin != bench_loop.TABLE_BEGIN and "registration r2" in begin
    readme = tmp_path / "README.md"
    readme.write_text(
        f"{bench_loop.TABLE_BEGIN}\nr1 table\n{bench_loop.TABLE_END}\n\n{begin}\nold\n{end}\nafter\n"
    )
    monkeypatch.setattr(bench_loop, "README", readme)
    draw = bench_loop.Draw("rte", 1, ["a"], 2, bench_loop.key_prefix())
    assert draw.key == "r2-rte-d1"
    planned = bench_loop.Planned(bench_loop.TASKS["rte"], draw, tmp_path, {}, 0, 0, 3.0)
    primary = {"objective": "balanced_accuracy", "n": 300, "value_a": 0.5, "value_b": 0.74, "delta": 0.24,
               "ci_low": 0.19, "ci_high": 0.29, "p_value": 0.0001}  # fmt: skip
    secondary = {
        "vote_only": {
            "title": "vote only",
            "run_id": "run-2",
            "vs_zero_shot": {**primary, "value_b": 0.75, "delta": 0.25, "p_holm": 0.0002},
            "vs_loop": {
                **primary,
                "value_a": 0.74,
                "value_b": 0.75,
                "delta": 0.01,
                "p_value": 0.5,
                "p_holm": 0.5,
            },
            "adopted": "calibration offset",
            "calls": 0,
            "wall_s": 30.0,
        }
    }
    report = {"primary": {"objective": primary}, "iterations": [{"calls": 900, "cache_hits": 0}]}
    result = bench_loop.Result(planned, "run-1", report, 60.0, 1)
    bench_loop.record(result, False, "abc", secondary=secondary)
    assert (tmp_path / "loop.r2-rte-d1.json").is_file()
    text = bench_loop.write("abc").read_text()
    assert (
        bench_loop.results_file() == tmp_path / "loop_r2.md" and "`benchmarks/preregistered_2.toml`" in text
    )
    assert (
        "secondary: r2-rte-d1: vote only against the zero-shot judge: balanced accuracy 0.500 -> 0.750"
        in text
    )
    assert "delta +0.010 [95% CI +0.190, +0.290], p = 0.5, Holm p = 0.5, n = 300" in text
    assert (
        "| r2-rte-d1 | vote only | 0.500 -> 0.750, +0.250 [+0.190, +0.290], p 0.0001 (Holm 0.0002) |" in text
    )
    shown = readme.read_text()
    assert shown.startswith(f"{bench_loop.TABLE_BEGIN}\nr1 table\n{bench_loop.TABLE_END}\n")
    assert "| r2-rte-d1 (balanced accuracy) |" in shown and "old" not in shown.split(begin)[1]
    assert "1 of 6 pre-registered draws run; not yet run: r2-rte-d2," not in shown  # tasks' order
    assert "1 of 6 pre-registered draws run; not yet run: r2-cogeval-d1, r2-cogeval-d2," in shown


def _replay_draw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, project: str = "project"
) -> bench_loop.Planned:
    """A registration ``rx-`` with the vote-only arm, and a draw of 120 recorded labels (a replay: no
    model) planned in ``tmp_path / project``, its results under ``tmp_path``."""
    from tests.test_api import SPEC
    from tests.test_replay_unparsed import _frame

    reg = tmp_path / "reg.toml"
    reg.write_text(
        'key_prefix = "rx-"\nsecondary = ["vote_only"]\n[task.halueval]\nobjective = "balanced_accuracy"\n'
    )
    monkeypatch.setattr(bench_loop, "PREREG", reg)
    monkeypatch.setattr(bench_loop, "RESULTS", tmp_path)
    data, folder = tmp_path / "rows.jsonl", tmp_path / project
    _frame(120).to_json(data, orient="records", lines=True)
    spec = {
        **SPEC,
        "dataset": {**SPEC["dataset"], "path": str(data)},
        "memory": {"location": str(folder / ".allure" / "memory")},
        "loop": {"max_iterations": 2, "heldout_fraction": 0.5, "seed": 0, "objective": "balanced_accuracy"},
    }
    draw = bench_loop.Draw("halueval", 1, [f"q{i}" for i in range(120)], 0, bench_loop.key_prefix())
    return bench_loop.Planned(bench_loop.TASKS["halueval"], draw, folder, spec, 0, 0, 3.0)


def test_a_run_beside_a_record_made_under_the_rule_leaves_the_saved_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``save=False`` (an ``--exploratory`` run where the rule's record exists): the draw's saved calls
    are neither written nor replaced."""
    saved = tmp_path / "loop.rx-halueval-d1.db.gz"
    bench_loop.run_one(_replay_draw(tmp_path, monkeypatch), save=False)
    assert not saved.exists()
    saved.write_bytes(b"the rule's calls")
    # another project: a second run in the first would delete its memory under the first's Chroma client
    bench_loop.run_one(_replay_draw(tmp_path, monkeypatch, "again"), save=False)
    assert saved.read_bytes() == b"the rule's calls"


def test_a_secondary_arm_runs_through_the_product_and_sends_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A registration's secondary arm end to end, on recorded labels (a replay: no model): the draw's
    default run, then the vote-only run in the same project from an empty memory, which the store
    answers whole; both comparisons read the same held-out items, with their Holm p."""
    planned = _replay_draw(tmp_path, monkeypatch)
    project = planned.project
    result = bench_loop.run_one(planned)
    assert (tmp_path / "loop.rx-halueval-d1.db.gz").is_file()  # the draw's calls saved under its key
    got = bench_loop.secondary_of(planned, result)
    assert got is not None and list(got) == ["vote_only"]
    vote = got["vote_only"]
    assert vote["run_id"] != result.run_id and vote["calls"] == 0  # every call answered by the store
    primary = result.report["primary"]["objective"]
    held = bench_loop.final_heldout(project, result.run_id)
    assert len(held) == 60 and sum(ref is not None for ref, _, _ in held.values()) == primary["n"]
    assert vote["vs_zero_shot"]["n"] == vote["vs_loop"]["n"] == primary["n"]
    assert (
        vote["vs_loop"]["delta"] == 0 and vote["vs_loop"]["n_discordant"] == 0
    )  # recorded labels: one judge
    assert vote["vs_zero_shot"]["p_holm"] >= vote["vs_zero_shot"]["p_value"]
    assert vote["vs_loop"]["p_holm"] == 1.0


def test_the_minimum_detectable_effect_of_a_small_set() -> None:
    """80 % power at a two-sided 0.05 with half the labels changed: accuracy on 148 pairs 0.163;
    balanced accuracy on 50 + 50 items 0.198, larger when one label is rare (CB's 9 neutral items)."""
    assert bench_loop.mde({"A": 81, "B": 67}, "accuracy") == pytest.approx(0.1628, abs=1e-4)
    assert bench_loop.mde({"0": 50, "1": 50}, "balanced_accuracy") == pytest.approx(0.1981, abs=1e-4)
    rare = bench_loop.mde({"e": 75, "c": 69, "n": 9}, "macro_f1")
    assert rare is not None and rare > bench_loop.mde({"e": 51, "c": 51, "n": 51}, "macro_f1")  # type: ignore[operator]
    assert bench_loop.mde({}, "accuracy") is None
    rec = {
        "key": "summeval-d1",
        "primary": {"objective": "balanced_accuracy"},
        "report": {"n_heldout": 100, "heldout_shares": {"0": 0.5, "1": 0.5}},
    }
    assert bench_loop._mde_cell(rec) == "; MDE 0.20"
    assert bench_loop._mde_cell({**rec, "key": "rte-d1"}) == ""  # a task of two draws: not a small set


@pytest.mark.parametrize(("text", "said"), [(None, "cannot read it"), ("a = [\n", "not TOML")])
def test_a_registration_that_cannot_be_read_exits_2_naming_it(
    text: str | None,
    said: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "prereg.toml"
    if text is not None:
        path.write_text(text)
    monkeypatch.setattr(bench_loop, "PREREG", bench_loop.PREREG)  # main() rebinds it; restored after
    monkeypatch.setattr(sys, "argv", ["bench_loop.py", "--registration", str(path), "--plan"])
    with pytest.raises(SystemExit) as e:
        bench_loop.main()
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"--registration {path}: {said}" in err
