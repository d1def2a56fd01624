"""Fixtures of the review app tests: a run store with a run paused at review."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from allure.store import RunStore
from tests.tui.review_helpers import make_run


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    """A store with six pending candidates in run ``run-review``."""
    s = make_run(tmp_path, 6)
    yield s
    s.close()
