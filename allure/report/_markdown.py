"""``report.md``: the run's report as plain markdown."""

from __future__ import annotations

from typing import Any

from allure.backends import is_replay_kind
from allure.metrics import GroupErrors, SplitMetrics
from allure.report._format import DASH, md_table, metric_cells, num
from allure.report._model import (
    CalibrationReport,
    IterationReport,
    ReplayAgreement,
    ReportData,
)
from allure.report._pairwise_sections import debiased_section, positions_section
from allure.report._summary import headline, helped_sentence, nothing_held_out
from allure.safe_text import markdown_cell, markdown_code

TOP_ROWS = 10
"""Rows shown of each errors-per-group table."""

SPLIT_NAMES = {"heldout": "held-out", "audit": "audit"}

SPLIT_TITLES = {
    "heldout": "Held-out split (never enters memory; each pass's figures for the record: no decision read them)",
    "audit": "Audit split (ICL examples mined here)",
}


def _iteration_table(data: ReportData, split: str) -> list[str]:
    header = ["iter", "memory", "ICL/prompt", "accuracy", "F1", "kappa", "AUC", "unparsed", "n"]
    rows = [
        [
            str(it.iteration),
            str(it.memory_size),
            num(it.icl_per_prompt, 1),
            *metric_cells(it.splits.get(split)),
        ]
        for it in data.iterations
    ]
    return md_table(header, rows)


def _confusion(m: SplitMetrics) -> list[str]:
    labs = m.confusion.labels
    header = ["reference \\ evaluator", *[str(lab) for lab in labs]]
    rows = [[str(lab), *[str(c) for c in row]] for lab, row in zip(labs, m.confusion.matrix, strict=True)]
    return md_table(header, rows)


def _group_table(title: str, rows: list[GroupErrors] | None) -> list[str]:
    if not rows:
        return []
    body = [
        [r.group or "(none)", str(r.n), str(r.errors), str(r.n_unparsed), num(r.error_rate)]
        for r in rows[:TOP_ROWS]
    ]
    more = [f"({len(rows) - TOP_ROWS} more rows in report.json)"] if len(rows) > TOP_ROWS else []
    return [
        f"**{title}**",
        "",
        *md_table([title.split(" per ")[-1], "n", "errors", "unparsed", "error rate"], body),
        *more,
        "",
    ]


def _replay(agreement: ReplayAgreement) -> list[str]:
    return [
        "## Replay: recorded labels against the reference",
        "",
        f"Agreement overall: {num(agreement.agreement)} ({agreement.n_scored} scored, "
        f"{agreement.n_unparsed} unparsed)",
        "",
        *_group_table("Disagreements per problem type", agreement.by_problem_type),
        *_group_table("Disagreements per generator", agreement.by_generator),
    ]


def _shares(data: ReportData) -> list[str]:
    """The held-out label shares: reference, zero-shot, the compared version; the majority baseline."""
    e = data.effect or data.refused_effect
    if e is None:
        return []
    labels = list(e.reference_shares) + [
        k for k in (*e.predicted_shares_first, *e.predicted_shares_last) if k not in e.reference_shares
    ]
    labels = list(dict.fromkeys(labels))
    which = "active" if data.effect is not None else "refused"
    rows = [
        ["reference", *[num(e.reference_shares.get(k, 0.0)) for k in labels]],
        ["zero-shot", *[num(e.predicted_shares_first.get(k, 0.0)) for k in labels]],
        [f"{which} memory", *[num(e.predicted_shares_last.get(k, 0.0)) for k in labels]],
    ]
    m = e.majority
    return [
        "## Label shares on the held-out split",
        "",
        *md_table(["", *[str(k) for k in labels]], rows),
        "",
        f"Always answering the majority label {markdown_code(m.label)} scores accuracy {num(m.accuracy)}, "
        f"balanced accuracy {num(m.balanced_accuracy)}, kappa {num(m.kappa)}.",
        "",
    ]


PRIMARY_NOTE = (
    "Primary comparison (pre-registered, one per run): the loop's active judge, decided on the dev split "
    "before the held-out split is read, against the zero-shot judge on the held-out split, by the loop's "
    "objective with a two-sided paired permutation test at alpha 0.05 (the 'Primary comparison' sentence above: "
    "the zero-shot judge's labels as parsed, before any calibration or read-out). Every other "
    "figure in this report is exploratory."
)
"""What report.md says about which comparison is the claim (issue 34 item 6)."""

CROSS_FITTED = "decided on the audit split out of fold"
"""How :data:`PRIMARY_NOTE` names the decision data of a cross-fitted run (``[loop] folds >= 2``)."""


def primary_note(data: ReportData) -> str:
    """:data:`PRIMARY_NOTE`, naming the decision data the run's loop read."""
    if data.decision_data and "cross-fitted" in data.decision_data:
        return PRIMARY_NOTE.replace("decided on the dev split", CROSS_FITTED)
    return PRIMARY_NOTE


