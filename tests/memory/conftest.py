"""Fixtures for the memory tests: example factories, a tmp_path memory, a real Chroma server."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the test modules import memory_examples

from memory_examples import make_example, mixed_examples  # noqa: E402

from allure.memory import ChromaServer, EpisodicMemory  # noqa: E402
from allure.models import IclExample  # noqa: E402


@pytest.fixture
def example_factory() -> Callable[..., IclExample]:
    """:func:`make_example`."""
    return make_example


@pytest.fixture
def mixed() -> list[IclExample]:
    """:func:`mixed_examples`."""
    return mixed_examples()


@pytest.fixture
def memory(tmp_path: Path) -> EpisodicMemory:
    """An empty embedded memory in ``tmp_path``."""
    return EpisodicMemory.open(str(tmp_path / "memory"))


@pytest.fixture
def chroma_server(tmp_path: Path) -> Iterator[str]:
    """A real ``chroma run`` server on a free 127.0.0.1 port; yields its URL and always stops it."""
    server = ChromaServer(tmp_path / "chroma-server")
    try:
        yield server.start()
    finally:
        server.stop()
