r"""Figures for positional encodings (plotly + numpy only, no streamlit, no torch).

Every builder takes numpy arrays (float32 is enough; they are sent to the browser as float32,
which plotly encodes in binary) and returns a ``go.Figure``; the same input always gives the
same figure. Shapes are checked up front and a wrong one raises ``ValueError`` naming it.

The encoding shown is usually the sinusoidal one,
:math:`PE_{(pos,2i)} = \sin(pos/10000^{2i/d})`, :math:`PE_{(pos,2i+1)} = \cos(pos/10000^{2i/d})`,
but every figure except the wavelength legend of :func:`pe_waves` works for a learned table too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from ..i18n import tr
from .attention import KEY_TITLE, QUERY_TITLE, pooled_note, weight_ticks
from .checks import Float32Array, as_float32, check_tokens
from .colors import SymmetricScale, pattern_colorscale, robust_symmetric, symmetric_range
from .labels import (
    TokenAxis,
    axis_title,
    block_labels,
    numeric_axis_margin,
    text_px,
    tick_step,
    token_axis,
    x_numeric_margin,
)
from .layout import (
    EDGE_PX,
    FULL_WIDTH,
    HALF_WIDTH,
    PANEL_GAP_PX,
    PANEL_VGAP_PX,
    TOP_PANEL_TITLE_PX,
    TOP_TITLE_PX,
    Domain,
    base_layout,
    colorbar,
    colorbar_px,
    figure_title,
    fit_side,
    panel_cols,
    panel_title,
    px_domain,
)
from .pooling import MAX_SIDE, max_pool_2d, pool_plan, signed_absmax_pool_2d

__all__ = [
    "attention_diff_figure",
    "pe_matrix_heatmap",
    "pe_offset_figure",
    "pe_similarity_heatmap",
    "pe_waves",
    "shift_matrix_figure",
]

POSITION_TITLE = "position"
# Margins of the plots with plain integer axes (positions, dimensions: up to 4 digits).
NUMERIC_LEFT = numeric_axis_margin("0000", font=12)
NUMERIC_BOTTOM = x_numeric_margin(font=12)
# The colorbar beside a square matrix, wide enough for labels like "\u22120.25" or "\u22121000".
SQUARE_BAR_PX = colorbar_px(["\u22120.25"])
# Tallest plot area of the encoding table (rows are positions).
TABLE_MAX_PX = 560
TABLE_MIN_PX = 300
# pe_waves: one row per dimension, this tall, this far apart.
WAVE_ROW_PX = 84
WAVE_ROW_GAP_PX = 22
WAVE_LABEL_FONT = 13
# pe_waves draws a dot at every position up to this many positions.
WAVE_MARKERS_UP_TO = 64


def _matrix(name: str, x: npt.ArrayLike, what: str) -> Float32Array:
    a = as_float32(x, 2, name, what)
    if 0 in a.shape:
        raise ValueError(f"{name} must be a non-empty 2-D array {what}, got shape {a.shape}")
    return a


def _int_axis(title: str, *, font: int = 12) -> dict[str, Any]:
    return {
        "title": axis_title(title),
        "tickfont": {"size": font},
        "ticks": "",
        "showgrid": False,
        "zeroline": False,
        "automargin": True,
    }


def _square_diverging(
    z: Float32Array,
    positions: npt.NDArray[np.int32],
    *,
    colorbar_title: str,
    hovertemplate: str,
    title: str,
    x_title: str,
    y_title: str,
    width: int,
    dtick: int | None = None,
) -> go.Figure:
    """A square matrix on integer axes, row 0 on top, diverging colors symmetric around 0,
    filling a column ``width`` px wide with its colorbar beside it, as tall as the plot."""
    scale = SymmetricScale(symmetric_range(z), False, symmetric_range(z))
    ticks = scale.colorbar_ticks()
    # a colorbar width that does not depend on the values: the height is known up front
    r = SQUARE_BAR_PX
    side = width - NUMERIC_LEFT - r
    heat = {
        "type": "heatmap",
        "z": z,
        "x": positions,
        "y": positions,
        **scale.colors(),
        "colorbar": colorbar(colorbar_title, ticks=ticks),
        "hovertemplate": hovertemplate,
    }
    x_axis = _int_axis(x_title)
    y_axis = _int_axis(y_title)
    if dtick is not None:
        x_axis.update(dtick=dtick, tick0=0)
        y_axis.update(dtick=dtick, tick0=0)
    layout = base_layout(
        side,
        width=width,
        left=NUMERIC_LEFT,
        right=r,
        top=TOP_TITLE_PX,
        bottom=NUMERIC_BOTTOM,
        title=title,
        meta={"plot_px": side, "color": scale.meta()},
        xaxis={**x_axis, "constrain": "domain"},
        yaxis={**y_axis, "autorange": "reversed", "scaleanchor": "x", "constrain": "domain"},
    )
    return go.Figure({"data": [heat], "layout": layout})


def pe_matrix_heatmap(pe: npt.ArrayLike, *, max_len: int | None = None, width: int = FULL_WIDTH) -> go.Figure:
    """The encoding table as a heatmap: rows are positions, columns the d_model dimensions.

    ``pe``: [pos, d_model]. Diverging colors centred at 0, symmetric over the values, or over
    the 99th percentile of their magnitudes when a few outliers are more than 1.5 times larger
    (a learned table such as MiniLM's: its first rows would otherwise stretch the scale until
    the rest looks blank). The colorbar's ends then read "\u2264"/"\u2265" and
    ``layout.meta["color"]`` holds the limit, whether it clips and the rule, for a caption. If
    ``max_len`` (the positions the model was trained on) is given and the table is longer, a
    dashed line marks where the trained positions end. Fills a column ``width`` px wide.
    """
    z = _matrix("pe", pe, "[pos, d_model]")
    n_pos, d_model = z.shape
    if max_len is not None and max_len < 1:
        raise ValueError(f"max_len={max_len} must be >= 1")
    scale = robust_symmetric(z)
    ticks = scale.colorbar_ticks()
    plot_h = int(min(TABLE_MAX_PX, max(TABLE_MIN_PX, n_pos)))
    heat = {
        "type": "heatmap",
        "z": z,
        "x": np.arange(d_model, dtype=np.int32),
        "y": np.arange(n_pos, dtype=np.int32),
        **scale.colors(),
        "colorbar": colorbar(tr("PE value"), ticks=ticks),
        "hovertemplate": tr("position %{y}<br>dimension %{x}<br>PE %{z:.3f}") + "<extra></extra>",
    }
    layout = base_layout(
        plot_h,
        width=width,
        left=NUMERIC_LEFT,
        right=colorbar_px(ticks["ticktext"]),
        top=TOP_TITLE_PX,
        bottom=NUMERIC_BOTTOM,
        title=tr(
            "Positional encoding: {n_pos} positions \u00d7 {d_model} dimensions", n_pos=n_pos, d_model=d_model
        ),
        meta={"n_pos": n_pos, "d_model": d_model, "color": scale.meta()},
        xaxis=_int_axis(tr("dimension of the encoding (d_model = {d_model})", d_model=d_model)),
        yaxis={**_int_axis(tr(POSITION_TITLE)), "autorange": "reversed"},
    )
    fig = go.Figure({"data": [heat], "layout": layout})
    if max_len is not None and n_pos > max_len:
        fig.add_hline(
            y=max_len - 0.5,
            line={"color": "black", "dash": "dash", "width": 2},
            annotation_text=tr("trained positions end (max_len={max_len})", max_len=max_len),
            annotation_position="bottom right",
            annotation_bgcolor="rgba(255, 255, 255, 0.85)",
            annotation_font={"size": 13},
        )
    return fig


def _wavelength(dim: int, d_model: int, base: float) -> float:
    # Dims 2i and 2i+1 share omega_i = base^(-2i/d_model); one period spans 2*pi/omega_i positions.
    two_i = dim - dim % 2
    return 2 * math.pi * float(base ** (two_i / d_model))


def _format_positions(x: float) -> str:
    return f"{x:.3g}" if x < 100 else f"{x:,.0f}"


def _chosen_dims(dims: Sequence[int], shape: tuple[int, ...]) -> list[int]:
    """The dimensions to draw, each once in the order given, all within d_model."""
    d_model = shape[1]
    dims = [int(d) for d in dims]
    if not dims:
        raise ValueError("dims is empty: choose at least one d_model dimension")
    bad = [d for d in dims if not 0 <= d < d_model]
    if bad:
        raise ValueError(f"dims {bad} outside 0..{d_model - 1} for pe of shape {shape}")
    return list(dict.fromkeys(dims))  # unique, order kept


def _wave_names(
    chosen: Sequence[int], d_model: int, *, sinusoidal: bool, base: float
) -> list[tuple[str, str]]:
    """Per dimension: its trace name and its row label (with ``sinusoidal``, the function and
    the wavelength in positions)."""
    out = []
    for d in chosen:
        if sinusoidal:
            fn = "sin" if d % 2 == 0 else "cos"
            wl = _format_positions(_wavelength(d, d_model, base))
            out.append(
                (
                    tr("dim {d} ({fn}, wavelength {wl})", d=d, fn=fn, wl=wl),
                    tr("dim {d} ({fn})<br>wavelength {wl}", d=d, fn=fn, wl=wl),
                )
            )
        else:
            out.append((tr("dim {d}", d=d), tr("dim {d}", d=d)))
    return out


def _wave_axes(
    i: int, rows: int, yd: Sequence[float], xd: Sequence[float], *, n_pos: int, limit: float
) -> dict[str, Any]:
    """Row ``i``'s position axis (labelled on the last row only, zooming with the first) and
    its value axis over -limit..limit."""
    sx = "" if i == 0 else str(i + 1)
    x_axis: dict[str, Any] = {
        **_int_axis(tr(POSITION_TITLE) if i == rows - 1 else ""),
        "domain": xd,
        "anchor": f"y{sx}",
        "showticklabels": i == rows - 1,
        "showgrid": True,
        "range": [-0.5, n_pos - 0.5],
    }
    if i:
        x_axis["matches"] = "x"
    y_axis = {
        "domain": yd,
        "anchor": f"x{sx}",
        "range": [-1.15 * limit, 1.15 * limit],
        "tickmode": "array",
        "tickvals": [-limit, 0.0, limit],
        "ticktext": [f"\u2212{limit:.2g}", "0", f"{limit:.2g}"],
        "tickfont": {"size": 12},
        "zeroline": True,
        "showgrid": False,
        "fixedrange": True,
    }
    return {f"xaxis{sx}": x_axis, f"yaxis{sx}": y_axis}


def _row_label(text: str, yd: Sequence[float], tick_px: float) -> dict[str, Any]:
    """A row's label, right-aligned left of its value ticks, centred on the row."""
    return {
        "text": text,
        "x": 0,
        "y": (yd[0] + yd[1]) / 2,
        "xref": "paper",
        "yref": "paper",
        "xanchor": "right",
        "yanchor": "middle",
        "xshift": -tick_px,
        "align": "right",
        "showarrow": False,
        "font": {"size": WAVE_LABEL_FONT},
    }


