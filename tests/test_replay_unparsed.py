"""A replay's unparsed verdicts stay unparsed (issue 41 item 2): rows whose judge gave no label are
not labelled by a read-out (a replay has no label probabilities, so it never reads out, as it never
calibrates), through the Python API as a user runs it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import allure
from tests.test_api import SPEC


def _frame(n: int = 120) -> pd.DataFrame:
    """``n`` rows; the recorded judge is wrong on every 7th and gives no label on every 6th (mostly
    ``yes`` items: a read-out fitted on z = 0 for them would call them all one label)."""
    rows = []
    for i in range(n):
        human = "yes" if i % 3 == 0 else "no"
        judge = human if i % 7 else ("no" if human == "yes" else "yes")
        rows.append(
            {
                "id": f"q{i}",
                "question": f"Tell me a fact about the number {i}.",
                "answer": f"The number {i} times seven is {i * 7}.",
                "hallucination": human,
                "judge_label": None if i % 6 == 0 else judge,
            }
        )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("readout", ["auto", "logistic"])
def test_a_replay_keeps_its_unparsed_rows_unparsed_and_reads_out_nothing(
    tmp_path: Path, readout: str
) -> None:
    df = _frame()
    spec = {
        **SPEC,  # the API test's spec over the same columns
        "name": "unparsed",
        "evaluator": {**SPEC["evaluator"], "readout": readout},
        "memory": {"location": str(tmp_path / "memory")},
    }
    outcome = allure.audit(spec, data=df, project=tmp_path)
    assert outcome.status == "done"
    run = allure.open_project(tmp_path).run(outcome.run_id)
    verdicts = run.verdicts().to_pandas().set_index("item_id")
    missing = df[df["judge_label"].isna()]["id"].tolist()
    assert len(missing) == 20
    assert verdicts.loc[missing, "label"].isna().all()  # not one of the 20 got a label
    recorded = df.set_index("id")["judge_label"]
    given = recorded.dropna()
    assert (verdicts.loc[given.index, "label"] == given).all()  # the others are the recorded labels
    overall = run.metrics_detail()[1]["all"]
    assert overall.n_unparsed == len(missing)
    assert not any(k.startswith("readout") for k in run.record.info)  # nothing read out, nothing stored
    assert run.report()["iterations"][0].get("readout") is None
