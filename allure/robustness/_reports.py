"""The records of the robustness studies: sensitivity (seed 001), semantic entropy (seed 004), score consistency (seed 002)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from allure.metrics import Interval, PairedTest, SiegelTukeyResult


class PromptVariant(BaseModel):
    """One rephrasing rho_q of the evaluator's prompt."""

    q: int
    """1 for the original prompt."""
    name: str
    """The prompt set's name."""
    path: str
    """What the evaluator loaded (a built-in name or a folder)."""
    hash: str
    """Hash of its files."""
    method: str = "original"
    """``original``, ``rules``, ``llm`` or ``given`` (passed with ``--prompts``)."""
    rules: list[str] = []
    """Rule-based: the rules applied (LLM-written: ``meta:FILE``)."""
    rejected: list[str] = Field(default_factory=list)
    """LLM-written: the drafts the check refused before this one, and why."""


class ConditionSummary(BaseModel):
    """The robustness figures of one condition (with or without the memory)."""

    condition: str
    """``memory`` or ``zero-shot``."""
    n_classes: int
    """C in ``ln C`` (the label set, plus ``N/A`` when some output was unparsed in the study)."""
    mean_sensitivity: float
    """S_tau: the mean over items of S_tau(x) (lower is better)."""
    consistency: dict[str, float | None]
    """Gold class -> C_y (higher is better; ``None`` for a class without items)."""
    micro_f1: float | None
    """Micro-F1 over every (item, rephrasing) prediction."""
    accuracy_by_rephrasing: dict[str, float | None]
    """Prompt set name -> accuracy of the arm."""
    unparsed: int
    """Outputs of the condition's arms that gave no label (class ``N/A``)."""


class ItemSensitivity(BaseModel):
    """One item's labels under every rephrasing, and its sensitivity per condition."""

    item_id: str
    gold: str | None
    """The reference label (as text)."""
    task: str
    """The task, shortened."""
    response: str
    """The response, shortened."""
    sensitivity: dict[str, float]
    """Condition -> S_tau(x)."""
    labels: dict[str, list[str]]
    """Condition -> the label under rho_1..rho_Q (``N/A``: unparsed)."""


class InconsistentPair(BaseModel):
    """Two items of the same gold class whose label distributions differ most."""

    condition: str
    gold: str
    item_a: str
    item_b: str
    consistency: float
    """1 - TVD of their distributions over the rephrasings."""
    task_a: str
    task_b: str


class RephrasingFlips(BaseModel):
    """The items whose label under rho_q differs from their label under the original prompt."""

    condition: str
    q: int
    prompt: str
    """The prompt set's name."""
    flips: int
    """Items whose label differs from rho_1's."""
    item_ids: list[str]
    """Those items (the first 50)."""


class SensitivityReport(BaseModel):
    """What ``allure study sensitivity`` measured."""

    prompts: list[PromptVariant]
    """rho_1..rho_Q."""
    conditions: list[ConditionSummary]
    """One per condition run (``memory`` first)."""
    item_sensitivity: dict[str, dict[str, float]] = {}
    """Item id -> condition -> S_tau(x)."""
    item_gold: dict[str, str | None] = {}
    """Item id -> its reference label (as text)."""
    difference: float | None = None
    """Mean over items of S_tau(x) with the memory minus without (negative: the memory made the
    evaluator less sensitive to wording)."""
    difference_ci: Interval | None = None
    """Paired bootstrap 95% interval of ``difference`` (items resampled)."""
    paired_test: PairedTest | None = None
    """Paired t-test of S_tau(x) with vs without the memory, Cohen's d_z."""
    most_sensitive: list[ItemSensitivity] = []
    """The 10 items with the highest S_tau(x) in either condition."""
    least_consistent: list[InconsistentPair] = []
    """The 10 pairs of same-class items with the lowest 1 - TVD."""
    flips: list[RephrasingFlips] = []
    """Per condition and rephrasing q >= 2, the items that changed label against rho_1."""
    findings: list[str] = []
    """Plain sentences answering: did the memory make the evaluator more or less sensitive to wording?"""


class ReproducibilityResult(BaseModel):
    """PerRR and PreRR of labelling ``b`` against labelling ``a``."""

    a: str
    b: str
    n_items: int
    kind: str
    """``intra-model`` (same evaluator model) or ``inter-model``."""
    models: list[str]
    """The evaluator model of ``a`` and of ``b``."""
    f1_a: float | None
    """Macro-F1 of ``a`` against the reference labels."""
    f1_b: float | None
    perrr: float | None
    """``100 - |F1_a - F1_b| / F1_a * 100``."""
    prerr: float | None
    """Mean Jaccard index of the predicted label sets per item."""
    disagreements: list[str]
    """Items whose labels differ (the first 50)."""


class RequestReport(BaseModel):
    """What ``allure study request`` measured (ReQuest, seed 000)."""

    procedure: str
    """The grading procedure the evaluator says it followed (the answer to the ReQuest prompt)."""
    written_by: str
    """The model that wrote it."""
    procedure_prompt: str
    """The prompt set that runs it (the original with the procedure in its system prompt)."""
    reproducibility: ReproducibilityResult
    """PerRR and PreRR of the procedure arm against the original arm."""


