"""``ReportData``: everything ``report.json`` holds, with its schema version and migration."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from allure.errors import AllureError
from allure.metrics import (
    DecidedAccuracy,
    GroupErrors,
    IclEffect,
    PairedDifference,
    PairedMetric,
    SplitMetrics,
)
from allure.store import RunStatus

SCHEMA_VERSION: Literal[1] = 1
"""The version of ``report.json`` this allure writes."""

ReferenceSource = Literal["regex", "gold_label", "mixed"]
"""Where the reference labels came from.

- ``regex``: the regex gold check between response and correct answer (ALLURE).
- ``gold_label``: a gold-label column of the dataset.
- ``mixed``: some items one way, some the other.
"""


class ReportError(AllureError):
    """A report cannot be read or written (unknown schema version, invalid content, unwritable folder)."""


class EvaluatorInfo(BaseModel):
    """The evaluator that was audited."""

    kind: str
    """How it was reached (e.g. ``openai``, ``local``, ``replay``)."""
    model: str = ""
    """The model name."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Sampling and request parameters (temperature, seed, ...)."""


class DatasetInfo(BaseModel):
    """The dataset and its split."""

    path: str
    """Where the dataset was read from (or the demo's name)."""
    n_items: int
    """Items in the run."""
    n_audit: int
    """Items in the audit split (ICL examples are mined from it)."""
    n_heldout: int
    """Items in the held-out split (never enters memory)."""
    gold_check: str | dict[str, Any] = ""
    """The gold check that made the reference labels: a description or its settings."""


class CandidateCounts(BaseModel):
    """Candidate ICL examples of one iteration."""

    proposed: int = 0
    """Candidates proposed from the evaluator's mistakes on the audit split."""
    approved: int = 0
    """Approved by the reviewer (entered memory)."""
    rejected: int = 0
    """Rejected by the reviewer."""
    pending: int = 0
    """Not decided yet."""


class PositionConsistency(BaseModel):
    """A pairwise evaluator's verdicts with the two responses shown in both orders."""

    n: int
    """Items whose verdict parsed in both orders."""
    consistent: int
    """Of those, items whose verdict names the same response after the swap."""
    consistency: float | None
    """``consistent / n``: the share of verdicts that survive the swap (1 = no position effect)."""
    first_position_rate: float | None
    """Share of all parsed verdicts (both orders) that chose the response shown first
    (0.5 = no position bias; ties excluded)."""
    position_bias: float | None
    """``first_position_rate - 0.5``: positive favours the first position, negative the second."""
    source: str = "live"
    """Where the swapped-order verdicts come from: ``live`` (the evaluator, in this pass) or
    ``recorded swapped verdicts`` (a replay of the dataset's ``recorded_label_swapped`` column)."""
    by_problem_type: dict[str, PositionConsistency] | None = None
    """The same figures per problem type (``None`` with one problem type)."""


class CalibrationReport(BaseModel):
    """What contextual calibration did to one pass (``allure.passes.CalibrationOutcome``)."""

    mode: str
    """``contextual``, ``prior``, ``offset`` or ``auto``."""
    blocks: int = 0
    """Distinct ICL blocks, each with its content-free distribution ``p_cf``."""
    cf_calls: int = 0
    """Content-free calls sent."""
    changed: int = 0
    """Verdicts whose label calibration changed (the parsed label stays in the run store)."""
    kept: int = 0
    """Verdicts kept as parsed (no label probabilities)."""
    p_cf: dict[str, list[float]] = {}
    """Block -> ``p_cf`` in label-set order."""
    off: bool = False
    """True when the server returned no logprobs (nothing calibrated)."""
    chosen: str | None = None
    """The mode applied (``auto``: what it chose on the dev split; ``none``: labels kept as parsed)."""
    choice: dict[str, Any] | None = None
    """``auto``: the dev split's objective per mode, the refused modes, ``n`` and one line saying so."""
    note: str = ""
    """Why a mode could not be applied."""
    offset: float | None = None
    """``offset`` (and ``auto``, which fits it too): the positive label's fitted logit offset ``b``."""
    prior: dict[str, float] | None = None
    """``prior`` (and ``auto``): the reference label shares multiplied in."""