def pe_waves(
    pe: npt.ArrayLike,
    dims: Sequence[int],
    *,
    sinusoidal: bool = True,
    base: float = 10000.0,
    width: int = FULL_WIDTH,
) -> go.Figure:
    """PE[:, d] against position, one row per chosen d_model dimension (small multiples).

    ``pe``: [pos, d_model]; ``dims``: dimension indices (a repeat is drawn once). Each
    dimension gets its own row with its own y axis (-1..1 for the sinusoidal encoding; for a
    learned table symmetric over that dimension's values), all rows sharing the position axis,
    so waves of similar wavelength are compared row under row instead of drawn over each
    other. Up to 64 positions every position is a dot on the line (the encoding exists at whole
    positions only). With ``sinusoidal`` (the default) each row is labelled with its function
    and wavelength in positions, ``2*pi*base**(2i/d_model)`` for dims 2i (sin) and 2i+1 (cos);
    pass ``sinusoidal=False`` for a learned table. Trace names say the same (hover, legend).
    """
    z = _matrix("pe", pe, "[pos, d_model]")
    n_pos, d_model = z.shape
    chosen = _chosen_dims(dims, z.shape)
    names = _wave_names(chosen, d_model, sinusoidal=sinusoidal, base=base)
    rows = len(chosen)
    label_px = max(text_px(t, WAVE_LABEL_FONT) for _, label in names for t in label.split("<br>"))
    tick_px = text_px("\u22120.00", 12) + 8
    left = math.ceil(label_px + tick_px + 16)
    plot_h = rows * WAVE_ROW_PX + (rows - 1) * WAVE_ROW_GAP_PX
    layout = base_layout(
        plot_h,
        width=width,
        left=left,
        right=EDGE_PX,
        top=TOP_TITLE_PX,
        bottom=NUMERIC_BOTTOM,
        title=tr("Positional encoding, one row per dimension"),
        meta={"dims": chosen, "n_pos": n_pos},
        annotations=[],
        showlegend=False,
    )
    paper_w = width - left - EDGE_PX
    mode = "lines+markers" if n_pos <= WAVE_MARKERS_UP_TO else "lines"
    hover = tr("position %{x}<br>PE %{y:.3f}")
    x = np.arange(n_pos, dtype=np.int32)
    data: list[dict[str, Any]] = []
    for i, (d, (name, row_label)) in enumerate(zip(chosen, names, strict=True)):
        sx = "" if i == 0 else str(i + 1)
        y0 = i * (WAVE_ROW_PX + WAVE_ROW_GAP_PX)
        xd, yd = px_domain(0, paper_w, y0, y0 + WAVE_ROW_PX, paper_w, plot_h)
        col = z[:, d]
        data.append(
            {
                "type": "scatter",
                "x": x,
                "y": np.ascontiguousarray(col),
                "mode": mode,
                "name": name,
                "marker": {"size": 5},
                "line": {"width": 2},
                "xaxis": f"x{sx}",
                "yaxis": f"y{sx}",
                "hovertemplate": hover + "<extra>" + name + "</extra>",
            }
        )
        limit = 1.0 if sinusoidal else symmetric_range(col)
        layout.update(_wave_axes(i, rows, yd, xd, n_pos=n_pos, limit=limit))
        layout["annotations"].append(_row_label(row_label, yd, tick_px))
    return go.Figure({"data": data, "layout": layout})


