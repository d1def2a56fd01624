"""Process-wide settings from the environment: the one reader of ``ALLURE_*`` variables.

What belongs to the machine or the person rather than to an audit (who reviews, where models
are cached, how many threads embed) comes from here; an audit is described by its spec alone.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from allure.errors import AllureError


class Settings(BaseSettings):
    """``ALLURE_*`` environment variables (``ALLURE_REVIEWER``, ``ALLURE_MEMORY``, ...)."""

    model_config = SettingsConfigDict(env_prefix="ALLURE_", extra="ignore")

    reviewer: str = ""
    """``ALLURE_REVIEWER``: the name recorded with review decisions (default: the OS user)."""
    memory: str = ""
    """``ALLURE_MEMORY``: the memory location of ``allure memory`` commands (default: the project's)."""
    cache_dir: str = ""
    """``ALLURE_CACHE_DIR``: where joined model files and embeddings are kept (default: ``~/.cache/allure``)."""
    embed_cache: str = ""
    """``ALLURE_EMBED_CACHE``: the folder of embeddings kept by text (default: ``embeddings`` in the cache
    folder; ``off``: none kept, every text embedded by the model)."""
    store_url: str = ""
    """``ALLURE_STORE_URL``: a ``postgresql://`` URL for the run store (default: the project's SQLite file)."""
    embed_threads: int | None = Field(default=None, ge=1)
    """``ALLURE_EMBED_THREADS``: threads that embed a large batch of texts (default: all cores)."""


def load_settings(*, error: type[AllureError] = AllureError) -> Settings:
    """The settings of this process's environment.

    Raises:
        error: A variable holds a value of the wrong kind (e.g. ``ALLURE_EMBED_THREADS=0``).
    """
    try:
        return Settings()
    except ValidationError as exc:
        first = exc.errors()[0]
        name = "ALLURE_" + str(first["loc"][0]).upper()
        raise error(
            f"{name}: {first['msg']} (got {first.get('input')!r})",
            where=f"environment variable {name}",
            fix=f"unset {name}, or correct its value",
        ) from exc


def cache_root(*, error: type[AllureError] = AllureError) -> Path:
    """``$ALLURE_CACHE_DIR``, else ``~/.cache/allure``: the folder of this user's caches."""
    root = load_settings(error=error).cache_dir
    return Path(root).expanduser() if root else Path.home() / ".cache" / "allure"
