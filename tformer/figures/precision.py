r"""Figures of the precision page: one head's change of weights in a lower-precision copy of the
model, how much every head moved (a layer x head map), and each variant's forward time and
weight size side by side.

.. math::
    \Delta p_{ij} = p^{\text{variant}}_{ij} - p^{\text{float32}}_{ij}

Like :func:`~tformer.figures.attention.attention_heatmap`, sides longer than ``max_side`` are
pooled in square blocks (here the entry of largest magnitude, sign kept, so one changed cell
stays visible), and the hover names the tokens from the axes' category names.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from ..i18n import tr
from .attention import square_token_layout
from .checks import as_float32, square_matrix
from .colors import HIGHLIGHT, INK, PAIR, SEQUENTIAL, SymmetricScale, symmetric_range
from .labels import axis_title, block_labels, text_px, x_numeric_margin
from .layout import (
    COLORBAR_TITLE_FONT,
    DETAIL_WIDTH,
    FULL_WIDTH,
    TOP_BARE_PX,
    TOP_TITLE_PX,
    base_layout,
    colorbar,
    colorbar_px,
)
from .pooling import MAX_SIDE, pool_plan, signed_absmax_pool_2d

MIN_PLOT_PX = 552
BAR_COLORS = PAIR
BAR_FONT_PX = 13
BAR_ROW_PX = 34
CELL_TEXT_MIN_PX = 30  # the layer x head map writes values in cells at least this wide
MAP_MIN_PX = 200
# The map grows up to this tall (px) to give its colorbar the value's full name.
MAP_TITLE_MAX_PX = 260


def pattern_difference(
    diff: npt.ArrayLike,
    labels: Sequence[object],
    *,
    title: str | None = None,
    max_side: int | None = MAX_SIDE,
    width: int = DETAIL_WIDTH,
) -> go.Figure:
    """Heatmap of one head's ``diff`` [query_pos, key_pos] (a variant's weights minus float32's)
    on a diverging scale centred at 0 and symmetric over the largest |Δ|. Query 0 on top.
    ``labels`` are the token labels, one per position.

    ``title`` is shown as given (escape user text with ``safe_label``). ``layout.meta`` holds
    ``largest`` (the largest |Δ|), ``block`` (pooling) and ``n_pos``.
    """
    n = len(labels)
    m = square_matrix(diff, n)
    largest = float(np.abs(m).max()) if np.isfinite(m).all() else symmetric_range(m)
    scale = SymmetricScale(largest if largest > 0 else 1e-6, False, largest)
    block = pool_plan(n, max_side)
    z = signed_absmax_pool_2d(m, block)
    names = block_labels(labels, block)
    ticks = scale.colorbar_ticks()
    r = colorbar_px(ticks["ticktext"])
    value = (
        tr("change of weight")
        if block == 1
        else tr("largest change of weight in a block of {b}×{b}", b=block)
    )
    hover = tr("query token %{y}<br>key token %{x}<br>") + value + " %{z:.3g}"
    trace: dict[str, Any] = {
        "type": "heatmap",
        "name": tr("Δ weight"),
        "z": np.ascontiguousarray(z, dtype=np.float32),
        "x": names,
        "y": names,
        "hovertemplate": hover + "<extra></extra>",
        "colorbar": colorbar(tr("Δ weight"), ticks=ticks),
        **scale.colors(),
    }
    layout = square_token_layout(
        labels, width=width, colorbar_px=r, block=block, title=title, min_plot_px=MIN_PLOT_PX
    )
    layout["meta"]["largest"] = largest
    return go.Figure({"data": [trace], "layout": layout})


def cost_bars(
    names: Sequence[str],
    forward_ms: Sequence[float],
    weight_mb: Sequence[float],
    *,
    quartiles_ms: Sequence[tuple[float, float]] | None = None,
    width: int = FULL_WIDTH,
    titles: tuple[str, str] | None = None,
    title: str | None = None,
) -> go.Figure:
    """Two horizontal bar charts side by side: each variant's forward time (ms) and weight size
    (MB), one row per variant in the order given (the first on top). ``names`` are shown as
    given. ``quartiles_ms``: each time's (q1, q3), drawn as error bars on the time bars.
    ``titles`` (the two charts' axis titles) and ``title`` replace the defaults, as given (the
    Train page draws a training update's time and peak memory with it)."""
    ms, mb, spread = _check_costs(names, forward_ms, weight_mb, quartiles_ms)
    k = len(names)
    labels = [str(n) for n in names]
    titles = titles or (tr("forward time (ms)"), tr("weights (MB)"))
    half = (1 - 0.1) / 2  # the two charts' widths, a gap of 0.1 between them
    rows = {
        "tickmode": "array",
        "tickvals": list(range(k)),
        "range": [k - 0.5, -0.5],
        "tickfont": {"size": BAR_FONT_PX},
        "ticks": "",
    }
    layout = base_layout(
        BAR_ROW_PX * k,
        width=width,
        left=math.ceil(max(text_px(t, BAR_FONT_PX) for t in labels)) + 12,
        right=40,
        top=TOP_TITLE_PX,
        bottom=x_numeric_margin(),
        title=title or tr("Time and size of each variant"),
        meta={"names": labels},
        xaxis={
            "domain": [0, half],
            "title": axis_title(titles[0]),
            "range": [
                0,
                float(ms.max() if spread is None else max(ms.max(), spread[:, 1].max())) * 1.25 or 1,
            ],
        },
        xaxis2={
            "domain": [1 - half, 1],
            "title": axis_title(titles[1]),
            "anchor": "y2",
            "range": [0, float(mb.max()) * 1.25 or 1],
        },
        yaxis={**rows, "ticktext": labels},
        yaxis2={**rows, "anchor": "x2", "ticktext": [""] * k},
        bargap=0.3,
    )
    # this chart keeps the axis pad of Streamlit's theme (base_layout's pad 0 would move its axes)
    del layout["margin"]["pad"]
    traces = [_cost_row_bars(labels, ms, titles[0], 0), _cost_row_bars(labels, mb, titles[1], 1)]
    if spread is not None:
        _add_spread(traces[0], labels, ms, spread, titles[0])
    return go.Figure({"data": traces, "layout": layout})


def _check_costs(
    names: Sequence[str],
    forward_ms: Sequence[float],
    weight_mb: Sequence[float],
    quartiles_ms: Sequence[tuple[float, float]] | None,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64] | None]:
    """The times and sizes as float64 [variant] and the quartiles as [variant, 2] (None when not
    given), checked: one of each per name, each (q1, q3) around its time."""
    k = len(names)
    if k == 0 or len(forward_ms) != k or len(weight_mb) != k:
        raise ValueError(
            f"{k} names, {len(forward_ms)} times and {len(weight_mb)} sizes: one of each per variant"
        )
    ms = np.asarray(forward_ms, dtype=np.float64)
    mb = np.asarray(weight_mb, dtype=np.float64)
    if quartiles_ms is None:
        return ms, mb, None
    q = np.asarray(quartiles_ms, dtype=np.float64).reshape(-1, 2) if len(quartiles_ms) else np.zeros((0, 2))
    if q.shape != (k, 2) or np.any(q[:, 0] > ms) or np.any(q[:, 1] < ms):
        raise ValueError(f"quartiles_ms needs one (q1, q3) around each of the {k} times, got {q.tolist()}")
    return ms, mb, q


