"""Frozen audit sets: a named, versioned list of items with their reference labels.

A re-audit always scores exactly one version of a set. The content hash covers every item
(all its fields) and its reference label, in item-id order; freezing content that differs from
the newest version stores a new version, and the version records how it changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from allure.config import AuditSpec, ReauditSplit
from allure.errors import ReauditError
from allure.labels import Label
from allure.models import Item, stable_hash, utcnow
from allure.store import RunStore


class FrozenItem(BaseModel):
    """One item of a frozen set with the reference label it is scored against."""

    item: Item
    """The item (task, response, gold answers, problem type...)."""
    reference_label: Label | None
    """The reference label (``None``: the gold check could not decide; the item is not scored)."""


class FrozenSet(BaseModel):
    """One version of a named frozen set, as stored in the run store."""

    name: str
    """The set's name."""
    version: int
    """Version number, from 1; a change of content is a new version."""
    content_hash: str
    """sha256 (hex, 16) over the items and their reference labels, in item-id order."""
    created_at: str
    """When this version was frozen (ISO-8601 UTC)."""
    source: str
    """Where the items came from (``run RUN`` or ``spec PATH``)."""
    split: ReauditSplit
    """The split of the source that was pinned."""
    items: list[FrozenItem]
    """The items, in the source's order."""
    spec: dict[str, Any] = Field(default_factory=dict)
    """The audit spec (JSON form) ``allure reaudit NAME`` uses when no spec file is given."""
    change: str = ""
    """How this version differs from the previous one (empty for version 1)."""

    @property
    def n_items(self) -> int:
        """Number of items."""
        return len(self.items)

    def references(self) -> dict[str, Label | None]:
        """Item id -> reference label."""
        return {fi.item.id: fi.reference_label for fi in self.items}


def set_content_hash(items: list[FrozenItem]) -> str:
    """The content hash of a set's items and labels (independent of their order)."""
    rows = sorted((fi.item.id, fi.item.model_dump(mode="json"), fi.reference_label) for fi in items)
    return stable_hash(rows)


def _describe_change(old: FrozenSet, new: list[FrozenItem]) -> str:
    before = {fi.item.id: fi for fi in old.items}
    after = {fi.item.id: fi for fi in new}
    added = len(after.keys() - before.keys())
    removed = len(before.keys() - after.keys())
    common = before.keys() & after.keys()
    relabelled = sum(before[i].reference_label != after[i].reference_label for i in common)
    edited = sum(before[i].item != after[i].item for i in common)
    parts = [
        f"{what} {n}"
        for what, n in (
            ("added", added),
            ("removed", removed),
            ("relabelled", relabelled),
            ("edited", edited),
        )
        if n
    ]
    kind = "grew" if added and not (removed or relabelled or edited) else "changed"
    return (
        f"{kind} from v{old.version} ({old.n_items} items) to v{old.version + 1} ({len(new)} items): "
        + ", ".join(parts)
    )


def freeze_items(
    store: RunStore,
    name: str,
    items: list[FrozenItem],
    *,
    source: str,
    split: ReauditSplit,
    spec: dict[str, Any],
) -> tuple[FrozenSet, bool]:
    """Pin ``items`` as set ``name``: a new version unless the newest one has the same content.

    Returns:
        The set version that holds these items, and whether it was created now.

    Raises:
        ReauditError: the name is not valid, or there are no items.
    """
    check_set_name(name)
    if not items:
        raise ReauditError(
            f"no items to freeze into set {name!r}",
            where=source,
            fix="choose a split that holds items (--split all)",
        )
    digest = set_content_hash(items)
    newest = load_frozen_set(store, name) if name in store.frozen_set_names() else None
    if newest is not None and newest.content_hash == digest:
        return newest, False
    fs = FrozenSet(
        name=name,
        version=1 if newest is None else newest.version + 1,
        content_hash=digest,
        created_at=utcnow(),
        source=source,
        split=split,
        items=items,
        spec=spec,
        change="" if newest is None else _describe_change(newest, items),
    )
    store.add_frozen_set(name, fs.version, digest, fs.created_at, fs.n_items, fs.model_dump(mode="json"))
    return fs, True


def check_set_name(name: str) -> None:
    """Raise :class:`ReauditError` unless ``name`` is a valid set name (:func:`allure.names.check_name`)."""
    from allure.names import check_name

    check_name(name, what="set name", where="--name", error=ReauditError)


def _pick(splits: dict[str, str], item_id: str, split: ReauditSplit) -> bool:
    return split == "all" or splits.get(item_id) == split


