"""``allure audit``: run the ALLURE loop on a dataset."""

from __future__ import annotations

from pathlib import Path

import typer

from allure.cli._common import ProjectOpt, echo, progress_bar, say
from allure.cli._outcome import print_outcome
from allure.config import AuditSpec, EvaluatorKind, load_spec, parse_spec


def audit(
    spec_path: Path = typer.Argument(None, help="Audit spec (TOML). Omit with --demo or --dataset."),
    demo: bool = typer.Option(False, "--demo", help="Audit the CogEval sample shipped with allure."),
    dataset: Path = typer.Option(
        None, "--dataset", help="Dataset file (JSONL, JSONL.gz, JSON, CSV, Parquet) instead of a spec."
    ),
    fmt: str = typer.Option(
        None, "--format", help="Dataset format: auto, jsonl, json, csv, parquet, cogeval."
    ),
    evaluator: EvaluatorKind = typer.Option(
        None, "--evaluator", help="Evaluator kind: local, openai, replay, or one a package registers."
    ),
    model: str = typer.Option(None, "--model", help="Evaluator model (local: built-in name or GGUF path)."),
    base_url: str = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint (openai kind)."),
    max_iterations: int = typer.Option(None, "--max-iterations", min=1, help="Evaluation passes at most."),
    limit: int = typer.Option(None, "--limit", min=1, help="Use a stratified sample of this many items."),
    max_candidates: int = typer.Option(
        None, "--max-candidates", min=1, help="Candidates proposed per iteration at most."
    ),
    auto_approve: bool = typer.Option(
        False, "--auto-approve", help="Approve candidates as the reference labels say (no review)."
    ),
    deterministic: bool = typer.Option(
        False, "--deterministic", help="Local server: no prompt cache, fixed seed, temperature 0."
    ),
    plan: bool = typer.Option(
        False,
        "--plan",
        help="Count the calls the audit would send (the run store answers the rest); run nothing.",
    ),
    project: Path = ProjectOpt,
) -> None:
    """Run the ALLURE loop: evaluate, check against gold, propose ICL examples, review, re-run."""
    if sum(x is not None and x is not False for x in (spec_path, demo or None, dataset)) != 1:
        raise typer.BadParameter("give exactly one of SPEC.toml, --demo or --dataset")
    if evaluator is not None:
        _check_kind(evaluator)
    if spec_path is not None:
        data = load_spec(spec_path).model_dump(mode="json")
        source = str(spec_path)
    elif demo:
        from allure.dataset import demo_audit

        data = demo_audit(evaluator or "local")
        source = "--demo"
    else:
        data = {"name": Path(dataset).name, "dataset": {"path": str(Path(dataset).resolve())}}
        source = "--dataset"
    ds, ev, loop = (
        data.setdefault("dataset", {}),
        data.setdefault("evaluator", {}),
        data.setdefault("loop", {}),
    )
    for key, value, table in (
        ("format", fmt, ds),
        ("limit", limit, ds),
        ("kind", evaluator, ev),
        ("model", model, ev),
        ("base_url", base_url, ev),
        ("max_iterations", max_iterations, loop),
        ("max_candidates", max_candidates, loop),
    ):
        if value is not None:
            table[key] = value
    if deterministic:
        ev.setdefault("local", {})["deterministic"] = True
    if auto_approve:
        data["auto_approve"] = True
    spec: AuditSpec = parse_spec(data, source=source, base_dir=Path(spec_path).parent if spec_path else None)
    if plan:
        from allure.graphs.plan import plan_audit

        for line in plan_audit(spec, project).lines():
            echo(line)
        return
    from allure.graphs import (
        start_run,
    )  # after the spec is read: a bad one is refused without the loop's imports

    with progress_bar("evaluating") as bar:
        outcome = start_run(spec, project, progress=say, eval_progress=bar)
    print_outcome(outcome, project)


def register(app: typer.Typer) -> None:
    """Add ``audit`` to the CLI."""
    app.command("audit")(audit)


def _check_kind(kind: str) -> None:
    """Refuse an ``--evaluator`` no backend is registered as, naming the option and the kinds.

    Raises:
        SpecError: ``kind`` is not a registered backend kind.
    """
    from allure.backends import backend_names, unknown_kind
    from allure.errors import SpecError

    if kind not in backend_names():
        message, fix = unknown_kind(kind)
        raise SpecError(message, where="option --evaluator", fix=f"pass --evaluator KIND; {fix}")
