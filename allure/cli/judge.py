"""``allure judge export`` and ``allure judge label``: the audited judge as a versioned bundle, and
new data labelled with it."""

from __future__ import annotations

from pathlib import Path

import typer

from allure.cli._common import ProjectOpt, command_group, echo, progress_bar, say

judge_app = command_group(
    "judge", "Export the audited judge as a versioned bundle, and label new data with it."
)


@judge_app.command("export")
def export(
    run: str = typer.Argument(None, help="Run id (default: the newest finished run)."),
    out: Path = typer.Option(..., "--out", "-o", help="Folder to write the bundle into."),
    iteration: int = typer.Option(
        None, "--iteration", min=0, help="Export this pass instead of the adopted one."
    ),
    zero_shot: bool = typer.Option(
        False, "--zero-shot", help="Export the run's zero-shot judge (no examples)."
    ),
    fmt: str = typer.Option(
        "bundle",
        "--format",
        help="bundle, or openai-messages (adds openai-messages.json: plain chat messages).",
    ),
    project: Path = ProjectOpt,
) -> None:
    """Write a finished run's judge (prompts, adopted examples, calibration, card) as a bundle named by its content hash."""
    from allure.errors import JudgeError
    from allure.judge import export_judge

    if fmt not in ("bundle", "openai-messages"):
        raise JudgeError(f"unknown format {fmt!r}", where="--format", fix="use bundle or openai-messages")
    done = export_judge(
        project.resolve(),
        run,
        out,
        iteration=iteration,
        zero_shot=zero_shot,
        fmt=fmt,  # type: ignore[arg-type]
    )
    for line in done.warnings:
        echo(line, err=True, fg="yellow")
    card = done.card
    say(f"exported run {card['run_id']} pass {card['iteration']}: {card['judge']}")
    echo(f"{done.id} -> {done.folder}")
    echo(f"label new data: allure judge label DATA --judge {done.folder}")


@judge_app.command("label")
def label(
    data: Path = typer.Argument(
        ..., help="Data file (JSONL, JSONL.gz, JSON, CSV, Parquet), as `allure init` reads."
    ),
    judge: str = typer.Option(..., "--judge", help="Bundle folder (`allure judge export`), or a run id."),
    out: Path = typer.Option(None, "--out", "-o", help="Verdicts file: .jsonl, .csv or .parquet."),
    base_url: str = typer.Option(
        None, "--base-url", help="Reach the judge's model here instead of where it was audited (openai kind)."
    ),
    label_column: str = typer.Option(
        None,
        "--label-column",
        help="Reference label column for the agreement (default: the audit's, or 'label').",
    ),
    project: Path = ProjectOpt,
) -> None:
    """Label every item of DATA with the exported judge: the audit's prompt, examples, calibration and debiasing."""
    from allure.judge import label_data, load_judge

    project = project.resolve()
    bundle = load_judge(_bundle_folder(judge, project)).at(base_url)
    say(f"judge {bundle.id}: {len(bundle.examples)} examples, calibration {bundle.fitted.mode}")
    with progress_bar("labelling") as bar:
        done = label_data(
            bundle, data, project=project, out=out, progress=bar, say=say, label_column=label_column
        )
    say(f"{len(done.rows)} items: {done.calls} calls, {done.cache_hits} cache hits, {done.wall_s:.2f} s")
    if done.agreement is not None:
        agree, n = done.agreement
        echo(
            f"agreement with the data's label column: {agree}/{n} ({agree / n:.3f})"
            if n
            else "no labelled item"
        )
    if out is not None:
        echo(f"wrote {len(done.rows)} verdicts to {out}")
    else:
        from collections import Counter

        shares = Counter(str(r["label"]) for r in done.rows)
        echo("labels: " + ", ".join(f"{k} {v}" for k, v in sorted(shares.items())))


def _bundle_folder(judge: str, project: Path) -> Path:
    """``--judge``: a bundle folder, or a run id whose judge is exported first into the project
    (``.allure/judges/RUN``; the same run gives the same bundle)."""
    path = Path(judge)
    if path.is_dir() or "/" in judge or path.suffix:
        return path
    from allure.judge import export_judge

    folder = project / ".allure" / "judges" / judge
    export_judge(project, judge, folder)
    return folder


def register(app: typer.Typer) -> None:
    """Add ``judge export`` and ``judge label`` to the CLI."""
    app.add_typer(judge_app, name="judge")
