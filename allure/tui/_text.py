"""Untrusted text made safe to draw.

Responses, tasks and evaluator outputs come from models and datasets: they may hold
Rich markup (``[link=...]``), ANSI escape sequences or other control characters. The
TUI never interprets them: :func:`visible` replaces control characters with visible
stand-ins and :func:`literal` wraps the result in a :class:`rich.text.Text` that is
never parsed as markup (both from :mod:`allure.safe_text`, which the CLI and reports use too).
"""

from __future__ import annotations

from rich.text import Text

from allure.safe_text import one_line as _flat
from allure.safe_text import visible

__all__ = ["literal", "one_line", "visible"]


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
    return Text(_flat(text, width), no_wrap=True, end="")
