"""``allure init DATA_FILE`` and ``allure validate SPEC``: the way in for a new dataset."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from allure.cli._common import echo
from allure.errors import SpecError


def init(
    data_file: Path = typer.Argument(..., help="Dataset file: JSONL, JSON, CSV or Parquet."),
    out: Path = typer.Option(
        Path("audit.toml"), "--out", "-o", help="Spec file to write (never overwritten)."
    ),
) -> None:
    """Guess the column mapping, label set and judge shape from the first rows; write an audit spec."""
    from allure._io import atomic_write_bytes
    from allure.dataset import guess_spec, render_spec

    if out.exists():
        raise SpecError(
            "the spec file already exists; allure init never overwrites",
            where=str(out),
            fix="pass another name with --out, or move the file away",
        )
    guess = guess_spec(data_file)
    atomic_write_bytes(out, render_spec(guess, spec_dir=out.resolve().parent).encode("utf-8"))
    echo(f"wrote {out}: judge shape {guess.shape}, label set {json.dumps(guess.label_set)}")
    for field, col in guess.columns.items():
        echo(f"  {field:<16} <- {col}")
    for field in ("gold_label", "recorded_label"):
        if field not in guess.columns and field in guess.notes:
            echo(f"  {field:<16} not mapped: {guess.notes[field]}")
    if guess.gold_score:
        echo(
            f"  reference label  <- {guess.gold_score['column']} (threshold {guess.gold_score['threshold']})"
        )
    for key in ("label_merge", "gold_label", "recorded_label", "label_set"):
        note = guess.notes.get(key, "")
        if note and (key != "label_set" or "distinct word labels" in note):
            echo(f"  note: {note}")
    echo(f"check the lines marked CHECK in {out}, then: allure validate {out}")


def validate(
    spec_path: Path = typer.Argument(..., help="Audit spec (TOML)."),
) -> None:
    """Load the spec and its data: print the mapping on the first rows and the label distribution."""
    from allure.config import load_spec
    from allure.validate import validate_spec

    spec = load_spec(spec_path)
    v = validate_spec(spec)
    echo(f"{spec_path}: {v.n_items} items, prompt set {v.prompt}, label set {json.dumps(spec.label_set)}")
    echo(f"label pattern: {v.label_pattern}")
    for i, row in enumerate(v.preview, start=1):
        echo(f"item {i}:")
        for key, value in row.items():
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            echo(f"  {key:<16} {text}")
    echo("reference labels: " + ", ".join(f"{k}: {n}" for k, n in v.reference_labels.items()))
    if v.recorded_labels:
        echo("recorded labels:  " + ", ".join(f"{k}: {n}" for k, n in v.recorded_labels.items()))
    echo(f"ok: run it with `allure audit {spec_path}`")


def register(app: typer.Typer) -> None:
    """Add ``init`` and ``validate`` to the CLI."""
    app.command("init")(init)
    app.command("validate")(validate)
