"""The evaluator's part of the spec (``[evaluator]``, ``[evaluator.local]``): which model labels the
items, how it is called, and how a pass's verdicts are post-processed."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from allure.calibrations import calibration_names
from allure.config._messages import SpecFieldError, fullmatch_or_refuse
from allure.errors import SpecError
from allure.urls import redact_url, url_problem

EvaluatorKind = str
"""A registered backend kind (:mod:`allure.backends`): built in, ``local``: the embedded llama.cpp
server with a bundled model (default); ``openai``: any OpenAI-compatible server (OpenAI, vLLM,
llama.cpp, Ollama) by ``base_url``; ``replay``: the labels recorded in the dataset (no model);
more from packages that register one (the ``allure.backends`` entry point group)."""


PositionDebias = Literal["none", "consistent", "logprob_mean"]
"""How a pairwise judge's two orders make one verdict (Zheng et al. 2023; METHODS.md section 10).

- ``none``: the original order's verdict (position consistency is still reported).
- ``consistent``: the label when both orders agree, else ``inconsistent`` (undecided, never coerced).
- ``logprob_mean``: each label's probability averaged over both orders, then the argmax; without
  label probabilities from the server, ``consistent``.
"""

ReadoutChoice = Literal["none", "logistic", "knn", "auto"]
"""``[evaluator] readout``: the learned read-out a pass applies last (see :attr:`EvaluatorSpec.readout`)."""


def _calibration_name(value: Any) -> Any:
    """A name :func:`allure.calibrations.calibration_names` lists, refused as a ``Literal`` of them
    would be (a spec's error reads the same, a registered mode among the names)."""
    names = calibration_names()
    if isinstance(value, str) and value in names:
        return value
    expected = f"{', '.join(map(repr, names[:-1]))} or {names[-1]!r}"
    raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})


Calibration = Annotated[str, BeforeValidator(_calibration_name)]
"""``none``, a registered calibration mode (:mod:`allure.calibrations`) or ``auto``; allure's own
modes re-label from the label probabilities (Zhao et al. 2021; METHODS.md section 8):
``contextual`` divides each item's label distribution by the mean distribution of content-free
inputs ("N/A", "", "[MASK]") sent with the same ICL block (``q = p / p_cf``, argmax);
``prior`` multiplies by the reference label shares of the audit items outside dev as well
(``q = p * pi / p_cf``), for label priors far from uniform; ``offset`` (two labels) shifts the
positive label's logit by one offset fitted on the audit items outside dev so that its predicted
share there matches the reference share; ``auto`` computes ``none`` and each registered mode
on the decision data (dev, or every audit item out of fold), refuses one
that gives every item one label, tests each other against ``none`` (one-sided, at calibration's
share of ``[loop] guard_alpha`` in the run's family, ``guard_min_per_label``, Holm-adjusted over
the modes) and keeps the best
objective among those shown better (``none`` when none is)."""


class LocalSpec(BaseModel):
    """Settings of the embedded llama.cpp server (``kind = "local"``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    ctx_size: int = Field(default=8192, ge=256, le=1_048_576)
    """Context size in tokens (256 to 1,048,576)."""
    threads: int | None = Field(default=None, ge=1, le=4096)
    """CPU threads (default: all cores; 1 to 4096)."""
    parallel: int = Field(default=1, ge=1, le=256)
    """Parallel server slots (1 to 256)."""
    cache_prompt: StrictBool = True
    """Re-use the server's prompt cache for shared prefixes (the ICL block)."""
    deterministic: StrictBool = False
    """Prompt caching off, fixed seed, temperature 0: bit-for-bit repeatable labels."""


