"""The embedded evaluator's backend: the OpenAI-compatible client on allure's own llama.cpp server."""

from __future__ import annotations

import asyncio
from typing import Any

from allure.evaluator._openai import OpenAIBackend
from allure.evaluator.local._server import LocalServer


class EmbeddedBackend(OpenAIBackend):
    """An :class:`~allure.evaluator._openai.OpenAIBackend` on a started :class:`LocalServer`, with the
    server's request options (prompt cache, deterministic sampling); :meth:`revive` restarts the
    server on its old port when its process died, so the client's URL stays valid."""

    def __init__(self, server: LocalServer, **options: Any) -> None:
        super().__init__(
            model_name=server.model_name,
            base_url=server.base_url,
            api_key="local",
            extra_body=server.extra_body(),
            **options,
        )
        self.server = server

    async def revive(self) -> bool:
        return await asyncio.to_thread(self.server.revive)
