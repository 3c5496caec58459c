"""Mixed-precision training as a figure: the training loss of every update, one line per
precision, on one log axis, so a reader sees whether 16-bit products change how a model learns.

The time and memory of an update are drawn by `tformer.figures.precision.cost_bars`. Arrays go to
the browser as float32. Every word goes through `tformer.i18n.tr`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from ..i18n import tr
from .colors import BLUE, BLUISH_GREEN, VERMILLION
from .labels import axis_title, numeric_axis_margin, x_numeric_margin
from .layout import EDGE_PX, FULL_WIDTH, LEGEND_PX, TOP_TITLE_PX, base_layout, legend_rows, top_legend

__all__ = ["PRECISION_COLORS", "loss_curves_figure"]

PRECISION_COLORS = {"float32": BLUE, "bfloat16": VERMILLION, "float16": BLUISH_GREEN}
# float32 wide and solid underneath, the 16-bit lines dashed on top: where they train alike
# (the usual case) the reference still shows on both sides of them.
PRECISION_LINES = {"float32": (4.0, "solid"), "bfloat16": (2.0, "dash"), "float16": (2.0, "dot")}
PLOT_PX = 300
TICK_PX = 13
MAX_UPDATES = 20_000  # a comparison trains a few hundred: this only bounds the payload


def loss_curves_figure(
    losses: Mapping[str, npt.ArrayLike], *, title: str | None = None, width: int = FULL_WIDTH
) -> go.Figure:
    """The training loss of every update (1, 2, ...), one line per precision (``losses``:
    {precision: [update] mean token cross-entropy}, each > 0 and finite), on a log axis. Names
    are the precisions' own (float32, bfloat16, float16). ``layout.meta``: ``precisions``,
    ``updates`` (each line's length), ``width``."""
    if not losses:
        raise ValueError("loss_curves_figure needs at least one precision's losses")
    unknown = [p for p in losses if p not in PRECISION_COLORS]
    if unknown:
        raise ValueError(f"precisions {unknown} are not among {list(PRECISION_COLORS)}")
    series = {}
    for p, values in losses.items():
        a = np.asarray(values, dtype=np.float64)
        if a.ndim != 1 or not 1 <= a.size <= MAX_UPDATES:
            raise ValueError(f"losses[{p!r}] has shape {a.shape}: one loss per update, 1 to {MAX_UPDATES}")
        if not (np.isfinite(a).all() and (a > 0).all()):
            raise ValueError(f"losses[{p!r}] must be finite and > 0 (a log axis)")
        series[p] = a
    low = min(float(a.min()) for a in series.values())
    high = max(float(a.max()) for a in series.values())
    longest = max(a.size for a in series.values())
    left = numeric_axis_margin("0.001", font=TICK_PX)
    rows = legend_rows(list(series), width - left - EDGE_PX)
    layout = base_layout(
        PLOT_PX,
        width=width,
        left=left,
        right=EDGE_PX,
        top=(TOP_TITLE_PX if title else 8) + rows * LEGEND_PX,
        bottom=x_numeric_margin(font=TICK_PX),
        title=title,
        meta={"precisions": list(series), "updates": [int(a.size) for a in series.values()]},
        showlegend=True,
        legend={**top_legend(rows, PLOT_PX), "y": 1.0 + rows * LEGEND_PX / PLOT_PX},
        hovermode="x unified",
        xaxis={
            "range": [0.5, longest + 0.5],
            "tickfont": {"size": TICK_PX},
            "title": axis_title(tr("update")),
        },
        yaxis={
            "type": "log",
            "range": [math.log10(low) - 0.1, math.log10(high) + 0.1],
            # powers of ten only once the curves span two decades (plotly labels 2 and 5 between)
            "dtick": 1 if math.log10(high / low) >= 2 else "D2",
            "tickfont": {"size": TICK_PX},
            "title": axis_title(tr("training loss")),
        },
    )
    data = [
        {
            "type": "scatter",
            "mode": "lines",
            "x": np.arange(1, a.size + 1, dtype=np.float32),
            "y": a.astype(np.float32),
            "name": p,
            "line": {
                "color": PRECISION_COLORS[p],
                "width": PRECISION_LINES[p][0],
                "dash": PRECISION_LINES[p][1],
            },
            "hovertemplate": "%{y:.4f}<extra>" + p + "</extra>",
        }
        for p, a in series.items()
    ]
    return go.Figure({"data": data, "layout": layout})
