"""A study's id: a hash of an explicit, versioned payload, and the ids older allure gave the same study.

The payload (:func:`id_payload`) names what defines a study: its kind, where its items come from,
their ids, the memory's content hash, each arm's fields and the evaluator's fields, by name from the
tables below (never a dump of whatever the models hold today), plus the kind's ``definition()``
and :data:`ID_FORMAT`. A field enters when it is set: ``None`` leaves it out, and so does the value
its table gives (a field added later is listed with its default, so every id made before it stays).
``tests/studies/test_study_id.py`` fails when a model gains a field that no table names.

Older formats are reproduced from the same tables, so the same command finds a study made by an
older allure (:func:`study_ids`, newest first; the run picks the first one it already holds):

- format 2 (until this table existed): the arms' and the evaluator's set fields, transport
  settings left out, ``readout`` only when not ``auto``, ``polarity_labels`` only when not empty;
- format 1 (commit 0d22bc6 and before): every field the models had then, ``None`` ones included;
  a study that sets a field added since (an arm's ``readout``, the polarity variant, a read-out
  other than ``auto``) had no such id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from allure.models import stable_hash

if TYPE_CHECKING:
    from allure.studies._record import ArmSpec
    from allure.studies._source import StudySource

ID_FORMAT = 3
"""The version of :func:`id_payload`; it is hashed with the payload."""

NOT_IN_ID = frozenset(
    {"api_key_env", "concurrency", "timeout_s", "max_retries", "retry_backoff_s", "max_error_share"}
)
"""Evaluator settings that change how calls are sent, never what they return: in no study id."""

Table = Mapping[str, Any]
"""A model's fields in an id: field name -> the value that leaves it out besides ``None``."""

EVALUATOR_FIELDS: Table = dict.fromkeys(
    (
        "kind",
        "model",
        "base_url",
        "prompt",
        "label_pattern",
        "rubric",
        "swap_positions",
        "position_debias",
        "calibration",
        "readout",
        "polarity_prompt",
        "polarity_labels",
        "temperature",
        "max_tokens",
        "seed",
        "logprobs",
        "max_prompt_tokens",
        "local",
    )
)
"""``[evaluator]``'s fields in a format-3 id (a field added later: its default as the value)."""

ARM_FIELDS: Table = dict.fromkeys(
    (
        "name",
        "policy",
        "example_ids",
        "removed",
        "size",
        "repeat",
        "prompt",
        "prompt_hash",
        "rephrasing",
        "with_memory",
        "sample",
        "position_debias",
        "calibration",
        "readout",
    )
)
"""An arm's (:class:`~allure.studies.ArmSpec`) fields in a format-3 id."""

NESTED: Mapping[str, Table] = {
    "local": dict.fromkeys(("ctx_size", "threads", "parallel", "cache_prompt", "deterministic")),
    "policy": dict.fromkeys(
        (
            "kind",
            "k",
            "x",
            "seed",
            "include_modes",
            "exclude_modes",
            "exclude_ids",
            "balance",
            "max_examples",
            "prior",
            "min_similarity",
            "group_by",
            "sources",
        )
    ),
}
"""The fields of a nested model (``[evaluator.local]``, an arm's retrieval ``policy``) in an id."""

FORMAT_2_EVALUATOR: Table = {
    **{k: None for k in EVALUATOR_FIELDS if k not in ("readout", "polarity_labels")},
    "readout": "auto",
    "polarity_labels": {},
}
"""Format 2's evaluator: ``readout`` entered only when not ``auto``, ``polarity_labels`` when not empty."""

FORMAT_1_ADDED: Table = {"readout": "auto", "polarity_prompt": None, "polarity_labels": {}}
"""The evaluator's fields added since format 1, with the value that stands for their absence."""

FORMAT_1_EVALUATOR = tuple(k for k in [*EVALUATOR_FIELDS, *sorted(NOT_IN_ID)] if k not in FORMAT_1_ADDED)
"""Every ``[evaluator]`` field format 1 hashed (the transport settings too)."""

FORMAT_1_ARM = tuple(k for k in ARM_FIELDS if k != "readout")
"""Every arm field format 1 hashed (``readout`` came later)."""


def fields(model: BaseModel, table: Table) -> dict[str, Any]:
    """``model``'s fields named in ``table``, as JSON values; a field is left out when ``None`` or
    equal to its value in ``table``; a nested model by its own table (:data:`NESTED`)."""
    dump = model.model_dump(mode="json")
    out: dict[str, Any] = {}
    for name, left_out in table.items():
        value = getattr(model, name)
        if value is None or (left_out is not None and value == left_out):
            continue
        out[name] = fields(value, NESTED[name]) if isinstance(value, BaseModel) else dump[name]
    return out


def _every_field(model: BaseModel, names: tuple[str, ...] | Table) -> dict[str, Any]:
    """``model``'s fields ``names``, ``None`` ones included, nested models whole (format 1's dump)."""
    dump = model.model_dump(mode="json")
    return {
        name: _every_field(value, tuple(NESTED[name])) if isinstance(value, BaseModel) else dump[name]
        for name in names
        for value in [getattr(model, name)]
    }


def id_payload(
    kind: str, src: StudySource, memory_hash: str, arms: list[ArmSpec], definition: object
) -> dict[str, Any]:
    """What defines a study, named: the payload its id hashes (format :data:`ID_FORMAT`)."""
    return {
        "format": ID_FORMAT,
        "kind": kind,
        "source": src.source,
        "items": [it.id for it in src.items],
        "memory": memory_hash,
        "arms": [fields(a, ARM_FIELDS) for a in arms],
        "evaluator": fields(src.spec.evaluator, EVALUATOR_FIELDS),
        "definition": definition,
    }


def study_id(kind: str, src: StudySource, memory_hash: str, arms: list[ArmSpec], definition: object) -> str:
    """The id of a study: the hash of its :func:`id_payload`, after its kind (``sweep-1a2b3c4d``)."""
    return f"{kind}-{stable_hash(id_payload(kind, src, memory_hash, arms, definition), length=8)}"


def _older_id(
    kind: str, src: StudySource, memory_hash: str, arms: list[Any], evaluator: Any, definition: object
) -> str:
    key = stable_hash(
        kind, src.source, [it.id for it in src.items], memory_hash, arms, evaluator, definition, length=8
    )
    return f"{kind}-{key}"


def study_ids(
    kind: str, src: StudySource, memory_hash: str, arms: list[ArmSpec], definition: object
) -> list[str]:
    """The study's id in every format that could have made it, newest first (format 3, 2, 1)."""
    args = (kind, src, memory_hash, arms, definition)
    ev = src.spec.evaluator
    ids = [
        study_id(*args),
        _older_id(
            kind,
            src,
            memory_hash,
            [fields(a, ARM_FIELDS) for a in arms],
            fields(ev, FORMAT_2_EVALUATOR),
            definition,
        ),
    ]
    if all(getattr(ev, k) == v for k, v in FORMAT_1_ADDED.items()) and all(a.readout is None for a in arms):
        arm_dumps = [_every_field(a, FORMAT_1_ARM) for a in arms]
        ids.append(
            _older_id(kind, src, memory_hash, arm_dumps, _every_field(ev, FORMAT_1_EVALUATOR), definition)
        )
    return list(dict.fromkeys(ids))