def freeze_run(
    store: RunStore, run_id: str, name: str, *, split: ReauditSplit = "heldout"
) -> tuple[FrozenSet, bool]:
    """Pin the items of a run's ``split`` (with the run's reference labels) as set ``name``.

    Raises:
        StoreError: the run is unknown.
        ReauditError: the split holds no items, or the name is invalid.
    """
    check_set_name(name)
    run = store.get_run(run_id)
    if run.info.get("kind") == "study":
        raise ReauditError(
            f"{run_id} is a study, not an audit run: `allure freeze` takes a run id or a spec file",
            where=f"argument SOURCE {run_id}",
            fix="freeze the audit run the study was made from (`allure runs` lists runs), or a spec with [reaudit]",
        )
    splits = store.splits(run_id)
    refs = store.reference_labels(run_id)
    items = [
        FrozenItem(item=it, reference_label=refs.get(it.id))
        for it in store.items(run_id)
        if _pick(dict(splits), it.id, split)
    ]
    return freeze_items(store, name, items, source=f"run {run_id}", split=split, spec=run.spec)


def spec_items(spec: AuditSpec, project_dir: Path, split: ReauditSplit) -> list[FrozenItem]:
    """The items of ``spec``'s dataset in ``split`` (split as the audit loop splits them), with reference labels.

    Raises:
        DatasetError, GoldCheckError: the dataset or the gold check is invalid.
    """
    from allure.graphs import prepare_audit

    prepared = prepare_audit(spec, project_dir)
    return [
        FrozenItem(item=it, reference_label=prepared.references[it.id])
        for it in prepared.items
        if _pick(dict(prepared.splits), it.id, split)
    ]


def load_frozen_set(store: RunStore, name: str, version: int | None = None) -> FrozenSet:
    """A set's version (the newest when ``version`` is None).

    Raises:
        ReauditError: no such set or version; the message lists the known sets.
    """
    try:
        doc = store.frozen_set_doc(name, version)
    except ValueError as exc:  # hand-edited JSON in the store
        raise ReauditError(
            f"frozen set {name!r} is damaged: its stored JSON does not parse ({exc})",
            where=str(store.path),
            fix=f"freeze the set again (`allure freeze RUN --name {name}`); a pinned set is never edited by hand",
        ) from exc
    if doc is None:
        known = store.frozen_set_names()
        what = (
            f"set {name!r}" if version is None or name not in known else f"version {version} of set {name!r}"
        )
        raise ReauditError(
            f"unknown frozen {what}",
            where=str(store.path),
            fix=f"known sets: {', '.join(known) or '(none yet)'}; pin one with `allure freeze RUN --name {name}`",
        )
    return _verified(store, name, doc)


def _verified(store: RunStore, name: str, doc: dict[str, Any]) -> FrozenSet:
    """The set ``doc`` holds, after checking its items against the content hash it was pinned with.

    Raises:
        ReauditError: the document does not validate, or its items, their number or the stored hash
            differ from what was pinned (a hand-edited or truncated set); the message names the set,
            the version and what changed.
    """
    from pydantic import ValidationError

    version = doc.get("version", "?") if isinstance(doc, dict) else "?"
    fix = (
        f"restore .allure/allure.db from a backup, or pin the set again (`allure freeze RUN --name {name}`): "
        "a frozen set is compared by its content hash and must not be edited"
    )
    try:
        fs = FrozenSet.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(x) for x in err["loc"])
        raise ReauditError(
            f"frozen set {name!r} v{version} is damaged: field {field!r}: {err['msg']}",
            where=str(store.path),
            fix=fix,
        ) from exc
    pinned = {v: (h, n) for v, h, _at, n in store.frozen_set_versions(name)}
    stored_hash, stored_n = pinned.get(fs.version, (fs.content_hash, fs.n_items))
    actual = set_content_hash(fs.items)
    problems = []
    if fs.n_items != stored_n:
        problems.append(f"it holds {fs.n_items} items where {stored_n} were pinned")
    if fs.content_hash != stored_hash:
        problems.append(f"its recorded hash {fs.content_hash} is not the pinned {stored_hash}")
    if actual != stored_hash:
        problems.append(f"its items and reference labels hash to {actual}, not the pinned {stored_hash}")
    if problems:
        raise ReauditError(
            f"frozen set {name!r} v{fs.version} does not match its content hash: " + "; ".join(problems),
            where=str(store.path),
            fix=fix,
        )
    return fs
