"""Classes registered by name (backend kinds, :mod:`allure.backends`; calibration modes,
:mod:`allure.calibrations`): one rule for a name and for a name given twice."""

from __future__ import annotations

from typing import Any, TypeVar

C = TypeVar("C", bound=type[Any])


def register_as(table: dict[str, Any], name: str, cls: C, *, what: str, reserved: tuple[str, ...] = ()) -> C:
    """Put ``cls`` in ``table`` as ``name`` (its ``name`` attribute set); ``what`` names the kind of
    thing in errors (``backend kind``).

    Raises:
        ValueError: ``name`` is not letters, digits, ``-`` and ``_``, is one of ``reserved``, or
            already names another class.
    """
    if not name.replace("_", "").replace("-", "").isalnum() or name in reserved:
        taken = f", not {' or '.join(reserved)}" if reserved else ""
        raise ValueError(f"a {what}'s name is letters, digits, '-' and '_'{taken}, not {name!r}")
    held = table.get(name)
    if held is not None and held.__qualname__ != cls.__qualname__:
        raise ValueError(f"{what} {name!r} is already {held.__module__}.{held.__qualname__}")
    cls.name = name
    table[name] = cls
    return cls
