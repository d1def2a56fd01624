"""The audit spec (TOML).

One source of truth: a run is fully described by its :class:`AuditSpec`, stored with the run.
Settings that belong to the machine rather than the audit (reviewer, caches) come from
:class:`allure.settings.Settings` (environment variables with the ``ALLURE_`` prefix).
"""

from __future__ import annotations

import json
import re
import tomllib
import types
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from allure.dataset import DatasetSpec
from allure.errors import SpecError, closest_name
from allure.gold_check import GoldCheckConfig
from allure.labels import Label, LabelVocabulary, default_label_pattern, guess_positive, label_list
from allure.memory import RetrievalPolicy
from allure.names import NAME_PATTERN
from allure.store import StoreSpec
from allure.urls import redact_url, url_problem

Objective = Literal["balanced_accuracy", "kappa", "macro_f1", "accuracy"]
"""The objective of the loop's decisions and claims (see :class:`LoopSpec`)."""

EvaluatorKind = Literal["local", "openai", "replay"]
"""``local``: the embedded llama.cpp server with a bundled model (default); ``openai``: any
OpenAI-compatible server (OpenAI, vLLM, llama.cpp, Ollama) by ``base_url``; ``replay``: the
labels recorded in the dataset (no model)."""


PositionDebias = Literal["none", "consistent", "logprob_mean"]
"""How a pairwise judge's two orders make one verdict (Zheng et al. 2023; METHODS.md section 10).

- ``none``: the original order's verdict (position consistency is still reported).
- ``consistent``: the label when both orders agree, else ``inconsistent`` (undecided, never coerced).
- ``logprob_mean``: each label's probability averaged over both orders, then the argmax; without
  label probabilities from the server, ``consistent``.
"""

Calibration = Literal["none", "contextual", "prior"]
"""Contextual calibration of the label probabilities (Zhao et al. 2021; METHODS.md section 8):
``contextual`` divides each item's label distribution by the mean distribution of content-free
inputs ("N/A", "", "[MASK]") sent with the same ICL block (``q = p / p_cf``, argmax);
``prior`` multiplies by the audit split's reference label shares as well (``q = p * pi / p_cf``),
for label priors far from uniform."""


