"""Helpers of the study files (every kind's): number formatting, and matplotlib figures through the Agg canvas."""

from __future__ import annotations

import io
from typing import Any


def fmt(v: Any, digits: int = 3) -> str:
    """``v`` with ``digits`` decimals when a float, ``-`` when ``None``."""
    return "-" if v is None else f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def png(fig: Any) -> bytes:
    """The figure as PNG bytes (no timestamp metadata: the same figure gives the same bytes)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, metadata={"Software": None})
    return buf.getvalue()


def figure(size: tuple[float, float]) -> Any:
    """A matplotlib figure of ``size`` inches on the Agg canvas (no pyplot state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(fig)
    return fig
