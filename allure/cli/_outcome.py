"""Print where a run stands: how to continue a paused run, or the summary and the report's path."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich import box
from rich.table import Table
from rich.text import Text

from allure.cli._common import cell, stdout_console
from allure.safe_text import one_line, visible

if TYPE_CHECKING:
    from allure.graphs import RunOutcome


def print_outcome(outcome: RunOutcome, project: Path) -> None:
    """Summary table and report path (done), or the commands that continue a paused run.

    A command line is never wrapped (piped output keeps each command on one line)."""
    out = stdout_console()

    def line(text: str) -> None:
        out.print(visible(text), markup=False, highlight=False, soft_wrap=True)

    if outcome.status == "paused":
        proj = "" if Path(project).resolve() == Path.cwd() else f" --project {project}"
        line(
            f"Run {outcome.run_id} is paused for review: {outcome.n_pending} candidate ICL examples are pending."
        )
        line("Continue with one of:")
        line(f"  allure review {outcome.run_id}{proj}            # review in the terminal UI")
        line(f"  allure review {outcome.run_id}{proj} --export pending.jsonl")
        line(f"  allure resume {outcome.run_id}{proj} --decisions decisions.jsonl")
        return
    report_json = Path(outcome.report.get("json", ""))
    if report_json.is_file():
        from allure.report import headline, helped_sentence, read_report, summary_table

        data = read_report(report_json)
        out.print(_terminal_table(summary_table(data), f"allure audit {outcome.run_id}"))
        top = headline(data)
        if top:
            line(top)
        for it in data.iterations:
            if it.position is not None:
                p = it.position
                where = f" (from {p.source})" if p.source != "live" else ""
                line(
                    f"Pass {it.iteration}, responses swapped{where}: {p.consistent} of {p.n} verdicts kept "
                    f"(position consistency {_fmt(p.consistency)}); first position chosen in "
                    f"{_fmt(p.first_position_rate)} of verdicts (0.5 = no position bias)."
                )
            if it.debias is not None:
                d = it.debias
                line(
                    f"Pass {it.iteration}, position-debiased ({d.used}): accuracy "
                    f"{_fmt(d.debiased.accuracy_decided)} over {d.debiased.decided} decided items, "
                    f"{_fmt(d.debiased.undecided_share)} undecided, {_fmt(d.debiased.accuracy_all)} with "
                    f"undecided counted wrong; raw {_fmt(d.raw.accuracy_decided)}, "
                    f"{_fmt(d.raw.undecided_share)}, {_fmt(d.raw.accuracy_all)}."
                )
        helped = helped_sentence(data)
        if helped:
            line(helped)
    line(f"Stopped: {outcome.stop_reason}")
    line(f"Report: {outcome.report.get('md')}")


_SHORT = {
    "held-out F1": "F1",
    "held-out kappa": "kappa",
    "held-out AUC": "AUC",
    "all F1": "F1",
    "all kappa": "kappa",
    "all AUC": "AUC",
    "cache hits": "cached",
}


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _terminal_table(rows: list[list[str]], title: str) -> Table:
    """The summary rows as a table that fits 80 columns: F1/kappa/AUC are the held-out split's,
    and an interval goes on the line under its figure."""
    table = Table(
        *(_SHORT.get(h, h) for h in rows[0]),
        title=cell(title),
        caption=(
            "F1, kappa, AUC: all items"
            if rows[0][2].startswith("all")
            else "held-out figures per pass for the record (no decision read them); F1, kappa, AUC: held-out split"
        )
        + "; [95% interval]",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        padding=(0, 0),
    )
    for row in rows[1:]:
        table.add_row(*(_two_lines(text) for text in row))
    return table


def _two_lines(text: str) -> Text:
    """A cell with its interval (`` [low, high]``) on a second line; shown literally."""
    figure, sep, interval = text.partition(" [")
    return Text(one_line(figure) + (f"\n[{one_line(interval)}" if sep else ""))
