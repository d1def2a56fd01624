"""Embedding clusters of the memory, checked against the rule-based failure modes.

KMeans over the stored all-MiniLM-L6-v2 embeddings (the number of clusters chosen
by silhouette, or fixed), compared with the failure-mode labels by the adjusted
Rand index and normalised mutual information; plus the t-SNE map of the memory
coloured by failure mode (ALLURE, Fig. 5).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pydantic import BaseModel

from allure.errors import MemoryStoreError
from allure.memory._store import EpisodicMemory
from allure.models import FAILURE_MODES


class ClusterReport(BaseModel):
    """KMeans clusters of the memory and their agreement with the failure modes."""

    n_clusters: int
    """Number of clusters used (0 when the memory is too small to cluster)."""
    chosen_by: str
    """``silhouette`` (best over a range), ``fixed`` (given), or ``too_small``."""
    silhouette: float | None
    """Mean silhouette (cosine) of the chosen clustering."""
    silhouette_by_k: dict[int, float]
    """Silhouette for each number of clusters tried."""
    ari: float | None
    """Adjusted Rand index between clusters and failure modes (1 = identical partitions, ~0 = chance)."""
    nmi: float | None
    """Normalised mutual information between clusters and failure modes (0..1)."""
    labels: dict[str, int]
    """Example id -> cluster."""
    modes_by_cluster: dict[int, dict[str, int]]
    """Cluster -> failure mode -> count."""


def cluster_embeddings(
    ids: list[str],
    embeddings: np.ndarray,
    modes: list[str],
    *,
    n_clusters: int | None = None,
    k_range: tuple[int, int] = (2, 10),
    random_state: int = 0,
) -> ClusterReport:
    """Cluster ``embeddings`` with KMeans and compare with ``modes``.

    Args:
        ids: One id per row.
        embeddings: Unit-norm rows (Euclidean KMeans on them ranks like cosine).
        modes: The failure mode of each row.
        n_clusters: A fixed number of clusters; ``None`` picks the best silhouette in ``k_range``.
        k_range: Inclusive range of cluster counts to try.
        random_state: Seed of KMeans.
    """
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score, silhouette_score

    n = len(ids)
    distinct = len(np.unique(np.round(embeddings, 6), axis=0)) if n else 0
    if n_clusters is not None and not 1 <= n_clusters <= max(n, 1):
        raise MemoryStoreError(
            f"cannot make {n_clusters} clusters of {n} examples",
            where="field 'n_clusters'",
            fix=f"use a number between 2 and {max(n - 1, 2)}",
        )
    if n < 3 or distinct < 3:
        return ClusterReport(
            n_clusters=0,
            chosen_by="too_small",
            silhouette=None,
            silhouette_by_k={},
            ari=None,
            nmi=None,
            labels={},
            modes_by_cluster={},
        )

    def fit(k: int) -> np.ndarray:
        return np.asarray(KMeans(n_clusters=k, n_init=4, random_state=random_state).fit_predict(embeddings))

    scores: dict[int, float] = {}
    if n_clusters is None:
        lo, hi = max(2, k_range[0]), min(k_range[1], distinct - 1)
        best: tuple[float, int, np.ndarray] | None = None
        for k in range(lo, max(lo, hi) + 1):
            labels = fit(k)
            if len(set(labels.tolist())) < 2:
                continue
            scores[k] = float(silhouette_score(embeddings, labels, metric="cosine"))
            if best is None or scores[k] > best[0]:
                best = (scores[k], k, labels)
        if best is None:  # pragma: no cover - distinct >= 3 always yields two clusters
            raise MemoryStoreError(
                "KMeans found no usable clustering", where="memory", fix="add more examples"
            )
        sil, k_used, labels = best
        chosen_by = "silhouette"
    else:
        k_used, labels = n_clusters, fit(n_clusters)
        sil = (
            float(silhouette_score(embeddings, labels, metric="cosine"))
            if 2 <= len(set(labels.tolist())) <= n - 1
            else float("nan")
        )
        scores[k_used] = sil
        chosen_by = "fixed"
    table: dict[int, dict[str, int]] = {}
    for lab, mode in zip(labels.tolist(), modes, strict=True):
        table.setdefault(int(lab), {}).setdefault(mode, 0)
        table[int(lab)][mode] += 1
    return ClusterReport(
        n_clusters=k_used,
        chosen_by=chosen_by,
        silhouette=sil,
        silhouette_by_k=scores,
        ari=float(adjusted_rand_score(modes, labels)),
        nmi=float(normalized_mutual_info_score(modes, labels)),
        labels={i: int(lab) for i, lab in zip(ids, labels.tolist(), strict=True)},
        modes_by_cluster=dict(sorted(table.items())),
    )


def cluster_memory(
    memory: EpisodicMemory,
    *,
    n_clusters: int | None = None,
    k_range: tuple[int, int] = (2, 10),
    random_state: int = 0,
) -> ClusterReport:
    """:func:`cluster_embeddings` over the memory's stored embeddings."""
    examples, matrix = memory.embeddings()
    return cluster_embeddings(
        [ex.id for ex in examples],
        matrix,
        [ex.failure_mode for ex in examples],
        n_clusters=n_clusters,
        k_range=k_range,
        random_state=random_state,
    )


def tsne_perplexity(n: int) -> float:
    """Perplexity for ``n`` points: 30 (scikit-learn's default) capped at (n - 1) / 3, at least 1."""
    return float(max(1.0, min(30.0, (n - 1) / 3)))


def tsne_map(memory: EpisodicMemory, path: Path, *, random_state: int = 0, title: str | None = None) -> Path:
    """Write a PNG of the memory's 2-D t-SNE coloured by failure mode (ALLURE, Fig. 5).

    Raises:
        MemoryStoreError: Fewer than 4 examples (t-SNE needs more points than its perplexity).
    """
    examples, matrix = memory.embeddings()
    n = len(examples)
    if n < 4:
        raise MemoryStoreError(
            f"the memory holds {n} example(s); a t-SNE map needs at least 4",
            where=memory.location,
            fix="add approved examples first",
        )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.manifold import TSNE

    xy = TSNE(
        n_components=2, perplexity=tsne_perplexity(n), metric="cosine", init="pca", random_state=random_state
    ).fit_transform(matrix)
    fig, ax = plt.subplots(figsize=(7, 6), dpi=120)
    modes = np.array([ex.failure_mode for ex in examples])
    cmap = plt.get_cmap("tab10")
    for i, mode in enumerate(FAILURE_MODES):
        mask = modes == mode
        if mask.any():
            ax.scatter(
                xy[mask, 0], xy[mask, 1], s=14, alpha=0.8, color=cmap(i), label=f"{mode} ({int(mask.sum())})"
            )
    ax.set_title(title or f"ICL example memory: t-SNE of {n} examples (all-MiniLM-L6-v2)")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.legend(loc="best", fontsize=8, title="failure mode")
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png")
    plt.close(fig)
    return out
