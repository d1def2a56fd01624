"""Open the evaluator an audit spec names (starting and stopping the embedded server when needed)."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from allure.config import label_pattern_for, replay_source
from allure.evaluator._options import EvaluatorOptions
from allure.evaluator._runner import Evaluator
from allure.evaluator._tokens import TokenCounter
from allure.labels import label_list
from allure.models import Item, stable_hash
from allure.prompts import PromptSet, load_prompt_set
from allure.store import RunStore

if TYPE_CHECKING:
    from allure.config import AuditSpec
    from allure.evaluator._backend import ChatBackend
    from allure.evaluator.local import LocalServerSettings


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


def _saved_counts(store: RunStore, settings: LocalServerSettings) -> Path:
    """The file of the embedded model's token counts in the project (named after the model file's identity)."""
    from allure.evaluator.local import BUILTIN_MODELS

    builtin = BUILTIN_MODELS.get(settings.model)
    if builtin is not None:
        ident = builtin.sha256
    else:
        path = Path(settings.model)
        st = path.stat() if path.is_file() else None
        ident = f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}" if st else str(path.resolve())
    return store.path.parent / "token-counts" / f"{stable_hash(ident, length=24)}.json"


def warm_http_client(spec: AuditSpec) -> None:
    """Import the HTTP client (aiohttp: about 85 ms of CPU) in a background thread when ``spec``'s
    evaluator is an OpenAI-compatible server, so that it loads while the run prepares (dataset,
    store, graph) and the first pass starts sending at once. Nothing for other kinds: an embedded
    server started lazily may never be asked, and a replay needs no HTTP."""
    name = "aiohttp"
    if spec.evaluator.kind != "openai" or name in sys.modules:
        return

    def load() -> None:
        with contextlib.suppress(Exception):  # a failing import fails again, loudly, where it is used
            importlib.import_module(name)

    threading.Thread(target=load, name="allure-warm-http", daemon=True).start()


@contextmanager
def open_evaluator(
    spec: AuditSpec, store: RunStore, items: list[Item], *, lazy_start: bool = False
) -> Iterator[Evaluator]:
    """Yield an :class:`Evaluator` for ``spec``; the embedded server (``kind = "local"``) lives as long as the block.

    With ``lazy_start`` the embedded server starts on the first call that the run store cannot
    answer, so a pass served entirely from the store never starts it (``evaluator.connected``
    says whether it did).
    """
    ev = spec.evaluator
    prompts = load_prompt_set(ev.prompt).with_context(labels=label_list(spec.label_set), rubric=ev.rubric)
    common = EvaluatorOptions(
        model_name=ev.model,
        params=ev.params(),
        prompts=prompts,
        label_set=spec.label_set,
        label_pattern=label_pattern_for(spec, prompts.assistant),
        synonyms=spec.label_synonyms,
        positive_label=spec.positive_label,
        concurrency=ev.concurrency,
        timeout_s=ev.timeout_s,
        max_retries=ev.max_retries,
        retry_backoff_s=ev.retry_backoff_s,
    )
    # The backends are imported only where one is built: an embedded evaluator started lazily
    # and answered from the run store never imports its HTTP client.
    if ev.kind == "replay":
        from allure.evaluator._replay import ReplayBackend

        outputs = _recorded_outputs(items, prompts)
        options = replace(
            common,
            model_name=replay_source(spec),
            recorded_labels={it.id: it.recorded_label for it in items if it.recorded_label is not None},
            answer_key=lambda item: [item.recorded_label, outputs.get(item.id, "")],
        )
        yield Evaluator(options, store=store, backend=ReplayBackend(outputs))
        return
    if ev.kind == "openai":
        from allure.evaluator._openai import build_openai_backend

        backend = build_openai_backend(
            model=ev.model,
            base_url=ev.base_url,
            api_key_env=ev.api_key_env,
            temperature=ev.temperature,
            max_tokens=ev.max_tokens,
            seed=ev.seed,
            logprobs=ev.logprobs,
            timeout_s=ev.timeout_s,
            max_connections=ev.concurrency,
        )
        budget = ev.max_prompt_tokens
        options = replace(common, secrets=[os.environ.get(ev.api_key_env, "")], max_prompt_tokens=budget)
        counter = TokenCounter(ev.base_url) if budget is not None else None
        yield Evaluator(options, store=store, backend=backend, token_counter=counter)
        return
    from allure.evaluator.local import EmbeddedBackend, LocalServer, LocalServerSettings

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

    # One request per server slot: more in flight could reach the server out of order and
    # break the prefix-cache order the runner sets up.
    options = replace(
        common,
        model_name=settings.alias,
        params={**ev.params(), "model": settings.alias, "deterministic": deterministic},
        concurrency=min(ev.concurrency, ev.local.parallel),
        max_prompt_tokens=ev.max_prompt_tokens or ev.local.ctx_size // ev.local.parallel - ev.max_tokens - 64,
    )
    evaluator: Evaluator | None = None
    try:
        evaluator = Evaluator(
            options,
            store=store,
            backend=None if lazy_start else connect(),
            connect=connect,
            token_counter=TokenCounter(lambda: server.start().root_url, saved=_saved_counts(store, settings)),
        )
        evaluator.server = server
        yield evaluator
    finally:
        if evaluator is not None:
            evaluator.close()
        server.stop()
