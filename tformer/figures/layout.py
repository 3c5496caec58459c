"""Figure geometry: the widths figures are designed for, panel boxes, colorbars beside their plot.

Streamlit stretches a chart to its column's width and takes the height from ``layout.height``.
So every builder takes the ``width`` (px) of the column it is drawn in, with defaults for the
app's 1400 x 1000 window (:data:`FULL_WIDTH`, :data:`DETAIL_WIDTH`, :data:`HALF_WIDTH`), and
sizes its height so that square plots fill that width: plot side = width - left - right margin.
Figures leave ``layout.width`` unset (Streamlit's ``width="stretch"``) and record the width they
were designed for in ``layout.meta["width"]``.

Builders assemble plain dicts and validate once in ``go.Figure(dict)``: ``make_subplots`` plus
``update_layout`` re-validate the whole figure on every call, which costs several times more
for a multi-panel figure.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from .labels import LABEL_ALL, text_px

# Column widths (px) in a 1400 x 1000 browser window: the main area is 940 px wide (the
# sidebar takes 300); the Attention page's detail heatmap sits in a ~745 px column; two
# side-by-side columns are ~460 px each.
FULL_WIDTH = 940
DETAIL_WIDTH = 745
HALF_WIDTH = 460

FIGURE_TITLE_PX = 17
PANEL_TITLE_PX = 15
# Top margin above a plot with a figure title, with panel titles only, with neither.
TOP_TITLE_PX = 44
TOP_PANEL_TITLE_PX = 30
TOP_BARE_PX = 24  # room for the top row's label and the colorbar's end label
# Plotly's toolbar (zoom, pan, reset...) shows at a chart's top right while the pointer is on
# it: panel titles that reach the right edge start below it, or a teacher pointing at the chart
# hides the title of its last panel.
MODEBAR_PX = 28
# Below/right of a plot with nothing there.
EDGE_PX = 20  # a rotated last label hangs out by half a line

# Vertical colorbars: drawn beside their plot, exactly as tall as it.
COLORBAR_THICKNESS = 14
COLORBAR_XPAD = 6
COLORBAR_TICK_FONT = 13
COLORBAR_TITLE_FONT = 14

Domain = tuple[list[float], list[float]]


def colorbar(
    title: str,
    *,
    x: float = 1.0,
    y: float = 0.5,
    length: float = 1.0,
    ticks: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A vertical colorbar at paper ``x`` (its left edge, plus a small pad), centred at paper
    ``y``, ``length`` the fraction of the plot height (1 = as tall as a full-height plot).

    Every field Streamlit's theme sets for a ``coloraxis`` colorbar (length 0.75, y 0.5745,
    a wide pad) is set here, so a trace's and a color axis's bar look alike.
    """
    bar: dict[str, Any] = {
        "title": {"text": title, "side": "right", "font": {"size": COLORBAR_TITLE_FONT}},
        "thickness": COLORBAR_THICKNESS,
        "x": x,
        "xanchor": "left",
        "xpad": COLORBAR_XPAD,
        "xref": "paper",
        "y": y,
        "yanchor": "middle",
        "yref": "paper",
        "len": length,
        "lenmode": "fraction",
        "ypad": 0,
        "outlinewidth": 0,
        "ticklabelposition": "outside",
        "tickfont": {"size": COLORBAR_TICK_FONT},
    }
    if ticks:
        bar.update(ticks)
    return bar


def colorbar_px(tick_texts: Sequence[str], *, title: bool = True) -> int:
    """Width (px) a :func:`colorbar` takes beside its plot, for these tick labels."""
    labels = max((text_px(t, COLORBAR_TICK_FONT) for t in tick_texts), default=0.0)
    return math.ceil(
        COLORBAR_XPAD + COLORBAR_THICKNESS + 4 + labels + (COLORBAR_TITLE_FONT * 1.5 if title else 0) + 8
    )


def fit_side(available: Callable[[float], float], start: float, *, tries: int = 4) -> float:
    """The plot side ``s`` with ``s == available(s)`` (margins depend on the labels, which
    depend on the side): iterate from ``start`` and stop as soon as the side stops shrinking,
    so labels are never planned for more room than they get."""
    side = start
    for _ in range(tries):
        nxt = available(side)
        if nxt >= side:
            return side
        side = nxt
    return side


