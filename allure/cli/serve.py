"""``allure serve``: run the embedded llama.cpp evaluator on its own until Ctrl-C."""

from __future__ import annotations

import json
import threading
from typing import Annotated

import typer

from allure.cli._common import echo
from allure.evaluator.local import DEFAULT_MODEL, LocalServer, LocalServerSettings


def serve(
    model: Annotated[
        str,
        typer.Option(
            "--model", help="Builtin model name (qwen2.5-coder-1.5b, qwen2.5-0.5b) or a .gguf path."
        ),
    ] = DEFAULT_MODEL,
    ctx_size: Annotated[
        int, typer.Option("--ctx-size", help="KV-cache size in tokens, shared by all slots.")
    ] = 8192,
    threads: Annotated[
        int | None, typer.Option("--threads", help="CPU threads (default: all cores).", min=1)
    ] = None,
    parallel: Annotated[int, typer.Option("--parallel", help="Requests served at once.", min=1)] = 1,
    no_cache_prompt: Annotated[
        bool, typer.Option("--no-cache-prompt", help="Do not re-use the cached prompt prefix.")
    ] = False,
    deterministic: Annotated[
        bool,
        typer.Option("--deterministic", help="Prompt caching off, fixed seed, temperature 0 (reproducible)."),
    ] = False,
) -> None:
    """Serve the embedded evaluator on 127.0.0.1 (OpenAI-compatible) until Ctrl-C."""
    settings = LocalServerSettings(
        model=model,
        ctx_size=ctx_size,
        threads=threads,
        parallel=parallel,
        cache_prompt=not no_cache_prompt,
        deterministic=deterministic,
    )
    echo(f"loading {model} ...", err=True)
    with LocalServer(settings) as server:
        body = {
            "model": server.model_name,
            "messages": [{"role": "user", "content": "Reply with exactly 'score: 1'"}],
            "max_tokens": 8,
            **server.extra_body(),
        }
        echo(f"base_url: {server.base_url}")
        echo(f"model:    {server.model_name}")
        echo("try:")
        echo(
            f"  curl -s {server.base_url}/chat/completions -H 'Content-Type: application/json' "
            f"-d '{json.dumps(body)}'"
        )
        echo(f"server log: {server.log_path}", err=True)
        echo("Ctrl-C stops the server.", err=True)
        try:
            while server.running:
                threading.Event().wait(0.5)
        except KeyboardInterrupt:
            echo("stopping ...", err=True)
            return
        echo("error: the server process exited on its own", err=True)
    raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the ``serve`` command to ``app``."""
    app.command("serve")(serve)
