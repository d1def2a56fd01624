"""allure's own backend kinds: ``replay`` (the recorded labels), ``openai`` (any OpenAI-compatible
server) and ``local`` (the embedded llama.cpp server), each with its facts and how it is opened.

The backends themselves (and their HTTP client) are imported only where one is built: an embedded
evaluator started lazily and answered from the run store never imports its HTTP client.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from allure.backends import register_backend
from allure.errors import EvaluatorError, EvaluatorUnavailableError
from allure.evaluator._kind import BackendKind
from allure.urls import redact_url

if TYPE_CHECKING:
    from allure.config import AuditSpec, EvaluatorSpec
    from allure.evaluator._backend import ChatBackend
    from allure.evaluator._options import EvaluatorOptions
    from allure.evaluator._runner import Evaluator
    from allure.evaluator._tokens import TokenCounter
    from allure.evaluator.local import LocalServerSettings
    from allure.models import Item
    from allure.prompts import PromptSet
    from allure.store import RunStore

DEFAULT_PROBE_LIVE = 20
"""The drift probe of a hosted model (``openai``): 20 items asked again fresh per re-audit."""


def _recorded_outputs(items: list[Item], prompts: PromptSet) -> dict[str, str]:
    """Item id -> the recorded output (shown, and parsed when no label is recorded), else the
    recorded label written in the prompt set's answer format."""
    out = {}
    for it in items:
        if it.recorded_output is not None:
            out[it.id] = it.recorded_output
        elif it.recorded_label is not None:
            out[it.id] = prompts.assistant.format(label=it.recorded_label)
    return out


@register_backend("replay")
class ReplayKind(BackendKind):
    """The labels recorded in the dataset (no model)."""

    replay = True
    logprobs = False

    def model_name(self, spec: AuditSpec) -> str:
        return "replay"

    def model_info(self, spec: AuditSpec) -> dict[str, Any]:
        return {"kind": "replay"}

    @contextmanager
    def open(
        self, spec: AuditSpec, store: RunStore, items: list[Item], *, lazy_start: bool = False
    ) -> Iterator[Evaluator]:
        from allure.config import replay_source
        from allure.evaluator._replay import ReplayBackend
        from allure.evaluator._runner import Evaluator

        common = self.options(spec)
        outputs = _recorded_outputs(items, common.prompts)
        options = replace(
            common,
            model_name=replay_source(spec),
            recorded_labels={it.id: it.recorded_label for it in items if it.recorded_label is not None},
            answer_key=lambda item: [item.recorded_label, outputs.get(item.id, "")],
        )
        yield Evaluator(options, store=store, backend=ReplayBackend(outputs))


def server_model_info(
    base_url: str, model: str, api_key_env: str, *, timeout_s: float = 5.0
) -> dict[str, Any]:
    """The ``GET {base_url}/models`` entry of ``model`` (or the list of served ids when it is absent).

    Raises:
        EvaluatorUnavailableError: the server cannot be reached, times out or answers 5xx.
    """
    from allure._http import HttpError, get

    headers = {}
    key = os.environ.get(api_key_env)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    url = base_url.rstrip("/") + "/models"
    try:
        resp = get(url, headers=headers, timeout_s=timeout_s)
    except HttpError as exc:
        raise EvaluatorUnavailableError(
            f"the evaluator server does not answer ({exc.kind})",
            where=f"evaluator.base_url {redact_url(base_url)}",
            fix="start the server (or check the URL); a re-audit needs it to confirm the model",
        ) from exc
    if resp.status_code >= 500:
        raise EvaluatorUnavailableError(
            f"the evaluator server answers HTTP {resp.status_code}",
            where=f"evaluator.base_url {redact_url(base_url)}",
            fix="wait for the server to recover, then re-run",
        )
    if resp.status_code != 200:
        return {"status": resp.status_code}
    try:
        data = resp.json().get("data") or []
    except (ValueError, AttributeError):
        return {"status": 200, "unreadable": True}
    for entry in data:
        if isinstance(entry, dict) and entry.get("id") == model:
            return {k: v for k, v in entry.items() if isinstance(v, str | int | float | bool)}
    return {"served": sorted(str(e.get("id")) for e in data if isinstance(e, dict))}


_SENT = {"model", "base_url", "api_key_env", "temperature", "max_tokens", "seed", "logprobs", "timeout_s"}
"""The ``[evaluator]`` settings an OpenAI-compatible backend is built from (:func:`build_openai_backend`)."""


