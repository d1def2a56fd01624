"""Score consistency across paired prompts (seed 002): K self-scored answers per prompt, Siegel-Tukey.

Pairs of prompts that should get similar judgments come from a dataset column naming each item's
paired item (``pair_column``: the pair is the two items under the spec's prompt) or from the
rephrasings (each item under rho_1 and under rho_q). Every prompt variant gets a self-score
instruction appended to its system prompt (written as a prompt set ``NAME+score`` under
``PROJECT/.allure/prompts/``); the arms ``rho_q #k`` sample K answers per item at the temperature
(sample index in the cache key, as the entropy study), through :func:`run_study`.

Per pair: the K self-scores (first group of ``score_pattern`` in each answer, kept when inside the
declared scale) of both sides are compared with the Siegel-Tukey test; ``p < alpha`` flags the pair
(a difference in spread: a scoring failure). Text consistency ``TC_i`` of each answer is its mean
entailment probability with the other K-1 answers to the same prompt, judged by an NLI model from a
local checkpoint or by the evaluator with an entailment prompt; Siegel-Tukey on TC vs TC' flags too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Unpack

from allure.errors import StudyError
from allure.prompts import (
    PROMPTS_DIR,
    Rephrasing,
    load_prompt_set,
    prompt_set_hash,
    prompt_texts,
    write_prompt_set,
)
from allure.robustness._base import run_robust
from allure.robustness._consistency_report import ConsistencyRecord, consistency_report, score_number
from allure.robustness._entail import Entail, evaluator_entailment, nli_entailment
from allure.robustness._reports import ConsistencyReport, PromptVariant
from allure.robustness._sampling import SAMPLING_PARAMS, SamplingStudy, check_sampling
from allure.safe_text import markdown_cell as md
from allure.studies import ArmSpec, ParamType, StudyContext, StudyOptions, StudyRecord, StudySource
from allure.studies.figures import fmt

SCORE_PATTERN = r"(?i)confidence\s*[:=]\s*(-?\d+(?:\.\d+)?)"
"""The default self-score pattern (its first group is the score)."""

SCORE_INSTRUCTION = (
    "After your answer, on a new line, rate your confidence in it from {low:g} to {high:g} "
    "in the form 'confidence: N'."
)
"""Appended to each prompt variant's system prompt (``{low}``, ``{high}``: the scale)."""


def parse_scale(text: str, pattern: str, instruction: str) -> tuple[float, float]:
    """``"1-10"`` -> (1, 10), checked: the pattern compiles, has a group, and reads back both ends as the
    instruction's answer form ``confidence: N`` writes them.

    Raises:
        StudyError: The scale or the pattern is unusable.
    """
    m = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*(?:-|\.\.|to)\s*(-?\d+(?:\.\d+)?)\s*", text)
    if not m or float(m.group(1)) >= float(m.group(2)):
        raise StudyError(
            f"score scale {text!r} is not LOW-HIGH with LOW < HIGH",
            where="option --scale",
            fix="pass the scale as two numbers, e.g. --scale 1-10",
        )
    low, high = float(m.group(1)), float(m.group(2))
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise StudyError(
            f"score pattern {pattern!r} does not compile ({exc})",
            where="option --score-pattern",
            fix=f"pass a regex whose first group is the score, e.g. {SCORE_PATTERN!r}",
        ) from exc
    for v in (low, high):
        answer = f"confidence: {v:g}"
        got = rx.search(answer) if rx.groups else None
        if got is None or score_number(got.group(1)) != v:
            raise StudyError(
                f"score pattern {pattern!r} cannot read the score {v:g} of scale {text} back from {answer!r}",
                where="options --score-pattern / --scale",
                fix=f"use a pattern whose first group captures the number, e.g. {SCORE_PATTERN!r}",
            )
    if "{low" not in instruction or "{high" not in instruction:
        raise StudyError(
            "the score instruction does not show the scale",
            where="option --score-instruction",
            fix="include {low} and {high} in it",
        )
    return low, high


