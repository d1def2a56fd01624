"""Embedding clusters of the memory, checked against the rule-based failure modes.

By default HDBSCAN over the stored all-MiniLM-L6-v2 embeddings (unit-norm rows, Euclidean
distance, ``min_cluster_size = max(5, n / 100)``, ``min_samples = 3``): it finds as many dense
groups as the data holds and leaves outliers unclustered (label ``-1``, "noise"), which matches
the separate groups a t-SNE map of the memory shows. KMeans with the number of clusters chosen by
silhouette (or fixed) remains available; it is also the fallback when HDBSCAN finds fewer than two
clusters (small memories). Clusters are compared with the failure-mode labels by the adjusted Rand
index and normalised mutual information (noise counted as one more label), and described by their
make-up in failure modes and problem types. The t-SNE map (ALLURE, Fig. 5) is drawn coloured by
failure mode and by cluster.
"""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path
from typing import Literal, NamedTuple, TypedDict, Unpack

import numpy as np
from pydantic import BaseModel

from allure._io import atomic_write_bytes
from allure.errors import MemoryStoreError, OutputError
from allure.memory._collection import content_hash
from allure.memory._store import EpisodicMemory
from allure.models import FAILURE_MODES, stable_hash, utcnow

ClusterMethod = Literal["hdbscan", "kmeans"]
"""``hdbscan``: density clusters, as many as the data holds, outliers left as noise; ``kmeans``: a
partition into k clusters, k chosen by silhouette (or fixed)."""


class ClusterReport(BaseModel):
    """Embedding clusters of the memory and their agreement with the failure modes."""

    n_clusters: int
    """Number of clusters found (noise not counted; 0 when the memory is too small to cluster)."""
    chosen_by: str
    """``hdbscan``, ``silhouette`` (KMeans, best over a range), ``fixed`` (KMeans, given k), or ``too_small``."""
    min_cluster_size: int | None = None
    """HDBSCAN's smallest cluster (``None`` for KMeans)."""
    noise: int = 0
    """Examples HDBSCAN left in no cluster (label ``-1``)."""
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
    """Cluster -> failure mode -> count (``-1``: noise)."""
    problem_types_by_cluster: dict[int, dict[str, int]] = {}
    """Cluster -> problem type -> count (``-1``: noise)."""
    content_hash: str = ""
    """The content hash of the memory that was clustered (``""`` for bare embeddings)."""
    computed_at: str = ""
    """When the clusters were computed (UTC, ISO 8601; ``""`` for bare embeddings)."""
    cached: bool = False
    """True when this report was read from the cluster cache rather than computed now."""


def hdbscan_min_cluster_size(n: int) -> int:
    """HDBSCAN's smallest cluster for ``n`` examples: 1% of them, at least 5."""
    return max(5, round(n / 100))


def cluster_embeddings(
    ids: list[str],
    embeddings: np.ndarray,
    modes: list[str],
    *,
    problem_types: list[str] | None = None,
    method: ClusterMethod = "hdbscan",
    n_clusters: int | None = None,
    k_range: tuple[int, int] = (2, 10),
    min_cluster_size: int | None = None,
    random_state: int = 0,
) -> ClusterReport:
    """Cluster ``embeddings`` and compare with ``modes``.

    Args:
        ids: One id per row.
        embeddings: Unit-norm rows (Euclidean distance on them ranks like cosine).
        modes: The failure mode of each row.
        problem_types: The problem type of each row (for the clusters' make-up).
        method: ``hdbscan`` (default) or ``kmeans``; a fixed ``n_clusters`` implies KMeans.
        n_clusters: A fixed number of KMeans clusters; ``None`` picks the best silhouette in ``k_range``.
        k_range: Inclusive range of KMeans cluster counts to try.
        min_cluster_size: HDBSCAN's smallest cluster (default :func:`hdbscan_min_cluster_size`).
        random_state: Seed of KMeans.
    """
    from sklearn.cluster import HDBSCAN
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

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

    mcs = None
    labels = np.zeros(0, dtype=int)
    if method == "hdbscan" and n_clusters is None:
        mcs = min_cluster_size or hdbscan_min_cluster_size(n)
        labels = np.asarray(
            HDBSCAN(min_cluster_size=mcs, min_samples=min(3, mcs), copy=True).fit_predict(embeddings)
        )
    if len(set(labels.tolist()) - {-1}) >= 2:
        fit = _hdbscan_fit(embeddings, labels)
    elif n_clusters is None:
        fit = _best_kmeans(embeddings, k_range, distinct, random_state)
    else:
        fit = _fixed_kmeans(embeddings, n_clusters, random_state)
    labels = fit.labels
    table, ptable = _make_up(labels, modes, problem_types)
    return ClusterReport(
        n_clusters=fit.k,
        chosen_by=fit.chosen_by,
        min_cluster_size=mcs if fit.chosen_by == "hdbscan" else None,
        noise=int((labels < 0).sum()),
        silhouette=fit.silhouette,
        silhouette_by_k=fit.scores,
        ari=float(adjusted_rand_score(modes, labels)),
        nmi=float(normalized_mutual_info_score(modes, labels)),
        labels={i: int(lab) for i, lab in zip(ids, labels.tolist(), strict=True)},
        modes_by_cluster=table,
        problem_types_by_cluster=ptable if problem_types is not None else {},
    )


