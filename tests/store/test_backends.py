"""What differs between the back ends, tested on both: schema versions, label types, upserts, order,
and the PostgreSQL store's URL handling (no password stored or shown)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from allure.config import parse_spec
from allure.errors import SpecError, StoreError
from allure.metrics import compute_metrics
from allure.models import Item, Verdict
from allure.store import SCHEMA_VERSION, RunStore, StoreSpec, display_url, schema_version
from tests.store.conftest import Backend


def test_schema_version_is_current_and_reopening_changes_nothing(backend: Backend) -> None:
    store = backend.open()
    assert schema_version(store._conn) == SCHEMA_VERSION
    store.record_calls([Verdict(item_id="a", label=1, prompt_hash="h")], {})
    store.close()
    again = backend.open(create=False)
    assert schema_version(again._conn) == SCHEMA_VERSION and again.call_count() == 1
    again.close()


def test_a_newer_schema_is_refused_on_both(backend: Backend) -> None:
    store = backend.open()
    store._dialect.begin_exclusive(store._conn, "schema")
    store._dialect.set_schema_version(store._conn, SCHEMA_VERSION + 1)
    store._conn.commit()
    store.close()
    with pytest.raises(StoreError, match="reads up to") as exc:
        backend.open()
    assert exc.value.fix and "upgrade allure" in exc.value.fix


def test_labels_keep_their_type(backend: Backend) -> None:
    """An integer label and a string label (also the string "1") read back as they were written."""
    store = backend.open()
    rid = store.create_run({})
    items = [Item(id=f"i{k}", task="t", response="r") for k in range(4)]
    refs = {"i0": 1, "i1": "1", "i2": "yes", "i3": None}
    store.add_items(rid, items, dict.fromkeys(refs, "audit"), refs)  # type: ignore[arg-type]
    assert store.reference_labels(rid) == refs
    calls = [Verdict(item_id=i, label=lab, prompt_hash=f"h{i}") for i, lab in refs.items()]
    ids = store.record_calls(calls, {}, link=(rid, 1))
    assert len(set(ids)) == 4
    got = store.verdicts(rid, 1)
    assert {i: v.label for i, v in got.items()} == refs
    assert [type(got[i].label) for i in ("i0", "i1")] == [int, str]


def test_relinking_a_verdict_replaces_it_whole(backend: Backend) -> None:
    """Linking another call to an item's verdict drops the earlier post-processed label (as REPLACE did)."""
    store = backend.open()
    rid = store.create_run({})
    a, b = store.record_calls(
        [Verdict(item_id="x", label=0, prompt_hash="ha"), Verdict(item_id="x", label=1, prompt_hash="hb")], {}
    )
    store.record_verdicts(rid, 1, [(a, "x", False)])
    store.set_verdict_labels(rid, 1, {"x": 1})
    assert store.verdicts(rid, 1)["x"].label == 1 and store.verdicts(rid, 1)["x"].raw_label == 0
    store.record_verdicts(rid, 1, [(b, "x", True)])
    v = store.verdicts(rid, 1)["x"]
    assert v.label == 1 and v.raw_label is None and v.cache_hit


def test_metrics_and_memory_versions_are_replaced(backend: Backend) -> None:
    store = backend.open()
    rid = store.create_run({})
    m1 = compute_metrics([0, 1, 1, 0], [0, 1, 0, 0], pos_label=1, n_resamples=20)
    m2 = compute_metrics([0, 1, 1, 0], [0, 1, 1, 0], pos_label=1, n_resamples=20)
    store.record_metrics(rid, 1, "heldout", m1)
    store.record_metrics(rid, 1, "heldout", m2)
    store.record_metrics(rid, 2, "audit", m1)
    got = store.metrics(rid)
    assert list(got) == [1, 2] and got[1]["heldout"].accuracy == 1.0 and got[2]["audit"].accuracy == 0.75
    store.record_memory_version(rid, 1, "c1", ["b", "a"])
    store.record_memory_version(rid, 1, "c2", ["z"])
    assert store.memory_versions(rid) == {1: ("c2", ["z"])}


def test_runs_and_reaudits_keep_insertion_order_within_one_second(backend: Backend) -> None:
    store = backend.open()
    ids = [store.create_run({"k": k}, run_id=f"run-{9 - k}") for k in range(5)]  # ids sort the other way
    assert [r.id for r in store.list_runs()] == ids
    for k in range(3):
        store.add_reaudit(f"r{9 - k}", "set", 1, "2026-01-01T00:00:00+00:00", "done", {"k": k})
    assert [d["k"] for d in store.reaudit_docs("set")] == [0, 1, 2] and store.reaudit_count() == 3
    store.add_frozen_set("b-set", 1, "h", "t", 2, {"v": 1})
    store.add_frozen_set("B-set", 1, "h", "t", 2, {"v": 2})
    store.add_frozen_set("b-set", 2, "h2", "t", 3, {"v": 3})
    assert store.frozen_set_names() == ["B-set", "b-set"]  # byte order on both back ends
    assert store.frozen_set_doc("b-set") == {"v": 3} and [
        v[0] for v in store.frozen_set_versions("b-set")
    ] == [1, 2]


