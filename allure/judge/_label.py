"""``allure judge label``: new data labelled with an exported judge.

The data is read by the readers ``allure init`` and the audit use (:func:`allure.dataset.load_items`)
with the audit's column mapping, and every item goes through the judge's pass
(:func:`allure.judge._pass.judge_pass`) under a run of its own in the project's run store
(``judge:<bundle id>``): calls are stored and cached, so labelling the same data again sends none.
"""

from __future__ import annotations

import csv
import io
import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from allure.errors import DatasetError, JudgeError
from allure.labels import Label
from allure.models import Item

if TYPE_CHECKING:
    import pandas as pd

    from allure.judge._judge import JudgeBundle

OPTIONAL = ("id", "problem_type", "group", "generator", "gold_label")
"""Mapped fields used when the data has them (ids, retrieval groups, a reference label)."""

OUT_KINDS = (".jsonl", ".csv", ".parquet")


@dataclass
class Labelled:
    """The labels of one ``judge label`` run."""

    rows: list[dict[str, Any]]
    """One row per item: id, label, parsed_label, label_probs, example_ids, bundle_id."""
    calls: int = 0
    cache_hits: int = 0
    wall_s: float = 0.0
    agreement: tuple[int, int] | None = None
    """(agreeing, compared) with the data's label column, when it has one."""
    notes: list[str] = field(default_factory=list)


def _first_row(data: Path) -> dict[str, Any]:
    from allure.records import csv_header, iter_rows, kind_from_name

    kind = kind_from_name(data, error=JudgeError)
    if kind == "csv":
        return dict.fromkeys(csv_header(data, error=JudgeError), "")
    for _, row in iter_rows(data, kind=kind, error=JudgeError):
        return row
    raise JudgeError("the data file has no rows", where=str(data), fix="label a file with at least one row")


def _has(row: dict[str, Any], column: str) -> bool:
    from allure.dataset import column_value

    try:
        column_value(row, column)
    except KeyError:
        return False
    return True


def data_columns(
    judge: JudgeBundle, data: Path, label_column: str | None = None
) -> tuple[dict[str, Any], str]:
    """The column mapping and format to read ``data`` with: the audit's, keeping the fields the
    judge's prompt and retrieval rule need (missing: an error) and the optional ones the data has.

    Raises:
        JudgeError: The file is missing, or lacks a column the judge's prompt needs.
    """
    from allure.dataset import is_cogeval_row

    if not data.is_file():
        raise JudgeError(
            "data file not found",
            where=str(data),
            fix="pass an existing .jsonl, .csv, .json or .parquet file",
        )
    first = _first_row(data)
    ds = judge.config["dataset"]
    if ds.get("format") == "cogeval" and is_cogeval_row(first):
        return {}, "cogeval"
    cols: dict[str, Any] = dict(ds.get("columns") or {})
    cols.setdefault("response", "response")
    need = set(judge.user_fields) | {"response"}
    kind = judge.policy.kind
    if kind == "same_group":
        need.add("group")
    if kind == "same_problem_type" or (kind == "nearest" and judge.policy.group_by == "problem_type"):
        need.add("problem_type")
    keep: dict[str, Any] = {}
    for fname, col in cols.items():
        names = col if isinstance(col, list) else [col]
        present = all(_has(first, c) for c in names)
        if fname in need and not present:
            gone = next(c for c in names if not _has(first, c))
            raise JudgeError(
                f"the data has no column {gone!r}, which the judge needs for its item field {fname!r}"
                f" (columns present: {', '.join(sorted(first)) or 'none'})",
                where=f"{data}, field {gone!r}",
                fix=f"add the column {gone!r} (or rename yours to it): the judge was audited with "
                f"{fname} read from {gone!r}",
            )
        if present and (fname in need or fname in OPTIONAL):
            keep[fname] = col
    return _with_label_column(keep, first, data, label_column), "auto"


def _with_label_column(
    cols: dict[str, Any], first: dict[str, Any], data: Path, label_column: str | None
) -> dict[str, Any]:
    """The reference label column: ``--label-column``, else the audit's, else ``label`` when present."""
    if label_column is not None and not _has(first, label_column):
        raise JudgeError(
            f"the data has no column {label_column!r} (columns present: {', '.join(sorted(first))})",
            where=f"{data}, option '--label-column'",
            fix="name a column of the data, or leave the option out to label without agreement",
        )
    chosen = label_column or cols.get("gold_label") or ("label" if _has(first, "label") else None)
    out = {k: v for k, v in cols.items() if k != "gold_label"}
    if chosen is not None and _has(first, chosen):
        out["gold_label"] = chosen
    return out


def read_data(judge: JudgeBundle, data: Path, label_column: str | None = None) -> tuple[list[Item], bool]:
    """The items of ``data`` and whether they carry a reference label (a label column)."""
    from allure.dataset import load_items

    cols, fmt = data_columns(judge, data, label_column)
    spec = judge.audit_spec(data, cols, fmt)
    try:
        items = load_items(spec.dataset, label_set=spec.label_set, synonyms=spec.label_synonyms)
    except DatasetError as exc:
        label = cols.get("gold_label")
        if label is None or f"field '{label}'" not in (exc.where or ""):
            raise
        raise JudgeError(
            exc.message,
            where=exc.where,
            fix=f"the judge's labels are {', '.join(map(str, judge.label_set))} (with its synonyms): "
            "correct the cell, or drop the label column to label without agreement",
        ) from exc
    return items, "gold_label" in cols


