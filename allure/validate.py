"""Check an audit spec against its data without calling any evaluator (``allure validate``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from allure.config import AuditSpec, label_pattern_for
from allure.errors import DatasetError
from allure.labels import LabelParser, label_list

PREVIEW_ROWS = 3
"""Items shown with the mapping applied."""


class Validation(BaseModel):
    """What ``allure validate`` found: the mapped first items and the label distributions."""

    n_items: int
    """Items the spec loads (after ``limit``)."""
    preview: list[dict[str, Any]]
    """The first items as mapped (item field -> value, long texts cut)."""
    reference_labels: dict[str, int] = Field(default_factory=dict)
    """Reference label -> count (``none`` for items with no reference)."""
    recorded_labels: dict[str, int] = Field(default_factory=dict)
    """Recorded (replayed) label -> count, when a recorded label or output column is mapped."""
    label_pattern: str
    """The pattern that reads labels from the evaluator's output."""
    prompt: str
    """The prompt set."""


def _cut(value: Any, n: int = 100) -> Any:
    if isinstance(value, str):
        value = " ".join(value.split())  # one line per field
        return value[: n - 3] + "..." if len(value) > n else value
    if isinstance(value, list):
        return [_cut(v, n) for v in value[:5]]
    return value


def validate_spec(spec: AuditSpec, *, project_dir: Path | None = None) -> Validation:
    """Load the spec's items, derive their reference labels and summarise them.

    Raises:
        DatasetError: the data does not load with this spec, or no item has a reference label
            (nothing could be scored), or the recorded outputs of a replay never parse.
    """
    from allure.dataset import ColumnMap, load_items
    from allure.gold_check import GoldCheck
    from allure.prompts import load_prompt_set

    base = Path(spec.base_dir) if spec.base_dir else (project_dir or Path("."))
    items = load_items(spec.dataset, base_dir=base, label_set=spec.label_set, synonyms=spec.label_synonyms)
    check = GoldCheck(spec.gold_check)
    refs = [check.reference_label(it) for it in items]
    ref_counts = Counter("none" if r is None else str(r) for r in refs)
    where = str(spec.dataset.resolve_path(base))
    if all(r is None for r in refs):
        raise DatasetError(
            f"none of the {len(items)} items has a reference label, so nothing can be scored",
            where=f"{where}, field 'gold_label'",
            fix="map [dataset.columns] gold_label to the column of human labels, [dataset.gold_score] to a "
            "numeric column, or gold_answers to the correct answers",
        )
    prompts = load_prompt_set(spec.evaluator.prompt)
    pattern = label_pattern_for(spec, prompts.assistant)
    recorded: Counter[str] = Counter()
    cols = spec.dataset.columns
    if cols.recorded_label or cols.recorded_output:
        parser = LabelParser(pattern, spec.vocabulary())
        for it in items:
            lab = it.recorded_label
            if lab is None and it.recorded_output is not None:
                lab = parser.parse(it.recorded_output)
            recorded["unparsed" if lab is None else str(lab)] += 1
        if spec.evaluator.is_replay and recorded["unparsed"] == len(items):
            raise DatasetError(
                f"no recorded verdict of the {len(items)} items reads as a label of [{label_list(spec.label_set)}]",
                where=f"{where}, field '{cols.recorded_label or cols.recorded_output}'",
                fix="map recorded_label to the judge's label column, or add the forms its output uses to "
                "[label_synonyms]",
            )
    if prompts.pairwise and not any(it.response_b for it in items):
        raise DatasetError(
            "the pairwise prompt set needs a second response, and no item has one",
            where=f"{where}, field 'response_b'",
            fix='set [dataset.columns] response_b = "<the column of the second response>"',
        )
    fields = tuple(ColumnMap.model_fields)  # every item field a spec can map, in declaration order
    preview = []
    for it, ref in zip(items[:PREVIEW_ROWS], refs[:PREVIEW_ROWS], strict=False):
        row = {f: _cut(getattr(it, f)) for f in fields if getattr(it, f) not in (None, "", [])}
        row["reference_label"] = ref
        preview.append(row)
    return Validation(
        n_items=len(items),
        preview=preview,
        reference_labels=dict(ref_counts.most_common()),
        recorded_labels=dict(recorded.most_common()),
        label_pattern=pattern,
        prompt=spec.evaluator.prompt,
    )
