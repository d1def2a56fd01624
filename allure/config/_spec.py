"""The audit spec's models: the whole audit (:class:`AuditSpec`) and its tables other than the
evaluator's and ``[loop]`` (``[memory]``, ``[gate]``, ``[reaudit]``).

Every model refuses keys it does not define (``extra = "forbid"``): a typo such as ``[evaluatr]``
is an error, not a silently ignored table. :func:`allure.config.parse_spec` turns pydantic's error
into one that names the line and the closest valid key.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationInfo,
    field_validator,
    model_validator,
)

from allure.config._evaluator import EvaluatorSpec
from allure.config._loop import LoopSpec
from allure.config._messages import SpecFieldError, fullmatch_or_refuse, jsonable
from allure.dataset import DatasetSpec
from allure.gold_check import GoldCheckConfig
from allure.labels import Label, LabelVocabulary, guess_positive, label_list
from allure.memory import LOCATION_FIX, RetrievalPolicy, location_problem
from allure.names import NAME_PATTERN
from allure.store import StoreSpec


class MemorySpec(BaseModel):
    """Where the episodic memory lives and which examples go into a prompt."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    location: str = Field(default=".allure/memory", min_length=1)
    """A folder (embedded Chroma, relative to the project) or ``http://host:port`` (a Chroma server)."""
    collection: str = "icl_examples"
    """Chroma collection name (3 to 63 letters, digits, ``.``, ``_`` or ``-``, starting and ending
    with a letter or digit: Chroma's rule)."""
    retrieval: RetrievalPolicy = Field(default_factory=lambda: RetrievalPolicy(kind="same_problem_type"))
    """Which examples an item's prompt carries."""

    @field_validator("location")
    @classmethod
    def _location(cls, v: str) -> str:
        if problem := location_problem(v):
            raise SpecFieldError("memory.location", problem, LOCATION_FIX)
        return v

    @field_validator("collection")
    @classmethod
    def _collection(cls, v: str) -> str:
        return fullmatch_or_refuse(
            v,
            r"[A-Za-z0-9][A-Za-z0-9._-]{1,61}[A-Za-z0-9]",
            "memory.collection",
            what="a Chroma collection name",
            fix="use 3 to 63 letters, digits, '.', '_' or '-', starting and ending with a letter or digit, "
            'e.g. collection = "icl_examples"',
        )


GATE_METRICS = ("accuracy", "accuracy_all", "precision", "recall", "f1", "f1_macro", "kappa", "auc")
"""Metrics a ``[gate]`` may name (the keys of :func:`allure.metrics.compute_metrics`'s result)."""


def _check_thresholds(table: str, values: dict[str, float]) -> dict[str, float]:
    for name, v in values.items():
        if name not in GATE_METRICS:
            raise ValueError(
                f"unknown gate metric {name!r} in [{table}]; use one of {', '.join(GATE_METRICS)}"
            )
        if not 0.0 <= float(v) <= 1.0:
            raise ValueError(f"threshold {table}.{name} = {v} is outside [0, 1]")
    return values


class GateSpec(BaseModel):
    """The regression gate of a re-audit (``[gate]``): absolute minimums and the largest allowed drop.

    A re-audit fails when a metric is below its minimum, or when it dropped against the baseline
    by more than ``max_drop`` and McNemar's exact test on the paired items gives p < ``alpha``.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    min: dict[str, float] = Field(default_factory=dict)
    """Absolute minimum per metric (``[gate.min]``, e.g. ``accuracy = 0.7``), each in [0, 1]."""
    max_drop: dict[str, float] = Field(default_factory=dict)
    """Largest drop against the baseline per metric (``[gate.max_drop]``), each in [0, 1]."""
    alpha: float = Field(default=0.05, gt=0.0, lt=1.0)
    """Significance level of McNemar's exact test (Holm-adjusted across problem types)."""
    baseline: str = ""
    """A re-audit id to compare with; empty: the last passing re-audit of the same set."""

    @field_validator("min")
    @classmethod
    def _min(cls, v: dict[str, float]) -> dict[str, float]:
        return _check_thresholds("gate.min", v)

    @field_validator("max_drop")
    @classmethod
    def _drop(cls, v: dict[str, float]) -> dict[str, float]:
        return _check_thresholds("gate.max_drop", v)


