"""``allure study sensitivity|entropy|consistency|request|reproducibility``: how robust is the evaluator?"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from allure.cli._common import ProjectOpt, echo
from allure.cli.study import _run_study, _study_command, study_app

RephrasingsOpt = typer.Option(
    None, "--rephrasings", "-q", help="Q prompt variants: the original and Q-1 rule-based rephrasings."
)
PromptsOpt = typer.Option(
    None, "--prompts", help="Your own prompt variants (names or folders, comma-separated)."
)
SeedOpt = typer.Option(0, "--seed", help="Seed of the rule-based rephrasings.")
TemperatureOpt = typer.Option(0.7, "--temperature", "-t", help="Sampling temperature (above 0).")


def _names(text: str | None) -> list[str] | None:
    return [p.strip() for p in text.split(",") if p.strip()] if text is not None else None


@_study_command("sensitivity")
def sensitivity_cmd(
    *,
    source: dict[str, Any],
    rephrasings: int = typer.Option(
        4, "--rephrasings", "-q", help="Q: the original prompt and Q-1 rule-based rephrasings."
    ),
    prompts: str = PromptsOpt,
    seed: int = SeedOpt,
    meta_prompt: Path = typer.Option(
        None, "--meta-prompt", help="A meta-prompt file holding {text}: the evaluator writes the rephrasings."
    ),
    run: dict[str, Any],
    project: Path = ProjectOpt,
) -> None:
    """Every item under every rephrasing, with and without the memory: S_tau, C_y, micro-F1 (seed 001)."""
    from allure.robustness import sensitivity_study

    own = {"rephrasings": rephrasings, "prompts": _names(prompts), "seed": seed, "meta_prompt": meta_prompt}
    _run_study(sensitivity_study, project, source, run, **own)


@_study_command("entropy")
def entropy_cmd(
    *,
    source: dict[str, Any],
    samples: int = typer.Option(5, "--samples", "-k", help="M: sampled answers per item and prompt variant."),
    temperature: float = TemperatureOpt,
    rephrasings: int = RephrasingsOpt,
    prompts: str = PromptsOpt,
    conditions: str = typer.Option("memory,zero-shot", "--conditions", help="memory, zero-shot or both."),
    clusterer: str = typer.Option("hdbscan", "--clusterer", help="hdbscan (KMeans for M < 4) or kmeans."),
    against: str = typer.Option(
        None, "--against", help="Entropy studies on the same items (another evaluator or prompt set)."
    ),
    seed: int = SeedOpt,
    run: dict[str, Any],
    project: Path = ProjectOpt,
) -> None:
    """M samples per item and prompt at a temperature, clustered: H, R = 1/(1+H_bar), S, bands (seed 004)."""
    from allure.robustness import entropy_study

    own = {"samples": samples, "temperature": temperature, "rephrasings": rephrasings, "seed": seed}
    lists = {
        "prompts": _names(prompts),
        "conditions": _names(conditions) or [],
        "against": _names(against) or [],
    }
    _run_study(entropy_study, project, source, run, clusterer=clusterer, **own, **lists)


@_study_command("consistency")
def consistency_cmd(
    *,
    source: dict[str, Any],
    samples: int = typer.Option(5, "--samples", "-k", help="K: self-scored answers per prompt."),
    temperature: float = TemperatureOpt,
    scale: str = typer.Option("1-10", "--scale", help="The declared score scale, LOW-HIGH."),
    score_pattern: str = typer.Option(
        None, "--score-pattern", help="Regex whose first group is the self-score (default: 'confidence: N')."
    ),
    rephrasings: int = RephrasingsOpt,
    prompts: str = PromptsOpt,
    seed: int = SeedOpt,
    pair_column: str = typer.Option(
        None, "--pair-column", help="Dataset column holding each item's paired item id (else: rephrasings)."
    ),
    nli: Path = typer.Option(
        None, "--nli", help="Local NLI checkpoint folder for the entailment (default: the evaluator judges)."
    ),
    run: dict[str, Any],
    project: Path = ProjectOpt,
) -> None:
    """K self-scores per prompt of paired prompts: Siegel-Tukey on scores and on text consistency (seed 002)."""
    from allure.robustness import consistency_study

    own = {"samples": samples, "temperature": temperature, "scale": scale, "score_pattern": score_pattern}
    pairs = {"pair_column": pair_column, "rephrasings": rephrasings, "prompts": _names(prompts)}
    _run_study(consistency_study, project, source, run, nli=nli, seed=seed, **own, **pairs)


@_study_command("request")
def request_cmd(
    *,
    source: dict[str, Any],
    procedure_from: str = typer.Option(None, "--procedure-from", help="Another evaluator's procedure."),
    zero_shot: bool = typer.Option(False, "--zero-shot", help="Run both arms without the memory's examples."),
    run: dict[str, Any],
    project: Path = ProjectOpt,
) -> None:
    """ReQuest: ask the evaluator for the procedure it followed, run it as the prompt, PerRR/PreRR (seed 000)."""
    from allure.robustness import request_study

    _run_study(request_study, project, source, run, procedure_from=procedure_from, zero_shot=zero_shot)


def reproducibility_cmd(
    run_a: str = typer.Argument(..., help="RUN, RUN@N (pass N) or STUDY@ARM."),
    run_b: str = typer.Argument(..., help="The labelling to compare with, over the same items."),
    project: Path = ProjectOpt,
) -> None:
    """PerRR (macro-F1) and PreRR (mean Jaccard) between two labellings of the same items (seed 000)."""
    from allure.robustness import reproducibility

    r = reproducibility(project, run_a, run_b)

    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    echo(f"{r.kind} ({' vs '.join(r.models)}), {r.n_items} items")
    echo(f"macro-F1: {fmt(r.f1_a)} vs {fmt(r.f1_b)}; PerRR = {fmt(r.perrr)}; PreRR = {fmt(r.prerr)}")
    if r.disagreements:
        echo(f"{len(r.disagreements)} item(s) labelled differently: {', '.join(r.disagreements[:10])}")


def register(app: typer.Typer) -> None:
    """Add ``study reproducibility`` (the studies are added to the ``study`` group on import)."""
    del app
    study_app.command("reproducibility")(reproducibility_cmd)
