"""Cross-fitting folds (``[loop] folds``): seeded, stratified by reference label, balanced, audit only."""

from __future__ import annotations

from collections import Counter

import pytest

from allure.config import parse_spec
from allure.dataset import cross_folds, dev_split, folds_digest
from allure.errors import SpecError
from allure.models import Item


def _data(n: int = 103) -> tuple[dict[str, object], dict[str, str]]:
    refs: dict[str, object] = {f"i{k}": ("yes" if k % 7 == 0 else "no") for k in range(n)}
    refs["i5"] = None  # an audit item without a reference still gets a fold
    splits = {i: ("heldout" if k % 4 == 0 else "audit") for k, i in enumerate(refs)}
    return refs, splits


def test_folds_are_seeded_stratified_balanced_and_audit_only() -> None:
    refs, splits = _data()
    folds = cross_folds(refs, splits, 5, 0)
    assert folds == cross_folds(dict(reversed(refs.items())), splits, 5, 0)  # order does not matter
    assert set(folds) == {i for i, s in splits.items() if s == "audit"}
    sizes = Counter(folds.values())
    assert set(sizes) == set(range(5)) and max(sizes.values()) - min(sizes.values()) <= 1
    for label in ("yes", "no"):
        per = Counter(j for i, j in folds.items() if refs[i] == label)
        assert max(per.values()) - min(per.get(j, 0) for j in range(5)) <= 1, label
    assert cross_folds(refs, splits, 5, 1) != folds
    assert folds_digest(folds) == folds_digest(dict(folds)) != folds_digest(cross_folds(refs, splits, 5, 1))
    assert cross_folds(refs, splits, 0, 0) == {}


def test_with_folds_no_dev_split_is_carved() -> None:
    refs, splits = _data()
    items = [Item(id=i, task="t", response="r") for i in refs]
    assert dev_split(items, splits, 0.3, 0) and dev_split(items, splits, 0.3, 0, folds=5) == set()


def test_one_fold_is_refused_naming_the_field_and_the_fix(tmp_path: object) -> None:
    base = {"dataset": {"path": "x.jsonl"}, "evaluator": {"kind": "replay"}}
    assert parse_spec(base).loop.folds == 5
    assert parse_spec({**base, "loop": {"folds": 0}}).loop.folds == 0
    with pytest.raises(SpecError) as err:
        parse_spec({**base, "loop": {"folds": 1}})
    assert "loop.folds" in str(err.value) and "folds = 5" in str(err.value)


def test_a_dev_fraction_without_folds_asks_for_the_dev_split() -> None:
    """A spec written before cross-fitting (or a stored run's spec from then) keeps the dev split rule."""
    base = {"dataset": {"path": "x.jsonl"}, "evaluator": {"kind": "replay"}}
    assert parse_spec({**base, "loop": {"dev_fraction": 0.5}}).loop.folds == 0
    assert parse_spec({**base, "loop": {"dev_fraction": 0.5, "folds": 3}}).loop.folds == 3
    old = parse_spec(base).model_dump(mode="json")
    del old["loop"]["folds"]
    from allure.config import AuditSpec

    assert AuditSpec.model_validate(old).loop.folds == 0
