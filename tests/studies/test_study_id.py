"""A study's id is pinned: the same definition gives the same literal id, a new ``None``-valued field
(an arm's or the evaluator's) or a transport setting leaves it as it is, and a study started under
the older id (every field hashed, ``None`` ones too) resumes under that id."""

from __future__ import annotations

from pathlib import Path

from allure.config import parse_spec
from allure.models import Item
from allure.store import open_project_store
from allure.studies import STUDIES, ArmSpec, StudySource
from allure.studies._run import legacy_study_id, resumed_id, study_id

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


def test_a_known_spec_gives_a_known_id() -> None:
    sid = study_id("sweep", _source(), "m0", ARMS, {"sizes": [0, 2]})
    assert sid == "sweep-32bf85d6"


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


def test_a_study_started_under_the_older_id_resumes_under_it(tmp_path: Path) -> None:
    args = ("sweep", _source(), "m0", ARMS, {"sizes": [0, 2]})
    sid, legacy = study_id(*args), legacy_study_id(*args)
    assert sid != legacy  # the older id hashed the None fields too
    store = open_project_store(tmp_path)
    try:
        assert resumed_id(tmp_path, store, sid, legacy) == sid  # a new study: the new id
        (tmp_path / STUDIES / legacy).mkdir(parents=True)
        assert resumed_id(tmp_path, store, sid, legacy) == legacy  # started before: resumed there
        (tmp_path / STUDIES / sid).mkdir(parents=True)
        assert resumed_id(tmp_path, store, sid, legacy) == sid  # already under the new id: kept
    finally:
        store.close()
