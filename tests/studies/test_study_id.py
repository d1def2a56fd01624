"""A study's id is pinned: the same definition gives the same literal id in every format (3: the named,
versioned payload; 2: main before it; 1: commit 0d22bc6, computed there by its own code), a new
``None``-valued field (an arm's or the evaluator's) or a transport setting leaves it as it is, every
field of the models is named by an id table, and a study started under an older id resumes under it.
``test_study_id_pinned.py`` finds studies made at those commits by the same command."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from allure.config import EvaluatorSpec, LocalSpec, parse_spec
from allure.memory import RetrievalPolicy
from allure.models import Item
from allure.store import open_project_store
from allure.studies import STUDIES, ArmSpec, StudySource
from allure.studies._ids import (
    ARM_FIELDS,
    EVALUATOR_FIELDS,
    ID_FORMAT,
    NESTED,
    NOT_IN_ID,
    id_payload,
    study_id,
    study_ids,
)
from allure.studies._run import resumed_id

SPEC = {
    "name": "pinned",
    "dataset": {"path": "items.jsonl"},
    "evaluator": {"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1", "calibration": "none"},
}
ARMS = [
    ArmSpec(name="full"),
    ArmSpec(name="zero-shot", example_ids=[]),
    ArmSpec(name="x=2 #0", example_ids=["a", "b"], size=2, repeat=0),
]


def _source(**evaluator: object) -> StudySource:
    data = {**SPEC, "evaluator": {**SPEC["evaluator"], **evaluator}}  # type: ignore[dict-item]
    items = [Item(id=f"i{n}", task="t", response="r") for n in range(3)]
    return StudySource(
        spec=parse_spec(data, base_dir=Path("/nonexistent")),
        items=items,
        reference={it.id: None for it in items},
        splits={},
        source={"spec": "audit.toml", "split": "all"},
        memory_location="memory",
    )


def test_a_known_spec_gives_a_known_id_in_every_format() -> None:
    sid = study_id("sweep", _source(), "m0", ARMS, {"sizes": [0, 2]})
    assert sid == "sweep-5d547812"
    # format 2 (main until the payload was named), format 1 (0d22bc6's study_id run on this source)
    assert study_ids("sweep", _source(), "m0", ARMS, {"sizes": [0, 2]}) == [
        sid,
        "sweep-32bf85d6",
        "sweep-b7df7dc0",
    ]
    payload = id_payload("sweep", _source(), "m0", ARMS, {"sizes": [0, 2]})
    assert payload["format"] == ID_FORMAT == 3
    assert payload["arms"][2] == {"name": "x=2 #0", "example_ids": ["a", "b"], "size": 2, "repeat": 0}
    assert "concurrency" not in payload["evaluator"] and payload["evaluator"]["model"] == "m"


def test_a_field_added_since_0d22bc6_leaves_no_format_1_id() -> None:
    args = ("sweep", _source(), "m0")
    assert len(study_ids(*args, [*ARMS[:2], ARMS[2].model_copy(update={"readout": "none"})], {})) == 2
    assert len(study_ids("sweep", _source(readout="none"), "m0", ARMS, {})) == 2
    polar = _source()  # the polarity variant set (its prompt folder is not checked here)
    polar.spec = polar.spec.model_copy(
        update={"evaluator": polar.spec.evaluator.model_copy(update={"polarity_prompt": "reversed"})}
    )
    assert len(study_ids("sweep", polar, "m0", ARMS, {})) == 2
    assert len(study_ids(*args, ARMS, {})) == 3


@pytest.mark.parametrize(
    ("model", "named"),
    [
        (EvaluatorSpec, set(EVALUATOR_FIELDS) | NOT_IN_ID),
        (ArmSpec, set(ARM_FIELDS)),
        (LocalSpec, set(NESTED["local"])),
        (RetrievalPolicy, set(NESTED["policy"])),
    ],
)
def test_every_field_of_a_study_model_is_named_by_an_id_table(
    model: type[BaseModel], named: set[str]
) -> None:
    # a new field fails here until it is named: in the id (with its default, so old ids stay) or not
    assert set(model.model_fields) == named


def test_none_fields_and_transport_settings_leave_the_id_alone() -> None:
    sid = study_id("sweep", _source(), "m0", ARMS, {"sizes": [0, 2]})

    class Later(ArmSpec):
        """An ArmSpec with a field a later version adds, unset."""

        temperature: float | None = None

    later = [Later(**a.model_dump()) for a in ARMS]
    assert study_id("sweep", _source(), "m0", later, {"sizes": [0, 2]}) == sid
    assert (
        study_id(
            "sweep", _source(concurrency=16, timeout_s=5.0, max_retries=0), "m0", ARMS, {"sizes": [0, 2]}
        )
        == sid
    )
    # what changes the results changes the id
    assert study_id("sweep", _source(temperature=0.5), "m0", ARMS, {"sizes": [0, 2]}) != sid
    assert (
        study_id(
            "sweep", _source(), "m0", [*ARMS[:2], ARMS[2].model_copy(update={"repeat": 1})], {"sizes": [0, 2]}
        )
        != sid
    )
    assert study_id("sweep", _source(), "m1", ARMS, {"sizes": [0, 2]}) != sid


def test_a_study_started_under_an_older_id_resumes_under_it(tmp_path: Path) -> None:
    ids = study_ids("sweep", _source(), "m0", ARMS, {"sizes": [0, 2]})
    sid, format_2, format_1 = ids
    store = open_project_store(tmp_path)
    try:
        assert resumed_id(tmp_path, store, ids) == sid  # a new study: the new id
        (tmp_path / STUDIES / format_1).mkdir(parents=True)
        assert resumed_id(tmp_path, store, ids) == format_1  # started at 0d22bc6: resumed there
        store.create_run({}, run_id=format_2)
        assert resumed_id(tmp_path, store, ids) == format_2  # the newer of the two held
        (tmp_path / STUDIES / sid).mkdir(parents=True)
        assert resumed_id(tmp_path, store, ids) == sid  # already under the new id: kept
    finally:
        store.close()
