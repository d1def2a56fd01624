"""Untrusted text made safe to show: on a terminal, in a Rich renderable, in JSON lines and in markdown.

Responses, tasks, item ids, problem types, evaluator outputs and error bodies come from
models and datasets. They may hold escape sequences (``ESC[2J`` clears the screen, OSC 0
sets the window title, OSC 8 makes a link), other C0/C1 control characters, or Rich
markup (``[link=...]``). Everything allure shows from data goes through this module:

- :func:`visible`: control characters become visible stand-ins (``ESC`` -> ``␛``);
- :func:`one_line`: the same, on one line (newlines shown as ``⏎``), optionally cut;
- :func:`safe_json`: a JSON document with C1 controls and DEL escaped as ``\\u009b``;
- :func:`markup_escape`: :func:`visible` text that Rich prints literally even when markup is on;
- :func:`xml_text`: text an XML 1.0 parser accepts (JUnit): no C0 control, no lone surrogate;
- :func:`markdown_cell` and :func:`markdown_code`: one line that cannot break a Markdown table
  (pipes, backticks, ``<>`` escaped) as plain text or as a code span.

:func:`for_output` picks one of these by the kind of output (``"terminal"``, ``"markup"``,
``"xml"``, ``"markdown"``, ``"markdown_code"``); every writer of a report goes through it or
through the function it names. The CLI's printers (``allure.cli._common``), the report writers
and the TUI use these.
"""

from __future__ import annotations

import re
from typing import Literal

OutputKind = Literal["terminal", "markup", "xml", "markdown", "markdown_code"]
"""Where text from data goes: a terminal line, a Rich markup string, an XML attribute or text node
(JUnit), a Markdown table cell or prose, a Markdown code span."""

_KEEP = frozenset("\n\t")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROL_JSON = re.compile(r"[\x7f-\x9f]")


def _stand_in(ch: str) -> str:
    code = ord(ch)
    if code < 0x20:
        return chr(0x2400 + code)  # Unicode "control pictures": \x1b -> U+241B
    if code == 0x7F:
        return "\u2421"
    return f"\\x{code:02x}"  # C1 controls (0x80-0x9f) have no picture


def visible(text: str) -> str:
    """``text`` with every control character except newline and tab made visible.

    C0 controls become their Unicode control pictures (ESC ``\\x1b`` becomes ``␛``, carriage
    return ``␍``), DEL becomes ``␡`` and C1 controls (``\\x9b`` is a one-byte CSI) become
    ``\\x9b``-style escapes, so no escape sequence can reach the terminal.

    Args:
        text: Untrusted text.

    Returns:
        The text, safe to print; printable characters are unchanged.
    """
    text = str(text)
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: _stand_in(m.group()), text)


def one_line(text: str, width: int | None = None) -> str:
    """:func:`visible` ``text`` on one line: newlines shown as ``⏎``, tabs as spaces, cut to ``width``."""
    flat = visible(str(text).replace("\r\n", "\n")).replace("\n", "⏎ ").replace("\t", " ")
    if width is not None and len(flat) > width:
        flat = flat[: width - 1] + "…"
    return flat


def safe_json(document: str) -> str:
    """A serialised JSON document with DEL and C1 controls escaped (``\\u009b``).

    JSON encoders escape C0 controls but leave DEL and C1 (``\\x9b`` is a one-byte CSI that
    some terminals obey) as raw characters; they can only occur inside strings, where the
    ``\\uXXXX`` form means the same, so the document still parses to the same value.
    """
    if not _CONTROL_JSON.search(document):
        return document
    return _CONTROL_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", document)


def markup_escape(text: str) -> str:
    """:func:`visible` ``text`` with Rich markup escaped, for a string that Rich parses as markup.

    ``[bold]`` becomes ``\\[bold]``, so Rich prints the brackets instead of styling.
    """
    from rich.markup import escape

    return escape(visible(text))


_NOT_XML = re.compile("[\ud800-\udfff\ufffe\uffff]")
"""Characters XML 1.0 forbids that :func:`visible` leaves (lone surrogates, U+FFFE, U+FFFF)."""


def xml_text(text: object) -> str:
    """:func:`visible` ``text`` with every character XML 1.0 forbids replaced (U+FFFD for a lone
    surrogate, U+FFFE or U+FFFF); ``<``, ``&`` and ``>`` are left for the XML writer to escape.

    >>> xml_text("a\x1b[31mb\x07")
    'a␛[31mb␇'
    """
    flat = visible(str(text))
    return _NOT_XML.sub("\ufffd", flat) if _NOT_XML.search(flat) else flat


_MD_ESCAPE = re.compile(r"([|`<>])")


def markdown_cell(text: object, width: int | None = None) -> str:
    """``text`` as one line of Markdown that shows it literally and cannot break a table row:
    :func:`one_line`, with ``|``, backticks, ``<`` and ``>`` backslash-escaped.

    >>> print(markdown_cell("a|b `c` <d>"))
    a\\|b \\`c\\` \\<d\\>
    """
    flat = _NOT_XML.sub("\ufffd", one_line(str(text), width))
    return _MD_ESCAPE.sub(r"\\\1", flat)


def markdown_code(text: object, width: int | None = None) -> str:
    """``text`` as an inline code span (backticks included) safe inside a Markdown table: one line,
    fenced by more backticks than any run inside it, pipes escaped (GFM reads ``\\|`` as ``|``
    even in a code span)."""
    flat = _NOT_XML.sub("\ufffd", one_line(str(text), width)).replace("|", "\\|")
    longest = max((len(run) for run in re.findall("`+", flat)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") or not flat.strip() else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def for_output(text: object, kind: OutputKind) -> str:
    """Text from data made safe for one kind of output: the one entry point of this module.

    Args:
        text: Untrusted text (an id, a problem type, a response, an error body).
        kind: ``"terminal"`` (:func:`visible`), ``"markup"`` (:func:`markup_escape`), ``"xml"``
            (:func:`xml_text`), ``"markdown"`` (:func:`markdown_cell`) or ``"markdown_code"``
            (:func:`markdown_code`).
    """
    if kind == "terminal":
        return visible(str(text))
    if kind == "markup":
        return markup_escape(str(text))
    if kind == "xml":
        return xml_text(text)
    if kind == "markdown":
        return markdown_cell(text)
    return markdown_code(text)
