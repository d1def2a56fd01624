"""The audit spec (TOML).

One source of truth: a run is fully described by its :class:`AuditSpec`, stored with the run.
Settings that belong to the machine rather than the audit (reviewer, caches) come from
:class:`allure.settings.Settings` (environment variables with the ``ALLURE_`` prefix).

The models (``_spec``: the audit and its tables, ``_evaluator``: ``[evaluator]``) refuse unknown
keys (pydantic's ``extra = "forbid"``); ``_messages`` turns pydantic's errors into
:class:`~allure.errors.SpecError` naming file, line, field and the closest valid key; ``_load``
reads a TOML file or a dict (:func:`load_spec`, :func:`parse_spec`).
"""

from allure.config._evaluator import (
    Calibration,
    EvaluatorKind,
    EvaluatorSpec,
    LocalSpec,
    PositionDebias,
    ReadoutChoice,
)
from allure.config._family import decision_family
from allure.config._load import (
    check_label_parsing,
    label_pattern_for,
    load_spec,
    parse_spec,
    replay_source,
)
from allure.config._loop import LoopSpec, Objective
from allure.config._messages import SpecFieldError
from allure.config._polarity import load_polarity_prompt
from allure.config._spec import (
    GATE_METRICS,
    AuditSpec,
    GateSpec,
    MemorySpec,
    ReauditSpec,
    ReauditSplit,
)

__all__ = [
    "decision_family",
    "GATE_METRICS",
    "AuditSpec",
    "Calibration",
    "ReadoutChoice",
    "EvaluatorKind",
    "EvaluatorSpec",
    "GateSpec",
    "LocalSpec",
    "LoopSpec",
    "MemorySpec",
    "Objective",
    "PositionDebias",
    "ReauditSpec",
    "ReauditSplit",
    "SpecFieldError",
    "check_label_parsing",
    "label_pattern_for",
    "load_polarity_prompt",
    "load_spec",
    "parse_spec",
    "replay_source",
]