def px_domain(x0: float, x1: float, y0: float, y1: float, paper_w: float, paper_h: float) -> Domain:
    """Paper-space domains of a box given in px from the plot area's top-left corner."""
    return (
        [max(0.0, x0 / paper_w), min(1.0, x1 / paper_w)],
        [max(0.0, 1.0 - y1 / paper_h), min(1.0, 1.0 - y0 / paper_h)],
    )


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
        "yshift": 4,
        "showarrow": False,
        "font": {"size": PANEL_TITLE_PX},
    }


# A horizontal legend above the plot, in rows of LEGEND_PX at LEGEND_FONT_PX.
LEGEND_PX = 30
LEGEND_FONT_PX = 15


def top_legend(rows: int, plot_h: float) -> dict[str, Any]:
    """A horizontal legend of ``rows`` rows whose top sits above the plot's panel titles; the
    figure's top margin must hold ``rows * LEGEND_PX + TOP_PANEL_TITLE_PX``."""
    return {
        "orientation": "h",
        "x": 0.0,
        "xanchor": "left",
        "y": 1.0 + (rows * LEGEND_PX + TOP_PANEL_TITLE_PX) / plot_h,
        "yanchor": "top",
        "font": {"size": LEGEND_FONT_PX},
        "itemwidth": 40,
        "traceorder": "normal",
    }


def legend_rows(entries: Sequence[str], room: float) -> int:
    """Rows a `top_legend` of ``entries`` takes in ``room`` px (symbol, text, spacing)."""
    rows, used = 1, 0.0
    for e in entries:
        w = 40 + 10 + text_px(e.replace("<sub>", "").replace("</sub>", ""), LEGEND_FONT_PX)
        if used and used + w > room:
            rows, used = rows + 1, 0.0
        used += w
    return rows


def figure_title(text: str) -> dict[str, Any]:
    """A figure title, left-aligned over the plot (as Streamlit's theme places it)."""
    return {"text": text, "font": {"size": FIGURE_TITLE_PX}, "x": 0, "xref": "paper", "xanchor": "left"}


def base_layout(
    plot_h: float,
    *,
    width: int,
    left: float,
    right: float,
    top: float,
    bottom: float,
    title: str | None = None,
    meta: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The layout every builder starts from: height = the plot's height plus its margins, the
    margins (no pad), the title when there is one, and ``meta`` with the width the figure was
    designed for. ``extra`` adds the figure's own keys (axes, legend, shapes ...).

    A builder reads validate -> ``base_layout`` -> traces.
    """
    layout: dict[str, Any] = {
        "height": plot_h + top + bottom,
        "margin": {"l": left, "r": right, "t": top, "b": bottom, "pad": 0},
        "meta": {"width": width, **(meta or {})},
        **extra,
    }
    if title:
        layout["title"] = figure_title(title)
    return layout


# Small multiples of [query_pos, key_pos] panels: px per token while every token is labelled
# (room for 12 px labels), and the gaps between panels.
PANEL_MIN_PITCH = 12.0
PANEL_GAP_PX = 28  # two end labels hanging out by EDGE_OVERHANG_PX each, and air
# Between rows of panels: the next row's panel titles.
PANEL_VGAP_PX = TOP_PANEL_TITLE_PX + 10


def panel_cols(
    n_tokens: int, n_panels: int, room: float, *, max_cols: int, long_side: float, min_side: float = 0.0
) -> int:
    """How many square panels go side by side in ``room`` px: as many as ``max_cols`` while
    each still gives every token :data:`PANEL_MIN_PITCH` px (up to ``LABEL_ALL`` tokens), or
    ``long_side`` px a panel for longer inputs (whose labels thin out); then as few columns as
    keep the same number of rows, so the last row is not left mostly empty. Panels are never
    planned narrower than ``min_side``."""
    need = max(min_side, PANEL_MIN_PITCH * n_tokens if n_tokens <= LABEL_ALL else long_side)
    for cols in range(max(1, min(max_cols, n_panels)), 0, -1):
        if (room - (cols - 1) * PANEL_GAP_PX) / cols >= need:
            # as few empty cells as the rows allow: 4 panels in 3 columns become 2 x 2
            return math.ceil(n_panels / math.ceil(n_panels / cols))
    return 1
