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
    rep = cluster_embeddings(ids, emb, modes, method="kmeans", k_range=(2, 6))
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


@pytest.mark.slow
def test_cluster_memory_and_map_on_a_real_store(memory: EpisodicMemory, tmp_path: Path) -> None:
    memory.add(mixed_examples())
    rep = cluster_memory(memory, method="kmeans", k_range=(2, 5))
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


def _many_blobs(k: int, per: int, dim: int = 48, seed: int = 0) -> tuple[np.ndarray, list[int]]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((k, dim))
    rows, truth = [], []
    for c in range(k):
        pts = centres[c] + 0.08 * rng.standard_normal((per, dim))
        rows.append(pts / np.linalg.norm(pts, axis=1, keepdims=True))
        truth += [c] * per
    return np.vstack(rows), truth


@pytest.mark.slow
def test_hdbscan_finds_twenty_groups_where_silhouette_kmeans_picks_few() -> None:
    emb, truth = _many_blobs(20, 15)
    ids = [f"e{i}" for i in range(len(truth))]
    modes = [["keywords", "gibberish"][t % 2] for t in truth]
    types = [f"type{t % 4}" for t in truth]
    rep = cluster_embeddings(ids, emb, modes, problem_types=types)
    assert rep.chosen_by == "hdbscan" and rep.n_clusters == 20 and rep.noise == 0
    assert rep.min_cluster_size == 5  # max(5, 300 / 100)
    from sklearn.metrics import adjusted_rand_score

    assert adjusted_rand_score(truth, [rep.labels[i] for i in ids]) == pytest.approx(1.0)
    assert len(rep.problem_types_by_cluster) == 20
    assert all(sum(v.values()) == 15 and len(v) == 1 for v in rep.problem_types_by_cluster.values())
    km = cluster_embeddings(ids, emb, modes, method="kmeans", k_range=(2, 10))
    assert km.n_clusters <= 10  # capped by its range: it cannot see the twenty groups


def test_hdbscan_leaves_outliers_as_noise_and_small_memories_fall_back_to_kmeans() -> None:
    emb, truth = _many_blobs(3, 12, seed=2)
    rng = np.random.default_rng(5)
    outliers = rng.standard_normal((4, emb.shape[1]))
    emb = np.vstack([emb, outliers / np.linalg.norm(outliers, axis=1, keepdims=True)])
    ids = [f"e{i}" for i in range(len(emb))]
    rep = cluster_embeddings(ids, emb, ["other"] * len(ids))
    assert rep.chosen_by == "hdbscan" and rep.n_clusters == 3 and rep.noise >= 3
    assert all(rep.labels[f"e{i}"] >= 0 for i in range(36)) and -1 in rep.modes_by_cluster
    ids3, emb3, modes3 = _blobs()
    small = cluster_embeddings(ids3[:8], emb3[:8], modes3[:8])  # one blob: HDBSCAN finds < 2 clusters
    assert small.chosen_by == "silhouette" and small.n_clusters >= 2
