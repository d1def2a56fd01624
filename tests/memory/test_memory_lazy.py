"""A memory opened ``lazy``: examples from Chroma's SQLite file, chromadb only when needed; cached clusters."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from memory_examples import make_example, mixed_examples
from typer.testing import CliRunner

from allure.cli import memory as memory_cli
from allure.cli.main import app
from allure.memory import (
    EpisodicMemory,
    RetrievalPolicy,
    cached_clusters,
    cluster_memory,
    memory_stats,
)
from allure.memory._sqlite import read_examples_json
from allure.models import Item

runner = CliRunner()


def _filled(tmp_path: Path) -> tuple[str, EpisodicMemory]:
    loc = str(tmp_path / "memory")
    mem = EpisodicMemory.open(loc)
    mem.add(mixed_examples())
    return loc, mem


def test_lazy_open_reads_what_chroma_reads_and_sees_every_change(tmp_path: Path) -> None:
    loc, mem = _filled(tmp_path)
    lazy = EpisodicMemory.open(loc, create=False, lazy=True)
    assert lazy._col_obj is None  # nothing opened through chromadb
    assert lazy.all() == mem.refresh()
    assert lazy.version() == mem.version()
    assert memory_stats(lazy) == memory_stats(mem)
    before = lazy.version().content_hash

    extra = make_example(99, mode="parroting")
    mem.add([extra])  # one more example
    grown = EpisodicMemory.open(loc, create=False, lazy=True).version()
    assert grown.size == 14 and grown.content_hash != before
    assert grown == mem.version()

    changed = extra.model_copy(update={"failure_reason": "edited by a reviewer"})
    mem.add([changed])  # same id, new content
    edited = EpisodicMemory.open(loc, create=False, lazy=True).version()
    assert edited.size == 14 and edited.content_hash != grown.content_hash
    assert edited == mem.version()


def test_lazy_memory_opens_chroma_for_a_vector_query(tmp_path: Path) -> None:
    loc, mem = _filled(tmp_path)
    lazy = EpisodicMemory.open(loc, create=False, lazy=True)
    item = Item(id="q", task="t", response=mixed_examples()[0].response)
    policy = RetrievalPolicy(kind="top_k", k=3)
    assert [e.id for e in lazy.retrieve(item, policy)] == [e.id for e in mem.retrieve(item, policy)]
    assert lazy._col_obj is not None


def test_a_segment_behind_its_log_is_not_trusted(tmp_path: Path) -> None:
    loc, mem = _filled(tmp_path)
    copy = tmp_path / "copy"
    shutil.copytree(loc, copy)
    assert read_examples_json(copy, "icl_examples") is not None
    assert read_examples_json(copy, "no_such_collection") is None
    with sqlite3.connect(copy / "chroma.sqlite3") as con:
        con.execute(
            "UPDATE max_seq_id SET seq_id = 0 WHERE segment_id IN (SELECT id FROM segments WHERE scope = 'METADATA')"
        )
    assert read_examples_json(copy, "icl_examples") is None
    (tmp_path / "not-a-store").mkdir()
    (tmp_path / "not-a-store" / "chroma.sqlite3").write_bytes(b"garbage")
    assert read_examples_json(tmp_path / "not-a-store", "icl_examples") is None


@pytest.mark.integration
def test_stats_and_version_import_no_chromadb(tmp_path: Path) -> None:
    loc, _ = _filled(tmp_path)
    code = (
        "import sys\nfrom allure.memory import EpisodicMemory, memory_stats\n"
        f"m = EpisodicMemory.open({loc!r}, create=False, lazy=True)\n"
        "print(memory_stats(m).size, m.version().size, 'chromadb' in sys.modules)\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert res.stdout.split() == ["13", "13", "False"], res.stderr


def test_clusters_are_cached_per_content(tmp_path: Path) -> None:
    loc, mem = _filled(tmp_path)
    assert cached_clusters(mem) is None
    first = cluster_memory(mem, n_clusters=3)
    assert not first.cached and first.content_hash == mem.version().content_hash and first.computed_at
    again = cluster_memory(mem, n_clusters=3)
    assert again.cached and again.labels == first.labels and again.computed_at == first.computed_at
    assert cached_clusters(mem, n_clusters=3) == again
    assert cached_clusters(mem, n_clusters=4) is None  # other parameters: another entry
    mem.add([make_example(99, mode="parroting")])
    assert cached_clusters(mem, n_clusters=3) is None  # a changed memory is clustered again
    fresh = cluster_memory(mem, n_clusters=3)
    assert not fresh.cached and len(fresh.labels) == 14


def test_the_cluster_cache_keeps_the_newest_reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from allure.memory import _clusters

    _, mem = _filled(tmp_path)
    monkeypatch.setattr(_clusters, "CACHE_KEEP", 2)
    for k in (2, 3, 4):
        cluster_memory(mem, n_clusters=k)
    assert len(list((tmp_path / "memory" / _clusters.CACHE_DIR).glob("*.json"))) == 2
    assert cached_clusters(mem, n_clusters=4) is not None


@pytest.mark.slow
def test_stats_cli_says_when_clusters_are_not_computed_or_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _filled(tmp_path)
    monkeypatch.setattr(memory_cli, "AUTO_CLUSTER_MAX", 5)

    def stats(*args: str):  # type: ignore[no-untyped-def]
        res = runner.invoke(app, ["memory", "stats", "--memory", str(tmp_path / "memory"), *args])
        assert res.exit_code == 0, res.output
        return res.stdout

    out = stats()
    assert "clusters: not computed (13 examples, more than 5)" in out and "--compute-clusters" in out
    assert "partial_correctness  3" in out and "ARI" not in out
    as_json = json.loads(stats("--json"))
    assert as_json["clusters"] is None and "--compute-clusters" in as_json["clusters_not_computed"]
    out = stats("--compute-clusters")
    assert "ARI" in out and "cached, computed" not in out
    out = stats()
    assert "ARI" in out and "cached, computed" in out
