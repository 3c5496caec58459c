"""An answer marked on a figure: a lesson question's reveal outlines the query's row and the key
(or keys) it asked about on an attention heatmap (`tformer.figures.attention.attention_heatmap`).

The heatmap's cells sit on category axes, cell ``c`` spanning ``c - 0.5 .. c + 0.5``; a pooled
heatmap (``layout.meta["block"]`` > 1) puts ``block`` positions in one cell, so a position is
outlined by the cell that holds it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import plotly.graph_objects as go

from .colors import HIGHLIGHT, ROW_INK

__all__ = ["ROW_LINE", "outline_answer"]

ROW_LINE = ROW_INK  # the query's row: dark ink, dashed, so the red key cells stand out on it


def _rect(
    x0: float, x1: float, y0: float, y1: float, color: str, width: int, dash: str, xref: str
) -> dict[str, Any]:
    return {
        "type": "rect",
        "xref": xref,
        "yref": "y",
        "x0": x0,
        "x1": x1,
        "y0": y0,
        "y1": y1,
        "fillcolor": "rgba(0,0,0,0)",
        "line": {"color": color, "width": width, "dash": dash},
        "layer": "above",
    }


def outline_answer(fig: go.Figure, row: int | None, cols: Iterable[int] = ()) -> go.Figure:
    """A copy of the heatmap ``fig`` with the query ``row`` outlined across the plot (dashed)
    and each key position of ``cols`` outlined in that row (or, without a row, down its whole
    column). Positions are token positions; ValueError for one outside the figure's tokens."""
    meta = fig.layout.meta if isinstance(fig.layout.meta, dict) else {}
    n_pos, block = meta.get("n_pos"), int(meta.get("block", 1) or 1)
    if not isinstance(n_pos, int) or n_pos < 1 or block < 1:
        raise ValueError("outline_answer needs a heatmap from attention_heatmap (layout.meta n_pos, block)")
    keys = sorted(set(cols))
    for p in ([row] if row is not None else []) + keys:
        if not (isinstance(p, int) and 0 <= p < n_pos):
            raise ValueError(f"position {p!r} is outside the figure's {n_pos} tokens")
    out = go.Figure(fig)
    shapes = []
    if row is not None:
        r = row // block
        shapes.append(_rect(0, 1, r - 0.5, r + 0.5, ROW_LINE, 2, "dash", "x domain"))
    for c in sorted({k // block for k in keys}):
        if row is not None:
            r = row // block
            shapes.append(_rect(c - 0.5, c + 0.5, r - 0.5, r + 0.5, HIGHLIGHT, 3, "solid", "x"))
        else:
            last = (n_pos - 1) // block
            shapes.append(_rect(c - 0.5, c + 0.5, -0.5, last + 0.5, HIGHLIGHT, 3, "solid", "x"))
    for shape in shapes:
        out.add_shape(shape)
    return out
