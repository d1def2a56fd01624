"""The registry of calibration modes: what ``[evaluator] calibration = "NAME"`` can name.

A calibration mode is a class (:class:`allure.passes.Calibrator`, a subclass of
:class:`CalibratorFacts`) registered by name with ``@register_calibration("NAME")``: it fits its
values on a pass (a JSON-able dict: what the pass stores and an exported judge carries) and gives
the verdicts' labels from them. Two names around the modes are the spec's own: ``none`` (the
parsed labels) and ``auto`` (every registered mode tried in :func:`mode_names`' order, the one
shown better than ``none`` on the decision data kept: :func:`allure.passes.calibrate_pass`).

This module is at the bottom of the package (the spec's validation asks it which names exist,
``auto`` the order it tries them in) and imports no mode: allure's own (:data:`BUILTIN`) are
registered by the same decorator in ``allure/passes/_calibrate_modes.py``, imported on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import ClassVar, TypeVar

from allure._registry import register_as
from allure.errors import SpecError, closest_name

NONE = "none"
"""The parsed labels, as they are (``auto``'s baseline)."""
AUTO = "auto"
"""Every registered mode tried on the decision data, the best one shown better than ``none`` kept."""


class CalibratorFacts:
    """What the layers below the pass pipeline may know about a calibration mode, as class attributes;
    :class:`allure.passes.Calibrator` adds how it fits and labels."""

    name: ClassVar[str] = ""
    """The mode's name in specs (set by :func:`register_calibration`)."""
    reads_p_cf: ClassVar[bool] = False
    """Labels from ``p_cf``, the content-free mean of the item's ICL block: the pass sends 3
    content-free calls per block first, and stores (an exported judge carries) ``p_cf`` per block."""
    reads_shares: ClassVar[bool] = False
    """Fitted on the audit split's reference label shares outside dev (the pass's plan computes them)."""
    reads_references: ClassVar[bool] = False
    """Fitted on the audit items' reference labels outside dev. With :attr:`reads_shares`, ``auto``
    cross-fitted scores the mode as fitted on the other folds."""
    keys: ClassVar[tuple[str, ...]] = ()
    """The names of the values it fits (beside ``p_cf``), each JSON-able: what the pass stores with
    itself (:class:`allure.metrics.CalibrationValues`) and an exported judge carries. Names no other
    mode uses."""
    formula: ClassVar[str] = ""
    """What it does to a reply, in words, for a judge exported as plain chat messages."""


F = TypeVar("F", bound=type[CalibratorFacts])

BUILTIN: dict[str, str] = {
    "contextual": "allure.passes._calibrate_modes",
    "prior": "allure.passes._calibrate_modes",
    "offset": "allure.passes._calibrate_modes",
}
"""allure's own modes by the module that registers each, in ``auto``'s order (simplest first)."""


_REGISTERED: dict[str, type[CalibratorFacts]] = {}


def register_calibration(name: str) -> Callable[[F], F]:
    """Register the decorated class as the calibration mode ``name`` (``[evaluator] calibration = "name"``).

    Raises:
        ValueError: ``name`` is empty, ``none`` or ``auto``, or already names another class.
    """

    def decorate(cls: F) -> F:
        return register_as(_REGISTERED, name, cls, what="calibration mode", reserved=(NONE, AUTO))

    return decorate


def mode_names() -> list[str]:
    """The registered modes in ``auto``'s order: the built-in ones, then the others as registered
    (a tie on the decision data goes to the earlier one)."""
    return [*BUILTIN, *(n for n in _REGISTERED if n not in BUILTIN)]


def calibration_names() -> list[str]:
    """Every value ``[evaluator] calibration`` takes: ``none``, the modes, ``auto``."""
    return [NONE, *mode_names(), AUTO]


def calibrator_class(name: str) -> type[CalibratorFacts]:
    """The class registered as the mode ``name``, its module imported on first use.

    Raises:
        SpecError: no mode is registered as ``name`` (``none`` and ``auto`` are not modes).
    """
    if name not in _REGISTERED and name in BUILTIN:
        importlib.import_module(BUILTIN[name])
    found = _REGISTERED.get(name)
    if found is None:
        near = closest_name(name, mode_names())
        raise SpecError(
            f"unknown calibration mode {name!r}",
            where="[evaluator] calibration",
            fix=(f"did you mean {near!r}? " if near else "")
            + f"the modes: {', '.join(mode_names())} (a package registers more with @register_calibration)",
        )
    return found
