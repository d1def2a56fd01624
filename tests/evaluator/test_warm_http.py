"""An audit with an OpenAI-compatible evaluator imports its HTTP client in the background while it
prepares; other kinds never import it (in a fresh interpreter, since this one has it loaded)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

SCRIPT = """
import sys, threading, types
from allure.evaluator import warm_http_client

def warm(kind):
    warm_http_client(types.SimpleNamespace(evaluator=types.SimpleNamespace(kind=kind)))
    for t in threading.enumerate():
        if t.name == "allure-warm-http":
            t.join(60)
    return [kind, "aiohttp" in sys.modules, "aiohttp.client" in sys.modules]

print([warm("replay"), warm("local"), warm("openai")])
"""


def test_the_http_client_is_warmed_for_an_openai_evaluator_only() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=True
    )
    expected = [["replay", False, False], ["local", False, False], ["openai", True, True]]
    assert out.stdout.strip() == str(expected), out.stderr
