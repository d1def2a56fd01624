"""Spec errors that name the source, line and field: pydantic's validation errors (an unknown
key among them, with the closest valid key) turned into :class:`~allure.errors.SpecError`."""

from __future__ import annotations

import json
import re
import types
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from allure.errors import SpecError, closest_name


class SpecFieldError(ValueError):
    """A validator's error that names the field it is about and the fix (read by :func:`parse_spec`).

    Pydantic reports a model validator's error at the top level; this carries the field, so the
    message names the spec's line and key like any other field error.
    """

    def __init__(self, field: str, message: str, fix: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message
        self.fix = fix


def fullmatch_or_refuse(value: str, pattern: str, field: str, *, what: str, fix: str) -> str:
    """``value`` when it matches ``pattern`` in full.

    Raises:
        SpecFieldError: "``KEY = 'value'`` is not ``what``" for ``field`` (``section.KEY``), with ``fix``.
    """
    if not re.fullmatch(pattern, value):
        raise SpecFieldError(field, f"{field.rsplit('.', 1)[-1]} = {value!r} is not {what}", fix)
    return value


def jsonable(x: Any) -> bool:
    """Whether ``x`` can be written as JSON."""
    try:
        json.dumps(x)
    except (TypeError, ValueError):
        return False
    return True


def _where(loc: tuple[Any, ...]) -> str:
    return ".".join(str(x) for x in loc if x not in ("int", "str")) or "(top level)"


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model a field holds (``Model`` or ``Model | None``), else ``None``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) in (Union, types.UnionType):
        for arg in get_args(annotation):
            found = _nested_model(arg)
            if found is not None:
                return found
    return None


_KEY_PART = re.compile(r"""\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*""")


def _assigned_keys(line: str) -> tuple[str, ...]:
    """The dotted key a TOML line assigns (``a."b: c" = 1`` -> ``("a", "b: c")``), quoted parts
    unquoted (escapes kept as written); ``()`` when the line assigns nothing."""
    keys, pos = [], 0
    while True:
        part = _KEY_PART.match(line, pos)
        if part is None or part.end() == pos:
            return ()
        keys.append(next(g for g in part.groups() if g is not None))
        pos = part.end()
        if line.startswith("=", pos):
            return tuple(keys)
        if not line.startswith(".", pos):
            return ()
        pos += 1


def _toml_line(text: str, path: tuple[str, ...]) -> int | None:
    """The line where the TOML ``text`` sets the key ``path`` (a key or a table header), if found."""
    if not path:
        return None
    table: tuple[str, ...] = ()
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        header = re.match(r"^\[\[?\s*([^\]]+?)\s*\]\]?", line)
        if header:
            table = tuple(part.strip().strip("\"'") for part in header.group(1).split("."))
            if table[: len(path)] == tuple(path):
                return lineno
            continue
        keys = _assigned_keys(line)
        if keys and table + keys[: len(path) - len(table)] == tuple(path) and len(table) < len(path):
            return lineno
    return None


