"""Frozen sets: content hash, versions, what changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from allure.errors import ReauditError
from allure.models import Item
from allure.reaudit import FrozenItem, freeze_items, load_frozen_set, set_content_hash
from allure.store import RunStore


def _fi(i: int, label: int = 1) -> FrozenItem:
    return FrozenItem(item=Item(id=f"i{i}", task="t", response=f"r{i}"), reference_label=label)


def test_versions_grow_and_say_how(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "a.db")
    v1, created = freeze_items(store, "s", [_fi(i) for i in range(3)], source="test", split="all", spec={})
    assert created and v1.version == 1 and v1.change == ""
    same, created = freeze_items(store, "s", [_fi(i) for i in (2, 1, 0)], source="test", split="all", spec={})
    assert not created and same.version == 1  # order does not matter
    v2, created = freeze_items(store, "s", [_fi(i) for i in range(5)], source="test", split="all", spec={})
    assert (
        created
        and v2.version == 2
        and v2.change.startswith("grew from v1 (3 items) to v2 (5 items): added 2")
    )
    v3, _ = freeze_items(
        store, "s", [_fi(0, 0), *(_fi(i) for i in range(1, 5))], source="t", split="all", spec={}
    )
    assert v3.version == 3 and "relabelled 1" in v3.change and v3.change.startswith("changed")
    assert load_frozen_set(store, "s").version == 3 and load_frozen_set(store, "s", 1).n_items == 3
    assert [v for v, *_ in store.frozen_set_versions("s")] == [1, 2, 3]
    assert set_content_hash([_fi(0)]) != set_content_hash([_fi(0, 0)])  # the label is part of the content
    with pytest.raises(ReauditError, match="unknown frozen set 'x'"):
        load_frozen_set(store, "x")
    with pytest.raises(ReauditError, match="invalid set name"):
        freeze_items(store, "no spaces", [_fi(0)], source="t", split="all", spec={})
    store.close()


def test_two_reaudits_of_a_set_in_one_second_get_different_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    from allure.reaudit import _run

    monkeypatch.setattr(_run, "utcnow", lambda: "2026-11-23T18:18:42+00:00")
    first, second = _run.new_reaudit_id("nightly"), _run.new_reaudit_id("nightly")
    assert first != second
    assert first.startswith("ra-20261123T181842-") and second.startswith("ra-20261123T181842-")