class _Fit(NamedTuple):
    """One clustering: its cluster count, how it was chosen, the labels and the silhouettes."""

    k: int
    chosen_by: str
    labels: np.ndarray
    silhouette: float | None
    scores: dict[int, float]
    """Silhouette per cluster count tried."""


def _kmeans(embeddings: np.ndarray, k: int, random_state: int) -> np.ndarray:
    from sklearn.cluster import KMeans

    return np.asarray(KMeans(n_clusters=k, n_init=4, random_state=random_state).fit_predict(embeddings))


def _hdbscan_fit(embeddings: np.ndarray, labels: np.ndarray) -> _Fit:
    """HDBSCAN's clusters (at least two), the silhouette over the clustered points (noise left out)."""
    from sklearn.metrics import silhouette_score

    found = len(set(labels.tolist()) - {-1})
    inside = labels >= 0
    sil = (
        float(silhouette_score(embeddings[inside], labels[inside], metric="cosine"))
        if 2 <= found < int(inside.sum())
        else None
    )
    return _Fit(found, "hdbscan", labels, sil, {found: sil} if sil is not None else {})


def _best_kmeans(embeddings: np.ndarray, k_range: tuple[int, int], distinct: int, random_state: int) -> _Fit:
    """KMeans with the best cosine silhouette over the cluster counts in ``k_range``."""
    from sklearn.metrics import silhouette_score

    lo, hi = max(2, k_range[0]), min(k_range[1], distinct - 1)
    scores: dict[int, float] = {}
    best: tuple[float, int, np.ndarray] | None = None
    for k in range(lo, max(lo, hi) + 1):
        labels = _kmeans(embeddings, k, random_state)
        if len(set(labels.tolist())) < 2:
            continue
        scores[k] = float(silhouette_score(embeddings, labels, metric="cosine"))
        if best is None or scores[k] > best[0]:
            best = (scores[k], k, labels)
    if best is None:  # pragma: no cover - distinct >= 3 always yields two clusters
        raise MemoryStoreError("KMeans found no usable clustering", where="memory", fix="add more examples")
    sil, k_used, labels = best
    return _Fit(k_used, "silhouette", labels, sil, scores)


def _fixed_kmeans(embeddings: np.ndarray, n_clusters: int, random_state: int) -> _Fit:
    """KMeans with ``n_clusters`` clusters (silhouette NaN when it is undefined)."""
    from sklearn.metrics import silhouette_score

    labels = _kmeans(embeddings, n_clusters, random_state)
    sil = (
        float(silhouette_score(embeddings, labels, metric="cosine"))
        if 2 <= len(set(labels.tolist())) <= len(embeddings) - 1
        else float("nan")
    )
    return _Fit(n_clusters, "fixed", labels, sil, {n_clusters: sil})


def _make_up(
    labels: np.ndarray, modes: list[str], problem_types: list[str] | None
) -> tuple[dict[int, dict[str, int]], dict[int, dict[str, int]]]:
    """Cluster -> failure mode -> examples, and cluster -> problem type -> examples."""
    table: dict[int, dict[str, int]] = {}
    ptable: dict[int, dict[str, int]] = {}
    for lab, mode, ptype in zip(labels.tolist(), modes, problem_types or [""] * len(labels), strict=True):
        table.setdefault(int(lab), {}).setdefault(mode, 0)
        table[int(lab)][mode] += 1
        ptable.setdefault(int(lab), {}).setdefault(ptype, 0)
        ptable[int(lab)][ptype] += 1
    return dict(sorted(table.items())), dict(sorted(ptable.items()))


class ClusterOptions(TypedDict, total=False):
    """The keyword options of :func:`cluster_embeddings` (see there for their meaning and defaults)."""

    method: ClusterMethod
    n_clusters: int | None
    k_range: tuple[int, int]
    min_cluster_size: int | None
    random_state: int


CACHE_DIR = "allure-clusters"
"""Folder inside a local memory's directory that holds its cached cluster reports."""
CACHE_KEEP = 8
"""Cached reports kept per memory (the most recent; older ones are removed when one is written)."""


def _cache_file(memory: EpisodicMemory, content: str, options: ClusterOptions) -> Path | None:
    """Where the report for ``content`` and ``options`` is cached (``None`` for a memory on a server)."""
    if memory.is_remote:
        return None
    o = options
    params = {
        "algorithm": 1,  # bump when cluster_embeddings changes: older cached reports are then ignored
        "method": "kmeans" if o.get("n_clusters") is not None else o.get("method", "hdbscan"),
        "n_clusters": o.get("n_clusters"),
        "k_range": list(o.get("k_range", (2, 10))),
        "min_cluster_size": o.get("min_cluster_size"),
        "random_state": o.get("random_state", 0),
    }
    key = stable_hash(content, memory.collection_name, params, length=24)
    return Path(memory.location) / CACHE_DIR / f"{key}.json"