def _pass_role(data: ReportData, iteration: int) -> str:
    """What a pass's own choices (calibration, read-out) are to the run: empty for the loop's judge's
    pass, else a note that they were made within a pass the judge is not (a pass the guard refused,
    or one a later adopted pass replaced), so that "adopted" there is not read as the run's."""
    active = data.active_iteration
    if active is None or iteration == active:
        return ""
    return f" (within pass {iteration}, which is not the loop's judge: that is pass {active})"


def _readout_lines(data: ReportData) -> list[str]:
    """``## Read-out``: per pass, what the learned read-out fitted (coefficients, CV score, n, date) and decided."""
    fitted = [(it.iteration, it.readout) for it in data.iterations if it.readout]
    if not fitted:
        return []
    out = ["## Read-out (learned from the mined audit items)", ""]
    for i, r in fitted:
        what = r.get("describe") or "nothing fitted"
        when = f", fitted {r['fitted_at']}" if r.get("fitted_at") else ""
        out.append(
            f"- iteration {i}: {markdown_cell(str(r.get('decision', '')))}; {markdown_cell(what)}{when}; "
            f"{r.get('changed', 0)} labels changed{_pass_role(data, i)}"
        )
        out += _refit_lines(r)
    out += [
        "",
        "Fitted on mined audit items only (never a dev or held-out item; cross-fitted, `auto` decided on "
        "read-outs fitted on the other folds); the features never read a reference.",
        "",
    ]
    return out


def _refit_lines(r: dict[str, Any]) -> list[str]:
    """The refits of one pass's read-out after approvals (from the stored features, no call)."""
    refits = r.get("refits") or []
    out = [
        f"  - refit {x['at']}: {x['changed']} of {x['n']} fit labels corrected by auditors, "
        + (markdown_cell(x["refused"]) if x.get("refused") else f"{markdown_cell(x.get('describe', ''))}")
        + f" ({x['wall_s']:.2f} s, no evaluator call)"
        for x in refits[-5:]
    ]
    if len(refits) > 5:
        out.insert(0, f"  - {len(refits) - 5} earlier refit(s) not shown")
    now = r.get("refitted")
    if now:
        out.append(
            f"  - current read-out (applied by re-audits of this memory version): {markdown_cell(now.get('describe', ''))}"
        )
    return out


def render_markdown(data: ReportData, *, plot_name: str = "metrics.png") -> str:
    """Render the report as markdown: a page of sections, each left out when the run has nothing for it.

    Args:
        data: The report.
        plot_name: File name of the metrics plot, linked relative to ``report.md``.

    Returns:
        The markdown text.
    """
    out = [
        *_summary(data),
        *_shares(data),
        *_facts(data, plot_name),
        *_split_tables(data),
        *positions_section(data),
        *debiased_section(data),
        *_calibration(data),
        *_readout_lines(data),
        *_last_iteration(data),
        *_cost(data),
    ]
    if data.replay_agreement:
        out += _replay(data.replay_agreement)
    out += [f"![accuracy, F1, kappa and AUC per iteration]({plot_name})", ""]
    return "\n".join(out)


def _summary(data: ReportData) -> list[str]:
    """The title, the headline, and whether the ICL examples helped (accuracy, then F1)."""
    out = [f"# allure report: run {markdown_cell(data.run_id)}", ""]
    top = headline(data)
    if top:
        out += [markdown_cell(top), ""]
    out += [
        markdown_cell(helped_sentence(data) or "")
        or (
            "Not measured whether ICL examples helped: nothing is held out."
            if nothing_held_out(data)
            else "Not measured whether ICL examples helped: the run has a single iteration."
        ),
        "",
    ]
    if (
        data.zero_shot_iteration is not None
        and data.active_iteration is not None
        and not nothing_held_out(data)
    ):
        out += [primary_note(data), ""]
    f1_line = helped_sentence(data, "f1")
    if f1_line:
        out += [markdown_cell(f1_line), ""]
    return out


def _facts(data: ReportData, plot_name: str) -> list[str]:
    """The run's facts as a list (status, times, evaluator, dataset, references, files) and what the values mean."""
    ev, ds = data.evaluator, data.dataset
    out = [
        f"- Status: {data.status}" + (f" ({markdown_cell(data.stop_reason)})" if data.stop_reason else ""),
        f"- Started: {data.created_at}; finished: {data.finished_at or DASH}",
        (
            f"- Evaluator: {markdown_cell(ev.model)}"
            if is_replay_kind(ev.kind)
            else f"- Evaluator: {markdown_cell(ev.kind)}"
            + (f", model {markdown_code(ev.model)}" if ev.model else "")
        ),
        f"- Dataset: {markdown_code(ds.path)}, {ds.n_items} items ({ds.n_audit} audit, {ds.n_heldout} held-out)",
        f"- Reference labels: {markdown_cell(data.reference_source)}",
        f"- Plot: [{plot_name}]({plot_name})",
    ]
    if data.candidates_file:
        out.append(f"- Disagreements (candidate ICL examples): {markdown_code(data.candidates_file)}")
    out += [
        f"- {markdown_cell(text[:1].upper() + text[1:])}"
        for text in (data.decision_data, data.decisions)
        if text
    ]
    out += [f"- Guard: {markdown_cell(reason)}" for reason in data.guard]
    own = [
        f"pass {it.iteration}: {it.own_excluded.get('heldout', 0)} held-out, {it.own_excluded.get('audit', 0)} audit"
        for it in data.iterations
        if it.memory_size and it.own_excluded
    ]
    if own:
        out.append(
            f"- Items not shown the example mined from themselves (withheld by retrieval): {'; '.join(own)}"
        )
    return [
        *out,
        "",
        "Values: metric [95% bootstrap CI] over parsed items; unparsed verdicts counted apart; "
        "AUC (hard): ranked the hard labels, no logprobs.",
        "",
    ]


