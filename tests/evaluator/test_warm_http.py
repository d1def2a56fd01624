"""An audit with an OpenAI-compatible evaluator imports its HTTP client in the background while it
prepares: allure's own connections, and aiohttp for a server off this machine (whose proxy it looks
up); other kinds import neither (in a fresh interpreter, since this one has them loaded)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

SCRIPT = """
import sys, threading, types
from allure.evaluator import warm_http_client

def warm(kind, base_url=None):
    warm_http_client(types.SimpleNamespace(evaluator=types.SimpleNamespace(kind=kind, base_url=base_url)))
    for t in threading.enumerate():
        if t.name == "allure-warm-http":
            t.join(60)
    return [kind, "allure._http1" in sys.modules, "aiohttp" in sys.modules, "aiohttp.client" in sys.modules]

print([warm("replay"), warm("local"), warm("openai", "http://127.0.0.1:8000/v1"), warm("openai")])
"""


def test_the_http_client_is_warmed_for_an_openai_evaluator_only() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=True
    )
    expected = [
        ["replay", False, False, False],
        ["local", False, False, False],
        ["openai", True, False, False],  # a server on this machine: allure's connections alone
        ["openai", True, True, True],  # OpenAI's API: aiohttp too, for the proxy
    ]
    assert out.stdout.strip() == str(expected), out.stderr