class SpecFieldError(ValueError):
    """A validator's error that names the field it is about and the fix (read by :func:`parse_spec`).

    Pydantic reports a model validator's error at the top level; this carries the field, so the
    message names the spec's line and key like any other field error.
    """

    def __init__(self, field: str, message: str, fix: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message
        self.fix = fix


class LocalSpec(BaseModel):
    """Settings of the embedded llama.cpp server (``kind = "local"``)."""

    ctx_size: int = 8192
    """Context size in tokens."""
    threads: int | None = None
    """CPU threads (default: all cores)."""
    parallel: int = 1
    """Parallel server slots."""
    cache_prompt: bool = True
    """Re-use the server's prompt cache for shared prefixes (the ICL block)."""
    deterministic: bool = False
    """Prompt caching off, fixed seed, temperature 0: bit-for-bit repeatable labels."""


class EvaluatorSpec(BaseModel):
    """Which evaluator labels the items and how it is called."""

    kind: EvaluatorKind = "local"
    """The evaluator kind."""
    model: str = "qwen2.5-coder-1.5b"
    """Model name; for ``local`` a built-in model name or a path to a GGUF file."""
    base_url: str | None = None
    """OpenAI-compatible endpoint (``openai`` kind), e.g. ``http://127.0.0.1:8000/v1``."""
    api_key_env: str = "OPENAI_API_KEY"
    """Name of the environment variable that holds the API key (the key itself is never stored)."""
    prompt: str = "grader"
    """Prompt set: ``grader``, ``pairwise``, ``rubric``, ``reference_free`` (``allure/prompts/``) or a
    folder holding ``system.txt``, ``user.txt`` and ``assistant.txt``."""
    label_pattern: str | None = None
    """Regex with one group that captures the label in the evaluator's output (the last match wins);
    unset: built from the label set, its synonyms and the prompt set's assistant template."""
    rubric: str = ""
    """What the labels mean: the rubric of the ``rubric`` prompt set (a ``rubric`` column, when mapped,
    wins per item), and the closing paragraph of the ``pairwise`` and ``reference_free`` system turns."""
    swap_positions: bool = True
    """Pairwise prompt sets: also label every item with the two responses swapped, and report
    position consistency and position bias."""
    position_debias: PositionDebias = "none"
    """Pairwise prompt sets: the debiased verdict reported beside the raw one (see
    :data:`PositionDebias`). A post-processing of the two orders' calls: no call changes, so it is not
    part of the cache key. ``logprob_mean`` needs ``logprobs = true``."""
    calibration: Calibration = "none"
    """Re-label each verdict from its label probabilities by contextual calibration (see
    :data:`Calibration`): 3 content-free calls per distinct ICL block, not per item. The parsed label
    stays in the run store beside the calibrated one; needs ``logprobs = true`` (a server that
    returns none: said once, labels kept). Not part of the cache key."""
    temperature: float = 0.0
    """Sampling temperature."""
    max_tokens: int = Field(default=12, ge=1)
    """Completion token limit."""
    seed: int | None = 0
    """Sampling seed sent to the server."""
    logprobs: bool = True
    """Ask for token logprobs (label probabilities for AUC)."""
    concurrency: int = Field(default=4, ge=1, le=1024)
    """Calls in flight at once (1 to 1024)."""
    timeout_s: float = Field(default=120.0, gt=0.0)
    """Per-call timeout in seconds (more than 0)."""
    max_retries: int = Field(default=3, ge=0, le=100)
    """Retries after a failed call (timeouts, HTTP 5xx, connection errors, no label is NOT retried)."""
    retry_backoff_s: float = Field(default=0.5, ge=0.0)
    """First backoff; doubles with each retry."""
    max_error_share: float = Field(default=0.5, ge=0.0, le=1.0)
    """A pass where more than this share of the items' calls failed (after retries) stops the run with
    status ``failed`` (exit status 1), naming the first error; ``1.0`` never stops."""
    max_prompt_tokens: int | None = Field(default=None, ge=64)
    """Context budget per prompt: ICL examples are dropped (last in the ICL order first) until the prompt
    fits. ``None``: for ``local``, the server's context per slot minus ``max_tokens`` and a margin of 64;
    unlimited for other kinds. Counted with the server's ``/tokenize`` endpoint when it has one."""
    local: LocalSpec = Field(default_factory=LocalSpec)
    """Embedded server settings."""

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, v: str | None) -> str | None:
        if v is None:
            return v
        problem = url_problem(v)
        if problem:
            raise SpecFieldError(
                "evaluator.base_url",
                f"{problem}: {redact_url(v)!r}",
                'give the server\'s http:// or https:// address, e.g. base_url = "http://127.0.0.1:8000/v1"',
            )
        parts = urlsplit(v)
        if parts.username is not None or parts.password is not None or parts.query:
            # allure appends /chat/completions to the URL and stores it with the run: credentials and
            # a query would be sent wrongly and written to disk
            raise SpecFieldError(
                "evaluator.base_url",
                f"base_url {redact_url(v)!r} holds "
                + ("a user name or password" if parts.username is not None else "a query string")
                + "; it is stored with every run and a query would end up before /chat/completions",
                "give the server's address only (e.g. https://api.example/v1) and put the key in the "
                "environment variable that api_key_env names (it is sent as a bearer token, never stored)",
            )
        return v

    @field_validator("label_pattern")
    @classmethod
    def _compiles(cls, v: str | None) -> str | None:
        if v is None:
            return v
        try:
            rx = re.compile(v)
        except re.error as exc:
            raise ValueError(f"regex does not compile: {exc}") from exc
        if rx.groups < 1:
            raise ValueError("regex needs one capturing group around the label, e.g. 'score:\\s*([01])'")
        return v

    @model_validator(mode="after")
    def _debias_needs(self) -> EvaluatorSpec:
        if self.position_debias != "none" and not self.swap_positions:
            raise SpecFieldError(
                "evaluator.position_debias",
                f"position_debias = {self.position_debias!r} needs both orders",
                'set swap_positions = true, or position_debias = "none"',
            )
        if self.calibration != "none" and not self.logprobs:
            raise SpecFieldError(
                "evaluator.calibration",
                f"calibration = {self.calibration!r} needs label probabilities",
                'set logprobs = true, or calibration = "none"',
            )
        if self.calibration != "none" and self.position_debias != "none":
            raise SpecFieldError(
                "evaluator.calibration",
                "calibration and position_debias cannot both be set yet",
                'pick one: set the other to "none"',
            )
        if self.position_debias == "logprob_mean" and not self.logprobs:
            raise SpecFieldError(
                "evaluator.position_debias",
                'position_debias = "logprob_mean" needs label probabilities',
                'set logprobs = true, or position_debias = "consistent"',
            )
        return self

    def params(self) -> dict[str, Any]:
        """The parameters that change the model's output (part of the cache key)."""
        return {
            "kind": self.kind,
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "logprobs": self.logprobs,
        }