def check_out(out: Path | None) -> None:
    """Refuse an output path before any call is sent (its kind, and that it can be written)."""
    from allure._io import check_writable

    if out is None:
        return
    if out.suffix not in OUT_KINDS:
        raise JudgeError(
            f"unknown output kind {out.suffix or '(none)'!r}",
            where=f"{out}, option '--out'",
            fix=f"name a file ending in {', '.join(OUT_KINDS)}",
        )
    check_writable(out, "--out")  # OutputError (exit 2) naming the option and the path


def write_rows(rows: list[dict[str, Any]], out: Path) -> None:
    """The rows as JSONL, CSV (label probabilities and example ids as JSON text) or Parquet, atomically."""
    from allure._io import atomic_write_bytes, atomic_write_lines

    if out.suffix == ".jsonl":
        atomic_write_lines(out, (json.dumps(r, ensure_ascii=False) for r in rows))
        return
    flat = [{k: json.dumps(v) if isinstance(v, dict | list) else v for k, v in r.items()} for r in rows]
    if out.suffix == ".csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(flat[0]) if flat else ["id"])
        w.writeheader()
        w.writerows(flat)
        atomic_write_bytes(out, buf.getvalue().encode("utf-8"))
        return
    import pandas as pd

    data = io.BytesIO()
    pd.DataFrame(flat).to_parquet(data, index=False)
    atomic_write_bytes(out, data.getvalue())


def warm(judge: JudgeBundle) -> None:
    """Let the judge's backend load its HTTP client while the data is read (as an audit does while
    it prepares), so the pass starts sending at once."""
    from allure.evaluator import warm_http_client

    warm_http_client(judge.audit_spec(Path("(items)"), {}))


def warmed(timeout_s: float = 10.0) -> None:
    """Wait for :func:`warm`'s loading to end (the evaluator's own warm-up thread), so that a pass
    is not timed while its HTTP client is still being imported: a fixed cost per process, which an
    audit pays while it prepares."""
    import threading

    for t in threading.enumerate():
        if t.name == "allure-warm-http":
            t.join(timeout_s)


def label_items(
    judge: JudgeBundle, items: list[Item], *, project: Path, progress: Any = None, say: Any = None
) -> Labelled:
    """Label ``items`` with the judge in ``project``'s run store (run ``judge:<bundle id>``)."""
    from allure.evaluator import open_evaluator
    from allure.judge._pass import judge_pass
    from allure.store import open_project_store

    spec = judge.audit_spec(Path("(items)"), {})
    run_id = f"judge:{judge.id}"
    store = open_project_store(project)
    try:
        # a lease of this worker's own: its claims let workers labelling at once share the prompts
        with (
            store.acquire_lease(f"{run_id}@{uuid.uuid4().hex[:12]}", "judge label") as lease,
            open_evaluator(spec, store, items, lazy_start=True) as ev,
        ):
            warmed()
            out = judge_pass(
                ev, judge, spec, run_id, items, progress=progress, say=say, claim_token=lease.token
            )
    finally:
        store.close()
    rows = [
        {
            "id": it.id,
            "label": out.labels.get(it.id),
            "parsed_label": out.raw.get(it.id),
            "label_probs": (v.label_probs if (v := out.verdicts.get(it.id)) else None),
            "example_ids": list(v.icl_ids) if v else [],
            "bundle_id": judge.id,
        }
        for it in items
    ]
    return Labelled(rows, calls=out.calls, cache_hits=out.cache_hits, wall_s=out.wall_s)


def agreement(items: list[Item], rows: list[dict[str, Any]]) -> tuple[int, int] | None:
    """(agreeing, compared) between the labels and the items' reference labels (``None``: none has one)."""
    refs: dict[str, Label] = {it.id: it.gold_label for it in items if it.gold_label is not None}
    if not refs:
        return None
    pairs = [(r["label"], refs[r["id"]]) for r in rows if r["id"] in refs]
    return sum(str(a) == str(b) for a, b in pairs), len(pairs)


def label_data(
    judge: JudgeBundle,
    data: Path,
    *,
    project: Path,
    out: Path | None = None,
    progress: Any = None,
    say: Any = None,
    label_column: str | None = None,
) -> Labelled:
    """Read ``data``, label it, write ``out`` (checked before the first call; nothing written on error)."""
    warm(judge)
    check_out(out)
    items, has_labels = read_data(judge, data, label_column)
    done = label_items(judge, items, project=project, progress=progress, say=say)
    if has_labels:
        done.agreement = agreement(items, done.rows)
    if out is not None:
        write_rows(done.rows, out)
    return done


def label_frame(judge: JudgeBundle, df: pd.DataFrame, *, project: Path) -> pd.DataFrame:
    """:meth:`JudgeBundle.label` for a DataFrame: its rows written to a Parquet file in the project
    and read by the same reader as a data file, so a frame and a file give the same items."""
    import tempfile

    import pandas as pd

    work = project / ".allure" / "judge-frames"
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        path = Path(tmp) / "frame.parquet"
        df.to_parquet(path, index=False)
        done = label_data(judge, path, project=project)
    return pd.DataFrame(done.rows)
