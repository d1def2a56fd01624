"""The frozen item set of a study and what it runs with: a finished audit run, or an audit spec.

Everything here only reads: a bad run id, spec or memory raises before anything is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from allure.config import AuditSpec, load_spec, parse_spec
from allure.errors import StudyError
from allure.labels import Label
from allure.memory import EpisodicMemory
from allure.models import Item, Split
from allure.store import open_project_store, project_db_path

ItemSplit = Literal["heldout", "audit", "all"]
"""Which items a study evaluates: the held-out split (default), the audit split, or every item."""


@dataclass
class StudySource:
    """The study's items with their reference labels, the spec they run with, and the memory."""

    spec: AuditSpec
    """The audit spec: evaluator, prompt, label set, memory, retrieval policy."""
    items: list[Item]
    """The frozen item set, in dataset order."""
    reference: dict[str, Label | None]
    """Item id -> reference label."""
    splits: dict[str, Split]
    """Item id -> split (as the source run or spec split them)."""
    source: dict[str, str]
    """``{"run": RUN}`` or ``{"spec": PATH}``, plus ``{"split": ...}``."""
    memory_location: str
    """Where the memory lives (a folder or a Chroma URL)."""


def _memory_location(spec: AuditSpec, project: Path, override: str | None) -> str:
    loc = override or spec.memory.location
    if "://" not in loc and not Path(loc).is_absolute():
        loc = str(project / loc)
    return loc


def _pick(items: list[Item], splits: dict[str, Split], split: ItemSplit) -> list[Item]:
    return [it for it in items if split == "all" or splits.get(it.id) == split]


def resolve_source(
    project: Path,
    *,
    from_run: str | None = None,
    spec_path: str | Path | None = None,
    split: ItemSplit | None = None,
    memory: str | None = None,
) -> StudySource:
    """Read the study's items from a run's store (``from_run``) or a spec's dataset (``spec_path``).

    Args:
        project: Project folder holding ``.allure/``.
        from_run: An audit run id; its stored items, split and reference labels are used.
        spec_path: An audit spec (TOML); its dataset is loaded and split as an audit would split it.
        split: Which items; default ``heldout`` for a run, ``all`` for a spec.
        memory: A memory location overriding the spec's.

    Raises:
        StudyError: Neither or both sources given, or the chosen split is empty.
        StoreError: No run store, or an unknown run id.
    """
    if (from_run is None) == (spec_path is None):
        raise StudyError(
            "a study needs exactly one source of items",
            where="options --from-run / --spec",
            fix="pass --from-run RUN (its held-out items) or --spec SPEC.toml (its dataset)",
        )
    if from_run is not None:
        db = project_db_path(project)
        store = open_project_store(project, create=False)
        try:
            run = store.get_run(from_run)
            if run.info.get("kind") == "study":
                raise StudyError(
                    f"{from_run!r} is a study, not an audit run",
                    where=str(db),
                    fix="pass an audit run id; `allure runs` lists them",
                )
            spec = parse_spec(run.spec, source=f"run {from_run} spec")
            all_items = store.items(from_run)
            splits = store.splits(from_run)
            reference = store.reference_labels(from_run)
        finally:
            store.close()
        chosen = split or "heldout"
        items = _pick(all_items, splits, chosen)
        source = {"run": from_run, "split": chosen}
    else:
        from allure.dataset import load_items, split_heldout
        from allure.gold_check import GoldCheck

        path = Path(str(spec_path))
        spec = load_spec(path)
        base = Path(spec.base_dir) if spec.base_dir else path.parent
        all_items = load_items(spec.dataset, base_dir=base, label_set=spec.label_set)
        check = GoldCheck(spec.gold_check)
        reference = {it.id: check.reference_label(it) for it in all_items}
        splits = split_heldout(all_items, spec.loop.heldout_fraction, spec.loop.seed)
        chosen = split or "all"
        items = _pick(all_items, splits, chosen)
        source = {"spec": str(path.resolve()), "split": chosen}
    if not items:
        raise StudyError(
            f"the {chosen} split of {source.get('run') or source.get('spec')} holds no item",
            where="option --split",
            fix="choose --split all, or a run with a held-out split",
        )
    return StudySource(
        spec=spec,
        items=items,
        reference={it.id: reference.get(it.id) for it in items},
        splits={it.id: splits[it.id] for it in items},
        source=source,
        memory_location=_memory_location(spec, project, memory),
    )


def open_memory(src: StudySource) -> EpisodicMemory:
    """Open the source's memory (never creates one).

    Raises:
        MemoryStoreError: No memory at that location.
    """
    return EpisodicMemory.open(src.memory_location, collection=src.spec.memory.collection, create=False)
