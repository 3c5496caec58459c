"""Figure geometry: subplot domains and titles, square heatmap sizes, colorbar margins.

Builders assemble plain dicts and validate once in ``go.Figure(dict)``: ``make_subplots`` plus
``update_layout`` re-validate the whole figure on every call, which costs several times more
for a multi-panel figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

# A vertical colorbar (thickness <= 16) with its tick labels and a short title on top.
COLORBAR_PX = 84
# A colorbar of a layout coloraxis gets Streamlit's theme padding: wider than a trace's.
COLORAXIS_BAR_PX = COLORBAR_PX + 30

Domain = tuple[list[float], list[float]]


def square_plot_px(n_cells: int) -> int:
    """Side in px of the plot area of an ``n x n`` heatmap: ~24 px cells when short, 640 at most."""
    return min(640, max(220, 24 * n_cells))


def grid_domains(
    rows: int,
    cols: int,
    *,
    hspace: float,
    vspace: float,
    col_widths: Sequence[float] | None = None,
) -> list[Domain]:
    """Paper-space (x domain, y domain) of each cell, row-major, first row on top."""
    widths = np.asarray(col_widths if col_widths is not None else [1.0] * cols, dtype=float)
    widths = widths / widths.sum() * (1.0 - hspace * (cols - 1))
    x0 = np.concatenate([[0.0], np.cumsum(widths + hspace)[:-1]])
    height = (1.0 - vspace * (rows - 1)) / rows
    out = []
    for r in range(rows):
        top = 1.0 - r * (height + vspace)
        for c in range(cols):
            out.append(
                (
                    [float(x0[c]), float(min(1.0, x0[c] + widths[c]))],
                    [float(max(0.0, top - height)), float(top)],
                )
            )
    return out


def panel_title(text: str, x_domain: Sequence[float], y_domain: Sequence[float]) -> dict[str, Any]:
    """A subplot title annotation centred above the panel (as make_subplots places them)."""
    return {
        "text": text,
        "x": (x_domain[0] + x_domain[1]) / 2,
        "y": y_domain[1],
        "xref": "paper",
        "yref": "paper",
        "xanchor": "center",
        "yanchor": "bottom",
        "showarrow": False,
        "font": {"size": 13},
    }