def pe_similarity_heatmap(
    pe: npt.ArrayLike, *, width: int = HALF_WIDTH, max_side: int = MAX_SIDE
) -> go.Figure:
    r"""Dot products between positions, :math:`PE \, PE^\top` [pos, pos].

    For the sinusoidal encoding :math:`PE_i \cdot PE_j = \sum_k \cos(\omega_k (j - i))`
    depends on j - i only, so every diagonal is constant (a Toeplitz matrix). Diverging colors
    centred at 0, symmetric over the values. Square, filling a column ``width`` px wide
    (default: half the main area, ~460 px), colorbar beside it. Above ``max_side`` positions
    every s-th position is shown (exact values; the hover names the true positions;
    ``layout.meta["stride"]``).
    """
    x = _matrix("pe", pe, "[pos, d_model]").astype(np.float64)
    stride = max(1, math.ceil(x.shape[0] / max_side))
    x = x[::stride]
    z = (x @ x.T).astype(np.float32)  # [pos, pos]
    positions = np.arange(0, z.shape[0] * stride, stride, dtype=np.int32)
    fig = _square_diverging(
        z,
        positions,
        colorbar_title="PE\u00b7PE",
        hovertemplate=tr("positions %{y} and %{x}<br>PE\u00b7PE %{z:.3f}") + "<extra></extra>",
        title=tr("Similarity of positions, PE\u00b7PE\u1d40"),
        x_title=tr(POSITION_TITLE),
        y_title=tr(POSITION_TITLE),
        width=width,
    )
    fig.layout.meta = {**fig.layout.meta, "stride": stride}
    return fig


