r"""The heads-and-overfitting grid as a figure: the train / held-out gap against the training-set
size, one line per head count, in accuracy and in loss side by side.

.. math::
    \Delta_{\text{acc}} = \text{acc}_{\text{train}} - \text{acc}_{\text{held-out}},\qquad
    \Delta_{\mathcal{L}} = \mathcal{L}_{\text{held-out}} - \mathcal{L}_{\text{train}}

Each point is the mean over the seeds trained so far; its error bar runs from the smallest to
the largest seed's gap (the spread a reader needs before trusting a difference). Sizes sit on a
log₂ axis; the head counts' points are nudged apart along it so that their bars do not cover one
another (the hover names the exact size). A cell not trained yet is NaN and draws nothing.
Arrays go to the browser as float32. Every word goes through `tformer.i18n.tr`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from ..i18n import tr
from .colors import RULE, SERIES
from .labels import axis_title, numeric_axis_margin, x_numeric_margin
from .layout import (
    EDGE_PX,
    FULL_WIDTH,
    LEGEND_PX,
    TOP_PANEL_TITLE_PX,
    TOP_TITLE_PX,
    base_layout,
    legend_rows,
    panel_title,
    px_domain,
    top_legend,
)

__all__ = ["overfit_figure"]

PLOT_PX = 330
GAP_PX = 70  # between the two panels: the right panel's tick labels and axis title
TICK_PX = 13
LINE_PX = 2.5
MARKER_PX = 8
NUDGE = 0.05  # log₂ units between neighbouring head counts' points at one size


def _check(
    sizes: Sequence[int], head_counts: Sequence[int], arrays: dict[str, npt.ArrayLike]
) -> dict[str, npt.NDArray[np.float64]]:
    """Each array as float64 [heads, sizes], checked against the sizes and head counts."""
    if not sizes or list(sizes) != sorted(set(sizes)) or sizes[0] < 1:
        raise ValueError(f"sizes={list(sizes)!r} must increase from 1 up")
    if not head_counts or list(head_counts) != sorted(set(head_counts)) or head_counts[0] < 1:
        raise ValueError(f"head_counts={list(head_counts)!r} must increase from 1 up")
    if len(head_counts) > len(SERIES):
        raise ValueError(f"{len(head_counts)} head counts: at most {len(SERIES)} lines are told apart")
    shape = (len(head_counts), len(sizes))
    out = {}
    for name, values in arrays.items():
        a = np.asarray(values, dtype=np.float64)
        if a.shape != shape:
            raise ValueError(f"{name} has shape {a.shape}, expected {shape} [head_counts, sizes]")
        out[name] = a
    low, gap, high = out["gap_low"], out["gap"], out["gap_high"]
    known = ~np.isnan(gap)
    if np.any(np.isnan(low[known]) | np.isnan(high[known])) or np.any(
        (low[known] > gap[known] + 1e-9) | (high[known] < gap[known] - 1e-9)
    ):
        raise ValueError("every gap needs its seeds' range around it (gap_low <= gap <= gap_high)")
    return out


def _heads_name(h: int, d_head: int) -> str:
    if h == 1:
        return tr("1 head, d<sub>head</sub> = {d_head}", d_head=d_head)
    return tr("{h} heads, d<sub>head</sub> = {d_head}", h=h, d_head=d_head)


def _lines(
    sizes: Sequence[int], head_counts: Sequence[int], d_model: int, a: dict[str, npt.NDArray[np.float64]]
) -> list[dict[str, Any]]:
    """Per head count: its accuracy-gap line with the seeds' range, and its loss-gap line."""
    data = []
    k = len(head_counts)
    for i, h in enumerate(head_counts):
        x = np.asarray(sizes, dtype=np.float64) * 2.0 ** ((i - (k - 1) / 2) * NUDGE)
        name, color = _heads_name(h, d_model // h), SERIES[i]
        common = {
            "type": "scatter",
            "mode": "lines+markers",
            "x": x.astype(np.float32),
            "customdata": np.asarray(sizes, dtype=np.float32),
            "name": name,
            "legendgroup": str(h),
            "line": {"color": color, "width": LINE_PX},
            "marker": {"color": color, "size": MARKER_PX},
        }
        gap, low, high = a["gap"][i], a["gap_low"][i], a["gap_high"][i]
        data.append(
            {
                **common,
                "y": gap.astype(np.float32),
                "error_y": {
                    "type": "data",
                    "symmetric": False,
                    "array": (high - gap).astype(np.float32),
                    "arrayminus": (gap - low).astype(np.float32),
                    "color": color,
                    "thickness": 1.5,
                    "width": 5,
                },
                "hovertemplate": tr("%{customdata:.0f} sequences: gap %{y:.1%}") + f"<extra>{name}</extra>",
            }
        )
        data.append(
            {
                **common,
                "y": a["loss_gap"][i].astype(np.float32),
                "xaxis": "x2",
                "yaxis": "y2",
                "showlegend": False,
                "hovertemplate": tr("%{customdata:.0f} sequences: gap %{y:.3f}") + f"<extra>{name}</extra>",
            }
        )
    return data


def _axes(
    sizes: Sequence[int], domains: Sequence[Any], a: dict[str, npt.NDArray[np.float64]]
) -> dict[str, Any]:
    lo, hi = math.log10(sizes[0]) - 0.12, math.log10(sizes[-1]) + 0.12
    x = {
        "type": "log",
        "range": [lo, hi],
        "tickmode": "array",
        "tickvals": list(sizes),
        "ticktext": [str(n) for n in sizes],
        "tickfont": {"size": TICK_PX},
        "title": axis_title(tr("training sequences")),
    }
    top = np.nanmax(a["gap_high"]) if np.isfinite(a["gap_high"]).any() else 0.0
    bottom = np.nanmin(a["gap_low"]) if np.isfinite(a["gap_low"]).any() else 0.0
    loss_vals = a["loss_gap"][np.isfinite(a["loss_gap"])]
    loss_lo = min(0.0, float(loss_vals.min())) if loss_vals.size else 0.0
    loss_hi = max(0.1, float(loss_vals.max())) if loss_vals.size else 1.0
    pad = 0.05 * (loss_hi - loss_lo)
    return {
        "xaxis": {**x, "domain": domains[0][0], "anchor": "y"},
        "xaxis2": {**x, "domain": domains[1][0], "anchor": "y2"},
        "yaxis": {
            "domain": domains[0][1],
            "range": [min(-0.05, float(bottom) - 0.03), max(0.3, float(top) + 0.05)],
            "tickformat": ".0%",
            "tickfont": {"size": TICK_PX},
            "zeroline": True,
            "zerolinecolor": RULE,
            "title": axis_title(tr("training − held-out accuracy")),
        },
        "yaxis2": {
            "domain": domains[1][1],
            "anchor": "x2",
            "range": [loss_lo - pad, loss_hi + pad],
            "tickfont": {"size": TICK_PX},
            "zeroline": True,
            "zerolinecolor": RULE,
            "title": axis_title(tr("held-out − training loss")),
        },
    }


def overfit_figure(
    sizes: Sequence[int],
    head_counts: Sequence[int],
    gap: npt.ArrayLike,
    gap_low: npt.ArrayLike,
    gap_high: npt.ArrayLike,
    loss_gap: npt.ArrayLike,
    *,
    d_model: int,
    title: str | None = None,
    width: int = FULL_WIDTH,
) -> go.Figure:
    """The gap against the training-set size: left the accuracy gap (training − held-out, mean
    over seeds, error bars from the smallest to the largest seed's), right the loss gap
    (held-out − training, mean), one line per head count (legend: heads and d_head =
    ``d_model`` / heads). Arrays are [head_counts, sizes]; NaN where a cell is not trained yet.
    ``layout.meta``: ``sizes``, ``head_counts``, ``cells`` (how many (size, n_heads) are drawn),
    ``width``."""
    a = _check(
        sizes, head_counts, {"gap": gap, "gap_low": gap_low, "gap_high": gap_high, "loss_gap": loss_gap}
    )
    if any(d_model % h for h in head_counts):
        raise ValueError(f"d_model={d_model} is not divisible by every head count {list(head_counts)}")
    data = _lines(sizes, head_counts, d_model, a)
    left = numeric_axis_margin("100%", font=TICK_PX)
    paper_w = width - left - EDGE_PX
    rows = legend_rows([str(t["name"]) for t in data if t.get("showlegend", True)], paper_w)
    half = (paper_w - GAP_PX) / 2
    domains = [
        px_domain(0, half, 0, PLOT_PX, paper_w, PLOT_PX),
        px_domain(half + GAP_PX, paper_w, 0, PLOT_PX, paper_w, PLOT_PX),
    ]
    layout = base_layout(
        PLOT_PX,
        width=width,
        left=left,
        right=EDGE_PX,
        top=(TOP_TITLE_PX if title else 0) + rows * LEGEND_PX + TOP_PANEL_TITLE_PX,
        bottom=x_numeric_margin(font=TICK_PX),
        title=title,
        meta={
            "sizes": list(sizes),
            "head_counts": list(head_counts),
            "cells": int(np.isfinite(a["gap"]).sum()),
        },
        showlegend=True,
        legend=top_legend(rows, PLOT_PX),
        hovermode="closest",
        annotations=[
            panel_title(tr("accuracy gap (error bars: seeds' range)"), *domains[0]),
            panel_title(tr("loss gap"), *domains[1]),
        ],
        **_axes(sizes, domains, a),
    )
    return go.Figure({"data": data, "layout": layout})
