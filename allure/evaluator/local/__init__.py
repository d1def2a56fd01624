"""The embedded evaluator: a llama.cpp server on 127.0.0.1 with a model shipped on PyPI."""

from allure.evaluator.local._backend import EmbeddedBackend
from allure.evaluator.local._model_files import (
    BUILTIN_MODELS,
    DEFAULT_MODEL,
    BuiltinModel,
    default_cache_dir,
    ensure_model,
)
from allure.evaluator.local._server import LocalServer, LocalServerSettings

__all__ = [
    "BUILTIN_MODELS",
    "DEFAULT_MODEL",
    "BuiltinModel",
    "EmbeddedBackend",
    "LocalServer",
    "LocalServerSettings",
    "default_cache_dir",
    "ensure_model",
]