ReauditSplit = Literal["heldout", "audit", "all"]
"""Which split of a run (or of a spec's dataset) a frozen set pins."""


class ReauditSpec(BaseModel):
    """``[reaudit]``: the frozen item set this spec re-audits."""

    model_config = ConfigDict(extra="forbid")

    set: str = Field(min_length=1, pattern=rf"^{NAME_PATTERN}$")
    """Name of the frozen set (letters, digits, ``.``, ``_``, ``-``, ``~``, ``+``; see :mod:`allure.names`)."""
    split: ReauditSplit = "heldout"
    """When the set does not exist yet, it is pinned from this spec's dataset: this split of it."""
    probe: int | None = Field(default=None, ge=0, le=10_000)
    """Frozen items asked again, fresh, on every re-audit to notice a provider that changed the model
    behind the same name (provider drift); unset: 20 for a live ``openai`` evaluator, 0 for ``replay``
    and the embedded model. 0 turns the probe off."""


def check_synonyms(labels: list[Label], synonyms: dict[str, list[str]]) -> None:
    """Refuse synonyms that cannot be read back as their label: a blank one (it would name a label
    for an empty output), or one form under two labels or equal to another label (which label it
    means would depend on the order). A synonym that holds another label's form ("no hallucination"
    beside "hallucination") is fine: the label pattern tries the longest form first, so the longest
    form that matches wins (see :func:`allure.labels.default_label_pattern`).

    Raises:
        SpecFieldError: naming ``label_synonyms.LABEL`` and the fix.
    """
    owner: dict[str, str] = {" ".join(str(x).casefold().split()): str(x) for x in labels}
    for key, forms in synonyms.items():
        for form in forms:
            folded = " ".join(form.casefold().split())
            if not folded:
                raise SpecFieldError(
                    f"label_synonyms.{key}",
                    f"label_synonyms.{key} holds a blank synonym {json.dumps(form)}",
                    "remove it; an empty evaluator output or data cell is no label",
                )
            other = owner.setdefault(folded, key)
            if other != key:
                what = (
                    "is the label" if folded == " ".join(other.casefold().split()) else "is also a synonym of"
                )
                raise SpecFieldError(
                    f"label_synonyms.{key}",
                    f"synonym {json.dumps(form)} of {key!r} {what} {other!r}: it cannot name both",
                    f"keep {json.dumps(form)} under one label only",
                )


