"""Untrusted text made safe to draw.

Responses, tasks and evaluator outputs come from models and datasets: they may hold
Rich markup (``[link=...]``), ANSI escape sequences or other control characters. The
TUI never interprets them: :func:`visible` replaces control characters with visible
stand-ins and :func:`literal` wraps the result in a :class:`rich.text.Text` that is
never parsed as markup.
"""

from __future__ import annotations

from rich.text import Text

_KEEP = {"\n", "\t"}


def _stand_in(ch: str) -> str:
    code = ord(ch)
    if code < 0x20:
        return chr(0x2400 + code)  # Unicode "control pictures": \x1b -> U+241B
    if code == 0x7F:
        return "\u2421"
    return f"\\x{code:02x}"  # C1 controls (0x80-0x9f) have no picture


def visible(text: str) -> str:
    """``text`` with every control character except newline and tab made visible.

    C0 controls become their Unicode control pictures (ESC ``\\x1b`` becomes ``␛``,
    carriage return ``␍``), DEL becomes ``␡`` and C1 controls become ``\\x9b``-style
    escapes, so no escape sequence can reach the terminal.

    Args:
        text: Untrusted text.

    Returns:
        The text, safe to draw; printable characters are unchanged.
    """
    if text.isprintable() and "\x1b" not in text:
        return text
    out = []
    for ch in text:
        code = ord(ch)
        if ch in _KEEP or not (code < 0x20 or 0x7F <= code <= 0x9F):
            out.append(ch)
        else:
            out.append(_stand_in(ch))
    return "".join(out)


def literal(text: str, style: str = "") -> Text:
    """A :class:`~rich.text.Text` holding ``text`` literally (no markup, controls made visible).

    Args:
        text: Untrusted text.
        style: A style of allure's own choosing for the whole text.

    Returns:
        The renderable.
    """
    return Text(visible(text), style=style, no_wrap=False, end="")


def one_line(text: str, width: int = 60) -> Text:
    """``text`` on one line (newlines shown as ``⏎``), cut to ``width`` characters."""
    flat = visible(text.replace("\r\n", "\n")).replace("\n", "⏎ ").replace("\t", " ")
    if len(flat) > width:
        flat = flat[: width - 1] + "…"
    return Text(flat, no_wrap=True, end="")