class PositionDebiasReport(BaseModel):
    """A pairwise pass's position-debiased verdicts beside the raw ones, over items with a reference label."""

    mode: str
    """``[evaluator] position_debias`` as set (``consistent`` or ``logprob_mean``)."""
    used: str
    """The rule applied: ``consistent`` when ``logprob_mean`` found no label probabilities at all."""
    inconsistent: int
    """Items whose two orders disagree (undecided, counted apart like unparsed)."""
    unparsed: int
    """Items with no label in one of the orders (unparsed or failed)."""
    prob_fallback: int = 0
    """``logprob_mean``: items decided by the consistent rule for want of label probabilities."""
    raw: DecidedAccuracy
    """The original order's verdicts."""
    debiased: DecidedAccuracy
    """The debiased verdicts."""


class IterationReport(BaseModel):
    """One pass of the evaluator over the items."""

    iteration: int
    """0 for the zero-shot pass, then 1, 2, ..."""
    memory_size: int
    """ICL examples in memory during this pass."""
    memory_version: str = ""
    """Content hash of the memory during this pass."""
    memory_ids: list[str] = Field(default_factory=list)
    """Ids of the examples in memory during this pass, sorted (to reproduce the run against them)."""
    icl_per_prompt: float = 0.0
    """Mean number of ICL examples per prompt."""
    splits: dict[str, SplitMetrics] = Field(default_factory=dict)
    """Metrics per split: ``audit``, ``heldout`` (and ``all`` where computed)."""
    calls: int = 0
    """New evaluator calls sent."""
    cache_hits: int = 0
    """Verdicts served from the run store instead of a call."""
    prompt_tokens: int = 0
    """Prompt tokens of the new calls."""
    completion_tokens: int = 0
    """Completion tokens of the new calls."""
    cached_tokens: int = 0
    """Prompt tokens the server took from its prompt cache."""
    wall_s: float = 0.0
    """Wall time of the pass in seconds."""
    unparsed: int = 0
    """Items whose evaluator output held no label (after retrying), counted wrong in the metrics."""
    errors: int = 0
    """Items whose call failed (time-out, server error, server gone) after every retry; sent again next time."""
    retries: int = 0
    """Calls repeated after a transient failure or an output with no label."""
    candidates: CandidateCounts = Field(default_factory=CandidateCounts)
    """Candidate ICL examples proposed and decided in this iteration."""
    position: PositionConsistency | None = None
    """Pairwise prompt sets: verdicts with the responses swapped (``None`` otherwise)."""
    debias: PositionDebiasReport | None = None
    """Pairwise, with ``position_debias`` set: debiased against raw verdicts (``None`` otherwise)."""
    calibration: CalibrationReport | None = None
    """With ``[evaluator] calibration`` set: what calibrating the pass changed (``None`` otherwise)."""
    readout: dict[str, Any] | None = None
    """With ``[evaluator] readout`` set: what was fitted (mode, features, coefficients, CV score, n,
    date, the fit items) and decided, stored with the pass's memory version (``None`` otherwise)."""
    own_excluded: dict[str, int] = Field(default_factory=dict)
    """Split -> how many of its items were not shown an example mined from themselves (an earlier
    run's, or this run's with a dev split): retrieval withheld it (empty: an older run)."""


class ReplayAgreement(BaseModel):
    """Replay mode: how often the labels recorded in the dataset agree with the reference labels."""

    agreement: float | None
    """Share of parsed recorded labels equal to the reference (the last pass's accuracy on all items)."""
    n_scored: int
    """Items with a reference label."""
    n_unparsed: int
    """Of those, items whose recorded output held no label."""
    by_problem_type: list[GroupErrors] | None = None
    """Disagreements per problem type, worst first."""
    by_generator: list[GroupErrors] | None = None
    """Disagreements per generator, worst first."""

    @classmethod
    def from_metrics(cls, m: SplitMetrics) -> ReplayAgreement:
        """The agreement read from the metrics of all items."""
        return cls(
            agreement=m.accuracy,
            n_scored=m.n_scored,
            n_unparsed=m.n_unparsed,
            by_problem_type=m.errors_by_problem_type,
            by_generator=m.errors_by_generator,
        )


