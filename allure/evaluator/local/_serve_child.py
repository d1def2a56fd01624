"""The child process that hosts the llama.cpp server (run as ``python .../_serve_child.py CONFIG``).

Protocol with the parent (:class:`allure.evaluator.local.LocalServer`):

* argv[1] is a JSON object of :class:`ChildConfig` fields;
* once the server listens, one line ``{"url": "http://127.0.0.1:PORT"}`` is written to
  the original stdout (C-level output of llama.cpp is sent to stderr instead);
* the child exits as soon as its stdin reaches end-of-file. The parent holds the other
  end of that pipe and never writes to it, so when the parent dies for any reason
  (``SIGKILL`` included) the kernel closes the pipe and the child exits too;
* ``SIGTERM`` and ``SIGINT`` end the child at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
from typing import Any

from pydantic import BaseModel


class ChildConfig(BaseModel):
    """What the parent asks the child to serve."""

    model_path: str
    """Path of the GGUF file."""
    alias: str
    """Model name reported by ``/v1/models`` and accepted in requests."""
    ctx_size: int
    """Total KV-cache size in tokens, shared by all slots."""
    threads: int
    """CPU threads for generation and prompt processing."""
    parallel: int
    """Number of requests served at once (slots)."""
    cache_prompt: bool
    """Whether the server re-uses a cached prompt prefix."""
    seed: int
    """Default sampling seed."""
    temperature: float | None
    """Default sampling temperature; None keeps llama.cpp's default."""
    log_path: str = ""
    """The parent's log file for this server; removed when the parent goes away."""
    port: int = 0
    """Port on 127.0.0.1; 0 picks a free one (a restarted server takes its predecessor's port)."""


def _exit_now(*_: Any) -> None:
    os._exit(0)


def _watch_parent(log_path: str) -> None:
    # Blocks until the parent closes the pipe or dies; then leave at once. A parent that
    # was killed cannot remove the log, so remove it here (a live parent has read it).
    try:
        while sys.stdin.buffer.read(4096):
            pass
    finally:
        if log_path:
            with contextlib.suppress(OSError):
                os.unlink(log_path)
        os._exit(0)


def build_params(cfg: ChildConfig) -> Any:
    """The ``xllamacpp.CommonParams`` for ``cfg`` (bound to 127.0.0.1, a free port)."""
    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = cfg.model_path
    params.model_alias = {cfg.alias}
    params.n_ctx = cfg.ctx_size
    params.n_parallel = cfg.parallel
    params.kv_unified = True
    params.cpuparams.n_threads = cfg.threads
    params.cpuparams_batch.n_threads = cfg.threads
    params.cache_prompt = cfg.cache_prompt
    params.sampling.seed = cfg.seed
    if cfg.temperature is not None:
        params.sampling.temp = cfg.temperature
    params.hostnames = ["127.0.0.1"]
    params.port = cfg.port
    params.ui = False
    return params


def main(argv: list[str]) -> None:
    """Serve until stdin closes or a signal arrives."""
    signal.signal(signal.SIGTERM, _exit_now)
    signal.signal(signal.SIGINT, _exit_now)
    cfg = ChildConfig.model_validate_json(argv[1])
    threading.Thread(target=_watch_parent, args=(cfg.log_path,), name="parent-watchdog", daemon=True).start()
    handshake = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # llama.cpp's own output goes to the log, not into the handshake

    import xllamacpp as xlc

    try:
        server = xlc.Server(build_params(cfg))
    except RuntimeError as exc:  # llama.cpp logged the cause just above
        print(f"llama.cpp server failed to start: {exc}", file=sys.stderr, flush=True)
        os._exit(3)  # not sys.exit: the watchdog thread holds stdin
    handshake.write(json.dumps({"url": server.listening_address}) + "\n")
    handshake.flush()
    threading.Event().wait()


if __name__ == "__main__":
    main(sys.argv)