class AuditSpec(BaseModel):
    """A whole audit, as written in ``audit.toml``."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    name: str = "audit"
    """A name for reports."""
    label_set: list[Label] = Field(default_factory=lambda: list[Label]([0, 1]))
    """Labels the evaluator may assign: all integers (``[0, 1]``, ``[1, 2, 3, 4, 5]``) or all strings
    (``["A", "B"]``, ``["yes", "no"]``). Pairwise sets name the first response's label first."""
    positive_label: Label | None = None
    """The label of the positive class (precision, recall, F1, AUC). Unset: the last label of an
    integer set; for two string labels a label meaning yes/correct/pass; otherwise none (multi-class)."""
    label_synonyms: dict[str, list[str]] = Field(default_factory=dict)
    """Other forms of a label, keyed by the label (``A = ["Output (a)", "Response A"]``): the evaluator's
    output and the dataset's label cells are read through them. A form may hold another label's form
    (``no = ["no hallucination"]`` beside ``yes = ["hallucination"]``): the longest form that matches
    wins, so "no hallucination" is ``no``. One form under two labels, or a blank one, is refused."""
    dataset: DatasetSpec
    """The items."""
    gold_check: GoldCheckConfig = Field(default_factory=GoldCheckConfig)
    """How reference labels are derived from gold answers."""
    evaluator: EvaluatorSpec = Field(default_factory=EvaluatorSpec)
    """The evaluator."""
    memory: MemorySpec = Field(default_factory=MemorySpec)
    """The episodic memory."""
    loop: LoopSpec = Field(default_factory=LoopSpec)
    """Loop control."""
    reaudit: ReauditSpec | None = None
    """The frozen set ``allure reaudit SPEC`` scores (``[reaudit]``)."""
    gate: GateSpec = Field(default_factory=GateSpec)
    """The re-audit's regression gate (``[gate]``)."""
    store: StoreSpec = Field(default_factory=StoreSpec)
    """Where the run store lives (``[store] url``; default: the project's SQLite file)."""
    auto_approve: StrictBool = False
    """Accept every candidate as the reference labels say (no human review)."""
    base_dir: str = ""
    """Folder the spec was read from (relative paths resolve against it); set by the loader."""

    @field_validator("label_set", mode="before")
    @classmethod
    def _label_values(cls, v: Any) -> Any:
        if isinstance(v, list):
            for x in v:
                if isinstance(x, bool) or not isinstance(x, int | str):
                    raise SpecFieldError(
                        "label_set",
                        f"label_set holds {json.dumps(x) if jsonable(x) else repr(x)}, which is neither an integer nor a string",
                        'write labels as integers (label_set = [0, 1]) or strings (label_set = ["no", "yes"]); '
                        "true/false are not labels",
                    )
                if isinstance(x, str) and not x.strip():
                    raise SpecFieldError(
                        "label_set",
                        f"label_set holds the blank label {json.dumps(x)}: no evaluator output or data cell can name it",
                        'give every label a name, e.g. label_set = ["no", "yes"]; an empty cell is "no label", not a label',
                    )
        return v

    @field_validator("label_synonyms", mode="before")
    @classmethod
    def _synonyms_are_lists(cls, v: Any, info: ValidationInfo) -> Any:
        """A lone string where the list of forms belongs (``yes = "Verdict: HALLUCINATED"``), or the
        table written the other way round (``"Verdict: HALLUCINATED" = "yes"``): say so, with the
        entry as it should read."""
        if not isinstance(v, dict):
            return v
        labels = {str(x) for x in info.data.get("label_set") or []}
        for key, forms in v.items():
            if not isinstance(forms, str):
                continue
            if str(key) not in labels and forms in labels:
                raise SpecFieldError(
                    f"label_synonyms.{key}",
                    f"label_synonyms.{json.dumps(key)} = {json.dumps(forms)} names a form by its label; "
                    "[label_synonyms] maps each label to the list of its other forms",
                    f"write {json.dumps(forms)} = [{json.dumps(key)}] (the label first, its forms in a list)",
                )
            raise SpecFieldError(
                f"label_synonyms.{key}",
                f"label_synonyms.{json.dumps(key)} = {json.dumps(forms)} is one string; a label's forms are a list",
                f"write {json.dumps(key)} = [{json.dumps(forms)}]",
            )
        return v

    @field_validator("positive_label", mode="before")
    @classmethod
    def _positive_not_bool(cls, v: Any) -> Any:
        if isinstance(v, bool):
            raise SpecFieldError(
                "positive_label",
                f"positive_label = {json.dumps(v)} is a boolean, not a label",
                'name one of the labels of label_set, e.g. positive_label = 1 or positive_label = "yes"',
            )
        return v

    @model_validator(mode="after")
    def _labels(self) -> AuditSpec:
        labels = self.label_set
        fix_set = 'e.g. label_set = [0, 1] or label_set = ["A", "B"]'
        if len(labels) < 2:
            raise SpecFieldError(
                "label_set",
                f"label_set needs at least two labels, it has {len(labels)}"
                + (f" ({label_list(labels)})" if labels else ""),
                f"list every label the evaluator may assign, {fix_set}",
            )
        if len({type(x) for x in labels}) > 1:
            raise SpecFieldError(
                "label_set",
                f"label_set mixes integers and strings ({label_list(labels)})",
                f"use all integers or all strings, {fix_set}",
            )
        seen: set[str] = set()
        for x in labels:
            if str(x) in seen:
                raise SpecFieldError(
                    "label_set",
                    f"label_set lists {label_list([x])} twice ({label_list(labels)})",
                    "list each label once",
                )
            seen.add(str(x))
        if len({str(x).strip().lower() for x in labels}) != len(labels):
            raise SpecFieldError(
                "label_set",
                f"label_set has labels that differ only by case or spaces ({label_list(labels)})",
                "use labels that differ in more than case; add other spellings under [label_synonyms]",
            )
        unknown = [k for k in self.label_synonyms if k not in seen]
        if unknown:
            raise SpecFieldError(
                f"label_synonyms.{unknown[0]}",
                f"label_synonyms names {unknown[0]!r}, which is not in label_set [{label_list(labels)}]",
                f"key each synonym list by one of the labels ({label_list(labels)}), "
                f'e.g. [label_synonyms] {labels[0]} = ["..."]',
            )
        check_synonyms(labels, self.label_synonyms)
        vocab = self.vocabulary()
        if self.positive_label is not None:
            found = vocab.resolve(self.positive_label)
            if found is None:
                raise SpecFieldError(
                    "positive_label",
                    f"positive_label {self.positive_label!r} is not in label_set [{label_list(labels)}]",
                    f"set positive_label to one of {label_list(labels)}, or remove it",
                )
            self.positive_label = found
        elif self.evaluator.prompt != "pairwise":  # a preference has no positive class
            self.positive_label = guess_positive(labels)
        gs = self.dataset.gold_score
        if gs is not None:
            for i, lab in enumerate(gs.labels):
                found = vocab.resolve(lab)
                if found is None:
                    raise SpecFieldError(
                        "dataset.gold_score.labels",
                        f"dataset.gold_score.labels names {lab!r}, which is not in label_set [{label_list(labels)}]",
                        f"name only labels of label_set ({label_list(labels)})",
                    )
                gs.labels[i] = found
        gc = self.gold_check
        if "positive_label" not in gc.model_fields_set and self.positive_label is not None:
            gc.positive_label = self.positive_label
            others = [x for x in labels if x != self.positive_label]
            if "negative_label" not in gc.model_fields_set and len(others) == 1:
                gc.negative_label = others[0]
        return self

    @model_validator(mode="after")
    def _polarity(self) -> AuditSpec:
        """``polarity_labels`` maps the reversed question's two answers onto the judge's two labels."""
        ev = self.evaluator
        if ev.polarity_prompt is None:
            if ev.polarity_labels:
                raise SpecFieldError(
                    "evaluator.polarity_labels",
                    "polarity_labels is set but polarity_prompt is not",
                    "set polarity_prompt to the reversed question's prompt folder, or remove polarity_labels",
                )
            return self
        labels = [str(x) for x in self.label_set]
        example = f"{{ {labels[0]} = {json.dumps(labels[-1])}, {labels[-1]} = {json.dumps(labels[0])} }}"
        if len(labels) != 2 or ev.prompt == "pairwise":
            raise SpecFieldError(
                "evaluator.polarity_prompt",
                "the polarity variant is for a two-label, single-response judge "
                f"(label_set [{label_list(self.label_set)}], prompt {ev.prompt!r})",
                "remove polarity_prompt",
            )
        if ev.readout == "none":
            raise SpecFieldError(
                "evaluator.polarity_prompt",
                'polarity_prompt is a feature of the read-out, and readout = "none"',
                'set readout = "auto" (or "logistic"), or remove polarity_prompt',
            )
        got = {str(k): str(v) for k, v in ev.polarity_labels.items()}
        if sorted(got) != sorted(labels) or sorted(got.values()) != sorted(labels):
            raise SpecFieldError(
                "evaluator.polarity_labels",
                f"polarity_labels = {json.dumps(got)} does not map the reversed question's answers "
                f"[{', '.join(labels)}] onto the judge's labels [{', '.join(labels)}] one to one",
                f"map each label to the judge's label it means, e.g. polarity_labels = {example}",
            )
        if all(k == v for k, v in got.items()):
            raise SpecFieldError(
                "evaluator.polarity_labels",
                f"polarity_labels = {json.dumps(got)} maps every answer to itself: that is the judge's "
                "own polarity, not the reversed question",
                f"map each answer to the judge's label it means, e.g. polarity_labels = {example}",
            )
        return self

    def vocabulary(self) -> LabelVocabulary:
        """The label set with its synonyms."""
        return LabelVocabulary(self.label_set, self.label_synonyms)