class MemorySpec(BaseModel):
    """Where the episodic memory lives and which examples go into a prompt."""

    location: str = ".allure/memory"
    """A folder (embedded Chroma, relative to the project) or ``http://host:port`` (a Chroma server)."""
    collection: str = "icl_examples"
    """Chroma collection name."""
    retrieval: RetrievalPolicy = Field(default_factory=lambda: RetrievalPolicy(kind="same_problem_type"))
    """Which examples an item's prompt carries."""


class LoopSpec(BaseModel):
    """The ALLURE loop's control."""

    max_iterations: int = Field(default=3, ge=1)
    """Evaluation passes at most (the first is zero-shot if the memory is empty)."""
    heldout_fraction: float = Field(default=0.3, ge=0.0, lt=1.0)
    """Share of items held out (never mined for examples; improvement is measured there).
    0 makes every item an audit item (e.g. to list every disagreement of a replayed evaluator)."""
    bootstrap_resamples: int = Field(default=1000, ge=100)
    """Bootstrap resamples for the 95% intervals."""
    seed: int = 0
    """Seed of the split and of any sampling."""
    stop_when_no_gain: bool = True
    """Stop when the objective on the dev split did not rise over the active memory version's."""
    successes: int = Field(default=0, ge=0, le=10_000)
    """Also propose up to this many of the judge's *correct* audit verdicts per pass as examples
    (``source = "success"``), beside its corrected mistakes (0: mistakes only, ALLURE's memory)."""
    objective: Objective = "balanced_accuracy"
    """What every decision (the guard, the stop rule) and every helped/hurt claim uses: balanced
    accuracy (mean recall over the label set: chance is 1/K whatever the label prior), Cohen's
    kappa, macro F1, or accuracy (gameable by the label prior on imbalanced labels)."""
    dev_fraction: float = Field(default=0.3, ge=0.0, lt=1.0)
    """Share of the audit items carved out as the dev split (stratified by problem type, seeded):
    never mined for examples; the guard and the stop rule read it. 0: no dev split, the guard is off."""
    guard: bool = True
    """Adopt a new memory version only when it is not worse than the active one on the dev split."""
    guard_margin: float = Field(default=0.0, ge=0.0, le=1.0)
    """Largest drop of the objective on dev the guard tolerates (0: any drop keeps the old version)."""
    guard_alpha: float = Field(default=0.05, gt=0.0, lt=1.0)
    """A drop within the margin is still refused when the paired permutation test says it is
    significant at this level."""
    max_candidates: int | None = None
    """Propose at most this many candidates per iteration (seeded sample, stratified by problem type)."""


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

    set: str = Field(min_length=1, pattern=rf"^{NAME_PATTERN}$")
    """Name of the frozen set (letters, digits, ``.``, ``_``, ``-``, ``~``, ``+``; see :mod:`allure.names`)."""
    split: ReauditSplit = "heldout"
    """When the set does not exist yet, it is pinned from this spec's dataset: this split of it."""
    probe: int | None = Field(default=None, ge=0, le=10_000)
    """Frozen items asked again, fresh, on every re-audit to notice a provider that changed the model
    behind the same name (provider drift); unset: 20 for a live ``openai`` evaluator, 0 for ``replay``
    and the embedded model. 0 turns the probe off."""


class AuditSpec(BaseModel):
    """A whole audit, as written in ``audit.toml``."""

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
    output and the dataset's label cells are read through them."""
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
    auto_approve: bool = False
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
                        f"label_set holds {json.dumps(x) if _jsonable(x) else repr(x)}, which is neither an integer nor a string",
                        'write labels as integers (label_set = [0, 1]) or strings (label_set = ["no", "yes"]); '
                        "true/false are not labels",
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

    def vocabulary(self) -> LabelVocabulary:
        """The label set with its synonyms."""
        return LabelVocabulary(self.label_set, self.label_synonyms)


def _jsonable(x: Any) -> bool:
    try:
        json.dumps(x)
    except (TypeError, ValueError):
        return False
    return True


