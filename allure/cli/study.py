"""``allure study``: ablation and ICL_x sweep studies over a frozen item set; list and show them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from allure.cli._common import ProjectOpt, command_group, echo, option_groups, progress_bars, say

if TYPE_CHECKING:
    from allure.studies import StudyRecord

study_app = command_group(
    "study", "Studies: arms over one frozen item set (ablation, ICL_x sweep), compared pairwise."
)

FromRunOpt = typer.Option(None, "--from-run", help="Audit run whose held-out items the study evaluates.")
SpecOpt = typer.Option(None, "--spec", help="Audit spec (TOML) whose dataset the study evaluates instead.")
SplitOpt = typer.Option(
    None, "--split", help="Items: heldout (default for --from-run), audit, or all (default for --spec)."
)
MemoryOpt = typer.Option(None, "--memory", "-m", help="Memory location (default: the run's or spec's).")
BudgetOpt = typer.Option(
    None,
    "--max-prompt-tokens",
    help="Context budget per prompt (default: the embedded server's context; unlimited for others).",
)
NameOpt = typer.Option(None, "--name", help="Study id to use instead of the one derived from its definition.")
AlphaOpt = typer.Option(0.05, "--alpha", min=0.0001, max=0.5, help="Family-wise significance level (Holm).")


def _check_split(split: str | None) -> None:
    """Refuse a ``--split`` value that names no split."""
    from allure.errors import StudyError

    if split not in (None, "heldout", "audit", "all"):
        raise StudyError(
            f"--split {split!r} is not known", where="option --split", fix="use heldout, audit or all"
        )


def _summary(study: StudyRecord) -> None:
    """Print where the study's files are, its arms table and its findings."""
    from allure.studies import STUDIES

    table = study.to_pandas()
    cols = [
        c
        for c in ("mean_examples", "accuracy", "f1", "kappa", "auc", "unparsed", "d_accuracy", "p_holm")
        if c in table
    ]
    for line in table[cols].to_string(float_format=lambda v: f"{v:.3f}").splitlines():
        echo(line)
    for line in study.findings:
        echo(line)
    echo(f"{study.calls} calls sent; files in {STUDIES / study.id}")


def _source_options(
    from_run: str = FromRunOpt, spec: Path = SpecOpt, split: str = SplitOpt, memory: str = MemoryOpt
) -> dict[str, Any]:
    """The options naming the items and the memory a study evaluates."""
    return {"from_run": from_run, "spec": spec, "split": split, "memory": memory}


def _run_options(
    max_prompt_tokens: int = BudgetOpt, name: str = NameOpt, alpha: float = AlphaOpt
) -> dict[str, Any]:
    """The options of how a study runs and what it is called."""
    return {"max_prompt_tokens": max_prompt_tokens, "name": name, "alpha": alpha}


