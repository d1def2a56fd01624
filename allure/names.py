"""One check for every user-given name that becomes a folder or file name (studies, frozen sets,
prompt sets): one allowed alphabet, so no name can leave the project (``../``, an absolute path)
or put control characters into a path."""

from __future__ import annotations

import re

from allure.errors import AllureError, SpecError

NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._~+-]{0,99}"
"""Letters, digits, ``.``, ``_``, ``-``, ``~`` and ``+``, starting with a letter or digit, at most 100 characters."""

_NAME = re.compile(NAME_PATTERN)


def name_problem(name: str) -> str | None:
    """What is wrong with ``name`` as a path name, in words; ``None`` when it is fine."""
    if not name:
        return "the name is empty"
    if _NAME.fullmatch(name):
        return None
    if "/" in name or "\\" in name:
        return "a name cannot hold '/' or '\\' (it would become a path outside its folder)"
    if any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in name):
        return "a name cannot hold control characters"
    if len(name) > 100:
        return f"the name is {len(name)} characters long (at most 100)"
    return "a name may hold only letters, digits, '.', '_', '-', '~' and '+', starting with a letter or digit"


def check_name(name: str, *, what: str, where: str, error: type[AllureError] = SpecError) -> str:
    """Return ``name`` when it is a valid path name, else raise ``error`` naming ``what`` and ``where``.

    Args:
        name: The user-given name.
        what: What it names (``study name``, ``set name``), for the message.
        where: The option or field it came from (``--name``).
        error: The error class of the caller's area (exit status 2).
    """
    problem = name_problem(name)
    if problem is None:
        return name
    from allure.safe_text import one_line

    raise error(
        f"invalid {what} {one_line(repr(name), 80)}: {problem}",
        where=where,
        fix="use letters, digits, '.', '_' and '-' (starting with a letter or digit), e.g. --name nightly-2",
    )
