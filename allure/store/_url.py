"""Where a project's run store lives: ``[store] url`` in the audit spec, or ``ALLURE_STORE_URL``.

Unset, the store is the project's SQLite file (``.allure/allure.db``), as always. A
``postgresql://`` URL puts the run store and the LangGraph checkpoints on that PostgreSQL database.

The URL is looked up in this order: ``ALLURE_STORE_URL``; the spec's ``[store] url`` (for the
command that reads a spec); the project's pointer file ``.allure/store.toml``, which an audit
started with ``[store] url`` writes so that ``allure resume``, ``allure runs`` and ``allure
review`` of the project find the same database. A password is never stored: the spec kept with
each run and the pointer file hold the URL without it (give it in ``ALLURE_STORE_URL``, in
``PGPASSWORD`` or in ``~/.pgpass``, which libpq reads), and messages show ``user:***@``.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from urllib.parse import SplitResult, urlsplit, urlunsplit

from pydantic import BaseModel, field_serializer, field_validator

from allure.errors import StoreError
from allure.urls import split_url

SCHEMES = ("postgresql", "postgres")
"""URL schemes of a PostgreSQL store."""

STORE_POINTER = Path(".allure") / "store.toml"
"""The project's record of its PostgreSQL store (the URL without password)."""

_SECRET_QUERY = ("password", "passfile", "sslpassword")


def url_problem(url: str) -> str | None:
    """What makes ``url`` unusable as a store URL, or ``None``."""
    parts, problem = split_url(url)
    if parts is None:
        return problem
    if parts.scheme not in SCHEMES:
        shown = f"{parts.scheme}://" if parts.scheme else "a bare name"
        return f"a store URL starts with postgresql:// (SQLite, the default, needs no URL), not {shown}"
    if any(ord(ch) < 0x21 or ord(ch) == 0x7F for ch in url):
        return "the URL holds spaces or control characters"
    return None


def _replace_password(parts: SplitResult, by: str | None) -> str:
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user, sep, _password = userinfo.partition(":")
        netloc = f"{user}:{by}@{host}" if sep and by is not None else f"{user}@{host}"
    query = "&".join(
        part for part in parts.query.split("&") if part and part.split("=", 1)[0].lower() not in _SECRET_QUERY
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def display_url(url: str) -> str:
    """``url`` as shown in messages: ``postgresql://user:***@host/db`` (secret query values dropped)."""
    try:
        return _replace_password(urlsplit(url), "***")
    except ValueError:
        return "postgresql://***"


def url_without_password(url: str) -> str:
    """``url`` with no password in it (what is stored)."""
    try:
        return _replace_password(urlsplit(url), None)
    except ValueError:
        return ""


class StoreSpec(BaseModel):
    """Where the run store lives (``[store]``)."""

    url: str = ""
    """A ``postgresql://user@host:port/db`` URL: the run store and the checkpoints live in that
    PostgreSQL database. Empty (the default): the project's SQLite file ``.allure/allure.db``.
    The run keeps the URL without its password."""

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        v = v.strip()
        if v and (problem := url_problem(v)):
            raise ValueError(f"{problem}: {display_url(v)}")
        return v

    @field_serializer("url")
    def _stored(self, v: str) -> str:
        return url_without_password(v)


def _env_url() -> str:
    from allure.settings import load_settings

    url = load_settings(error=StoreError).store_url.strip()
    if url and (problem := url_problem(url)):
        raise StoreError(
            f"ALLURE_STORE_URL: {problem} ({display_url(url)})",
            where="environment variable ALLURE_STORE_URL",
            fix="set it to postgresql://user@host:port/database, or unset it for the SQLite store",
        )
    return url


def _pointer_url(project_dir: Path) -> str:
    path = project_dir / STORE_POINTER
    if not path.is_file():
        return ""
    try:
        url = str(tomllib.loads(path.read_text(encoding="utf-8")).get("store", {}).get("url", "")).strip()
    except (OSError, ValueError, AttributeError) as exc:  # ValueError: TOML syntax, or not UTF-8
        raise StoreError(
            f"cannot read the project's store pointer ({exc})",
            where=str(path),
            fix='write it as [store] url = "postgresql://user@host:port/db", or delete it for the SQLite store',
        ) from exc
    if url and (problem := url_problem(url)):
        raise StoreError(
            f"{problem} ({display_url(url)})",
            where=f"{path}: [store] url",
            fix="correct the URL, or delete the file for the SQLite store",
        )
    return url


def store_url(project_dir: str | Path = ".", spec_url: str = "") -> str:
    """The PostgreSQL URL of a project's run store, or ``""`` for its SQLite file (see the module docstring)."""
    return _env_url() or spec_url.strip() or _pointer_url(Path(project_dir))


def remember_store_url(project_dir: str | Path, url: str) -> None:
    """Record the project's PostgreSQL store in ``.allure/store.toml`` (without the password)."""
    path = Path(project_dir) / STORE_POINTER
    kept = url_without_password(url)
    text = f"[store]\nurl = {json.dumps(kept)}\n"
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