def _cost_row_bars(labels: list[str], values: npt.NDArray[np.float64], unit: str, i: int) -> dict[str, Any]:
    """The ``i``-th chart's horizontal bars (on axes ``x``/``y``, then ``x2``/``y2``), one per
    variant, each labelled with its value (one decimal), in the ``i``-th bar color."""
    suffix = "" if i == 0 else "2"
    return {
        "type": "bar",
        "orientation": "h",
        "y": list(range(len(labels))),
        "x": values,
        "xaxis": "x" + suffix,
        "yaxis": "y" + suffix,
        "marker": {"color": BAR_COLORS[i]},
        "text": [format(v, ".1f") for v in values],
        "textposition": "outside",
        "cliponaxis": False,
        "customdata": labels,
        "hovertemplate": "%{customdata}<br>" + unit + " %{x:.1f}<extra></extra>",
        "showlegend": False,
        "name": unit,
    }


def _add_spread(
    bars: dict[str, Any],
    labels: list[str],
    ms: npt.NDArray[np.float64],
    spread: npt.NDArray[np.float64],
    unit: str,
) -> None:
    """The time bars' error bars from q1 to q3, and the quartiles in their hover."""
    bars["error_x"] = {
        "type": "data",
        "symmetric": False,
        "arrayminus": ms - spread[:, 0],
        "array": spread[:, 1] - ms,
        "color": INK,
        "thickness": 1.5,
        "width": 6,
    }
    bars["customdata"] = [[n, f"{a:.1f}–{b:.1f}"] for n, (a, b) in zip(labels, spread, strict=True)]
    bars["hovertemplate"] = "%{customdata[0]}<br>" + unit + " %{x:.1f} (%{customdata[1]})<extra></extra>"


