"""Remove secrets from text that is stored or shown (error bodies of failed calls)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from allure.urls import redact_urls

REDACTED = "[redacted]"
"""What a removed secret is replaced with."""

_PATTERNS = (
    # an Authorization header value or any bearer token
    re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{6,}"),
    # API keys shaped like OpenAI's and their look-alikes: sk-..., sk-proj-..., rk-...
    re.compile(r"\b(?:sk|rk|pk)-[A-Za-z0-9_-]{8,}"),
    # key=value / "api_key": "value" forms
    re.compile(r"""(?i)\b(api[_-]?key|x-api-key|authorization)(["']?\s*[:=]\s*["']?)[^\s"',}]{6,}"""),
)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every value in ``secrets`` and anything shaped like a bearer token or API key replaced.

    A secret shorter than 4 characters is not searched for (it would match ordinary text). URLs in
    the text lose their ``user:pass@`` part and secret-looking query values (:func:`allure.urls.redact_url`).
    """
    text = redact_urls(text)
    for secret in sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    text = _PATTERNS[0].sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    text = _PATTERNS[1].sub(REDACTED, text)
    return _PATTERNS[2].sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
