"""The Python API: an audit from a DataFrame plus a spec dict, then runs, verdicts, metrics, candidates
and memory as DataFrames."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

import allure
from allure.dataset import DatasetSpec, load_items
from allure.metrics import SplitMetrics


def frame(n: int = 20) -> pd.DataFrame:
    rows = []
    for i in range(n):
        human = "yes" if i % 4 == 0 else "no"
        judge = human if i % 5 else ("no" if human == "yes" else "yes")  # wrong on every 5th item
        rows.append(
            {
                "id": f"q{i}",
                "question": f"Tell me a fact about the number {i}.",
                "answer": f"The number {i} is {'prime' if i in (2, 3, 5, 7, 11, 13, 17, 19) else 'not prime'}.",
                "hallucination": human,
                "judge_label": judge.upper(),  # another spelling of the same labels
            }
        )
    return pd.DataFrame(rows)


SPEC = {
    "name": "api",
    "label_set": ["yes", "no"],
    "dataset": {
        "columns": {
            "id": "id",
            "task": "question",
            "response": "answer",
            "gold_label": "hallucination",
            "recorded_label": "judge_label",
        }
    },
    "evaluator": {"kind": "replay", "prompt": "reference_free"},
    "loop": {"max_iterations": 1, "heldout_fraction": 0, "dev_fraction": 0},
    "auto_approve": True,
}


def test_audit_a_dataframe_and_read_everything_back_as_dataframes(tmp_path: Path) -> None:
    df = frame()
    spec = {**SPEC, "memory": {"location": str(tmp_path / "memory")}}
    outcome = allure.audit(spec, data=df, project=tmp_path)
    assert outcome.status == "done"

    project = allure.open_project(tmp_path)
    (run,) = project.runs()
    assert run.id == outcome.run_id and run.spec.label_set == ["yes", "no"]

    items = run.items().to_pandas()
    assert list(items["id"]) == list(df["id"]) and set(items["split"]) == {"audit"}

    verdicts = run.verdicts().to_pandas()
    assert len(verdicts) == len(df) and set(verdicts["iteration"]) == {1}
    assert list(verdicts.sort_values("item_id")["label"]) == [
        x.lower() for x in df.sort_values("id")["judge_label"]
    ]

    metrics = run.metrics().to_pandas()
    overall = metrics[(metrics.split == "all") & (metrics.iteration == 1)].iloc[0]
    direct = (df["hallucination"] == df["judge_label"].str.lower()).mean()  # 16 of 20
    assert overall["accuracy"] == direct and overall["n_unparsed"] == 0
    assert overall["accuracy_low"] <= direct <= overall["accuracy_high"]
    rows = run.metrics()  # the stored records themselves, one per iteration and split
    assert len(rows) == len(metrics) == sum(len(s) for s in run.metrics_detail().values()) > 0
    assert all(isinstance(r, SplitMetrics) for r in rows)
    assert run.metrics_detail()[1]["all"] in rows

    wrong = int((df["hallucination"] != df["judge_label"].str.lower()).sum())
    cands = run.candidates().to_pandas()
    assert len(cands) == wrong and set(cands["decision"]) == {"approve"}
    memory = project.memory(str(tmp_path / "memory")).to_pandas()
    assert sorted(memory["item_id"]) == sorted(cands["item_id"])
    assert set(memory["correct_label"]) <= {"yes", "no"}


def test_parquet_input(tmp_path: Path) -> None:
    df = frame(6)
    df.to_parquet(tmp_path / "d.parquet", index=False)
    spec = DatasetSpec.model_validate(
        {"path": str(tmp_path / "d.parquet"), "columns": SPEC["dataset"]["columns"]}
    )
    items = load_items(spec, label_set=["yes", "no"])
    assert [it.id for it in items] == list(df["id"])
    assert [it.recorded_label for it in items] == [x.lower() for x in df["judge_label"]]