class ReportData(BaseModel):
    """The content of ``report.json`` (and the source of ``report.md`` and ``metrics.png``)."""

    schema_version: Literal[1] = SCHEMA_VERSION
    """Version of this format; :func:`migrate_report` upgrades older files."""
    run_id: str
    """The run."""
    created_at: str
    """When the run started (ISO-8601 UTC)."""
    finished_at: str | None = None
    """When the run finished (``None`` while running or paused)."""
    status: RunStatus
    """The run's status when the report was written."""
    stop_reason: str = ""
    """Why the loop stopped (e.g. no improvement, no new candidates, iteration limit)."""
    evaluator: EvaluatorInfo
    """The evaluator audited."""
    dataset: DatasetInfo
    """The dataset and its split."""
    reference_source: ReferenceSource = "regex"
    """Where the reference labels came from."""
    iterations: list[IterationReport] = Field(default_factory=list)
    """Every pass, in order."""
    helped: dict[PairedMetric, PairedDifference] | None = None
    """First vs last iteration on the held-out split, per metric (``accuracy``, ``f1``); ``None`` with one pass."""
    objective: str = "accuracy"
    """The loop's objective (``[loop] objective``), which the claim below uses."""
    zero_shot_iteration: int | None = None
    """The pass evaluated without examples (``None``: none was, e.g. an older run)."""
    active_iteration: int | None = None
    """The pass whose memory version the guard adopted last (the judge the loop leaves in use)."""
    effect: IclEffect | None = None
    """Held-out: the active version against zero-shot (objective, accuracy, McNemar, shares,
    warning); ``None`` when the active version is zero-shot or nothing is held out."""
    refused_effect: IclEffect | None = None
    """Held-out, for the record: the last, refused version against zero-shot (it steered nothing)."""
    primary: IclEffect | None = None
    """Held-out, the pre-registered primary comparison (issue 34 item 6): the active judge's labels
    (its memory version, calibration and read-out) against the zero-shot pass's *parsed* labels (before
    any calibration or read-out); ``None`` when nothing is held out or no pass was zero-shot."""
    decision_data: str | None = None
    """What the loop's decisions read (``decision data: 100 audit items (no: 88, yes: 12), 5 folds,
    cross-fitted``, or the dev split's size); ``None``: an older run."""
    decisions: str | None = None
    """The run's declared family of adoption decisions and how many one-sided tests it ran
    (``decisions: 8 candidates declared, family-wise alpha 0.05 (...); 5 tested``, issue 41);
    ``None``: an older run."""
    guard: list[str] = Field(default_factory=list)
    """The guard's reason line of every pass it decided, in order."""
    candidates_file: str | None = None
    """Path of ``candidates.jsonl`` listing the disagreements turned into candidates."""
    replay_agreement: ReplayAgreement | None = None
    """Replay mode: agreement of the recorded labels with the reference, overall and per group."""


def migrate_report(d: dict[str, Any]) -> dict[str, Any]:
    """Upgrade a decoded ``report.json`` to the current :data:`SCHEMA_VERSION`.

    Version 1 is current, so it is returned unchanged (a copy). Each future version adds one
    step here (``if version == 1: d = _v1_to_v2(d)``).

    Args:
        d: The decoded JSON object.

    Returns:
        A dict that :class:`ReportData` validates.

    Raises:
        ReportError: No or a non-integer ``schema_version``, or a version this allure does not know.
    """
    if not isinstance(d, dict):
        raise ReportError(
            f"a report must be a JSON object, got {type(d).__name__}",
            where="report.json",
            fix="pass the report.json that allure wrote",
        )
    version = d.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise ReportError(
            f"field 'schema_version' is missing or not an integer ({version!r})",
            where="report.json: schema_version",
            fix="pass a report.json written by allure; it starts with a schema_version field",
        )
    if version > SCHEMA_VERSION:
        raise ReportError(
            f"schema_version {version} was written by a newer allure; this one reads up to {SCHEMA_VERSION}",
            where="report.json: schema_version",
            fix="upgrade allure (pip install -U allure) to read this report",
        )
    if version < 1:
        raise ReportError(
            f"schema_version {version} is not a known report version (the first is 1)",
            where="report.json: schema_version",
            fix="re-create the report with `allure` from the run's folder",
        )
    return dict(d)
