"""A service (a server process) used as a context manager: ``with svc as x`` is ``x = svc.start()``,
then ``svc.stop()`` on the way out, whatever happened inside."""

from __future__ import annotations

from types import TracebackType
from typing import Generic, TypeVar

_T = TypeVar("_T")


class Service(Generic[_T]):
    """Something started and stopped; ``start()`` returns what the ``with`` block gets (``_T``)."""

    def start(self) -> _T:
        """Start the service; return what the ``with`` block is given."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop the service (a no-op when it is not running)."""
        raise NotImplementedError

    def __enter__(self) -> _T:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