def test_candidates_count_only_new_ones(backend: Backend) -> None:
    from allure.models import IclExample

    def ex(k: int) -> IclExample:
        return IclExample(id=f"e{k}", item_id=f"i{k}", response="r", correct_label=1, wrong_label=0)

    store = backend.open()
    rid = store.create_run({})
    assert store.add_candidates(rid, 1, [ex(1), ex(2)]) == 2
    assert store.add_candidates(rid, 2, [ex(2), ex(3), ex(4)]) == 2
    assert [c.id for c in store.candidates(rid)] == ["e1", "e2", "e3", "e4"]


# -- PostgreSQL only ---------------------------------------------------------------------------------


@pytest.mark.integration
def test_a_missing_postgres_store_is_a_clear_error(pg_url: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(StoreError, match="no run store in this database"):
        RunStore(tmp_path / "x.db", create=False, url=pg_url)
    dead = "postgresql://bob:hunter2@127.0.0.1:1/db"
    with pytest.raises(StoreError, match="cannot connect") as exc:
        RunStore(tmp_path / "x.db", url=dead)
    shown = str(exc.value) + str(exc.value.where) + str(exc.value.fix)
    assert "hunter2" not in shown and "bob:***@127.0.0.1:1/db" in shown


@pytest.mark.integration
def test_processes_creating_one_postgres_store_at_once_all_succeed(pg_url: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    code = (
        "import sys, time\nfrom allure.store import RunStore\nstart = float(sys.argv[2])\n"
        "while time.time() < start: pass\nRunStore(sys.argv[3], url=sys.argv[1]).close()\n"
    )
    start = time.time() + 1.5
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, pg_url, str(start), str(tmp_path / "x.db")],
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    errs = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [e[-400:] for e in errs]
    store = RunStore(tmp_path / "x.db", create=False, url=pg_url)
    assert schema_version(store._conn) == SCHEMA_VERSION
    store.close()


def test_store_urls_never_keep_or_show_a_password() -> None:
    url = "postgresql://ann:s3cret@db.example:5432/allure?sslmode=require&password=x2"
    assert display_url(url) == "postgresql://ann:***@db.example:5432/allure?sslmode=require"
    spec = StoreSpec(url=url)
    assert spec.url == url  # used to connect
    assert spec.model_dump() == {"url": "postgresql://ann@db.example:5432/allure?sslmode=require"}  # stored
    with pytest.raises(ValueError, match="postgresql://"):
        StoreSpec(url="mysql://ann:s3cret@h/db")
    with pytest.raises(SpecError) as exc:
        parse_spec({"dataset": {"path": "x.jsonl"}, "store": {"url": "http://ann:s3cret@h/db"}}, source="t")
    assert "s3cret" not in str(exc.value) and "store.url" in str(exc.value.where)
    spec = parse_spec({"dataset": {"path": "x.jsonl"}, "store": {"url": url}}, source="t")
    assert "s3cret" not in spec.model_dump_json() and spec.store.url == url


@pytest.mark.integration
def test_an_older_postgres_store_is_upgraded_by_the_same_migrations(pg_url: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A version-1 PostgreSQL database (calls with their example ids in a JSON column) is brought to the
    current version by the migrations SQLite runs, the example ids copied in order."""
    from allure.store._backend import POSTGRES, PgConnection
    from allure.store._schema import MIGRATIONS

    conn = PgConnection(pg_url)
    POSTGRES.begin_exclusive(conn, "schema")
    MIGRATIONS[0](conn)
    POSTGRES.set_schema_version(conn, 1)
    conn.execute(
        "INSERT INTO calls (prompt_hash, item_id, model, params_json, status, label, raw_output, icl_ids_json, "
        "latency_s, prompt_tokens, completion_tokens, cached_tokens, created_at) "
        "VALUES ('h1', 'i1', 'm', '{}', 'ok', 1, '1', '[\"ex-b\", \"ex-a\"]', 0.5, 1, 1, 0, 't')"
    )
    conn.commit()
    conn.close()
    store = RunStore(tmp_path / "x.db", create=False, url=pg_url)
    assert schema_version(store._conn) == SCHEMA_VERSION
    call_id, verdict = store.lookup_calls(["h1"])["h1"]
    assert verdict.icl_ids == ["ex-b", "ex-a"] and verdict.label == 1 and verdict.latency_s == 0.5
    store.close()


def test_the_store_url_comes_from_the_environment_then_the_spec_then_the_project(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from allure.store import remember_store_url, store_url

    monkeypatch.delenv("ALLURE_STORE_URL", raising=False)
    assert store_url(tmp_path) == ""  # the SQLite file
    remember_store_url(tmp_path, "postgresql://ann:pw@db/p")
    assert "pw" not in (tmp_path / ".allure" / "store.toml").read_text()
    assert store_url(tmp_path) == "postgresql://ann@db/p"
    assert store_url(tmp_path, "postgresql://ann@db/spec") == "postgresql://ann@db/spec"
    monkeypatch.setenv("ALLURE_STORE_URL", "postgresql://ann:pw@db/env")
    assert store_url(tmp_path, "postgresql://ann@db/spec") == "postgresql://ann:pw@db/env"
    monkeypatch.setenv("ALLURE_STORE_URL", "mysql://ann:pw@db/env")
    with pytest.raises(StoreError, match="ALLURE_STORE_URL") as exc:
        store_url(tmp_path)
    assert "pw@" not in str(exc.value)