def _where(loc: tuple[Any, ...]) -> str:
    return ".".join(str(x) for x in loc if x not in ("int", "str")) or "(top level)"


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model a field holds (``Model`` or ``Model | None``), else ``None``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) in (Union, types.UnionType):
        for arg in get_args(annotation):
            found = _nested_model(arg)
            if found is not None:
                return found
    return None


def _toml_line(text: str, path: tuple[str, ...]) -> int | None:
    """The line where the TOML ``text`` sets the key ``path`` (a key or a table header), if found."""
    if not path:
        return None
    table: tuple[str, ...] = ()
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        header = re.match(r"^\[\[?\s*([^\]]+?)\s*\]\]?", line)
        if header:
            table = tuple(part.strip().strip("\"'") for part in header.group(1).split("."))
            if table[: len(path)] == tuple(path):
                return lineno
            continue
        assign = re.match(r"^([\w\-\"'. ]+?)\s*=", line)
        if assign:
            keys = tuple(part.strip().strip("\"'") for part in assign.group(1).split("."))
            if table + keys[: len(path) - len(table)] == tuple(path) and len(table) < len(path):
                return lineno
    return None


def check_keys(data: dict[str, Any], model: type[BaseModel], *, source: str, text: str | None = None) -> None:
    """Refuse keys that ``model`` (and the models nested in it) do not define.

    Raises:
        SpecError: naming the unknown key, the line when ``text`` (the TOML source) is given,
            and the closest valid key.
    """
    _check_keys(data, model, (), source=source, text=text)


def _check_keys(
    data: dict[str, Any], model: type[BaseModel], at: tuple[str, ...], *, source: str, text: str | None
) -> None:
    fields = model.model_fields
    for key, value in data.items():
        path = (*at, str(key))
        field = fields.get(key)
        if field is None:
            valid = [name for name in fields if name != "base_dir"]
            guess = closest_name(str(key), valid)
            table = f"[{'.'.join(at)}]" if at else "the top level"
            line = _toml_line(text, path) if text is not None else None
            raise SpecError(
                f"unknown key '{key}' in {table}",
                where=f"{source}{f':{line}' if line else ''}, field '{'.'.join(path)}'",
                fix=(f"did you mean `{guess}`? " if guess else "")
                + f"valid keys in {table}: {', '.join(valid)}",
            )
        nested = _nested_model(field.annotation)
        if nested is not None and isinstance(value, dict):
            _check_keys(value, nested, path, source=source, text=text)


def parse_spec(
    data: dict[str, Any],
    *,
    source: str = "<spec>",
    base_dir: Path | None = None,
    strict: bool = True,
    text: str | None = None,
) -> AuditSpec:
    """Validate a spec dict; errors name the source and the field.

    Args:
        data: The spec as a dict (a parsed TOML file, or a stored run's spec).
        source: Where it came from, for error messages.
        base_dir: Folder relative dataset paths resolve against.
        strict: Refuse keys no model defines (a typo such as ``[evaluatr]``); a stored run's
            spec is read with ``strict=False`` so that keys from other allure versions are ignored.
        text: The TOML source, so that an unknown key's error names its line.

    Raises:
        SpecError: the spec is invalid.
    """
    if strict:
        check_keys(data, AuditSpec, source=source, text=text)
    try:
        spec = AuditSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        cause = (err.get("ctx") or {}).get("error")
        loc: tuple[Any, ...] = tuple(err["loc"])
        msg = err["msg"]
        fix = f"set {_where(loc)} so that {msg[0].lower() + msg[1:]} (see README 'Audit spec')"
        bounds = {
            "greater_than_equal": "{ge} or more",
            "greater_than": "above {gt}",
            "less_than_equal": "{le} or less",
            "less_than": "below {lt}",
        }
        if err["type"] in bounds:
            want = bounds[err["type"]].format(**(err.get("ctx") or {}))
            msg = f"{err.get('input')!r} is out of range: {_where(loc)} must be {want}"
            fix = f"set {_where(loc)} to {want} (see README 'Audit spec')"
        if isinstance(cause, SpecFieldError):
            loc, msg, fix = tuple(cause.field.split(".")), cause.message, cause.fix
        elif not loc:
            fix = "correct the spec (see README 'Audit spec')"
        line = _toml_line(text, tuple(str(x) for x in loc)) if text is not None else None
        raise SpecError(
            msg,
            where=f"{source}{f':{line}' if line else ''}, field '{_where(loc)}'",
            fix=fix,
        ) from exc
    except SpecError:
        raise
    except Exception as exc:  # sub-configs raise their own AllureErrors (e.g. a bad regex)
        from allure.errors import AllureError

        if isinstance(exc, AllureError):
            raise SpecError(
                exc.message, where=f"{source}, {exc.where or ''}".rstrip(", "), fix=exc.fix
            ) from exc
        raise
    if base_dir is not None:
        spec.base_dir = str(base_dir.resolve())
    check_label_parsing(spec, source=source)
    return spec