def score_prompts(
    project: Path,
    variants: list[PromptVariant],
    pending: dict[str, dict[str, str]],
    scale: tuple[float, float],
    instruction: str,
) -> list[tuple[PromptVariant, Path, Rephrasing]]:
    """Each variant with the self-score instruction: (variant, folder, texts) to write.

    ``pending``: the texts of rephrasings not written yet, by folder.
    """
    out = []
    note = instruction.format(low=scale[0], high=scale[1])
    for v in variants:
        texts = dict(pending.get(v.path) or prompt_texts(load_prompt_set(v.path)))
        texts["system.txt"] = texts["system.txt"].rstrip() + "\n\n" + note
        name = f"{v.name}+score"
        r = Rephrasing(name, texts, v.name, "score-instruction")
        scored = v.model_copy(update={"name": name, "hash": prompt_set_hash(texts)})
        out.append((scored, project / PROMPTS_DIR / name, r))
    return out


def consistency_pairs(
    src: StudySource, pair_column: str | None, n_variants: int
) -> list[tuple[int, int, int, int]]:
    """(item index a, variant q_a, item index b, variant q_b) per pair.

    Raises:
        StudyError: ``pair_column`` names no item of the study, or only one variant from the rephrasings.
    """
    items = src.items
    if pair_column is None:
        if n_variants < 2:
            raise StudyError(
                "pairs from the rephrasings need at least one rephrasing",
                where="options --pair-column / --rephrasings",
                fix="pass --rephrasings 2 (or more), or --pair-column COLUMN",
            )
        return [(i, 1, i, q) for i in range(len(items)) for q in range(2, n_variants + 1)]
    index = {it.id: i for i, it in enumerate(items)}
    seen: set[tuple[int, int]] = set()
    for i, it in enumerate(items):
        other = index.get(str(it.metadata.get(pair_column, "")))
        if other is not None and other != i:
            seen.add((min(i, other), max(i, other)))
    if not seen:
        raise StudyError(
            f"no item names another item of the study in column {pair_column!r}",
            where=f"dataset column {pair_column}",
            fix="give each paired item the id of its pair in that column (both in the study's split)",
        )
    return [(a, 1, b, 1) for a, b in sorted(seen)]


@dataclass
class ConsistencyStudy(SamplingStudy):
    """The score consistency study as a :class:`~allure.studies.Study`."""

    kind: ClassVar[str] = "consistency"
    result: ClassVar[type[StudyRecord]] = ConsistencyRecord
    params: ClassVar[dict[str, ParamType]] = SAMPLING_PARAMS | {
        "scale": "text",
        "score_pattern": "text",
        "score_instruction": "text",
        "pair_column": "text",
        "nli": "text",
    }
    head: ConsistencyReport
    """The settings (samples, scale, pattern, prompts); the pairs are added."""
    pairs: list[tuple[int, int, int, int]]
    """(item index a, variant q_a, item index b, variant q_b) of each pair of prompts."""
    entail: Entail | None
    """The NLI entailment, or ``None``: the evaluator judges entailment (a run of its own)."""

    @classmethod
    def prepare(
        cls,
        context: StudyContext,
        *,
        scale: str = "1-10",
        score_pattern: str | None = None,
        score_instruction: str = SCORE_INSTRUCTION,
        pair_column: str | None = None,
        rephrasings: int | None = None,
        prompts: Sequence[str] | None = None,
        nli: str | Path | None = None,
        seed: int = 0,
        samples: int = 5,
        temperature: float = 0.7,
    ) -> ConsistencyStudy:
        """The checked settings, the scored prompt variants (written) and the arms, as
        :func:`consistency_study` takes them."""
        check_sampling(samples, temperature, flag="--samples")
        score_pattern = score_pattern or SCORE_PATTERN
        bounds = parse_scale(scale, score_pattern, score_instruction)
        entail_nli = nli_entailment(nli) if nli is not None else None
        if pair_column is None and rephrasings is None and prompts is None:
            rephrasings = 2
        proj, src = context.project, context.source
        variants, pending = cls.sampled_variants(
            context, temperature=temperature, rephrasings=rephrasings, prompts=prompts, seed=seed
        )
        pairs = consistency_pairs(src, pair_column, len(variants))
        scored = score_prompts(
            proj, variants, {str(f): r.texts for f, r in pending}, bounds, score_instruction
        )
        for folder, r in pending:
            write_prompt_set(folder, r)
        arms: list[ArmSpec] = []
        for v, folder, r in scored:
            write_prompt_set(folder, r)
            arms += [
                ArmSpec(
                    name=f"rho{v.q} #{k}",
                    policy=src.spec.memory.retrieval,
                    prompt=str(folder),
                    prompt_hash=v.hash,
                    rephrasing=v.q,
                    with_memory=True,
                    sample=k,
                )
                for k in range(samples)
            ]
        head = ConsistencyReport(
            samples=samples,
            temperature=temperature,
            scale=bounds,
            score_pattern=score_pattern,
            pairs_from="rephrasings" if pair_column is None else f"column {pair_column}",
            prompts=[v for v, _, _ in scored],
            entailment=f"nli {nli}" if nli is not None else "evaluator",
            alpha=context.alpha,
        )

        return cls(arms, proj, src, head, pairs, entail_nli)

    def sampled_report(self, record: StudyRecord, outputs: dict[str, list[str]]) -> ConsistencyReport:
        entail = self.entail or evaluator_entailment(self.project, self.src, record.id)
        return consistency_report(record, outputs, self.src, self.head, self.pairs, entail)

    def markdown(self, report: ConsistencyReport) -> list[str]:
        return consistency_markdown(report)


