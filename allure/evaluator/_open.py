"""Open the evaluator an audit spec names: its backend kind (:mod:`allure.backends`) opens it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from allure.evaluator._kind import backend_kind
from allure.evaluator._runner import Evaluator

if TYPE_CHECKING:
    from allure.config import AuditSpec
    from allure.models import Item
    from allure.store import RunStore


def warm_http_client(spec: AuditSpec) -> None:
    """Let ``spec``'s backend kind start loading what its first call needs while the run prepares
    (an OpenAI-compatible server: its HTTP client). Nothing for other kinds: an embedded server
    started lazily may never be asked, and a replay needs no HTTP."""
    backend_kind(spec.evaluator.kind).warm(spec)


@contextmanager
def open_evaluator(
    spec: AuditSpec, store: RunStore, items: list[Item], *, lazy_start: bool = False
) -> Iterator[Evaluator]:
    """Yield an :class:`Evaluator` for ``spec``, opened by its backend kind; a server the kind
    starts (the embedded one, ``kind = "local"``) lives as long as the block.

    With ``lazy_start`` the embedded server starts on the first call that the run store cannot
    answer, so a pass served entirely from the store never starts it (``evaluator.server_started``
    says whether it did).
    """
    with backend_kind(spec.evaluator.kind).open(spec, store, items, lazy_start=lazy_start) as evaluator:
        yield evaluator