def _study_command(name: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register ``allure study NAME``, with the shared options as its ``source`` and ``run`` parameters."""
    shared = option_groups(source=_source_options, run=_run_options)
    return lambda command: study_app.command(name)(shared(command))


def _run_study(
    study: Callable[..., StudyRecord],
    project: Path,
    source: dict[str, Any],
    run: dict[str, Any],
    **own: object,
) -> None:
    """Run ``study`` (``ablation`` or ``sweep``) with the shared options and its ``own``, one progress bar
    per arm, and print its summary."""
    _check_split(source["split"])
    with progress_bars("arm") as bars:
        record = study(project, **source, **run, **own, say=say, arm_progress=bars)
    _summary(record)


@_study_command("ablation")
def ablation_cmd(
    *,
    source: dict[str, Any],
    by: str = typer.Option(
        "failure_mode", "--by", help="Clusters to remove: failure_mode or cluster (embeddings)."
    ),
    clusters: str = typer.Option(
        None, "--clusters", help="Remove only these clusters (comma-separated names)."
    ),
    run: dict[str, Any],
    project: Path = ProjectOpt,
) -> None:
    """Leave-one-cluster-out ablation: full memory, minus each non-empty cluster, zero-shot."""
    from allure.errors import StudyError
    from allure.studies import ablation

    if by not in ("failure_mode", "cluster"):
        raise StudyError(f"--by {by!r} is not known", where="option --by", fix="use failure_mode or cluster")
    only = [c.strip() for c in clusters.split(",") if c.strip()] if clusters else None
    _run_study(ablation, project, source, run, by=by, clusters=only)


@_study_command("sweep")
def sweep_cmd(
    *,
    source: dict[str, Any],
    sizes: str = typer.Option(
        "0,2,4,8", "--sizes", help="Example counts x, comma-separated (0 = zero-shot)."
    ),
    repeats: int = typer.Option(3, "--repeats", help="Draws (seeds) per size (1 to 50)."),
    balance: str = typer.Option(
        None, "--balance", help="label: equal shares per correct label in each draw."
    ),
    run: dict[str, Any],
    project: Path = ProjectOpt,
) -> None:
    """ICL_x sweep: x examples drawn from memory, R draws per size, each compared with x = 0."""
    from allure.errors import StudyError
    from allure.studies import sweep

    if balance not in (None, "label"):
        raise StudyError(
            f"--balance {balance!r} is not known", where="option --balance", fix="use --balance label"
        )
    _run_study(sweep, project, source, run, sizes=sizes, repeats=repeats, balance=balance)


def _params(pairs: list[str] | None) -> dict[str, str]:
    """``key=value`` pairs as a dict."""
    from allure.errors import StudyError

    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise StudyError(
                f"--param {pair!r} is not key=value", where="option --param", fix="e.g. --param sizes=0,2,4"
            )
        out[key.strip()] = value.strip()
    return out


@_study_command("run")
def run_cmd(
    kind: str = typer.Argument(..., help="Study kind (from the catalogue, or registered by a --load file)."),
    *,
    source: dict[str, Any],
    load: list[Path] = typer.Option(
        None, "--load", help="A Python file that registers study kinds (repeatable)."
    ),
    param: list[str] = typer.Option(
        None, "--param", help="A setting of the study kind, key=value (repeatable)."
    ),
    run: dict[str, Any],
    project: Path = ProjectOpt,
) -> None:
    """Run any study kind of the catalogue: the built-in ones, or one a --load file registers."""
    from allure.studies import StudyContext, build_study, load_study_file, open_source, run_study, study_kind

    _check_split(source["split"])
    for path in load or []:
        load_study_file(path)
    cls = study_kind(kind)
    params = _params(param)
    proj = project.resolve()
    with progress_bars("arm") as bars:
        options = {**source, **run, "say": say, "arm_progress": bars}
        empty = bool(getattr(cls, "empty_memory", False))  # a kind that runs without approved examples
        src, memory, run_options = open_source(proj, options, empty_memory=empty)  # type: ignore[arg-type]
        study = build_study(cls, StudyContext(proj, src, memory, params, run_options.get("alpha", 0.05)))
        record = run_study(proj, src, memory, study, **run_options)
    _summary(record)


@study_app.command("list")
def list_cmd(project: Path = ProjectOpt) -> None:
    """List the studies of this project."""
    from allure.studies import list_studies, study_states

    studies = list_studies(project)
    states = study_states(project)
    for s in studies:
        src = s.source.get("run") or Path(s.source.get("spec", "")).name
        status = states.get(s.id, (s.status, s.kind))[0] if states.get(s.id, ("",))[0] != "done" else s.status
        echo(
            f"{s.id}  {s.kind:<8} {status:<11} {len(s.arms):>3} arms  {s.n_items:>5} items  {src}  {s.created_at}"
        )
    listed = {s.id for s in studies}
    unfinished = [(sid, st) for sid, st in states.items() if sid not in listed]
    for sid, (status, kind) in unfinished:
        echo(
            f"{sid}  {kind:<8} {status:<11}   -  (no study.json yet: run the same `allure study {kind}` command again)"
        )
    echo(f"{len(studies) + len(unfinished)} study(ies)", err=True)


@study_app.command("show")
def show_cmd(
    study_id: str = typer.Argument(..., help="Study id (`allure study list`)."), project: Path = ProjectOpt
) -> None:
    """Print a study's report (study.md)."""
    from allure._text_errors import read_utf8
    from allure.errors import StudyError
    from allure.studies import STUDIES, load_study

    load_study(project, study_id)
    report = project / STUDIES / study_id / "study.md"
    if not report.is_file():
        raise StudyError(
            "the study's report study.md is missing (deleted or moved)",
            where=str(report),
            fix=f"restore it, or read the study's figures in {report.with_name('study.json')}; running the same "
            "study command again rewrites it (its calls come from the store)",
        )
    for line in read_utf8(report, error=StudyError, what="study report").splitlines():
        echo(line)


def register(app: typer.Typer) -> None:
    """Add ``study`` to the CLI."""
    app.add_typer(study_app)
