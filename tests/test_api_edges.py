"""Python API and size edges (issue 27, group 12): a list of dicts as data, a clear TypeError otherwise,
dataset.path and data= refused together, a spec error writes nothing, long replies are cut when stored."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import allure
from allure.config import parse_spec
from allure.errors import AllureError, DatasetError, MemoryStoreError, SpecError, StoreError
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
    with pytest.raises(TypeError, match="a pandas DataFrame or a non-empty list of dicts") as info:
        allure.audit(SPEC, data=data, project=tmp_path)  # type: ignore[arg-type]
    assert (
        isinstance(info.value, AllureError) and info.value.exit_code == 2
    )  # allure's own, still a TypeError
    assert "argument 'data'" in (info.value.where or "")
    assert not (tmp_path / ".allure").exists()


# issue 36 groups 3 and 4: allure.audit(5) ended in a bare TypeError (exit 5 from a script), a file as
# the project in NotADirectoryError; (arguments, the argument named, words of the message)
BAD_ARGUMENTS: list[tuple[dict[str, object], str, str]] = [
    ({"spec": 5}, "spec", "not int"),
    ({"spec": None}, "spec", "not NoneType"),
    ({"spec": ["audit.toml"]}, "spec", "not list"),
    ({"spec": SPEC, "project": 3}, "project", "not int"),
    ({"spec": SPEC, "project": "a-file"}, "project", "the project folder is a file"),
    ({"spec": SPEC, "project": "/proc/allure-36/proj"}, "project", "cannot be made"),
]


@pytest.mark.parametrize(
    ("kwargs", "argument", "words"), BAD_ARGUMENTS, ids=[str(a[0]) for a in BAD_ARGUMENTS]
)
def test_a_bad_argument_is_allures_own_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kwargs: dict[str, object], argument: str, words: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("not a folder")
    kwargs = {"data": frame(), **kwargs} if kwargs.get("spec") is SPEC else kwargs
    with pytest.raises(AllureError) as info:
        allure.audit(**kwargs)  # type: ignore[arg-type]
    err = info.value
    assert err.exit_code == 2 and f"argument '{argument}'" in (err.where or ""), err.render()
    assert words in err.render() and err.fix, err.render()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]  # nothing written


def _without(column: str) -> pd.DataFrame:
    return pd.DataFrame(frame()).drop(columns=[column])


def _with(row: int, column: str, value: object) -> pd.DataFrame:
    df = pd.DataFrame(frame()).astype(object)
    df.at[row, column] = value
    return df


# issue 36 group 5: data= was written as .allure/data/frame-*.parquet before these were found;
# (the frame, the row named (0: none), the column named, words of the message)
BAD_FRAMES: list[tuple[str, pd.DataFrame, int, str, str]] = [
    ("missing response column", _without("answer"), 1, "answer", "mapped column 'answer' is missing"),
    ("missing label column", _without("hallucination"), 1, "hallucination", "is missing"),
    ("empty frame", pd.DataFrame(frame()).iloc[0:0], 0, "", "the data has no rows"),
    ("null response", _with(3, "answer", None), 4, "answer", "the response is missing"),
    ("one list response", _with(2, "answer", ["a", "b"]), 3, "answer", "cannot be stored as a table"),
    (
        "list responses",
        pd.DataFrame(frame()).assign(answer=[["a"]] * 20),
        1,
        "answer",
        "a JSON list, not text",
    ),
    (
        "label outside the set",
        _with(5, "hallucination", "maybe"),
        6,
        "hallucination",
        "outside the label set",
    ),
    ("mixed label types", _with(1, "hallucination", True), 2, "hallucination", "cannot be stored as a table"),
    (
        "boolean labels",
        pd.DataFrame(frame()).assign(hallucination=[True, False] * 10),
        1,
        "hallucination",
        "is a boolean",
    ),
]


@pytest.mark.parametrize(
    ("frame_", "row", "column", "words"), [c[1:] for c in BAD_FRAMES], ids=[c[0] for c in BAD_FRAMES]
)
def test_bad_data_is_refused_before_anything_is_written(
    tmp_path: Path, frame_: pd.DataFrame, row: int, column: str, words: str
) -> None:
    spec = {**SPEC, "memory": {"location": str(tmp_path / "memory")}}
    with pytest.raises(DatasetError) as info:
        allure.audit(spec, data=frame_, project=tmp_path)
    err = info.value
    assert err.exit_code == 2 and words in err.message, err.render()
    where = err.where or ""
    assert where.startswith("allure.audit(), argument 'data'" + (f":{row}," if row else "")), err.render()
    assert not column or f"field '{column}'" in where, err.render()
    assert not (tmp_path / ".allure").exists() and not (tmp_path / "memory").exists()


def test_a_study_is_not_a_run(tmp_path: Path) -> None:
    # issue 36 group 7: open_project(...).run(<a study id>) returned a Run
    spec = {**SPEC, "memory": {"location": str(tmp_path / "memory")}}
    outcome = allure.audit(spec, data=frame(), project=tmp_path)
    store = RunStore(tmp_path / ".allure" / "allure.db")  # a study's row, as allure study writes it
    store.create_run({"name": "s"}, run_id="ablation-36")
    store.update_run("ablation-36", status="done", info={"kind": "study", "study_kind": "ablation"})
    store.close()
    project = allure.open_project(tmp_path)
    with pytest.raises(StoreError) as info:
        project.run("ablation-36")
    assert "'ablation-36' is a study, not a run" in info.value.message
    assert "allure study show ablation-36" in (info.value.fix or "")
    assert [r.id for r in project.runs()] == [outcome.run_id] and project.run().id == outcome.run_id


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


@pytest.mark.integration
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


@pytest.mark.parametrize("location", ["ftp://127.0.0.1/x", "file:///tmp/memory"])
def test_a_memory_location_the_spec_refuses_the_api_refuses_with_its_message(
    tmp_path: Path, location: str
) -> None:
    with pytest.raises(SpecError) as spec:
        parse_spec({"dataset": {"path": "items.jsonl"}, "memory": {"location": location}})
    with pytest.raises(MemoryStoreError) as api:
        allure.open_project(tmp_path).memory(location)
    assert api.value.message == spec.value.message and api.value.fix == spec.value.fix
    assert "only http:// and https:// URLs are allowed" in api.value.message and location in api.value.message
    assert list(tmp_path.iterdir()) == []  # nothing created
