"""KMeans clusters against failure modes, and the t-SNE map."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from memory_examples import mixed_examples

from allure.errors import MemoryStoreError
from allure.memory import EpisodicMemory, cluster_embeddings, cluster_memory, tsne_map, tsne_perplexity


def _blobs(seed: int = 0) -> tuple[list[str], np.ndarray, list[str]]:
    """Three well-separated unit-norm blobs of 10 points each, labelled by mode."""
    rng = np.random.default_rng(seed)
    centres = np.eye(8)[:3]
    rows, modes = [], []
    for c, mode in zip(centres, ["keywords", "gibberish", "parroting"], strict=True):
        pts = c + 0.05 * rng.standard_normal((10, 8))
        rows.append(pts / np.linalg.norm(pts, axis=1, keepdims=True))
        modes += [mode] * 10
    return [f"e{i}" for i in range(30)], np.vstack(rows), modes


def test_silhouette_finds_the_three_blobs_and_they_match_the_modes() -> None:
    ids, emb, modes = _blobs()
    rep = cluster_embeddings(ids, emb, modes, k_range=(2, 6))
    assert rep.n_clusters == 3 and rep.chosen_by == "silhouette"
    assert rep.silhouette == max(rep.silhouette_by_k.values())
    assert set(rep.silhouette_by_k) == {2, 3, 4, 5, 6}
    assert rep.ari == pytest.approx(1.0) and rep.nmi == pytest.approx(1.0)
    assert sorted(sum(m.values()) for m in rep.modes_by_cluster.values()) == [10, 10, 10]


def test_agreement_drops_when_modes_are_shuffled() -> None:
    ids, emb, modes = _blobs()
    shuffled = list(np.random.default_rng(1).permutation(modes))
    rep = cluster_embeddings(ids, emb, shuffled, n_clusters=3)
    assert rep.chosen_by == "fixed" and rep.n_clusters == 3
    assert rep.ari is not None and rep.ari < 0.3  # chance level ~0


def test_too_small_and_bad_fixed_k() -> None:
    ids, emb, modes = _blobs()
    assert cluster_embeddings(ids[:2], emb[:2], modes[:2]).chosen_by == "too_small"
    with pytest.raises(MemoryStoreError, match="n_clusters"):
        cluster_embeddings(ids, emb, modes, n_clusters=31)


def test_perplexity_adapts_to_small_sizes() -> None:
    assert tsne_perplexity(4) == 1.0
    assert tsne_perplexity(13) == 4.0
    assert tsne_perplexity(10_000) == 30.0


def test_cluster_memory_and_map_on_a_real_store(memory: EpisodicMemory, tmp_path: Path) -> None:
    memory.add(mixed_examples())
    rep = cluster_memory(memory, k_range=(2, 5))
    assert 2 <= rep.n_clusters <= 5 and len(rep.labels) == 13
    assert rep.nmi is not None and 0.0 <= rep.nmi <= 1.0
    out = tsne_map(memory, tmp_path / "maps" / "memory.png")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5_000


def test_map_needs_four_examples(memory: EpisodicMemory, tmp_path: Path) -> None:
    memory.add(mixed_examples()[:3])
    with pytest.raises(MemoryStoreError, match="at least 4"):
        tsne_map(memory, tmp_path / "m.png")
    assert not (tmp_path / "m.png").exists()