def cached_clusters(
    memory: EpisodicMemory, *, content: str | None = None, **options: Unpack[ClusterOptions]
) -> ClusterReport | None:
    """The cached :func:`cluster_memory` report for the memory's current content and these
    ``options``, or ``None`` when there is none (reads the examples, not the embeddings).

    ``content`` is the memory's content hash when the caller has just computed it.
    """
    path = _cache_file(memory, content or content_hash(memory.refresh()), options)
    if path is None or not path.is_file():
        return None
    try:
        report = ClusterReport.model_validate_json(path.read_bytes())
    except (OSError, ValueError):  # an unreadable or foreign cache file: compute again
        return None
    return report.model_copy(update={"cached": True})


def cluster_memory(
    memory: EpisodicMemory, *, use_cache: bool = True, **options: Unpack[ClusterOptions]
) -> ClusterReport:
    """:func:`cluster_embeddings` over the memory's stored embeddings, with its keyword ``options``.

    The report of a local memory is cached in its directory (:data:`CACHE_DIR`), keyed by the
    memory's content hash and the options: an unchanged memory is clustered once, and any
    change to its examples computes the clusters again. ``use_cache=False`` always computes
    (and refreshes the cache).
    """
    if use_cache:
        hit = cached_clusters(memory, **options)
        if hit is not None:
            return hit
    examples, matrix = memory.embeddings()
    content = content_hash(examples)  # of what is clustered (the memory may have changed meanwhile)
    path = _cache_file(memory, content, options)
    report = cluster_embeddings(
        [ex.id for ex in examples],
        matrix,
        [ex.failure_mode for ex in examples],
        problem_types=[ex.problem_type for ex in examples],
        **options,
    ).model_copy(update={"content_hash": content, "computed_at": utcnow()})
    if path is not None:
        # a read-only memory folder: the report is right, only not cached
        with suppress(OSError, OutputError):
            atomic_write_bytes(path, report.model_dump_json().encode("utf-8"))
            older = sorted(path.parent.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
            for stale in older[CACHE_KEEP:]:  # reports of earlier contents and parameters
                stale.unlink(missing_ok=True)
    return report


def tsne_perplexity(n: int) -> float:
    """Perplexity for ``n`` points: 30 (scikit-learn's default) capped at (n - 1) / 3, at least 1."""
    return float(max(1.0, min(30.0, (n - 1) / 3)))


def tsne_map(memory: EpisodicMemory, path: Path, *, random_state: int = 0, title: str | None = None) -> Path:
    """Write a PNG of the memory's 2-D t-SNE, coloured by failure mode (ALLURE, Fig. 5) and by cluster.

    Two panels side by side: the points coloured by failure mode, and the same points coloured by
    their :func:`cluster_memory` cluster (noise in light grey), each cluster labelled at its centre.

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
    report = cluster_embeddings(
        [ex.id for ex in examples], matrix, [ex.failure_mode for ex in examples], random_state=random_state
    )
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(14, 6.5), dpi=120)
    modes = np.array([ex.failure_mode for ex in examples])
    cmap = plt.get_cmap("tab10")
    for i, mode in enumerate(FAILURE_MODES):
        mask = modes == mode
        if mask.any():
            ax.scatter(
                xy[mask, 0], xy[mask, 1], s=14, alpha=0.8, color=cmap(i), label=f"{mode} ({int(mask.sum())})"
            )
    ax.set_title("by failure mode")
    ax.legend(loc="best", fontsize=8, title="failure mode")
    labels = np.array([report.labels.get(ex.id, -1) for ex in examples])
    many = plt.get_cmap("tab20")
    noise = labels < 0
    if noise.any():
        bx.scatter(
            xy[noise, 0], xy[noise, 1], s=8, alpha=0.5, color="lightgrey", label=f"noise ({int(noise.sum())})"
        )
    for c in sorted(set(labels[~noise].tolist())):
        mask = labels == c
        bx.scatter(xy[mask, 0], xy[mask, 1], s=14, alpha=0.85, color=many(c % 20))
        cx, cy = np.median(xy[mask], axis=0)
        bx.annotate(f"c{c}", (cx, cy), fontsize=8, weight="bold", ha="center")
    bx.set_title(f"by embedding cluster ({report.n_clusters}, {report.chosen_by})")
    if noise.any():
        bx.legend(loc="best", fontsize=8)
    for a in (ax, bx):
        a.set_xticks([])
        a.set_yticks([])
    fig.suptitle(title or f"ICL example memory: t-SNE of {n} examples (all-MiniLM-L6-v2)")
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png")
    plt.close(fig)
    return out
