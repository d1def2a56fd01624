"""Open the evaluator an audit spec names (starting and stopping the embedded server when needed)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from allure.config import label_pattern_for, replay_source
from allure.evaluator._runner import Evaluator
from allure.evaluator._tokens import TokenCounter
from allure.labels import label_list
from allure.models import Item, stable_hash
from allure.prompts import PromptSet, load_prompt_set
from allure.store import RunStore

if TYPE_CHECKING:
    from langchain_core.language_models.chat_models import BaseChatModel

    from allure.config import AuditSpec
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
    common = dict(
        prompts=prompts,
        store=store,
        label_set=spec.label_set,
        label_pattern=label_pattern_for(spec, prompts.assistant),
        synonyms=spec.label_synonyms,
        positive_label=spec.positive_label,
        concurrency=ev.concurrency,
        timeout_s=ev.timeout_s,
        max_retries=ev.max_retries,
        retry_backoff_s=ev.retry_backoff_s,
    )
    # The chat models (LangChain, the OpenAI client) are imported only where one is built: an
    # embedded evaluator started lazily and answered from the run store never imports them.
    if ev.kind == "replay":
        from allure.evaluator._chat import ReplayChatModel

        outputs = _recorded_outputs(items, prompts)
        model = ReplayChatModel(recorded=outputs)
        recorded = {it.id: it.recorded_label for it in items if it.recorded_label is not None}
        yield Evaluator(
            chat_model=model,
            model_name=replay_source(spec),
            params=ev.params(),
            replay=True,
            recorded_labels=recorded,
            answer_key=lambda item: [item.recorded_label, outputs.get(item.id, "")],
            **common,  # type: ignore[arg-type]
        )
        return
    if ev.kind == "openai":
        from allure.evaluator._chat import build_openai_model

        chat = build_openai_model(
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
        counter = TokenCounter(ev.base_url) if budget is not None else None
        yield Evaluator(
            chat_model=chat,
            model_name=ev.model,
            params=ev.params(),
            secrets=[os.environ.get(ev.api_key_env, "")],
            max_prompt_tokens=budget,
            token_counter=counter,
            **common,  # type: ignore[arg-type]
        )
        return
    from allure.evaluator.local import LocalServer, LocalServerSettings

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

    def connect() -> BaseChatModel:
        from allure.evaluator._chat import build_openai_model

        server.start()
        return build_openai_model(
            model=server.model_name,
            base_url=server.base_url,
            api_key_env=ev.api_key_env,
            api_key="local",
            temperature=0.0 if deterministic else ev.temperature,
            max_tokens=ev.max_tokens,
            seed=ev.seed if ev.seed is not None else 0,
            logprobs=ev.logprobs,
            timeout_s=ev.timeout_s,
            extra_body=server.extra_body(),
            max_connections=ev.local.parallel,
        )

    params = {**ev.params(), "model": settings.alias, "deterministic": deterministic}
    # One request per server slot: more in flight could reach the server out of order and
    # break the prefix-cache order the runner sets up.
    common["concurrency"] = min(ev.concurrency, ev.local.parallel)
    evaluator: Evaluator | None = None
    budget = ev.max_prompt_tokens or ev.local.ctx_size // ev.local.parallel - ev.max_tokens - 64
    try:
        evaluator = Evaluator(
            chat_model=None if lazy_start else connect(),
            connect=connect,
            model_name=settings.alias,
            params=params,
            revive=server.revive,
            max_prompt_tokens=budget,
            token_counter=TokenCounter(lambda: server.start().root_url, saved=_saved_counts(store, settings)),
            **common,  # type: ignore[arg-type]
        )
        evaluator.server = server
        yield evaluator
    finally:
        if evaluator is not None:
            evaluator.close()
        server.stop()
