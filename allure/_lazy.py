"""Lazy re-exports for package ``__init__`` modules (keeps ``allure --help`` fast)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, where: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``package.<where[name]>`` on first use of ``name``
    (``where[name]`` may also name a module in full: ``allure._http``)."""

    def __getattr__(name: str) -> Any:
        if name in where:
            module = where[name]
            return getattr(importlib.import_module(module if "." in module else f"{package}.{module}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