class EntropyItem(BaseModel):
    """One item's semantic entropy in one condition: H per prompt variant, R, S and band."""

    item_id: str
    condition: str
    """``memory`` or ``zero-shot``."""
    entropy: dict[str, float]
    """Prompt set name -> H (bits) over the clusters of its M samples."""
    clusters: dict[str, list[int]]
    """Prompt set name -> the cluster of each sample (``-1``: a sample in no cluster, counted alone)."""
    robustness: float
    """R = 1 / (1 + H_bar), H_bar the mean of H over the prompt variants."""
    stability: float
    """S = mean_v(R_v) * (1 - min(sd_v(R_v), 1))."""
    band: str
    """The robustness band of R."""


class EntropyCondition(BaseModel):
    """The semantic entropy figures of one condition, over the items."""

    condition: str
    mean_entropy: dict[str, float]
    """Prompt set name -> mean H over items."""
    robustness: float
    """Mean R over items."""
    stability: float
    """Mean S over items."""
    band: str
    """The band of the mean R."""
    bands: dict[str, int]
    """Band -> items whose R falls in it."""
    clusterers: dict[str, int]
    """Clustering used -> (item, prompt variant) groups of samples it clustered."""


class EntropyComparison(BaseModel):
    """A paired comparison of per-item R between two conditions, prompt sets or studies."""

    a: str
    b: str
    n: int
    mean_a: float
    mean_b: float
    test: PairedTest
    """Paired t-test of ``b - a`` with Cohen's d_z and the Bonferroni p over every comparison of the study."""


class EntropyReport(BaseModel):
    """What ``allure study entropy`` measured."""

    samples: int
    """M, samples per item and prompt variant."""
    temperature: float
    """The sampling temperature."""
    clusterer: str
    """``hdbscan`` (min cluster size 2, KMeans with silhouette for M < 4) or ``kmeans``."""
    prompts: list[PromptVariant]
    conditions: list[EntropyCondition]
    items: list[EntropyItem] = []
    comparisons: list[EntropyComparison] = []
    least_robust: list[EntropyItem] = []
    """The 10 items with the lowest R (either condition)."""
    findings: list[str] = []

    def to_pandas(self) -> Any:
        """One row per (item, condition): H per prompt set, R, S and band."""
        import pandas as pd

        rows = [
            {
                "item_id": it.item_id,
                "condition": it.condition,
                **{f"H[{k}]": v for k, v in it.entropy.items()},
                "R": it.robustness,
                "S": it.stability,
                "band": it.band,
            }
            for it in self.items
        ]
        return pd.DataFrame(rows)


class ConsistencyPair(BaseModel):
    """Two prompts that should get similar judgments: their K self-scores and text consistencies compared."""

    a: str
    """``ITEM`` or ``ITEM@PROMPT_SET``."""
    b: str
    scores_a: list[float | None]
    """The self-score of each of the K answers to ``a`` (``None``: the pattern found none)."""
    scores_b: list[float | None]
    score_test: SiegelTukeyResult | None
    """Siegel-Tukey on the parsed scores (``None`` with fewer than 2 on a side)."""
    score_flagged: bool
    """The scores' spread differs at alpha: a scoring failure."""
    tc_a: list[float]
    """TC_i of each answer to ``a``: its mean entailment probability with the other K-1."""
    tc_b: list[float]
    tc_test: SiegelTukeyResult | None
    tc_flagged: bool
    task_a: str = ""
    task_b: str = ""


class ConsistencyReport(BaseModel):
    """What ``allure study consistency`` measured."""

    samples: int
    """K, answers per prompt."""
    temperature: float
    scale: tuple[float, float]
    """The declared score scale (low, high)."""
    score_pattern: str
    """The regex whose first group is the self-score."""
    pairs_from: str
    """``column NAME`` or ``rephrasings``."""
    prompts: list[PromptVariant]
    entailment: str
    """``nli PATH`` or ``evaluator``."""
    alpha: float
    pairs: list[ConsistencyPair] = []
    out_of_scale: int = 0
    """Parsed scores outside the scale (left out)."""
    findings: list[str] = []

    def to_pandas(self) -> Any:
        """One row per pair: mean and spread of each side's scores and TC, the tests, the flags."""
        import numpy as np
        import pandas as pd

        def sd(v: list[float | None] | list[float]) -> float | None:
            x = [float(t) for t in v if t is not None]
            return float(np.std(x, ddof=1)) if len(x) > 1 else None

        rows = [
            {
                "a": p.a,
                "b": p.b,
                "sd_scores_a": sd(p.scores_a),
                "sd_scores_b": sd(p.scores_b),
                "p_scores": p.score_test.p_value if p.score_test else None,
                "score_flagged": p.score_flagged,
                "mean_tc_a": float(np.mean(p.tc_a)) if p.tc_a else None,
                "mean_tc_b": float(np.mean(p.tc_b)) if p.tc_b else None,
                "p_tc": p.tc_test.p_value if p.tc_test else None,
                "tc_flagged": p.tc_flagged,
            }
            for p in self.pairs
        ]
        return pd.DataFrame(rows)