def similarity_height(width: int = HALF_WIDTH) -> int:
    """Height of :func:`pe_similarity_heatmap` at ``width``: its neighbour matches it."""
    return (width - NUMERIC_LEFT - SQUARE_BAR_PX) + TOP_TITLE_PX + NUMERIC_BOTTOM


def pe_offset_figure(
    offsets: npt.ArrayLike,
    mean: npt.ArrayLike,
    std: npt.ArrayLike,
    *,
    width: int = HALF_WIDTH,
    height: int | None = None,
) -> go.Figure:
    r"""Similarity :math:`PE_i \cdot PE_{i+k}` against the offset k, with a ±std band.

    Takes the output of :func:`tformer.analysis.metrics.offset_similarity`; three 1-D arrays of one
    length. A band of width ~0 shows the similarity depends on k alone, not on i. Sized for a
    column ``width`` px wide (default ~460, beside :func:`pe_similarity_heatmap`), as tall as
    that figure unless ``height`` is given.
    """
    k = np.asarray(offsets)
    mu = np.asarray(mean, dtype=np.float32)
    sd = np.asarray(std, dtype=np.float32)
    if not (k.ndim == mu.ndim == sd.ndim == 1) or not (k.shape == mu.shape == sd.shape):
        raise ValueError(
            f"offsets, mean, std must be 1-D of one length, got shapes {k.shape}, {mu.shape}, {sd.shape}"
        )
    if k.size == 0:
        raise ValueError("offsets is empty")
    k = k.astype(np.int32) if np.issubdtype(k.dtype, np.integer) else k.astype(np.float32)
    fig = go.Figure(
        [
            go.Scatter(x=k, y=mu + sd, mode="lines", line={"width": 0}, showlegend=False, hoverinfo="skip"),
            go.Scatter(
                x=k,
                y=mu - sd,
                mode="lines",
                line={"width": 0},
                fill="tonexty",
                fillcolor="rgba(31, 119, 180, 0.25)",
                name=tr("\u00b1 std over positions"),
                hoverinfo="skip",
            ),
            go.Scatter(
                x=k,
                y=mu,
                mode="lines",
                line={"color": "rgb(31, 119, 180)", "width": 2.5},
                name=tr("mean over positions"),
                customdata=sd,
                hovertemplate=tr("offset %{x}<br>mean %{y:.4f}<br>std %{customdata:.2e}") + "<extra></extra>",
            ),
        ]
    )
    fig.update_layout(
        title=figure_title(tr("PE[p]\u00b7PE[p+k] depends on k only")),
        xaxis=_int_axis(tr("offset k (positions)")),
        yaxis={**_int_axis("PE[p]\u00b7PE[p+k]"), "showgrid": True},
        height=height if height is not None else similarity_height(width),
        margin={"l": NUMERIC_LEFT, "r": EDGE_PX, "t": TOP_TITLE_PX, "b": NUMERIC_BOTTOM + 34, "pad": 0},
        legend={
            "orientation": "h",
            "x": 0,
            "y": 0,
            "yref": "container",
            "yanchor": "bottom",
            "font": {"size": 13},
        },
        meta={"width": width},
    )
    return fig