@register_backend("openai")
class OpenAIKind(BackendKind):
    """Any OpenAI-compatible server (OpenAI, vLLM, llama.cpp, Ollama) by ``base_url``."""

    probe_default = DEFAULT_PROBE_LIVE

    def model_info(self, spec: AuditSpec) -> dict[str, Any]:
        ev = spec.evaluator
        return server_model_info(ev.base_url or "https://api.openai.com/v1", ev.model, ev.api_key_env)

    def identity(self, spec: AuditSpec) -> dict[str, Any]:
        base = spec.evaluator.base_url
        return {"base_url": redact_url(base) if base else base}

    def check(self, spec: AuditSpec) -> None:
        """Without a ``base_url`` (OpenAI itself) the API key must be in the environment."""
        ev = spec.evaluator
        if not ev.base_url and not os.environ.get(ev.api_key_env):
            raise EvaluatorError(
                f"environment variable {ev.api_key_env} is not set",
                where="evaluator.api_key_env",
                fix=f"export {ev.api_key_env}=... or set [evaluator] base_url for a local server",
            )

    def warm(self, spec: AuditSpec) -> None:
        """Import the HTTP client in a background thread, so that it loads while the run prepares
        (dataset, store, graph) and the first pass sends at once: allure's own connections
        (:mod:`allure._http1`), and aiohttp (about 85 ms of CPU) for a server that is not on this
        machine, whose proxy (from the environment) aiohttp looks up and then, if there is one, reaches."""
        from allure._http import is_loopback

        base_url = getattr(spec.evaluator, "base_url", None)
        modules = ["allure._http1"]
        if not is_loopback(urlsplit(base_url).hostname if base_url else None):
            modules.append("aiohttp")

        def load() -> None:
            with contextlib.suppress(Exception):  # a failing import fails again, loudly, where it is used
                for name in modules:
                    importlib.import_module(name)

        threading.Thread(target=load, name="allure-warm-http", daemon=True).start()

    def options(self, spec: AuditSpec) -> EvaluatorOptions:
        """The common options, with the API key to redact and the prompt budget."""
        ev = spec.evaluator
        return replace(
            super().options(spec),
            secrets=[os.environ.get(ev.api_key_env, "")],
            max_prompt_tokens=ev.max_prompt_tokens,
        )

    def chat(self, spec: AuditSpec, items: list[Item]) -> ChatBackend:
        from allure.evaluator._openai import build_openai_backend

        ev = spec.evaluator
        return build_openai_backend(**ev.model_dump(include=_SENT), max_connections=self.concurrency(ev))

    def token_counter(self, spec: AuditSpec, store: RunStore) -> TokenCounter | None:
        """The server's ``/tokenize`` (the estimate where it has none) when a prompt budget is set."""
        from allure.evaluator._tokens import TokenCounter

        ev = spec.evaluator
        return TokenCounter(ev.base_url) if ev.max_prompt_tokens is not None else None


def local_model_info(model: str) -> dict[str, Any]:
    """The embedded model's identity without starting it: the pinned file of a built-in, or a GGUF's size and time."""
    from allure.evaluator.local import BUILTIN_MODELS

    if model in BUILTIN_MODELS:
        b = BUILTIN_MODELS[model]
        return {"builtin": b.name, "file": b.filename, "sha256": b.sha256, "upstream": b.upstream}
    p = Path(model)
    if p.is_file():
        st = p.stat()
        return {"file": p.name, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    return {"file": p.name, "missing": True}


def _saved_counts(store: RunStore, settings: LocalServerSettings) -> Path:
    """The file of the embedded model's token counts in the project (named after the model file's identity)."""
    from allure.evaluator.local import BUILTIN_MODELS
    from allure.models import stable_hash

    builtin = BUILTIN_MODELS.get(settings.model)
    if builtin is not None:
        ident = builtin.sha256
    else:
        path = Path(settings.model)
        st = path.stat() if path.is_file() else None
        ident = f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}" if st else str(path.resolve())
    return store.path.parent / "token-counts" / f"{stable_hash(ident, length=24)}.json"


@register_backend("local")
class LocalKind(BackendKind):
    """The embedded llama.cpp server with a bundled model (the default), started for the ``with``
    block (``lazy_start``: on the first call the run store cannot answer)."""

    def concurrency(self, ev: EvaluatorSpec) -> int:
        # one request per server slot: more in flight could reach the server out of order and
        # break the prefix-cache order the runner sets up
        return min(ev.concurrency, ev.local.parallel)

    def model_name(self, spec: AuditSpec) -> str:
        from allure.evaluator.local import LocalServerSettings

        return LocalServerSettings(model=spec.evaluator.model).alias

    def model_info(self, spec: AuditSpec) -> dict[str, Any]:
        return local_model_info(spec.evaluator.model)

    def identity(self, spec: AuditSpec) -> dict[str, Any]:
        return {"deterministic": spec.evaluator.local.deterministic}

    @contextmanager
    def open(
        self, spec: AuditSpec, store: RunStore, items: list[Item], *, lazy_start: bool = False
    ) -> Iterator[Evaluator]:
        from allure.evaluator._runner import Evaluator
        from allure.evaluator._tokens import TokenCounter
        from allure.evaluator.local import EmbeddedBackend, LocalServer, LocalServerSettings

        ev = spec.evaluator
        settings = LocalServerSettings(
            model=ev.model,
            ctx_size=ev.local.ctx_size,
            threads=ev.local.threads,
            parallel=ev.local.parallel,
            cache_prompt=ev.local.cache_prompt,
            deterministic=ev.local.deterministic,
            seed=ev.seed or 0,
        )
        server = LocalServer(settings)
        deterministic = ev.local.deterministic

        def connect() -> ChatBackend:
            server.start()
            return EmbeddedBackend(
                server,
                temperature=0.0 if deterministic else ev.temperature,
                max_tokens=ev.max_tokens,
                seed=ev.seed if ev.seed is not None else 0,
                logprobs=ev.logprobs,
                timeout_s=ev.timeout_s,
                max_connections=ev.local.parallel,
            )

        options = replace(
            self.options(spec),
            model_name=settings.alias,
            params={**ev.params(), "model": settings.alias, "deterministic": deterministic},
            max_prompt_tokens=ev.max_prompt_tokens
            or ev.local.ctx_size // ev.local.parallel - ev.max_tokens - 64,
        )
        evaluator: Evaluator | None = None
        try:
            evaluator = Evaluator(
                options,
                store=store,
                backend=None if lazy_start else connect(),
                connect=connect,
                token_counter=TokenCounter(
                    lambda: server.start().root_url, saved=_saved_counts(store, settings)
                ),
                server=server,
            )
            yield evaluator
        finally:
            if evaluator is not None:
                evaluator.close()
            server.stop()
