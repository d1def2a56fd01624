"""A llama.cpp server (xllamacpp) that allure starts on 127.0.0.1 and always stops again.

The server runs in a child process that allure owns (see ``_serve_child``). A child
rather than the in-process ``xllamacpp.Server`` because a crash inside llama.cpp (a bad
GGUF, out of memory) then cannot take the audit down, and because "stopped" simply
means "the process is gone", which is what the tests check. No orphan is left:

* :meth:`LocalServer.stop` runs from ``with`` exit, ``atexit`` and a ``SIGTERM`` handler,
  so Ctrl-C, an error or ``kill`` of the parent stop the child;
* the child exits when its stdin pipe from the parent closes, which the kernel does
  when the parent is ``SIGKILL``-ed.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

from pydantic import BaseModel, Field

from allure import _http
from allure._service import Service
from allure.errors import EvaluatorError, Terminated
from allure.evaluator.local import _serve_child
from allure.evaluator.local._model_files import BUILTIN_MODELS, DEFAULT_MODEL, ensure_model
from allure.evaluator.local._serve_child import ChildConfig

# Run as a plain script: importing the allure package in the child would add seconds.
_CHILD_SCRIPT = Path(_serve_child.__file__)
_LIVE: set[LocalServer] = set()
_LIVE_LOCK = threading.Lock()
_PREVIOUS_SIGTERM: Any = None


class LocalServerSettings(BaseModel):
    """How to run the embedded llama.cpp server."""

    model: str = DEFAULT_MODEL
    """A builtin model name or a path to a ``.gguf`` file."""
    ctx_size: int = Field(default=8192, ge=256)
    """KV-cache size in tokens, shared by the parallel slots."""
    threads: int | None = Field(default=None, ge=1)
    """CPU threads; None means ``os.cpu_count()``."""
    parallel: int = Field(default=1, ge=1)
    """Requests served at once."""
    cache_prompt: bool = True
    """Re-use the cached prefix of the previous prompt (fast with a stable ICL block)."""
    deterministic: bool = False
    """Prompt caching off, fixed seed, temperature 0: identical outputs across runs."""
    seed: int = 0
    """Sampling seed used when ``deterministic`` is on."""
    startup_timeout_s: float = Field(default=120.0, gt=0)
    """How long to wait for the server to load the model and answer ``/health``."""

    @property
    def alias(self) -> str:
        """The model name the server answers to (the builtin name or the GGUF file's stem)."""
        return self.model if self.model in BUILTIN_MODELS else Path(self.model).stem

    def child_config(self, model_path: Path) -> ChildConfig:
        """The child-process configuration for these settings and a resolved model file."""
        return ChildConfig(
            model_path=str(model_path),
            alias=self.alias,
            ctx_size=self.ctx_size,
            threads=self.threads or os.cpu_count() or 1,
            parallel=self.parallel,
            cache_prompt=self.cache_prompt and not self.deterministic,
            seed=self.seed,
            temperature=0.0 if self.deterministic else None,
        )


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    # Unwind normally (finally blocks, ``with`` exits, atexit) instead of dying on the spot.
    raise Terminated(128 + signum)


def _stop_all() -> None:
    with _LIVE_LOCK:
        servers = list(_LIVE)
    for server in servers:
        server.stop()


atexit.register(_stop_all)


def _track(server: LocalServer, live: bool) -> None:
    global _PREVIOUS_SIGTERM
    with _LIVE_LOCK:
        (_LIVE.add if live else _LIVE.discard)(server)
        count = len(_LIVE)
    if threading.current_thread() is not threading.main_thread():
        return
    if live and count == 1 and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        _PREVIOUS_SIGTERM = signal.signal(signal.SIGTERM, _on_sigterm)
    elif not live and count == 0 and _PREVIOUS_SIGTERM is not None:
        signal.signal(signal.SIGTERM, _PREVIOUS_SIGTERM)
        _PREVIOUS_SIGTERM = None


class LocalServer(Service["LocalServer"]):
    """The embedded evaluator's llama.cpp server, used as a context manager.

    Example:
        >>> with LocalServer(LocalServerSettings(model="qwen2.5-0.5b")) as srv:  # doctest: +SKIP
        ...     backend = EmbeddedBackend(srv, max_tokens=8)  # any OpenAI-compatible client works too
    """

    def __init__(self, settings: LocalServerSettings | None = None) -> None:
        self.settings = settings or LocalServerSettings()
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_path: Path | None = None
        self._url: str | None = None
        self._config: ChildConfig | None = None
        self._port = 0
        self._revive_lock = threading.Lock()
        self.restarts = 0
        """How often :meth:`revive` restarted a server process that had died."""
        self.started = False
        """Whether :meth:`start` ever launched the server process (to answer calls or count tokens)."""

    @property
    def running(self) -> bool:
        """Whether the child process is alive."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        """Process id of the server process, None before start."""
        return self._proc.pid if self._proc is not None else None

    @property
    def log_path(self) -> Path | None:
        """The server's log file (llama.cpp's output) while it runs; removed on stop."""
        return self._log_path

    @property
    def base_url(self) -> str:
        """OpenAI-compatible base URL, e.g. ``http://127.0.0.1:PORT/v1``."""
        return self._require_url() + "/v1"

    @property
    def root_url(self) -> str:
        """The server's root URL (``/health``, ``/metrics`` live there)."""
        return self._require_url()

    @property
    def model_name(self) -> str:
        """Model name to send in requests (the builtin name or the GGUF file's stem)."""
        if self._config is None:
            raise EvaluatorError("the local server has not been started", fix="call start() or use `with`")
        return self._config.alias

    def extra_body(self) -> dict[str, Any]:
        """Fields to add to every chat request (an OpenAI client's ``extra_body``)."""
        if self.settings.deterministic:
            return {"cache_prompt": False, "seed": self.settings.seed, "temperature": 0.0}
        return {"cache_prompt": self.settings.cache_prompt}

    def start(self) -> LocalServer:
        """Resolve the model, start the server process and wait until it answers.

        Raises:
            ModelFilesError: The model cannot be found or is corrupt.
            EvaluatorError: The server did not come up within ``startup_timeout_s``.
        """
        if self.running:
            return self
        model_path = ensure_model(self.settings.model)
        fd, log_name = tempfile.mkstemp(prefix="allure-llama-", suffix=".log")
        self._log_path = Path(log_name)
        self._config = self.settings.child_config(model_path).model_copy(
            update={"log_path": log_name, "port": self._port}
        )
        _track(self, True)
        self.started = True
        try:
            with os.fdopen(fd, "wb") as log:
                self._proc = subprocess.Popen(
                    [sys.executable, str(_CHILD_SCRIPT), self._config.model_dump_json()],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    start_new_session=True,
                )
            self._url = self._await_url()
            self._await_health()
        except BaseException:
            self.stop()
            raise
        return self

    max_restarts = 3
    """How many times :meth:`revive` restarts a dead server before it gives up."""

    def revive(self) -> bool:
        """Restart the server on its old port if its process died (a crash, OOM, a kill) mid-run.

        Called by the evaluator when a request cannot connect. Returns whether it restarted
        the server; a live server, one never started, or one past :attr:`max_restarts` is
        left as it is (False).
        """
        with self._revive_lock:
            if self.running:
                return False
            if self._url is None or self.restarts >= self.max_restarts:
                return False
            self._port = int(self._url.rsplit(":", 1)[1])
            self.stop()
            self.restarts += 1
            try:
                self.start()
            except EvaluatorError:
                return False
            return True

    def stop(self) -> None:
        """Stop the server process and wait for it; safe to call twice."""
        proc, self._proc = self._proc, None
        if proc is not None:
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    pipe.close()
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        if self._log_path is not None:
            self._log_path.unlink(missing_ok=True)
            self._log_path = None
        self._url = None
        _track(self, False)

    def _require_url(self) -> str:
        if self._url is None:
            raise EvaluatorError("the local server is not running", fix="call start() or use `with`")
        return self._url

    def _failure(self, what: str) -> EvaluatorError:
        tail = ""
        if self._log_path is not None and self._log_path.exists():
            lines = self._log_path.read_text(encoding="utf-8", errors="replace").splitlines()
            tail = "\n    ".join(lines[-15:])
        return EvaluatorError(
            f"{what}; last server log lines:\n    {tail}",
            where=f"local server (model {self.settings.model!r})",
            fix="check the model file, or raise ctx_size/startup_timeout_s; run `allure serve` to see the full log",
        )

    def _await_url(self) -> str:
        assert self._proc is not None and self._proc.stdout is not None
        lines: queue.Queue[bytes] = queue.Queue()
        stdout = self._proc.stdout
        threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
        try:
            line = lines.get(timeout=self.settings.startup_timeout_s)
        except queue.Empty:
            raise self._failure(f"no answer within {self.settings.startup_timeout_s:.0f} s") from None
        if not line:
            raise self._failure(f"the server process exited with status {self._proc.wait()}")
        return str(json.loads(line)["url"]).rstrip("/")

    def _await_health(self) -> None:
        deadline = time.monotonic() + self.settings.startup_timeout_s
        url = self._require_url() + "/health"
        while time.monotonic() < deadline:
            if not self.running:
                raise self._failure("the server process exited during start-up")
            try:
                if _http.get(url, timeout_s=2.0).status_code == 200:
                    return
            except _http.HttpError:
                pass
            time.sleep(0.1)
        raise self._failure(f"/health did not answer 200 within {self.settings.startup_timeout_s:.0f} s")