def shift_matrix_figure(m: npt.ArrayLike, *, k: int | None = None, width: int = FULL_WIDTH) -> go.Figure:
    r"""Shift matrix ``m`` = :math:`M_k` [d_model, d_model]: :math:`PE_{pos+k} = M_k PE_{pos}`.

    For the sinusoidal encoding it is block-diagonal: one 2×2 rotation per (sin, cos) pair.
    Rows are output dimensions, columns input dimensions. ``k``, when given, is named in the
    title. Diverging colors centred at 0, symmetric over the values. Square, filling a column
    ``width`` px wide (default 940; pass ~460 to put it beside something), colorbar beside it.
    """
    z = _matrix("M", m, "[d_model, d_model]")
    if z.shape[0] != z.shape[1]:
        raise ValueError(f"M must be square [d_model, d_model], got shape {z.shape}")
    title = tr("Shift matrix M")
    if k is not None:
        title = tr("Shift matrix M_k for k={k}: PE[p+{k}] = M_k PE[p]", k=k)
    d = z.shape[0]
    return _square_diverging(
        z,
        np.arange(d, dtype=np.int32),
        colorbar_title=tr("M value"),
        hovertemplate=tr("row %{y}, column %{x}") + "<br>%{z:.4f}<extra></extra>",
        title=title,
        x_title=tr("dimension of PE[p] (input)"),
        y_title=tr("dimension of PE[p+k] (output)"),
        width=width,
        dtick=2 if d <= 64 else None,
    )


