"""A study kind's own settings from ``allure study run KIND --param key=value``: the keys checked
against the kind's declared ones (an unknown key is refused with the closest valid one, as the
spec's keys are), and each value read as the type the kind's function takes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from allure.errors import StudyError, closest_name

ParamType = Literal["text", "int", "float", "names", "flag"]
"""How a ``--param`` value is read: as text, an integer, a number, comma-separated names, or a
yes/no flag (``true``/``false``, ``yes``/``no``, ``1``/``0``)."""

_FLAGS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


def check_param_keys(kind: str, given: Mapping[str, str], known: Mapping[str, ParamType]) -> None:
    """Refuse a key the kind does not take, naming the closest one it does.

    Raises:
        StudyError: An unknown key (exit status 2).
    """
    for key in given:
        if key not in known:
            guess = closest_name(key, list(known))
            raise StudyError(
                f"the {kind} study takes no --param {key!r}",
                where=f"option --param {key}",
                fix=(f"did you mean `{guess}`? " if guess else "")
                + (f"valid keys: {', '.join(known)}" if known else f"the {kind} study takes no --param"),
            )


def _read(key: str, text: str, kind: ParamType) -> Any:
    """``text`` as ``kind``; raises :class:`StudyError` naming ``key`` when it is not one."""
    if kind == "names":
        return [p.strip() for p in text.split(",") if p.strip()]
    if kind == "flag":
        if text.lower() not in _FLAGS:
            raise StudyError(
                f"{key} {text!r} is not yes or no", where=f"--param {key}", fix=f"e.g. {key}=true"
            )
        return _FLAGS[text.lower()]
    if kind == "int" and not text.lstrip("-").isdigit():
        raise StudyError(f"{key} {text!r} is not a number", where=f"--param {key}", fix=f"e.g. {key}=3")
    try:
        return int(text) if kind == "int" else float(text) if kind == "float" else text
    except ValueError:
        raise StudyError(
            f"{key} {text!r} is not a number", where=f"--param {key}", fix=f"e.g. {key}=0.7"
        ) from None


def read_params(kind: str, given: Mapping[str, str], known: Mapping[str, ParamType]) -> dict[str, Any]:
    """The given ``--param`` values as keyword arguments of the kind's function (keys not given are
    left out, so the function's defaults apply).

    Raises:
        StudyError: An unknown key, or a value that is not of its key's type.
    """
    check_param_keys(kind, given, known)
    return {key: _read(key, text, known[key]) for key, text in given.items()}