class ConsistencyOptions(StudyOptions, total=False):
    """The keyword arguments of :func:`consistency_study`: the study's own (its ``params``) and the
    :class:`~allure.studies.StudyOptions`; the defaults are :meth:`ConsistencyStudy.prepare`'s."""

    samples: int
    temperature: float
    scale: str
    score_pattern: str | None
    score_instruction: str
    pair_column: str | None
    rephrasings: int | None
    prompts: Sequence[str] | None
    nli: str | Path | None
    seed: int


def consistency_study(project: str | Path = ".", **options: Unpack[ConsistencyOptions]) -> ConsistencyRecord:
    """Score consistency across paired prompts (see the module docstring).

    Args:
        samples: K, answers per prompt (at least 2; default 5).
        temperature: Sampling temperature (above 0; default 0.7).
        scale: The declared score scale, ``LOW-HIGH`` (default ``1-10``).
        score_pattern: Regex whose first group is the self-score (default :data:`SCORE_PATTERN`).
        score_instruction: Appended to the system prompt; ``{low}`` and ``{high}`` are the scale
            (default :data:`SCORE_INSTRUCTION`).
        pair_column: Dataset column (kept in ``Item.metadata``) holding each item's paired item id;
            default: pairs from the rephrasings (``rephrasings`` defaults to 2 then).
        rephrasings: Q rule-based prompt variants; ``prompts``: your own instead.
        nli: A local NLI checkpoint folder for the entailment; default: the evaluator judges it.
        seed: Seed of the rule-based rephrasings (default 0).
        options: as :func:`~allure.robustness.sensitivity_study` takes them (``from_run``, ``spec``, ...).

    Returns:
        The :class:`ConsistencyRecord` (``.consistency.to_pandas()``: one row per pair).

    Raises:
        StudyError: ``K < 2``, ``T <= 0``, a scale the pattern cannot read, no pair, an unusable NLI folder.
    """
    result = run_robust(ConsistencyStudy, project, options)
    assert isinstance(result, ConsistencyRecord)
    return result


def consistency_markdown(r: ConsistencyReport) -> list[str]:
    """The score consistency sections of ``study.md``."""
    low, high = r.scale
    lines = [
        "",
        f"## Score consistency (K = {r.samples} at T = {r.temperature:g}, scale {low:g}-{high:g}, "
        f"pairs from {r.pairs_from}, entailment: {r.entailment})",
        "",
        f"Score pattern: `{r.score_pattern}`; {r.out_of_scale} score(s) outside the scale left out.",
        "",
        "| a | b | scores a | scores b | p (scores) | flagged | mean TC a | mean TC b | p (TC) | flagged |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in sorted(r.pairs, key=lambda p: (not p.score_flagged, not p.tc_flagged, p.a)):
        sa = " ".join(fmt(v, 0) if v is None else f"{v:g}" for v in p.scores_a)
        sb = " ".join(fmt(v, 0) if v is None else f"{v:g}" for v in p.scores_b)
        ta = sum(p.tc_a) / len(p.tc_a) if p.tc_a else None
        tb = sum(p.tc_b) / len(p.tc_b) if p.tc_b else None
        lines.append(
            f"| {md(p.a)} | {md(p.b)} | {sa} | {sb} | {fmt(p.score_test.p_value if p.score_test else None, 4)} | "
            f"{'yes' if p.score_flagged else ''} | {fmt(ta)} | {fmt(tb)} | "
            f"{fmt(p.tc_test.p_value if p.tc_test else None, 4)} | {'yes' if p.tc_flagged else ''} |"
        )
    return lines