# attention_diff_figure: which panel goes where for 3, 2 or 1 columns (row, column).
_DIFF_CELLS = {3: [(0, 0), (0, 1), (0, 2)], 2: [(0, 0), (0, 1), (1, 0)], 1: [(0, 0), (1, 0), (2, 0)]}
# Panels are at least this wide (three in a row only in a column wider than the main area),
# and beyond 64 tokens at least DIFF_LONG_PANEL_PX (two per row).
DIFF_MIN_PANEL_PX = 280
DIFF_LONG_PANEL_PX = 360


@dataclass(frozen=True)
class _DiffPlan:
    """Where attention_diff_figure's panels go: ``cols`` square panels of ``side`` px a row,
    the x offset of each column and the gap between rows (px), the plot area's size and right
    margin (px), and the token axes planned for that side."""

    cols: int
    side: int
    col_x: list[float]
    vgap: float
    paper_w: float
    plot_h: float
    right: int
    x_axis: TokenAxis
    y_axis: TokenAxis


def _diff_pair(
    with_pe: npt.ArrayLike, without_pe: npt.ArrayLike, labels: Sequence[object]
) -> tuple[Float32Array, Float32Array]:
    """The two patterns as float32 [query_pos, key_pos] of one square shape, one label a token."""
    a = _matrix("with_pe", with_pe, "[query_pos, key_pos]")
    b = _matrix("without_pe", without_pe, "[query_pos, key_pos]")
    if a.shape != b.shape:
        raise ValueError(f"with_pe has shape {a.shape} but without_pe has shape {b.shape}")
    if a.shape[0] != a.shape[1]:
        raise ValueError(f"with_pe must be square [query_pos, key_pos], got shape {a.shape}")
    check_tokens(labels, a.shape[0], "with_pe", a.shape)
    return a, b


def _diff_panels(
    a: Float32Array, b: Float32Array, diff: Float32Array, block: int
) -> list[tuple[npt.NDArray[np.floating], str, str]]:
    """Per panel (with, without, difference): the pooled matrix, its color axis and the
    hover's name of its values."""
    weight, delta = tr("weight"), tr("\u0394 weight")
    if block > 1:  # the hover's value name
        weight = tr("weight (largest in block of {block}x{block})", block=block)
        delta = tr("\u0394 weight (largest in block of {block}x{block})", block=block)
    return [
        (max_pool_2d(a, block), "coloraxis", weight),
        (max_pool_2d(b, block), "coloraxis", weight),
        (signed_absmax_pool_2d(diff, block), "coloraxis2", delta),
    ]


def _diff_cols(n: int, width: int, bar_w: int, bar_d: int) -> int:
    """Three panels a row when each still gets its room beside both colorbars, else two
    (both bars then share the right margin), else one."""
    cols = panel_cols(
        n, 3, width - 90 - bar_w - bar_d, max_cols=3, long_side=DIFF_LONG_PANEL_PX, min_side=DIFF_MIN_PANEL_PX
    )
    if cols < 3:  # both bars sit in the right margin, one beside each row's last panel
        cols = panel_cols(
            n,
            3,
            width - 90 - max(bar_w, bar_d),
            max_cols=2,
            long_side=DIFF_LONG_PANEL_PX,
            min_side=DIFF_MIN_PANEL_PX,
        )
    return cols


