"""write_report / read_report: the three files, their content, atomicity, versioning."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from allure.metrics import compute_metrics, icl_helped
from allure.report import (
    SCHEMA_VERSION,
    IterationReport,
    ReportData,
    ReportError,
    helped_sentence,
    migrate_report,
    read_report,
    render_markdown,
    summary_table,
    write_report,
)
from allure.report import _write as write_mod

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _labels(rng: np.random.Generator, t: np.ndarray, acc: float) -> list[int | None]:
    out: list[int | None] = np.where(rng.random(t.size) < acc, t, 1 - t).tolist()
    out[3] = None  # one unparsed verdict per pass
    return out


def build_report(n_iter: int = 3) -> ReportData:
    """A report over 120 held-out and 80 audit items whose evaluator improves each pass."""
    rng = np.random.default_rng(42)
    t_h = rng.integers(0, 2, 120)
    t_a = rng.integers(0, 2, 80)
    types = [["1stepPath", "valuePath", "nstepPath"][i % 3] for i in range(120)]
    gens = [["gpt-4", "llama"][i % 2] for i in range(120)]
    iterations, held_preds = [], []
    for it in range(n_iter):
        acc = 0.6 + 0.15 * it
        ph, pa = _labels(rng, t_h, acc), _labels(rng, t_a, acc)
        held_preds.append(ph)
        splits = {
            "heldout": compute_metrics(
                t_h.tolist(),
                ph,
                pos_label=1,
                problem_types=types,
                generators=gens,
                n_resamples=200,
                random_state=it,
            ),
            "audit": compute_metrics(t_a.tolist(), pa, pos_label=1, n_resamples=200, random_state=it),
        }
        iterations.append(
            IterationReport(
                iteration=it,
                memory_size=4 * it,
                memory_version=f"v{it}",
                icl_per_prompt=3.5 * it,
                splits=splits,
                calls=200 - 20 * it,
                cache_hits=20 * it,
                prompt_tokens=51234 + it,
                completion_tokens=1700 + it,
                cached_tokens=40000 * it,
                wall_s=12.5 + it,
                candidates={"proposed": 7, "approved": 4, "rejected": 3, "pending": 0},
            )
        )
    helped = (
        icl_helped(t_h.tolist(), held_preds[0], held_preds[-1], labels=[0, 1], pos_label=1, n_resamples=300)
        if n_iter > 1
        else None
    )
    return ReportData(
        run_id="run-abc123",
        created_at="2026-11-22T04:00:00+00:00",
        finished_at="2026-11-22T04:05:00+00:00",
        status="done",
        stop_reason="no improvement on the audit split",
        evaluator={"kind": "replay", "model": "gpt-4", "params": {"temperature": 0}},
        dataset={
            "path": "demo:cogeval",
            "n_items": 200,
            "n_audit": 80,
            "n_heldout": 120,
            "gold_check": "regex",
        },
        reference_source="regex",
        iterations=iterations,
        helped=helped,
        candidates_file="runs/run-abc123/candidates.jsonl",
        replay_agreement={"agreement": 0.75, "n_scored": 200, "n_unparsed": 0, "by_generator": None},
    )


def _png_size(blob: bytes) -> tuple[int, int]:
    assert blob[:8] == PNG_MAGIC
    assert blob[12:16] == b"IHDR"
    w, h = struct.unpack(">II", blob[16:24])
    return w, h


def test_write_report_round_trip(tmp_path: Path) -> None:
    data = build_report()
    paths = write_report(tmp_path / "run", data)
    assert set(paths) == {"json", "md", "png"} and all(p.is_file() for p in paths.values())
    raw = json.loads(paths["json"].read_text())
    assert raw["schema_version"] == SCHEMA_VERSION == 1
    assert (
        raw["iterations"][2]["splits"]["heldout"]["accuracy"] == data.iterations[2].splits["heldout"].accuracy
    )
    assert read_report(tmp_path / "run") == data
    w, h = _png_size(paths["png"].read_bytes())
    assert (w, h) == (1100, 770)  # 10 x 7 inches at 110 dpi
    assert [
        p.name for p in (tmp_path / "run").iterdir() if p.name.startswith(".")
    ] == []  # no temp files left


def test_markdown_states_the_numbers(tmp_path: Path) -> None:
    data = build_report()
    md = write_report(tmp_path, data)["md"].read_text()
    last = data.iterations[-1].splits["heldout"]
    assert md.startswith("# allure report: run run-abc123")
    statement = helped_sentence(data)
    assert data.helped is not None and statement is not None
    acc = data.helped["accuracy"]
    assert acc.helped == "yes"  # accuracy went from ~0.6 to ~0.9
    assert f"ICL examples helped on the held-out split: accuracy {acc.delta:+.2f}" in md
    assert f"[95% CI {acc.ci_low:.2f}, {acc.ci_high:.2f}]" in md
    assert statement in md
    assert last.ci.accuracy is not None
    assert f"{last.accuracy:.3f} [{last.ci.accuracy.low:.3f}, {last.ci.accuracy.high:.3f}]" in md
    (c00, c01), (c10, c11) = last.confusion.matrix
    assert f"| 0 | {c00} | {c01} |" in md and f"| 1 | {c10} | {c11} |" in md
    assert last.errors_by_problem_type is not None
    worst = last.errors_by_problem_type[0]
    assert f"| {worst.group} | {worst.n} | {worst.errors} |" in md
    assert "| total | 8 | 540 | 60 | 153705 | 5103 | 120000 | 40.5 | 0/0/0 | 21/12/9 |" in md
    assert "![accuracy, F1, kappa and AUC per iteration](metrics.png)" in md
    assert "Agreement overall: 0.750" in md
    assert "Held-out split" in md and "Audit split" in md


@pytest.mark.parametrize(
    ("verdict", "expected"),
    [
        ("yes", "ICL examples helped on the held-out split: accuracy +0.06 [95% CI 0.02, 0.10]."),
        ("no", "did not help on the held-out split, they made it worse: accuracy +0.06 [95% CI 0.02, 0.10]."),
        ("unclear", "Unclear whether ICL examples helped on the held-out split: accuracy +0.06"),
    ],
)
def test_helped_sentence_wording(verdict: str, expected: str) -> None:
    data = build_report(n_iter=1)
    assert helped_sentence(data) is None
    assert "Not measured whether ICL examples helped" in render_markdown(data)
    d = data.model_dump()
    d["helped"] = {
        "accuracy": {
            "metric": "accuracy",
            "n": 100,
            "delta": 0.06,
            "ci_low": 0.02,
            "ci_high": 0.10,
            "helped": verdict,
        }
    }
    data = ReportData.model_validate(d)
    statement = helped_sentence(data)
    assert statement is not None and expected in statement


def test_summary_table_rows() -> None:
    data = build_report()
    rows = summary_table(data)
    assert len(rows) == 1 + len(data.iterations)
    assert all(isinstance(c, str) for row in rows for c in row)
    assert len({len(r) for r in rows}) == 1
    h0 = data.iterations[0].splits["heldout"]
    assert rows[1][0] == "0" and rows[1][2].startswith(f"{h0.accuracy:.3f} [")
    assert rows[3][8] == "160" and rows[3][9] == "40"  # calls and cache hits of iteration 2
    assert rows[1][7] == "2"  # one unparsed held-out + one unparsed audit


def test_migrate_report_versions() -> None:
    d = build_report(n_iter=1).model_dump(mode="json")
    assert migrate_report(d) == d and migrate_report(d) is not d
    with pytest.raises(ReportError, match="newer allure") as exc:
        migrate_report({**d, "schema_version": 2})
    assert exc.value.fix and "upgrade allure" in exc.value.fix
    with pytest.raises(ReportError, match="schema_version"):
        migrate_report({k: v for k, v in d.items() if k != "schema_version"})
    with pytest.raises(ReportError, match="not a known report version"):
        migrate_report({**d, "schema_version": 0})
    with pytest.raises(ReportError, match="JSON object"):
        migrate_report([])  # type: ignore[arg-type]


def test_read_report_errors_name_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    with pytest.raises(ReportError, match="report not found"):
        read_report(path)
    path.write_text('{"schema_version": 1,\n "run_id": }')
    with pytest.raises(ReportError) as exc:
        read_report(path)
    assert exc.value.where == f"{path}:2:12"
    d = build_report(n_iter=1).model_dump(mode="json")
    path.write_text(json.dumps({**d, "schema_version": 3}))
    with pytest.raises(ReportError, match="newer allure") as exc:
        read_report(path)
    assert str(path) in (exc.value.where or "")
    d["reference_source"] = "vibes"
    path.write_text(json.dumps(d))
    with pytest.raises(ReportError, match="reference_source") as exc:
        read_report(path)
    assert exc.value.where == f"{path}, field 'reference_source'"


def test_nothing_half_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = build_report(n_iter=1)
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    with pytest.raises(ReportError, match="writable directory"):
        write_report(blocker, data)
    assert blocker.read_text() == "x"
    out = tmp_path / "run"
    first = write_report(out, data)
    before = {k: p.read_bytes() for k, p in first.items()}

    def broken_plot(_: ReportData) -> bytes:
        raise RuntimeError("matplotlib exploded")

    monkeypatch.setattr(write_mod, "render_plot", broken_plot)
    with pytest.raises(RuntimeError):
        write_report(out, build_report(n_iter=2))
    assert {k: p.read_bytes() for k, p in first.items()} == before
    assert sorted(p.name for p in out.iterdir()) == ["metrics.png", "report.json", "report.md"]


def test_accepts_the_loop_shapes(tmp_path: Path) -> None:
    # The loop passes an "all" split, a pending count and a replay agreement.
    data = build_report(n_iter=1)
    it = data.iterations[0].model_dump()
    it["splits"]["all"] = it["splits"]["heldout"]
    d = data.model_dump()
    d["iterations"] = [it]
    d["dataset"]["gold_check"] = {"kind": "regex", "normalise": True}
    d["replay_agreement"] = {
        "agreement": 0.7,
        "n_scored": 10,
        "n_unparsed": 0,
        "by_problem_type": [
            {"group": "a|b", "n": 10, "n_unparsed": 0, "errors": 3, "error_rate": 0.3, "error_rate_all": 0.3}
        ],
    }
    data2 = ReportData.model_validate(d)
    md = write_report(tmp_path, data2)["md"].read_text()
    assert "Agreement overall: 0.700" in md
    assert "| a\\|b | 10 | 3 | 0 | 0.300 |" in md  # pipe escaped; n, errors, n_unparsed, error_rate
    assert read_report(tmp_path).iterations[0].splits.keys() == {"heldout", "audit", "all"}


@pytest.mark.integration
def test_importing_report_and_metrics_stays_light() -> None:
    # matplotlib is imported only when a plot is drawn; sklearn never by allure.metrics.
    import subprocess
    import sys

    code = "import sys, allure.report, allure.metrics; print(sorted(m for m in ('matplotlib', 'sklearn', 'textual') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_pass_that_is_not_the_judge_says_so_beside_its_own_choices() -> None:
    """A refused pass's calibration and read-out were chosen within that pass: report.md says the
    loop's judge is another pass, so "adopted" there is not read as the run's (cogeval-d2's memory
    pass chose contextual calibration and was refused as a whole)."""
    from allure.report._model import CalibrationReport

    data = build_report(n_iter=2)
    line = "chose contextual on the audit split out of fold: adopted contextual"
    for it in data.iterations:
        it.calibration = CalibrationReport(mode="auto", chosen="contextual", choice={"line": line})
        it.readout = {"decision": "read-out (auto): adopted out of fold", "changed": 2}
    md = render_markdown(data.model_copy(update={"active_iteration": 0}))
    note = " (within pass 1, which is not the loop's judge: that is pass 0)"
    assert f"- iteration 1: {line}{note}" in md  # the calibration line
    assert f"2 labels changed{note}" in md  # the read-out line
    assert "within pass 0" not in md  # the judge's own pass carries no note
    md_active_last = render_markdown(data.model_copy(update={"active_iteration": 1}))
    assert "(within pass 0, which is not the loop's judge: that is pass 1)" in md_active_last
    assert "within pass 1" not in md_active_last