def replay_source(spec: AuditSpec) -> str:
    """What a replay evaluator reads, in words: ``recorded labels from column X`` (or outputs)."""
    cols = spec.dataset.columns
    if spec.dataset.format == "cogeval" or (cols.recorded_label is None and cols.recorded_output is None):
        return "recorded labels (CogEval: GPT-4's scores)"
    if cols.recorded_label is not None:
        return f"recorded labels from column {cols.recorded_label}"
    return f"recorded outputs from column {cols.recorded_output} (parsed)"


def label_pattern_for(spec: AuditSpec, assistant_template: str) -> str:
    """The evaluator's label pattern: the spec's own, or the default built from the label set and
    ``assistant_template`` (the prompt set's answer format)."""
    if spec.evaluator.label_pattern:
        return spec.evaluator.label_pattern
    return default_label_pattern(assistant_template, spec.vocabulary())


def check_label_parsing(spec: AuditSpec, *, source: str = "<spec>") -> None:
    """Check that the label pattern reads back every label from the prompt set's own answer format.

    Each label is rendered into the prompt set's assistant template (as an ICL example's answer
    is) and parsed with the evaluator's label pattern; a label that does not come back means
    every verdict with that label would be unparsed.

    Raises:
        SpecError: naming the first label that does not parse, and the fix.
    """
    from allure.labels import LabelParser
    from allure.prompts import load_prompt_set

    name = spec.evaluator.prompt
    if "/" in name or "\\" in name:  # a folder: as given (the working directory), else by the spec's folder
        here = Path(name)
        beside = Path(spec.base_dir) / name if spec.base_dir else here
        if not here.is_dir() and not beside.is_dir():
            return  # not checkable here; the evaluator reports a missing folder when it opens it
        name = str(here if here.is_dir() else beside)
    prompts = load_prompt_set(name)
    from allure.prompts import check_prompt_shape

    folder = Path(name) if Path(name).is_dir() else Path(f"prompt set {name}")
    try:
        check_prompt_shape(prompts, folder)
    except SpecError as exc:
        raise SpecError(
            exc.message, where=f"{source}, field 'evaluator.prompt' ({exc.where})", fix=exc.fix
        ) from exc
    pattern = label_pattern_for(spec, prompts.assistant)
    parser = LabelParser(pattern, spec.vocabulary())
    for label in spec.label_set:
        answer = prompts.assistant.format(label=label)
        got = parser.parse(answer)
        if got != label:
            raise SpecError(
                f"the label pattern {pattern!r} cannot read label {label!r} from the prompt set's "
                f"answer {answer!r} (it reads {got!r})",
                where=f"{source}, field 'evaluator.label_pattern'",
                fix="remove label_pattern to use the one built from label_set, or change it so that its "
                f"group captures {label!r} (add synonyms under [label_synonyms] for other forms)",
            )


def load_spec(path: str | Path) -> AuditSpec:
    """Read and validate an audit spec TOML file.

    Raises:
        SpecError: missing file, TOML syntax error (with line), or an invalid field.
    """
    p = Path(path)
    if not p.is_file():
        raise SpecError(
            "audit spec not found",
            where=str(p),
            fix="pass an existing TOML file, or run `allure audit --demo`",
        )
    try:
        text = p.read_text(encoding="utf-8-sig")
        data = tomllib.loads(text)
    except UnicodeDecodeError as exc:
        msg = f"not UTF-8 text (byte {exc.start}: {exc.reason})"
        raise SpecError(msg, where=str(p), fix="save the spec as UTF-8") from exc
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(
            f"TOML syntax error: {exc}", where=str(p), fix="correct the TOML at that line"
        ) from exc
    return parse_spec(data, source=str(p), base_dir=p.parent, text=text)
