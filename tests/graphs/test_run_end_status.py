"""How a run that ends by an exception is recorded: stopped from outside (Ctrl-C, SIGTERM) is
interrupted and resumable; an error is failed."""

from __future__ import annotations

import signal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from allure.errors import Terminated
from allure.evaluator.local._server import _on_sigterm
from allure.graphs.runner import _drive
from allure.store import RunStore


class _Raising:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def invoke(self, *_args: Any, **_kwargs: Any) -> Any:
        raise self.exc


def _sigterm() -> BaseException:
    try:
        _on_sigterm(signal.SIGTERM, None)  # the embedded server's handler: unwind, do not die on the spot
    except Terminated as exc:
        return exc
    raise AssertionError("the SIGTERM handler returned")


@pytest.mark.parametrize(
    ("exc", "status"),
    [
        (_sigterm(), "interrupted"),
        (KeyboardInterrupt(), "interrupted"),
        (SystemExit(1), "failed"),
        (RuntimeError("boom"), "failed"),
    ],
    ids=["sigterm", "ctrl-c", "exit", "error"],
)
def test_a_run_stopped_from_outside_is_interrupted_an_error_failed(
    tmp_path: Path, exc: BaseException, status: str
) -> None:
    store = RunStore(tmp_path / "allure.db")
    run_id = store.create_run({})
    ctx = SimpleNamespace(
        store=store, spec=SimpleNamespace(evaluator=SimpleNamespace(api_key_env="NO_SUCH_KEY"))
    )
    with pytest.raises(type(exc)):
        _drive(_Raising(exc), {}, run_id, ctx)  # type: ignore[arg-type]
    run = store.get_run(run_id)
    assert run.status == status
    assert (run.info or {})["error"].startswith(type(exc).__name__)


def test_the_sigterm_exit_code_is_the_shells() -> None:
    exc = _sigterm()
    assert isinstance(exc, SystemExit) and exc.code == 128 + signal.SIGTERM
