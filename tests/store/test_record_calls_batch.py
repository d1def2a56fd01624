"""Calls are written with multi-row statements (one round trip per chunk on PostgreSQL): every call
keeps its own id, ICL examples and verdict link, across chunk boundaries, on both back ends."""

from __future__ import annotations

from allure.models import Verdict
from allure.store._calls import _INSERT_ROWS
from tests.store.conftest import Backend


def test_many_calls_keep_their_ids_examples_and_links(backend: Backend) -> None:
    store = backend.open()
    rid = store.create_run({})
    n = 2 * _INSERT_ROWS + 7  # three chunks, the last one short
    store.record_calls([Verdict(item_id="before", label=0, prompt_hash="h-before")], {})
    verdicts = [
        Verdict(
            item_id=f"i{k}",
            label=k % 2,
            prompt_hash=f"h{k}",
            raw_output=f"score: {k % 2} #{k}",
            icl_ids=[f"e{k}-{j}" for j in range(k % 4)],
        )
        for k in range(n)
    ]
    ids = store.record_calls(verdicts, {"model": "m"}, link=(rid, 1))
    assert len(ids) == len(set(ids)) == n and ids == sorted(ids)
    got = store.verdicts(rid, 1)
    assert len(got) == n
    for k in (0, 1, _INSERT_ROWS - 1, _INSERT_ROWS, 2 * _INSERT_ROWS + 6):
        v = got[f"i{k}"]
        assert (v.prompt_hash, v.raw_output, v.label) == (f"h{k}", f"score: {k % 2} #{k}", k % 2)
        assert v.icl_ids == [f"e{k}-{j}" for j in range(k % 4)]  # in prompt order
    by_hash = store.lookup_calls(f"h{k}" for k in range(n))
    assert [by_hash[f"h{k}"][0] for k in range(n)] == ids  # each id is its own verdict's call
    store.close()


def test_an_item_linked_twice_in_one_batch_keeps_its_last_link(backend: Backend) -> None:
    store = backend.open()
    rid = store.create_run({})
    first, second = store.record_calls(
        [Verdict(item_id="a", label=0, prompt_hash="h1"), Verdict(item_id="b", label=1, prompt_hash="h2")], {}
    )
    store.record_verdicts(rid, 1, [(first, "x", False), (second, "x", True), (first, "y", True)])
    got = store.verdicts(rid, 1)
    assert (got["x"].prompt_hash, got["x"].cache_hit) == ("h2", True)
    assert (got["y"].prompt_hash, got["y"].cache_hit) == ("h1", True)
    store.close()
