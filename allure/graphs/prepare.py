"""``prepare_audit``: everything a run needs from its spec before the first write.

The dataset is loaded and checked, reference labels derived by the gold check, and the items
split (seeded, stratified) into audit and held-out items. The runner calls it before creating
a run, so bad input leaves the store untouched; the ``prepare`` node calls it for a run that
has no items yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from allure.config import AuditSpec
from allure.dataset import load_items, split_heldout
from allure.gold_check import GoldCheck
from allure.labels import Label
from allure.models import Item, Split
from allure.report import ReferenceSource
from allure.store import RunStore


@dataclass(frozen=True)
class PreparedAudit:
    """A run's items with their reference labels and split."""

    items: list[Item]
    """The items, in dataset order."""
    references: dict[str, Label | None]
    """Item id -> reference label (``None``: the gold check could not decide)."""
    splits: dict[str, Split]
    """Item id -> ``audit`` or ``heldout``."""

    @property
    def reference_source(self) -> ReferenceSource:
        """``gold_label`` when every item has one, ``regex`` when none has, else ``mixed``."""
        n_gold = sum(it.gold_label is not None for it in self.items)
        return "gold_label" if n_gold == len(self.items) else ("regex" if n_gold == 0 else "mixed")

    @property
    def n_heldout(self) -> int:
        """Items in the held-out split."""
        return sum(s == "heldout" for s in self.splits.values())

    def store_in(self, store: RunStore, run_id: str) -> None:
        """Write the items, splits and reference labels into the run (idempotent)."""
        store.add_items(run_id, self.items, self.splits, self.references)
        store.update_run(run_id, info={"reference_source": self.reference_source, "n_items": len(self.items)})


def prepare_audit(spec: AuditSpec, project_dir: Path) -> PreparedAudit:
    """Load the dataset ``spec`` names, derive reference labels and split the items.

    A relative dataset path is read from the spec's folder (``spec.base_dir``), else from
    ``project_dir``.

    Raises:
        DatasetError: The dataset is missing or malformed.
        GoldCheckError: The gold check's settings are invalid.
    """
    check = GoldCheck(spec.gold_check)
    base = Path(spec.base_dir) if spec.base_dir else project_dir
    items = load_items(spec.dataset, base_dir=base, label_set=spec.label_set, synonyms=spec.label_synonyms)
    return PreparedAudit(
        items=items,
        references={it.id: check.reference_label(it) for it in items},
        splits=split_heldout(items, spec.loop.heldout_fraction, spec.loop.seed),
    )