def _model_at(model: type[BaseModel], path: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model that holds the table ``path`` of ``model`` (``None`` if no nested model does)."""
    for key in path:
        field = model.model_fields.get(str(key))
        nested = _nested_model(field.annotation) if field is not None else None
        if nested is None:
            return None
        model = nested
    return model


def _unknown_key(loc: tuple[Any, ...], model: type[BaseModel], *, source: str, text: str | None) -> SpecError:
    """An ``extra_forbidden`` error at ``loc``: the key, its line, the closest valid key and the valid keys."""
    at, key = tuple(str(x) for x in loc[:-1]), str(loc[-1])
    table = f"[{'.'.join(at)}]" if at else "the top level"
    holder = _model_at(model, at)
    valid = [name for name in (holder.model_fields if holder else {}) if name != "base_dir"]
    guess = closest_name(key, valid)
    line = _toml_line(text, (*at, key)) if text is not None else None
    return SpecError(
        f"unknown key '{key}' in {table}",
        where=f"{source}{f':{line}' if line else ''}, field '{'.'.join((*at, key))}'",
        fix=(f"did you mean `{guess}`? " if guess else "")
        + (f"valid keys in {table}: {', '.join(valid)}" if valid else "remove it (see README 'Audit spec')"),
    )


BOUNDS = {
    "greater_than_equal": "{ge} or more",
    "greater_than": "above {gt}",
    "less_than_equal": "{le} or less",
    "less_than": "below {lt}",
}
"""Pydantic's range errors, as the bound a field must meet."""


TYPE_WORDS = {
    "bool_type": "true or false (a TOML boolean, unquoted)",
    "finite_number": "a finite number (not nan or inf)",
}
"""Pydantic's type errors that a spec error words itself: what the field must be."""


def _allowed_range(model: type[BaseModel], loc: tuple[Any, ...]) -> str:
    """The range a numeric field allows, from its constraints (``1 to 1024``, ``0 or more``); ``""``
    when the field has none or cannot be found (a value inside a list or a dict)."""
    holder = _model_at(model, tuple(loc[:-1])) if loc else None
    field = holder.model_fields.get(str(loc[-1])) if holder is not None else None
    if field is None:
        return ""
    bounds = {
        a: getattr(m, a)
        for m in field.metadata
        for a in ("ge", "gt", "le", "lt")
        if getattr(m, a, None) is not None
    }
    if "ge" in bounds and "le" in bounds:
        return f"{bounds['ge']} to {bounds['le']}"
    words = {"ge": "{} or more", "gt": "above {}", "le": "{} or less", "lt": "below {}"}
    return " and ".join(w.format(bounds[a]) for a, w in words.items() if a in bounds)


def _numeric(annotation: Any) -> bool:
    """Whether a field holds a number and nothing else (``int``, ``float | None``; not a label, which
    may be a string, and not a boolean)."""
    args = get_args(annotation) if get_origin(annotation) in (Union, types.UnionType) else (annotation,)
    kinds = [a for a in args if a is not type(None)]
    return bool(kinds) and all(a in (int, float) for a in kinds)


def bool_for_number(data: Any, model: type[BaseModel], at: tuple[str, ...] = ()) -> tuple[str, ...] | None:
    """The key of the first boolean given where ``model`` takes a number (``max_iterations = true``,
    which pydantic reads as 1), else ``None``; nested tables and number tables (``[gate.min]``) included."""
    if not isinstance(data, dict):
        return None
    for key, value in data.items():
        field = model.model_fields.get(str(key))
        if field is None:
            continue
        nested = _nested_model(field.annotation)
        if nested is not None:
            found = bool_for_number(value, nested, (*at, str(key)))
            if found is not None:
                return found
        elif isinstance(value, bool) and _numeric(field.annotation):
            return (*at, str(key))
        elif (
            isinstance(value, dict)
            and get_origin(field.annotation) is dict
            and _numeric(get_args(field.annotation)[1])
        ):
            bad = next((k for k, v in value.items() if isinstance(v, bool)), None)
            if bad is not None:
                return (*at, str(key), str(bad))
    return None


def bool_error(
    loc: tuple[str, ...], value: bool, model: type[BaseModel], *, source: str, text: str | None
) -> SpecError:
    """The error of a boolean given for a number (see :func:`bool_for_number`)."""
    field = ".".join(loc)
    allowed = _allowed_range(model, loc)
    line = _toml_line(text, loc) if text is not None else None
    return SpecError(
        f"{field} = {json.dumps(value)} is a boolean, not a number",
        where=f"{source}{f':{line}' if line else ''}, field '{field}'",
        fix=f"write a number for {field}"
        + (f" ({allowed})" if allowed else "")
        + " (see README 'Audit spec')",
    )


def spec_error(
    exc: ValidationError, model: type[BaseModel], *, source: str, text: str | None = None
) -> SpecError:
    """The :class:`SpecError` of a spec that ``model`` refused: an unknown key first (pydantic's
    ``extra_forbidden``, with the closest valid key), else the first error; each names the source,
    the line when ``text`` (the TOML source) is given, and the field."""
    errors = exc.errors()
    unknown = [e for e in errors if e["type"] == "extra_forbidden"]
    if unknown:  # the first in the file when its text is known (as a reader meets them)
        locs = [tuple(str(x) for x in e["loc"]) for e in unknown]
        if text is not None:
            locs.sort(key=lambda loc: _toml_line(text, loc) or len(text))
        return _unknown_key(locs[0], model, source=source, text=text)
    err = errors[0]
    cause = (err.get("ctx") or {}).get("error")
    loc: tuple[Any, ...] = tuple(err["loc"])
    msg = err["msg"]
    fix = f"set {_where(loc)} so that {msg[0].lower() + msg[1:]} (see README 'Audit spec')"
    if err["type"] in BOUNDS:
        want = BOUNDS[err["type"]].format(**(err.get("ctx") or {}))
        allowed = _allowed_range(model, loc)
        also = f" (allowed: {allowed})" if allowed and allowed != want else ""
        msg = f"{err.get('input')!r} is out of range: {_where(loc)} must be {want}{also}"
        fix = f"set {_where(loc)} to {want}{also} (see README 'Audit spec')"
    elif err["type"] in TYPE_WORDS:
        got = err.get("input")
        shown = json.dumps(got) if jsonable(got) else repr(got)
        msg = f"{_where(loc)} = {shown} is not {TYPE_WORDS[err['type']]}"
        fix = (
            f"set {_where(loc)} to {TYPE_WORDS[err['type']]}"
            + (f" ({_allowed_range(model, loc)})" if _allowed_range(model, loc) else "")
            + " (see README 'Audit spec')"
        )
    elif err["type"] == "value_error":  # a validator's ValueError: its text says what and how
        msg = msg.removeprefix("Value error, ")
        fix = f"correct {_where(loc)} as said (see README 'Audit spec')"
    if isinstance(cause, SpecFieldError):
        loc, msg, fix = tuple(cause.field.split(".")), cause.message, cause.fix
    elif not loc:
        fix = "correct the spec (see README 'Audit spec')"
    line = _toml_line(text, tuple(str(x) for x in loc)) if text is not None else None
    return SpecError(msg, where=f"{source}{f':{line}' if line else ''}, field '{_where(loc)}'", fix=fix)