def _diff_plan(labels: Sequence[object], block: int, *, width: int, bar_w: int, bar_d: int) -> _DiffPlan:
    """The panels' grid, their side (the labels' margin depends on the side, the side on the
    margin) and the token axes, for a column ``width`` px wide with colorbars ``bar_w`` (the
    weights) and ``bar_d`` (the difference) px wide."""
    cols = _diff_cols(len(labels), width, bar_w, bar_d)
    rows = 1 + max(r for r, _ in _DIFF_CELLS[cols])
    # x of each column's left edge within the plot area (px), given the panel side
    gaps = [0.0, PANEL_GAP_PX, bar_w + PANEL_GAP_PX] if cols == 3 else [0.0, PANEL_GAP_PX]
    right = bar_d if cols == 3 else max(bar_w, bar_d)
    note = pooled_note(block)
    plan: list[tuple[TokenAxis, TokenAxis]] = []

    def available(side: float) -> float:
        step = tick_step(labels, [("x", side), ("y", side)], block=block, edges=cols == 1)
        plan.append(
            (
                token_axis(
                    labels, side, "x", step=step, block=block, title=tr(KEY_TITLE) + note, edges=cols == 1
                ),
                token_axis(labels, side, "y", step=step, block=block, title=tr(QUERY_TITLE) + note),
            )
        )
        return (width - plan[-1][1].margin - right - sum(gaps[1:cols])) / cols

    side = int(fit_side(available, (width - 90 - right - sum(gaps[1:cols])) / cols))
    x_axis, y_axis = plan[-1]
    # two columns: "without PE" shows its x labels above the empty cell beside the difference;
    # the rows stay that far apart, so the difference's colorbar keeps clear of them
    vgap = max(PANEL_VGAP_PX, x_axis.margin + TOP_PANEL_TITLE_PX) if cols == 2 else PANEL_VGAP_PX
    return _DiffPlan(
        cols=cols,
        side=side,
        col_x=[c * side + sum(gaps[1 : c + 1]) for c in range(cols)],
        vgap=vgap,
        paper_w=cols * side + sum(gaps[1:cols]),
        plot_h=rows * side + (rows - 1) * vgap,
        right=right,
        x_axis=x_axis,
        y_axis=y_axis,
    )


def _diff_heatmaps(
    panels: Sequence[tuple[npt.NDArray[np.floating], str, str]], names: list[str], plan: _DiffPlan
) -> tuple[list[dict[str, Any]], dict[str, Any], list[Domain]]:
    """One heatmap a panel on its own axes (``names``: the category names of the rows and
    columns), the axes (x labels under the lowest panel of each column, y labels left of the
    first column, all zooming together) and the panels' domains."""
    cells = _DIFF_CELLS[plan.cols]
    side = plan.side
    hover = tr("query token %{y}<br>key token %{x}<br>")
    data: list[dict[str, Any]] = []
    axes: dict[str, Any] = {}
    domains = []
    for i, ((z, coloraxis, value), (row, col)) in enumerate(zip(panels, cells, strict=True)):
        sx = "" if i == 0 else str(i + 1)
        y0 = row * (side + plan.vgap)
        x0 = plan.col_x[col]
        xd, yd = px_domain(x0, x0 + side, y0, y0 + side, plan.paper_w, plan.plot_h)
        domains.append((xd, yd))
        data.append({
            "type": "heatmap", "z": np.ascontiguousarray(z, dtype=np.float32),
            "x": names, "y": names, "coloraxis": coloraxis,
            "xaxis": f"x{sx}", "yaxis": f"y{sx}",
            "hovertemplate": hover + value + " %{z:.4f}<extra></extra>",
        })  # fmt: skip
        lowest = all(r <= row for r, c in cells if c == col)
        axes[f"xaxis{sx}"] = {**plan.x_axis.props, "domain": xd, "anchor": f"y{sx}", "showticklabels": lowest}
        if not lowest:
            axes[f"xaxis{sx}"]["title"] = None
        axes[f"yaxis{sx}"] = {**plan.y_axis.props, "domain": yd, "anchor": f"x{sx}", "autorange": "reversed"}
        if col:
            axes[f"yaxis{sx}"].update(showticklabels=False, title=None)
        if i:  # the same rows and columns in every panel: zoom together
            axes[f"xaxis{sx}"]["matches"] = "x"
            axes[f"yaxis{sx}"]["matches"] = "y"
    return data, axes, domains


