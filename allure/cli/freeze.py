"""``allure freeze``: pin a named, versioned item set (items + reference labels) for re-audits."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import typer

from allure.cli._common import ProjectOpt, echo, say


def freeze(
    source: str = typer.Argument(
        ..., help="A run id (see `allure runs`), or a spec file with a [reaudit] table."
    ),
    name: str = typer.Option(None, "--name", help="Name of the set (default for a spec: its [reaudit] set)."),
    split: str = typer.Option(
        None,
        "--split",
        help="Which items: heldout (default), audit or all (a spec's [reaudit] split otherwise).",
    ),
    project: Path = ProjectOpt,
) -> None:
    """Pin a run's (or a spec's) items and reference labels as a frozen set; changed content is a new version."""
    from allure.config import ReauditSplit, load_spec
    from allure.errors import SpecError
    from allure.reaudit import freeze_items, freeze_run, spec_items
    from allure.store import open_project_store

    if split is not None and split not in ("heldout", "audit", "all"):
        raise SpecError(f"unknown split {split!r}", where="--split", fix="use heldout, audit or all")
    path = Path(source)
    project = project.resolve()
    if path.suffix == ".toml" or path.is_file():
        spec = load_spec(path)
        set_name = name or (spec.reaudit.set if spec.reaudit else None)
        if not set_name:
            raise SpecError(
                "no set name", where=str(path), fix='pass --name NAME or add [reaudit] set = "NAME"'
            )
        chosen = cast(ReauditSplit, split or (spec.reaudit.split if spec.reaudit else "heldout"))
        items = spec_items(spec, project, chosen)
        store = open_project_store(project)
        try:
            fs, created = freeze_items(
                store,
                set_name,
                items,
                source=f"spec {path}",
                split=chosen,
                spec=spec.model_dump(mode="json"),
            )
        finally:
            store.close()
    else:
        if not name:
            raise SpecError("no set name", where="--name", fix="pass --name NAME")
        store = open_project_store(project, create=False)
        try:
            fs, created = freeze_run(store, source, name, split=cast(ReauditSplit, split or "heldout"))
        finally:
            store.close()
    refs = fs.references()
    scored = sum(v is not None for v in refs.values())
    if created:
        what = fs.change or "new set"
        say(f"froze set {fs.name!r} v{fs.version} ({what})")
    else:
        say(f"set {fs.name!r} is unchanged: still v{fs.version}")
    echo(
        f"{fs.name} v{fs.version}: {fs.n_items} items ({scored} with a reference label), {fs.split} split of "
        f"{fs.source}, content {fs.content_hash}"
    )


def register(app: typer.Typer) -> None:
    """Add ``freeze`` to the CLI."""
    app.command("freeze")(freeze)