class EvaluatorSpec(BaseModel):
    """Which evaluator labels the items and how it is called."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    kind: EvaluatorKind = "local"
    """The evaluator kind: ``local``, ``openai``, ``replay`` or a kind a package registers."""
    model: str = Field(default="qwen2.5-coder-1.5b", min_length=1)
    """Model name; for ``local`` a built-in model name or a path to a GGUF file."""
    base_url: str | None = None
    """OpenAI-compatible endpoint (``openai`` kind), e.g. ``http://127.0.0.1:8000/v1``."""
    api_key_env: str = "OPENAI_API_KEY"
    """Name of the environment variable that holds the API key (the key itself is never stored)."""
    prompt: str = Field(default="grader", min_length=1)
    """Prompt set: ``grader``, ``pairwise``, ``rubric``, ``reference_free`` (``allure/prompts/``) or a
    folder holding ``system.txt``, ``user.txt`` and ``assistant.txt``."""
    label_pattern: str | None = None
    """Regex with one group that captures the label in the evaluator's output (the last match wins);
    unset: built from the label set, its synonyms and the prompt set's assistant template."""
    rubric: str = ""
    """What the labels mean: the rubric of the ``rubric`` prompt set (a ``rubric`` column, when mapped,
    wins per item), and the closing paragraph of the ``pairwise`` and ``reference_free`` system turns."""
    swap_positions: StrictBool = True
    """Pairwise prompt sets: also label every item with the two responses swapped, and report
    position consistency and position bias."""
    position_debias: PositionDebias = "none"
    """Pairwise prompt sets: the debiased verdict reported beside the raw one (see
    :data:`PositionDebias`). A post-processing of the two orders' calls: no call changes, so it is not
    part of the cache key. ``logprob_mean`` needs ``logprobs = true``."""
    calibration: Calibration = "auto"
    """Re-label each verdict from its label probabilities by contextual calibration (see
    :data:`Calibration`): 3 content-free calls per distinct ICL block, not per item. The parsed label
    stays in the run store beside the calibrated one; needs ``logprobs = true`` (a server that
    returns none: said once, labels kept). Not part of the cache key. The default ``auto`` is the
    loop's default from evidence (``benchmarks/results/icl_strategies.md``): it changes labels only
    when a correction is shown better on the decision data (each mode tested against the parsed labels
    at ``[loop] guard_alpha``, Holm-adjusted over the modes), and is off where it cannot work (replay,
    ``logprobs = false``, ``position_debias`` set; see :attr:`applied_calibration`)."""
    readout: ReadoutChoice = "auto"
    """A read-out learned from the mined audit items, applied as the pass's last step (issue 34,
    METHODS.md section 13): ``logistic`` (class-weighted L2 logistic regression on the judge's label
    log-odds and the memory's kNN vote; beyond two labels, multinomial on each label's
    log-probability; a pairwise pass that swaps also reads the swapped order's, so the fit learns the
    position correction; regularisation by stratified cross-validation on the mined items), ``knn``
    (kNN prompting on the label probabilities), ``auto`` (the logistic read-out, adopted only
    when the guard finds it better on dev than the parsed labels: one-sided test of
    :func:`allure.metrics.better_p` at the read-out's share of ``[loop] guard_alpha``,
    at least ``guard_min_per_label`` dev items of each label), ``none`` (the parsed labels). The
    default ``auto`` is from evidence decided on dev (``benchmarks/results/readout.md``: adopted on
    HaluEval's dev split, kept the parsed labels on CogEval's). Not part of the
    cache key (no call changes). Off for a replay (:attr:`applied_readout`); a verdict without label
    probabilities keeps its parsed label (an unparsed one stays unparsed)."""
    polarity_prompt: str | None = None
    """The read-out's polarity variant (two-label judges; issue 34): a prompt folder (``system.txt``,
    ``user.txt``, ``assistant.txt``, as ``prompt``; relative to the spec's folder) that asks the
    judge's question in the opposite polarity ("is the response free of hallucination?"). One call
    per item, zero-shot; its label log-odds, read back through :attr:`polarity_labels`, are the
    read-out's feature ``z_reversed``, which cancels a yes-bias the way swapping cancels a position
    bias. Written by the user (it cannot be derived from a rubric): its templates may not use
    ``{rubric}`` (the spec's rubric asks the judge's question). Needs ``readout`` other than ``none``."""
    polarity_labels: dict[str, str | int] = Field(default_factory=dict)
    """With :attr:`polarity_prompt`: each answer of the reversed question -> the judge's label it means
    (e.g. ``{ yes = "no", no = "yes" }``); both sides name every label of ``label_set`` once."""
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    """Sampling temperature (0 to 2, the OpenAI API's range)."""
    max_tokens: int = Field(default=12, ge=1)
    """Completion token limit."""
    seed: int | None = 0
    """Sampling seed sent to the server."""
    logprobs: StrictBool = True
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

    @field_validator("kind")
    @classmethod
    def _registered(cls, v: str) -> str:
        from allure.backends import backend_names, unknown_kind

        if v not in backend_names():
            message, fix = unknown_kind(v)
            raise SpecFieldError("evaluator.kind", message, fix)
        return v

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

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, v: str) -> str:
        return fullmatch_or_refuse(
            v,
            r"[A-Za-z_][A-Za-z0-9_]*",
            "evaluator.api_key_env",
            what="an environment variable name",
            fix='name the variable that holds the key (letters, digits and _), e.g. api_key_env = "OPENAI_API_KEY"',
        )

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

    @property
    def is_replay(self) -> bool:
        """Whether the labels are the dataset's recorded ones (no model answers): the one place that
        asks, so that what a replay skips (calibration, live position figures) is decided once. The
        backend kind's fact (:attr:`allure.backends.BackendFacts.replay`)."""
        from allure.backends import backend_class

        return backend_class(self.kind).replay

    @property
    def returns_logprobs(self) -> bool:
        """Whether label probabilities can be read: ``logprobs`` asked, and the backend kind's
        replies carry them (:attr:`allure.backends.BackendFacts.logprobs`)."""
        from allure.backends import backend_class

        return self.logprobs and backend_class(self.kind).logprobs

    @property
    def applied_calibration(self) -> Calibration:
        """The calibration a pass applies: ``auto`` is ``none`` where it cannot work (a replay, no
        logprobs asked, or ``position_debias`` set: the debiased labels stand); a replay never calibrates."""
        if self.is_replay:
            return "none"
        if self.calibration == "auto" and (not self.returns_logprobs or self.position_debias != "none"):
            return "none"
        return self.calibration

    @property
    def applied_readout(self) -> ReadoutChoice:
        """The read-out a pass applies, by :attr:`applied_calibration`'s rule: a replay never reads out
        (its recorded labels carry no label probabilities: a read-out of them would only label the
        verdicts the judge never gave), and ``auto`` is ``none`` where no logprobs are asked."""
        if self.is_replay:
            return "none"
        if self.readout == "auto" and not self.returns_logprobs:
            return "none"
        return self.readout

    @model_validator(mode="after")
    def _debias_needs(self) -> EvaluatorSpec:
        if self.position_debias != "none" and not self.swap_positions:
            raise SpecFieldError(
                "evaluator.position_debias",
                f"position_debias = {self.position_debias!r} needs both orders",
                'set swap_positions = true, or position_debias = "none"',
            )
        if self.calibration not in ("none", "auto") and not self.logprobs:
            raise SpecFieldError(
                "evaluator.calibration",
                f"calibration = {self.calibration!r} needs label probabilities",
                'set logprobs = true, or calibration = "none"',
            )
        if self.calibration not in ("none", "auto") and self.position_debias != "none":
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

    def overridden(self, where: str, **changes: Any) -> EvaluatorSpec:
        """This spec with ``changes`` (a study arm's ``calibration`` or ``position_debias``; ``None``
        keeps the spec's), checked by the same validators as the spec itself.

        Raises:
            SpecError: The changed spec is invalid (e.g. calibration and position_debias both set);
                ``where`` names what asked for the change.
        """
        update = {k: v for k, v in changes.items() if v is not None}
        if not update:
            return self
        try:
            return EvaluatorSpec.model_validate({**self.model_dump(), **update})
        except ValidationError as exc:
            err = exc.errors()[0]
            cause = (err.get("ctx") or {}).get("error")
            if isinstance(cause, SpecFieldError):
                raise SpecError(cause.message, where=f"{where}: {cause.field}", fix=cause.fix) from exc
            field = ".".join(str(x) for x in err["loc"]) or "evaluator"
            raise SpecError(
                f"{err['msg']}", where=f"{where}: evaluator.{field}", fix="give a value the spec accepts"
            ) from exc

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
