"""``allure history``: a frozen set's re-audits over time."""

from __future__ import annotations

from pathlib import Path

import typer

from allure.cli._common import ProjectOpt, say, stdout_console
from allure.safe_text import one_line, visible


def history(
    name: str = typer.Argument(..., help="The frozen set."),
    plot: Path = typer.Option(
        None, "--plot", help="Draw the trend (metrics with intervals, changes marked) to a PNG."
    ),
    export: Path = typer.Option(None, "--export", help="Write the history as CSV."),
    project: Path = ProjectOpt,
) -> None:
    """Print the re-audits of a set: date, fingerprint changes, metrics with 95% intervals, gate result."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from allure._io import atomic_write_bytes, check_writable
    from allure.reaudit import history_csv, history_plot, history_rows, load_frozen_set, load_records
    from allure.store import open_project_store

    for option, path in (("--plot", plot), ("--export", export)):
        if path is not None:
            check_writable(path, option)

    store = open_project_store(project, create=False)
    try:
        fs = load_frozen_set(store, name)
        versions = store.frozen_set_versions(name)
        rows = history_rows(load_records(store, name))
    finally:
        store.close()
    table = Table(
        title=Text(
            one_line(f"allure history {name} (v{fs.version}, {fs.n_items} items; {len(versions)} version(s))")
        ),
        caption="[95% bootstrap interval]",
        box=box.SIMPLE_HEAD,
    )
    for col in ("date", "re-audit", "set", "gate", "accuracy", "F1", "kappa", "calls", "verdicts", "probe"):
        table.add_column(col, no_wrap=True)

    def cell(r: object, m: str) -> str:
        v = r.values.get(m)  # type: ignore[attr-defined]
        iv = r.intervals.get(m)  # type: ignore[attr-defined]
        if v is None:
            return "n/a"
        return f"{v:.3f}\n[{iv[0]:.2f}, {iv[1]:.2f}]" if iv else f"{v:.3f}"

    notes = []
    for r in rows:
        table.add_row(
            r.date.replace("T", " ")[:16],
            r.id,
            f"v{r.set_version}",
            "pass" if r.status == "pass" else "REGRESSION",
            cell(r, "accuracy"),
            cell(r, "f1"),
            cell(r, "kappa"),
            str(r.calls),
            r.verdicts_from,
            r.probe or "-",
        )
        if r.judge:
            notes.append(f"{r.id} judge: {r.judge}")
        if r.changes:
            notes.append(f"{r.id} changed: {'; '.join(r.changes)}")
        if r.failed_checks:
            notes.append(f"{r.id} failed: {', '.join(r.failed_checks)}")
    out = stdout_console(min_width=130)
    out.print(table)
    for line in notes:
        out.print(visible(line), markup=False, highlight=False, soft_wrap=True)
    if not rows:
        say(f"no re-audits of {name!r} yet: run `allure reaudit {name}`")
    if export:
        atomic_write_bytes(export, history_csv(rows).encode("utf-8"))
        say(f"CSV: {export}")
    if plot:
        atomic_write_bytes(plot, history_plot(rows, name))
        say(f"Plot: {plot}")


def register(app: typer.Typer) -> None:
    """Add ``history`` to the CLI."""
    app.command("history")(history)