def _diff_coloraxes(
    domains: Sequence[Domain], diff_scale: SymmetricScale, w_ticks: dict[str, Any], d_ticks: dict[str, Any]
) -> dict[str, Any]:
    """The weights' fixed 0..1 color axis with its bar beside "without PE", the difference's
    diverging one with its bar beside the difference."""

    def beside(i: int) -> dict[str, float]:
        xd, yd = domains[i]
        return {"x": xd[1], "y": (yd[0] + yd[1]) / 2, "length": yd[1] - yd[0]}

    return {
        "coloraxis": {
            "colorscale": pattern_colorscale(),
            "cmin": 0.0,
            "cmax": 1.0,
            "colorbar": colorbar(tr("weight"), ticks=w_ticks, **beside(1)),
        },
        "coloraxis2": {
            **diff_scale.colors("c"),
            "colorbar": colorbar(tr("\u0394 weight"), ticks=d_ticks, **beside(2)),
        },
    }


def attention_diff_figure(
    with_pe: npt.ArrayLike,
    without_pe: npt.ArrayLike,
    labels: Sequence[object],
    *,
    max_side: int | None = MAX_SIDE,
    width: int = FULL_WIDTH,
) -> go.Figure:
    """One head's ``pattern`` with and without positional encoding, and their difference.

    ``with_pe``, ``without_pe``: the head's ``pattern`` [query_pos, key_pos] for the same
    tokens, computed with and without positional encoding; ``labels``: the token labels.
    The two patterns share one colour scale fixed at [0, 1] (the one every pattern heatmap
    uses); the difference (with − without) has its own diverging scale centred at 0, symmetric
    over its values. A side longer than ``max_side`` is pooled in square blocks like every
    attention heatmap: weights by block max, the difference by the entry of largest magnitude
    (sign kept).

    Square panels filling a column ``width`` px wide: three in a row when each can be at least
    280 px and give every token 12 px, else two (with, without; the difference under "with"),
    else one per row (from ~30 tokens); every token labelled up to 64 tokens, every k-th
    beyond (two panels a row). Each colorbar sits
    beside its panel and is as tall as it.
    """
    a, b = _diff_pair(with_pe, without_pe, labels)
    n = a.shape[0]
    diff = a - b  # computed at full resolution, pooled after
    block = pool_plan(n, max_side)
    diff_scale = SymmetricScale(symmetric_range(diff), False, symmetric_range(diff))
    w_ticks, d_ticks = weight_ticks(), diff_scale.colorbar_ticks()
    bar_w, bar_d = colorbar_px(w_ticks["ticktext"]), colorbar_px(d_ticks["ticktext"])
    plan = _diff_plan(labels, block, width=width, bar_w=bar_w, bar_d=bar_d)
    data, axes, domains = _diff_heatmaps(_diff_panels(a, b, diff, block), block_labels(labels, block), plan)
    titles = (tr("with PE"), tr("without PE"), tr("difference (with \u2212 without)"))
    layout = base_layout(
        plan.plot_h,
        width=width,
        left=width - plan.right - plan.paper_w,
        right=plan.right,
        top=TOP_TITLE_PX + TOP_PANEL_TITLE_PX,
        bottom=plan.x_axis.margin,
        title=tr("How attention changes when positional encoding is switched off"),
        meta={
            "block": block,
            "n_pos": n,
            "cols": plan.cols,
            "plot_px": plan.side,
            "tick_step": plan.x_axis.step,
            "diff_color": diff_scale.meta(),
        },
        annotations=[panel_title(t, *d) for t, d in zip(titles, domains, strict=True)],
        **axes,
        **_diff_coloraxes(domains, diff_scale, w_ticks, d_ticks),
    )
    return go.Figure({"data": data, "layout": layout})
