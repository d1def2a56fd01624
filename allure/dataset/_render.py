"""Writing a guessed spec (:class:`~allure.dataset._guess_result.Guess`) as ``audit.toml`` text,
each guessed line commented with what was found and what to check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from allure.dataset._guess_result import SAMPLE_ROWS, Guess
from allure.dataset._spec import SINGLE_COLUMN_FIELDS


def _toml(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def render_spec(g: Guess, *, spec_dir: Path) -> str:
    """The guessed spec as TOML text, each guessed line commented with what was found and what to check."""
    try:
        rel = g.path.resolve().relative_to(spec_dir.resolve())
        data_path = rel.as_posix()
    except ValueError:
        data_path = str(g.path.resolve())
    n = g.notes
    lines = [
        f"# Written by `allure init` from the first {g.n_rows} rows of {g.path.name}.",
        "# Every value below was guessed: check the lines marked CHECK, then run `allure validate` on this file.",
        f"# Columns found: {', '.join(g.all_columns)}",
        "",
        f"name = {_toml(g.path.stem)}",
        f"label_set = {_toml(g.label_set)}" + (f"    # CHECK: {n['label_set']}" if "label_set" in n else ""),
    ]
    if "label_merge" in n:
        lines.append(f"# CHECK: {n['label_merge']}")
    if g.positive_label is not None:
        lines.append(
            f"positive_label = {_toml(g.positive_label)}    # CHECK: the label that means correct/yes"
        )
    else:
        lines.append(
            "# positive_label = ...    # no positive class guessed (pairwise or multi-class): F1 is the macro F1"
        )
    if g.label_synonyms:
        lines += ["", f"[label_synonyms]    # CHECK: {n.get('label_synonyms', 'other forms of the labels')}"]
        lines += [f"{_toml(k)} = {_toml(v)}" for k, v in g.label_synonyms.items()]
    lines += ["", "[dataset]", f"path = {_toml(data_path)}"]
    live = "recorded_label" not in g.columns and "recorded_output" not in g.columns
    if live and g.n_rows > 200:
        lines.append(
            f"limit = 200    # a seeded sample for a first live pass; remove it to label all "
            f"{g.n_rows if g.n_rows < SAMPLE_ROWS else 'the'} rows"
        )
    lines.append("[dataset.columns]")
    for fld in SINGLE_COLUMN_FIELDS:
        if fld in g.columns:
            note = n.get(fld, "")
            lines.append(f"{fld} = {_toml(g.columns[fld])}" + (f"    # CHECK: {note}" if note else ""))
        elif fld in n:
            lines.append(f"# {fld} = ...    # CHECK: {n[fld]}")
        else:
            lines.append(f'# {fld} = "..."    # not found')
    if g.gold_score is not None:
        gs = g.gold_score
        lines += [
            "[dataset.gold_score]    # reference labels from a number",
            f"column = {_toml(gs['column'])}",
            f"threshold = {gs['threshold']}    # CHECK: {n['gold_score']}",
            f"labels = {_toml(gs['labels'])}",
        ]
    lines += [
        "",
        "[evaluator]",
        f"prompt = {_toml(g.shape)}    # CHECK: {n.get('shape', '')}",
    ]
    if g.rubric:
        lines.append(f"rubric = {_toml(g.rubric)}    # CHECK: what the labels mean, as the evaluator is told")
    if not live:
        lines.append(
            'kind = "replay"    # CHECK: replays the recorded judge; for a live one: kind = "openai", '
            "model, base_url"
        )
    else:
        lines += [
            '# kind = "openai"    # a live evaluator: any OpenAI-compatible server; default: the embedded model',
            '# model = "gpt-4o-mini"',
            '# base_url = "https://api.openai.com/v1"',
        ]
    lines += [
        "",
        "[loop]",
        "max_iterations = 1    # one pass: the judge's agreement with the labels (raise it to run the ALLURE loop)",
        "heldout_fraction = 0    # every item audited; set e.g. 0.3 to measure whether ICL examples help",
        "",
    ]
    return "\n".join(lines)