def head_change_map(
    values: npt.ArrayLike,
    name: str,
    *,
    selected: tuple[int, int] | None = None,
    percent: bool = False,
    bar_title: str | None = None,
    width: int = DETAIL_WIDTH,
) -> go.Figure:
    """Heatmap of ``values`` [layer, head_index] (how much each head moved), colored from 0 to
    the largest value so that small changes still show; each cell carries its value, the
    ``selected`` (layer, head) is outlined. ``name`` names the value in the hover and titles
    the colorbar where a map up to MAP_TITLE_MAX_PX tall holds it; ``bar_title`` (shorter)
    titles it otherwise (a shortened name beside the longer one on the page reads as cut).
    Both are shown as given.
    ``percent``: the values are percentages."""
    a = as_float32(values, 2, "values", "[layer, head_index]")
    n_layers, n_heads = a.shape
    if a.size == 0:
        raise ValueError(f"values has shape {tuple(a.shape)}: no heads")
    top = float(np.nanmax(a)) if np.isfinite(a).any() else 0.0
    unit = "%" if percent else ""
    cells = [[_cell(float(v), percent) for v in row] for row in a]
    r = colorbar_px([_cell(top, percent) or "0"])
    cell_w = (width - 60 - r) / n_heads
    title = _bar_title(name, bar_title)
    # at least MAP_MIN_PX tall and as tall as the colorbar's title, which then fits beside a
    # model of 1-3 layers
    title_px = text_px(title, COLORBAR_TITLE_FONT)
    cell_h = float(max(min(40, max(24, cell_w * 0.6)), max(MAP_MIN_PX, title_px) / n_layers))
    hover = tr("layer {layer}, head {head}", layer="%{y}", head="%{x}")
    heat: dict[str, Any] = {
        "type": "heatmap",
        "name": name,
        "z": a,
        "zmin": 0.0,
        "zmax": top if top > 0 else 1.0,
        "colorscale": SEQUENTIAL,
        "xgap": 1,
        "ygap": 1,
        "hovertemplate": hover + "<br>" + name + " %{z:.3g}" + unit + "<extra></extra>",
        "colorbar": colorbar(title),
    }
    if cell_w >= CELL_TEXT_MIN_PX:
        heat.update(text=cells, texttemplate="%{text}", textfont={"size": 11})
    shapes = []
    if selected is not None:
        layer, head = selected
        if not (0 <= layer < n_layers and 0 <= head < n_heads):
            raise ValueError(f"selected head {selected} is outside values of shape {tuple(a.shape)}")
        shapes.append(
            {
                "type": "rect",
                "x0": head - 0.5,
                "x1": head + 0.5,
                "y0": layer - 0.5,
                "y1": layer + 0.5,
                "line": {"color": HIGHLIGHT, "width": 3},
            }
        )
    index = {"tickmode": "array", "ticks": "", "showgrid": False, "zeroline": False, "tickfont": {"size": 13}}
    layout = base_layout(
        math.ceil(n_layers * cell_h),
        width=width,
        left=60,
        right=r,
        top=TOP_BARE_PX,
        bottom=x_numeric_margin(),
        meta={"largest": top, "text_shown": cell_w >= CELL_TEXT_MIN_PX},
        xaxis={**index, "title": axis_title(tr("head")), "tickvals": list(range(n_heads)),
               "range": [-0.5, n_heads - 0.5]},
        yaxis={**index, "title": axis_title(tr("layer")), "tickvals": list(range(n_layers)),
               "range": [n_layers - 0.5, -0.5]},
        shapes=shapes,
    )  # fmt: skip
    return go.Figure({"data": [heat], "layout": layout})


def _bar_title(name: str, short: str | None) -> str:
    """The colorbar's title: ``name`` when a map at most MAP_TITLE_MAX_PX tall can hold it,
    else ``short``."""
    if short is None or text_px(name, COLORBAR_TITLE_FONT) <= MAP_TITLE_MAX_PX:
        return name
    return short


def _cell(v: float, percent: bool) -> str:
    if not np.isfinite(v):
        return ""
    if v == 0:
        return "0"
    if percent:
        return f"{v:.0f}" if v >= 10 else f"{v:.1f}"
    return f"{v:.2g}" if v >= 1e-3 else f"{v:.0e}"
