"""``allure study sensitivity|entropy|consistency|reproducibility``: how robust is the evaluator?"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from allure.cli._common import ProjectOpt, echo, say
from allure.cli.study import (
    AlphaOpt,
    BudgetOpt,
    FromRunOpt,
    MemoryOpt,
    NameOpt,
    SpecOpt,
    SplitOpt,
    _arm_bars,
    _check_split,
    _summary,
    study_app,
)

if TYPE_CHECKING:
    from allure.audits import StudyRecord


def sensitivity_cmd(
    from_run: str = FromRunOpt,
    spec: Path = SpecOpt,
    rephrasings: int = typer.Option(
        4, "--rephrasings", "-q", help="Q: the original prompt and Q-1 rule-based rephrasings."
    ),
    split: str = SplitOpt,
    memory: str = MemoryOpt,
    prompts: str = typer.Option(
        None, "--prompts", help="Your own rephrasings instead (prompt set names or folders, comma-separated)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the rule-based rephrasings."),
    max_prompt_tokens: int = BudgetOpt,
    meta_prompt: Path = typer.Option(
        None, "--meta-prompt", help="A meta-prompt file holding {text}: the evaluator writes the rephrasings."
    ),
    name: str = NameOpt,
    alpha: float = AlphaOpt,
    project: Path = ProjectOpt,
) -> None:
    """Every item under every rephrasing, with and without the memory: S_tau, C_y, micro-F1 (seed 001)."""
    from allure.audits import sensitivity_study

    _check_split(split)
    options = {
        **_common(from_run, spec, split, memory, name, alpha, max_prompt_tokens),
        "rephrasings": rephrasings,
        "prompts": _names(prompts),
        "seed": seed,
        "meta_prompt": meta_prompt,
    }
    study = _run(sensitivity_study, project, options)
    report = study.sensitivity
    if report is not None:
        for item in report.most_sensitive[:5]:
            echo(f"sensitive: {item.item_id} S_tau {item.sensitivity} {item.task[:80]}")


def entropy_cmd(
    from_run: str = FromRunOpt,
    spec: Path = SpecOpt,
    split: str = SplitOpt,
    memory: str = MemoryOpt,
    max_prompt_tokens: int = BudgetOpt,
    name: str = NameOpt,
    alpha: float = AlphaOpt,
    project: Path = ProjectOpt,
    samples: int = typer.Option(5, "--samples", "-m", help="M: sampled answers per item and prompt variant."),
    temperature: float = typer.Option(0.7, "--temperature", "-t", help="Sampling temperature (above 0)."),
    rephrasings: int = typer.Option(
        None, "--rephrasings", "-q", help="Q prompt variants: the original and Q-1 rule-based rephrasings."
    ),
    prompts: str = typer.Option(
        None, "--prompts", help="Your own prompt variants (names or folders, comma-separated)."
    ),
    conditions: str = typer.Option("memory,zero-shot", "--conditions", help="memory, zero-shot or both."),
    seed: int = typer.Option(0, "--seed", help="Seed of the rule-based rephrasings."),
    clusterer: str = typer.Option("hdbscan", "--clusterer", help="hdbscan (KMeans for M < 4) or kmeans."),
    against: str = typer.Option(
        None,
        "--against",
        help="Entropy studies on the same items (another evaluator or prompt set) to compare with.",
    ),
) -> None:
    """M samples per item and prompt at a temperature, clustered: H, R = 1/(1+H_bar), S, bands (seed 004)."""
    _check_split(split)
    from allure.audits import entropy_study

    options = {
        "samples": samples,
        "temperature": temperature,
        "rephrasings": rephrasings,
        "prompts": _names(prompts),
        "conditions": _names(conditions) or [],
        "clusterer": clusterer,
        "against": _names(against) or [],
        "seed": seed,
        **_common(from_run, spec, split, memory, name, alpha, max_prompt_tokens),
    }
    _run(entropy_study, project, options)


def consistency_cmd(
    samples: int = typer.Option(5, "--samples", "-k", help="K: self-scored answers per prompt."),
    from_run: str = FromRunOpt,
    scale: str = typer.Option("1-10", "--scale", help="The declared score scale, LOW-HIGH."),
    spec: Path = SpecOpt,
    score_pattern: str = typer.Option(
        None, "--score-pattern", help="Regex whose first group is the self-score (default: 'confidence: N')."
    ),
    split: str = SplitOpt,
    pair_column: str = typer.Option(
        None, "--pair-column", help="Dataset column holding each item's paired item id (else: rephrasings)."
    ),
    memory: str = MemoryOpt,
    rephrasings: int = typer.Option(
        None, "--rephrasings", "-q", help="Q prompt variants (pairs: each item under rho_1 and rho_q)."
    ),
    max_prompt_tokens: int = BudgetOpt,
    prompts: str = typer.Option(None, "--prompts", help="Your own prompt variants (comma-separated)."),
    name: str = NameOpt,
    nli: Path = typer.Option(
        None, "--nli", help="Local NLI checkpoint folder for the entailment (default: the evaluator judges)."
    ),
    alpha: float = AlphaOpt,
    temperature: float = typer.Option(0.7, "--temperature", "-t", help="Sampling temperature (above 0)."),
    project: Path = ProjectOpt,
    seed: int = typer.Option(0, "--seed", help="Seed of the rule-based rephrasings."),
) -> None:
    """K self-scores per prompt of paired prompts: Siegel-Tukey on scores and on text consistency (seed 002)."""
    _check_split(split)
    from allure.audits import consistency_study

    options = {
        "samples": samples,
        "temperature": temperature,
        "scale": scale,
        "score_pattern": score_pattern,
        "pair_column": pair_column,
        "rephrasings": rephrasings,
        "prompts": _names(prompts),
        "nli": nli,
        "seed": seed,
        **_common(from_run, spec, split, memory, name, alpha, max_prompt_tokens),
    }
    study = _run(consistency_study, project, options)
    flagged = [
        p for p in (study.consistency.pairs if study.consistency else []) if p.score_flagged or p.tc_flagged
    ]
    for p in flagged:
        echo(f"flagged: {p.a} ~ {p.b} scores {p.scores_a} vs {p.scores_b}")


def request_cmd(
    from_run: str = FromRunOpt,
    spec: Path = SpecOpt,
    procedure_from: str = typer.Option(None, "--procedure-from", help="Another evaluator's procedure."),
    split: str = SplitOpt,
    memory: str = MemoryOpt,
    project: Path = ProjectOpt,
    zero_shot: bool = typer.Option(False, "--zero-shot", help="Run both arms without the memory's examples."),
    max_prompt_tokens: int = BudgetOpt,
    name: str = NameOpt,
    alpha: float = AlphaOpt,
) -> None:
    """ReQuest: ask the evaluator for the procedure it followed, run it as the prompt, PerRR/PreRR (seed 000)."""
    _check_split(split)
    from allure.audits import request_study

    options: dict[str, Any] = {"procedure_from": procedure_from, "zero_shot": zero_shot}
    options.update(_common(from_run, spec, split, memory, name, alpha, max_prompt_tokens))
    study = _run(request_study, project, options)
    if study.request is not None:
        echo(f"procedure ({study.request.written_by}): {study.request.procedure[:300]}")


def _run(study_fn: Callable[..., StudyRecord], project: Path, options: dict[str, Any]) -> StudyRecord:
    """Run a study with progress bars, then print its summary."""
    with _arm_bars() as bars:
        study = study_fn(project, say=say, arm_progress=bars, **options)
    _summary(study)
    return study


def _common(
    from_run: str, spec: Path, split: str, memory: str, name: str, alpha: float, max_prompt_tokens: int
) -> dict[str, Any]:
    """The options every robustness study takes: where its items come from, its name and alpha."""
    keys = ("from_run", "spec", "split", "memory", "name", "alpha", "max_prompt_tokens")
    return dict(zip(keys, (from_run, spec, split, memory, name, alpha, max_prompt_tokens), strict=True))


def _names(text: str | None) -> list[str] | None:
    return [p.strip() for p in text.split(",") if p.strip()] if text is not None else None


def reproducibility_cmd(
    run_a: str = typer.Argument(..., help="RUN, RUN@N (pass N) or STUDY@ARM."),
    run_b: str = typer.Argument(..., help="The labelling to compare with, over the same items."),
    project: Path = ProjectOpt,
) -> None:
    """PerRR (macro-F1) and PreRR (mean Jaccard) between two labellings of the same items (seed 000)."""
    from allure.audits import reproducibility

    r = reproducibility(project, run_a, run_b)

    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    echo(f"{r.kind} ({' vs '.join(r.models)}), {r.n_items} items")
    echo(f"macro-F1: {fmt(r.f1_a)} vs {fmt(r.f1_b)}; PerRR = {fmt(r.perrr)}; PreRR = {fmt(r.prerr)}")
    if r.disagreements:
        echo(f"{len(r.disagreements)} item(s) labelled differently: {', '.join(r.disagreements[:10])}")


def register(app: typer.Typer) -> None:
    """Add the robustness studies to the ``study`` command group."""
    del app
    study_app.command("sensitivity")(sensitivity_cmd)
    study_app.command("reproducibility")(reproducibility_cmd)
    study_app.command("entropy")(entropy_cmd)
    study_app.command("consistency")(consistency_cmd)
    study_app.command("request")(request_cmd)
