"""The episodic memory of approved ICL examples (Chroma), clustered by failure mode.

- :class:`EpisodicMemory`: open a directory or a Chroma server URL; add, get, delete,
  version, retrieve by :class:`RetrievalPolicy`, similar.
- :func:`embed`: all-MiniLM-L6-v2 embeddings from its PyPI package (loaded lazily).
- :func:`build_candidates`, :func:`sample_candidates`: an evaluator's mistakes (a :class:`PassVerdicts`) as candidate ICL examples.
- :func:`cluster_memory`, :func:`cached_clusters`, :func:`tsne_map`: HDBSCAN (or KMeans) clusters vs
  failure modes (cached per content hash); the t-SNE map.
- :func:`export_jsonl`, :func:`import_jsonl`: JSONL round trip.
- :class:`ChromaServer`: start a shared Chroma server process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from allure._lazy import lazy_exports

if TYPE_CHECKING:
    from allure.memory._candidates import PassVerdicts, build_candidates, build_successes, sample_candidates
    from allure.memory._client import (
        CHROMA_DB_FILE,
        DEFAULT_LOCATION,
        LOCATION_FIX,
        is_url,
        location_problem,
        resolve_location,
    )
    from allure.memory._clusters import (
        ClusterMethod,
        ClusterOptions,
        ClusterReport,
        cached_clusters,
        cluster_embeddings,
        cluster_memory,
        hdbscan_min_cluster_size,
        tsne_map,
        tsne_perplexity,
    )
    from allure.memory._collection import DEFAULT_COLLECTION, MemoryVersion, content_hash
    from allure.memory._embed import MiniLMEmbeddingFunction, embed
    from allure.memory._jsonl import export_jsonl, import_jsonl, read_examples_jsonl
    from allure.memory._nearest import nearest_blocks
    from allure.memory._own import own_examples, without_own
    from allure.memory._policy import (
        Balance,
        RetrievalKind,
        RetrievalPolicy,
        prior_quotas,
        select_examples,
        stable_order,
    )
    from allure.memory._server import ChromaServer, free_port
    from allure.memory._sqlite import read_examples_json
    from allure.memory._stats import MemoryStats, memory_stats
    from allure.memory._store import EpisodicMemory

_WHERE = {
    "CHROMA_DB_FILE": "_client",
    "read_examples_json": "_sqlite",
    "DEFAULT_LOCATION": "_client",
    "build_candidates": "_candidates",
    "PassVerdicts": "_candidates",
    "build_successes": "_candidates",
    "nearest_blocks": "_nearest",
    "prior_quotas": "_policy",
    "own_examples": "_own",
    "without_own": "_own",
    "is_url": "_client",
    "LOCATION_FIX": "_client",
    "location_problem": "_client",
    "resolve_location": "_client",
    "sample_candidates": "_candidates",
    "Balance": "_policy",
    "ChromaServer": "_server",
    "ClusterMethod": "_clusters",
    "ClusterOptions": "_clusters",
    "ClusterReport": "_clusters",
    "DEFAULT_COLLECTION": "_collection",
    "EpisodicMemory": "_store",
    "MemoryStats": "_stats",
    "MemoryVersion": "_collection",
    "MiniLMEmbeddingFunction": "_embed",
    "RetrievalKind": "_policy",
    "RetrievalPolicy": "_policy",
    "cached_clusters": "_clusters",
    "cluster_embeddings": "_clusters",
    "cluster_memory": "_clusters",
    "hdbscan_min_cluster_size": "_clusters",
    "content_hash": "_collection",
    "embed": "_embed",
    "export_jsonl": "_jsonl",
    "free_port": "_server",
    "import_jsonl": "_jsonl",
    "memory_stats": "_stats",
    "read_examples_jsonl": "_jsonl",
    "select_examples": "_policy",
    "stable_order": "_policy",
    "tsne_map": "_clusters",
    "tsne_perplexity": "_clusters",
}

__all__ = [
    "CHROMA_DB_FILE",
    "read_examples_json",
    "DEFAULT_COLLECTION",
    "DEFAULT_LOCATION",
    "Balance",
    "ChromaServer",
    "ClusterMethod",
    "ClusterOptions",
    "ClusterReport",
    "EpisodicMemory",
    "MemoryStats",
    "MemoryVersion",
    "MiniLMEmbeddingFunction",
    "RetrievalKind",
    "RetrievalPolicy",
    "PassVerdicts",
    "build_candidates",
    "build_successes",
    "cached_clusters",
    "cluster_embeddings",
    "cluster_memory",
    "content_hash",
    "embed",
    "export_jsonl",
    "free_port",
    "hdbscan_min_cluster_size",
    "import_jsonl",
    "is_url",
    "LOCATION_FIX",
    "location_problem",
    "memory_stats",
    "nearest_blocks",
    "own_examples",
    "prior_quotas",
    "read_examples_jsonl",
    "resolve_location",
    "sample_candidates",
    "select_examples",
    "stable_order",
    "tsne_map",
    "tsne_perplexity",
    "without_own",
]

__getattr__ = lazy_exports(__name__, _WHERE)
