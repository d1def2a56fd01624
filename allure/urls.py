"""URLs from users: checked before any work starts, and shown or stored without their secrets.

- :func:`url_problem`: what is wrong with a URL allure is to call (not http/https, no host,
  a malformed IPv6 address), or ``None``;
- :func:`redact_url`: the URL with ``user:pass@`` and secret-looking query values replaced;
- :func:`redact_urls`: the same for every URL inside a text (an error body, a summary).
"""

from __future__ import annotations

import re
from urllib.parse import SplitResult, urlsplit, urlunsplit

REDACTED = "[redacted]"
"""What a removed secret is replaced with (the same word as :mod:`allure.evaluator`'s redaction)."""

_SECRET_PARAM = re.compile(r"(?i)(key|token|secret|passw|pwd|auth|sig|credential)")
"""Query parameter names whose values are secrets (``?key=``, ``?api_key=``, ``?token=``, ``?sig=``)."""

_URL_IN_TEXT = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s\"'<>`]+")


def split_url(url: str) -> tuple[SplitResult | None, str]:
    """``url``'s parts, or ``None`` and why it cannot be parsed (a bad port included)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        return None, f"not a valid URL ({exc})"
    return parts, ""


def url_problem(url: str) -> str | None:
    """What makes ``url`` unusable as an http(s) endpoint, in words; ``None`` when it is fine."""
    parts, problem = split_url(url)
    if parts is None:
        return problem
    if parts.scheme not in ("http", "https"):
        return f"only http:// and https:// URLs are allowed, not {parts.scheme + '://' if parts.scheme else 'a bare name'}"
    if not parts.hostname:
        return "the URL names no host"
    if any(ord(ch) < 0x21 or ord(ch) == 0x7F for ch in url):
        return "the URL holds spaces or control characters"
    return None


def redact_url(url: str) -> str:
    """``url`` with its ``user:pass@`` part and secret-looking query values replaced by ``[redacted]``.

    >>> redact_url("https://bob:hunter2@api.example/v1?key=abc&mode=x")
    'https://[redacted]@api.example/v1?key=[redacted]&mode=x'
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return re.sub(r"//[^/@\s]*@", f"//{REDACTED}@", url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
    query = parts.query
    if query:
        parts_q = [
            f"{part.split('=', 1)[0]}={REDACTED}" if _SECRET_PARAM.search(part.split("=", 1)[0]) else part
            for part in query.split("&")
        ]
        query = "&".join(parts_q)
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_urls(text: str) -> str:
    """``text`` with every URL in it passed through :func:`redact_url`."""
    if "://" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda m: redact_url(m.group()), text)