def _split_tables(data: ReportData) -> list[str]:
    """Per split (held-out, then audit) the metrics of every iteration."""
    out: list[str] = []
    for split in ("heldout", "audit"):
        if split == "heldout" and nothing_held_out(data):
            continue
        if any(split in it.splits for it in data.iterations):
            out += [f"## {SPLIT_TITLES[split]}", "", *_iteration_table(data, split), ""]
    return out


def _calibration(data: ReportData) -> list[str]:
    """The contextual calibration of each iteration: mode, blocks, calls, labels changed, p_cf."""
    calibrated = [(it.iteration, it.calibration) for it in data.iterations if it.calibration is not None]
    if not calibrated:
        return []
    out = ["## Contextual calibration", ""]
    out += md_table(
        ["iter", "mode", "blocks", "content-free calls", "labels changed", "kept as parsed", "p_cf"],
        [
            [str(i), _cal_mode(c), str(c.blocks), str(c.cf_calls)]
            + [str(c.changed), str(c.kept), "; ".join(f"{k}: {v}" for k, v in sorted(c.p_cf.items())[:3])]
            for i, c in calibrated
        ],
    )
    out += [""]
    out += [
        f"- iteration {i}: {markdown_cell(c.choice['line'])}{_pass_role(data, i)}"
        for i, c in calibrated
        if c.choice
    ]
    out += [f"- iteration {i}: {markdown_cell(c.note)}" for i, c in calibrated if c.note]
    return [
        *out,
        "",
        "Every metric in this report is of the calibrated labels; the parsed ones stay in the run store.",
        "",
    ]


def _last_iteration(data: ReportData) -> list[str]:
    """The last iteration's confusion matrix and errors per group, per split."""
    if not data.iterations:
        return []
    out: list[str] = []
    last = data.iterations[-1]
    for split in ("heldout", "audit"):
        m = last.splits.get(split)
        if m is None or m.n == 0:
            continue
        out += [
            f"## Last iteration ({last.iteration}), {SPLIT_NAMES[split]} split: confusion matrix",
            "",
            *_confusion(m),
            "",
        ]
        out += _group_table("Errors per problem type", m.errors_by_problem_type)
        out += _group_table("Errors per generator", m.errors_by_generator)
    return out


def _cost(data: ReportData) -> list[str]:
    """What each iteration cost (calls, tokens, time, failures, candidates), with the totals."""
    its = data.iterations
    cost_rows = [_cost_cells(str(it.iteration), [it], it.memory_size) for it in its]
    cost_rows.append(_cost_cells("total", its, its[-1].memory_size if its else 0))
    header = ["iter", "memory", "calls", "cache hits", "prompt tok", "completion tok", "cached tok", "wall s"]
    header += ["unparsed/failed/retried", "candidates proposed/approved/rejected"]
    out = ["## Cost", "", *md_table(header, cost_rows), ""]
    failed = sum(i.errors for i in its)
    if failed:
        out += [
            f"{failed} evaluator call(s) failed after every retry (see `errors` in the run store); "
            "they count as unlabelled here and are sent again by the next run.",
            "",
        ]
    return out


def _cost_cells(name: str, its: list[IterationReport], memory_size: int) -> list[str]:
    """One row of the cost table: the sums over ``its`` (one iteration, or all for the total)."""
    return [
        name,
        str(memory_size),
        str(sum(i.calls for i in its)),
        str(sum(i.cache_hits for i in its)),
        str(sum(i.prompt_tokens for i in its)),
        str(sum(i.completion_tokens for i in its)),
        str(sum(i.cached_tokens for i in its)),
        f"{sum(i.wall_s for i in its):.1f}",
        "/".join(str(sum(getattr(i, k) for i in its)) for k in ("unparsed", "errors", "retries")),
        "/".join(
            str(sum(getattr(i.candidates, k) for i in its)) for k in ("proposed", "approved", "rejected")
        ),
    ]


def _cal_mode(c: CalibrationReport) -> str:
    """``contextual``; ``auto: prior`` (what auto chose); ``contextual (off: no logprobs)``."""
    if c.off:
        return f"{c.mode} (off: no logprobs)"
    return c.mode if c.chosen in (None, c.mode) else f"{c.mode}: {c.chosen}"
