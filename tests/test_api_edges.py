"""Python API and size edges (issue 27, group 12): a list of dicts as data, a clear TypeError otherwise,
dataset.path and data= refused together, a spec error writes nothing, long replies are cut when stored."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import allure
from allure.errors import SpecError
from allure.models import Verdict
from allure.store import RunStore
from allure.store._calls import MAX_STORED_REPLY
from tests.test_api import SPEC, frame


def test_a_list_of_dicts_is_data(tmp_path: Path) -> None:
    rows = frame().to_dict("records")
    spec = {**SPEC, "memory": {"location": str(tmp_path / "memory")}}
    outcome = allure.audit(spec, data=rows, project=tmp_path)
    assert outcome.status == "done"
    (run,) = allure.open_project(tmp_path).runs()
    assert list(run.items().to_pandas()["id"]) == [r["id"] for r in rows]


@pytest.mark.parametrize("data", ["items.jsonl", 42, [1, 2], [], {"id": "x"}])
def test_other_data_is_a_type_error(tmp_path: Path, data: object) -> None:
    with pytest.raises(TypeError, match="a pandas DataFrame or a non-empty list of dicts"):
        allure.audit(SPEC, data=data, project=tmp_path)  # type: ignore[arg-type]
    assert not (tmp_path / ".allure").exists()


def test_path_and_data_together_are_refused(tmp_path: Path) -> None:
    spec = {**SPEC, "dataset": {**SPEC["dataset"], "path": "items.jsonl"}}  # type: ignore[dict-item]
    with pytest.raises(SpecError, match="both \\[dataset\\] path and data= are given"):
        allure.audit(spec, data=frame(), project=tmp_path)
    assert not (tmp_path / ".allure").exists()


def test_a_spec_error_writes_nothing(tmp_path: Path) -> None:
    bad = {**SPEC, "label_set": ["yes", "yes"]}
    with pytest.raises(SpecError, match="label_set"):
        allure.audit(bad, data=frame(), project=tmp_path)
    assert not (tmp_path / ".allure").exists()  # no parquet file, no store


def test_a_long_reply_is_cut_when_stored(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "allure.db")
    long = "score: 1 " + "x" * (5 * 1024 * 1024)
    v = Verdict(item_id="i", prompt_hash="h", model="m", label=1, raw_output=long, status="ok")
    store.record_calls([v], {})
    (_, got) = store.lookup_calls(["h"])["h"]
    store.close()
    assert got.label == 1  # parsed from the whole reply before storing
    assert got.raw_output is not None and len(got.raw_output) < MAX_STORED_REPLY + 100
    assert got.raw_output.endswith(f"[allure: reply cut to {MAX_STORED_REPLY} of {len(long)} characters]")
    assert (tmp_path / "allure.db").stat().st_size < 1024 * 1024


def test_frame_is_still_accepted(tmp_path: Path) -> None:
    df = pd.DataFrame(frame())
    spec = {**SPEC, "memory": {"location": str(tmp_path / "memory")}}
    assert allure.audit(spec, data=df, project=tmp_path).status == "done"


def test_an_interrupted_reaudit_still_writes_junit_and_json(tmp_path: Path) -> None:
    import json
    import xml.etree.ElementTree as ET

    from tests.reaudit.helpers import allure as cli
    from tests.reaudit.helpers import write_reaudit_spec

    write_reaudit_spec(tmp_path, "http://127.0.0.1:9/v1")  # nothing listens there
    res = cli(
        "reaudit",
        "reaudit.toml",
        "--project",
        str(tmp_path),
        "--junit",
        "j.xml",
        "--json",
        "r.json",
        cwd=tmp_path,
    )
    assert res.returncode == 3, res.stderr
    root = ET.parse(tmp_path / "j.xml").getroot()
    assert root.get("errors") == "1" and root.find(".//error") is not None
    assert {p.get("name"): p.get("value") for p in root.iter("property")}["status"] == "interrupted"
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["status"] == "interrupted" and "does not answer" in doc["reason"]
