"""The registry of evaluator backends: what ``[evaluator] kind = "NAME"`` can name.

A backend kind is a class that states its facts (:class:`BackendFacts`: whether it replays
recorded labels, whether its replies carry logprobs, its provider-drift probe default) and, in
the evaluator layer (:class:`allure.evaluator.BackendKind`), how it is opened from a spec, its
retry rule, concurrency limit and identity for a re-audit's fingerprint. It is registered by name:

- with the decorator ``@register_backend("NAME")`` on the class (a process that imports it);
- by an entry point in the group :data:`ENTRY_POINT_GROUP` of its own package's metadata, e.g. in
  its ``pyproject.toml``: ``[project.entry-points."allure.backends"]`` ``NAME = "module:Class"``.
  The class is loaded the first time a spec names it (a spec that does not costs nothing);
- allure's own (:data:`BUILTIN`) by module path, imported on first use.

This module is at the bottom of the package (the spec's validation asks it whether a kind exists
and whether it is a replay) and imports no backend: the built-in kinds live in ``allure/evaluator/``.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import ClassVar, TypeVar

from allure._registry import register_as
from allure.errors import SpecError, closest_name

ENTRY_POINT_GROUP = "allure.backends"
"""The entry point group a third-party package registers its backend kinds in."""

BUILTIN: dict[str, str] = {
    "local": "allure.evaluator._kinds",
    "openai": "allure.evaluator._kinds",
    "replay": "allure.evaluator._kinds",
}
"""allure's own kinds by the module that registers each (imported the first time the kind is named)."""


class BackendFacts:
    """What the layers below the evaluator may know about a backend kind, as class attributes.

    :class:`allure.evaluator.BackendKind` (which a backend subclasses) adds how it is opened and
    the facts that need the evaluator (retry rule, concurrency, identity).
    """

    name: ClassVar[str] = ""
    """The kind's name in specs (set by :func:`register_backend`)."""
    replay: ClassVar[bool] = False
    """The labels are the dataset's recorded ones, no model answers: never calibrated, never
    probed for drift, no server counted as started."""
    logprobs: ClassVar[bool] = True
    """Its replies can carry token logprobs (label probabilities, calibration)."""
    probe_default: ClassVar[int] = 0
    """The re-audit's provider-drift probe size when ``[reaudit] probe`` is unset (a hosted model
    that can change behind the same name: more than 0)."""


F = TypeVar("F", bound=type[BackendFacts])

_REGISTERED: dict[str, type[BackendFacts]] = {}


def register_backend(name: str) -> Callable[[F], F]:
    """Register the decorated class as the backend kind ``name`` (``[evaluator] kind = "name"``).

    Raises:
        ValueError: ``name`` is empty, or already names another class.
    """

    def decorate(cls: F) -> F:
        return register_as(_REGISTERED, name, cls, what="backend kind")

    return decorate


@functools.cache
def _entry_point_names() -> frozenset[str]:
    """The kinds installed packages declare (read once per process: the spec's validation asks often)."""
    return frozenset(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))


def backend_names() -> list[str]:
    """Every kind a spec may name: the built-in ones, those registered in this process and those
    whose packages declare an entry point (not loaded)."""
    return sorted(set(BUILTIN) | set(_REGISTERED) | _entry_point_names())


def _load(name: str) -> None:
    """Import the module that registers ``name`` (a built-in kind's, or an entry point's)."""
    if name in BUILTIN:
        importlib.import_module(BUILTIN[name])
        return
    for ep in entry_points(group=ENTRY_POINT_GROUP, name=name):
        try:  # a class (registered here when it was not decorated) or a module that registers
            obj = ep.load()
        except Exception as exc:
            raise SpecError(
                f"the backend kind {name!r} cannot be loaded from {ep.value!r} ({type(exc).__name__}: {exc})",
                where="[evaluator] kind",
                fix=f"reinstall the package that declares it (entry point group {ENTRY_POINT_GROUP!r})",
            ) from exc
        if isinstance(obj, type) and issubclass(obj, BackendFacts) and name not in _REGISTERED:
            register_backend(name)(obj)


def unknown_kind(name: str) -> tuple[str, str]:
    """The message and the fix for a kind no backend is registered as (with the closest name)."""
    names = backend_names()
    near = closest_name(name, names)
    hint = f"did you mean {near!r}? " if near else ""
    return (
        f"unknown evaluator kind {name!r}",
        f"{hint}the kinds: {', '.join(names)} (a third-party backend registers more with the "
        f"{ENTRY_POINT_GROUP!r} entry point group)",
    )


def is_replay_kind(name: str) -> bool:
    """Whether ``name`` is a replay kind (``False`` for a kind not registered in this process, e.g.
    a stored report's whose backend package is gone)."""
    try:
        return backend_class(name).replay
    except SpecError:
        return False


def backend_class(name: str) -> type[BackendFacts]:
    """The class registered as ``name``, loaded on first use.

    Raises:
        SpecError: no backend is registered as ``name``.
    """
    found = _REGISTERED.get(name)
    if found is None:
        _load(name)
        found = _REGISTERED.get(name)
    if found is None:
        message, fix = unknown_kind(name)
        raise SpecError(message, where="[evaluator] kind", fix=fix)
    return found
