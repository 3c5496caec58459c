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
from typing import Any

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from .checks import Float32Array, as_float32, check_tokens
from .colors import DIVERGING, pattern_colorscale, symmetric_range
from .labels import axis_margin, block_labels, token_axis
from .layout import COLORAXIS_BAR_PX, panel_title
from .pooling import MAX_SIDE, max_pool_2d, pool_plan, signed_absmax_pool_2d

__all__ = [
    "pe_matrix_heatmap",
    "pe_waves",
    "pe_similarity_heatmap",
    "pe_offset_figure",
    "shift_matrix_figure",
    "attention_diff_figure",
]


def _matrix(name: str, x: npt.ArrayLike, what: str) -> Float32Array:
    a = as_float32(x, 2, name, what)
    if 0 in a.shape:
        raise ValueError(f"{name} must be a non-empty 2-D array {what}, got shape {a.shape}")
    return a


def _square_diverging(
    z: Float32Array, colorbar: str, hovertemplate: str, title: str, x_title: str, y_title: str
) -> go.Figure:
    """A square matrix on integer axes, row 0 on top, diverging colors symmetric around 0."""
    r = symmetric_range(z)
    idx = np.arange(z.shape[0], dtype=np.int32)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=idx,
            y=idx,
            colorscale=DIVERGING,
            zmin=-r,
            zmax=r,
            colorbar={"title": {"text": colorbar}},
            hovertemplate=hovertemplate,
        )
    )
    fig.update_layout(
        title=title,
        xaxis_title=x_title,
        yaxis_title=y_title,
        yaxis_autorange="reversed",
        yaxis_scaleanchor="x",
        xaxis_constrain="domain",
        yaxis_constrain="domain",
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
    )
    return fig


def pe_matrix_heatmap(pe: npt.ArrayLike, *, max_len: int | None = None) -> go.Figure:
    """The encoding table as a heatmap: rows pos, columns d_model dimension.

    ``pe``: [pos, d_model]. If ``max_len`` (the positions the model was trained on) is given and
    the table is longer, a dashed line marks where the trained positions end.
    """
    z = _matrix("pe", pe, "[pos, d_model]")
    n_pos, d_model = z.shape
    if max_len is not None and max_len < 1:
        raise ValueError(f"max_len={max_len} must be >= 1")
    r = symmetric_range(z)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=np.arange(d_model, dtype=np.int32),
            y=np.arange(n_pos, dtype=np.int32),
            colorscale=DIVERGING,
            zmin=-r,
            zmax=r,
            colorbar={"title": {"text": "PE value"}},
            hovertemplate="pos %{y}<br>d_model dimension %{x}<br>PE %{z:.3f}<extra></extra>",
        )
    )
    if max_len is not None and n_pos > max_len:
        fig.add_hline(
            y=max_len - 0.5,
            line={"color": "black", "dash": "dash", "width": 2},
            annotation_text=f"trained positions end (max_len={max_len})",
            annotation_position="bottom right",
            annotation_bgcolor="rgba(255, 255, 255, 0.85)",
        )
    fig.update_layout(
        title=f"Positional encoding [pos={n_pos}, d_model={d_model}]",
        xaxis_title="d_model dimension",
        yaxis_title="pos",
        yaxis_autorange="reversed",
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
    )
    return fig


def _wavelength(dim: int, d_model: int, base: float) -> float:
    # Dims 2i and 2i+1 share omega_i = base^(-2i/d_model); one period spans 2*pi/omega_i positions.
    two_i = dim - dim % 2
    return 2 * math.pi * base ** (two_i / d_model)


def _format_positions(x: float) -> str:
    return f"{x:.3g}" if x < 100 else f"{x:,.0f}"


def pe_waves(
    pe: npt.ArrayLike, dims: Sequence[int], *, sinusoidal: bool = True, base: float = 10000.0
) -> go.Figure:
    """Line plot of PE[:, d] against pos, one line per chosen d_model dimension.

    ``pe``: [pos, d_model]; ``dims``: dimension indices. With ``sinusoidal`` (the default) the
    legend names each line's function and wavelength in positions, ``2*pi*base**(2i/d_model)``
    for dims 2i (sin) and 2i+1 (cos); pass ``sinusoidal=False`` for a learned table.
    """
    z = _matrix("pe", pe, "[pos, d_model]")
    n_pos, d_model = z.shape
    dims = [int(d) for d in dims]
    if not dims:
        raise ValueError("dims is empty: choose at least one d_model dimension")
    bad = [d for d in dims if not 0 <= d < d_model]
    if bad:
        raise ValueError(f"dims {bad} outside 0..{d_model - 1} for pe of shape {z.shape}")
    x = np.arange(n_pos, dtype=np.int32)
    fig = go.Figure()
    for d in dict.fromkeys(dims):  # unique, order kept
        if sinusoidal:
            fn = "sin" if d % 2 == 0 else "cos"
            name = f"dim {d} ({fn}, wavelength {_format_positions(_wavelength(d, d_model, base))})"
        else:
            name = f"dim {d}"
        fig.add_trace(go.Scatter(x=x, y=z[:, d], mode="lines", name=name))
    fig.update_layout(
        title="Positional encoding per dimension",
        xaxis_title="pos",
        yaxis_title="PE value",
        legend={"title": {"text": "d_model dimension"}},
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
    )
    return fig


def pe_similarity_heatmap(pe: npt.ArrayLike) -> go.Figure:
    r"""Dot products between positions, :math:`PE \, PE^\top` [pos, pos].

    For the sinusoidal encoding :math:`PE_i \cdot PE_j = \sum_k \cos(\omega_k (j - i))`
    depends on j - i only, so every diagonal is constant (a Toeplitz matrix).
    """
    x = _matrix("pe", pe, "[pos, d_model]").astype(np.float64)
    z = (x @ x.T).astype(np.float32)  # [pos, pos]
    return _square_diverging(
        z,
        "PE·PE",
        "pos %{y} · pos %{x}<br>%{z:.3f}<extra></extra>",
        "Similarity of positions, PE·PEᵀ",
        "pos",
        "pos",
    )


def pe_offset_figure(offsets: npt.ArrayLike, mean: npt.ArrayLike, std: npt.ArrayLike) -> go.Figure:
    r"""Similarity :math:`PE_i \cdot PE_{i+k}` against the offset k, with a ±std band.

    Takes the output of :func:`tformer.analysis.offset_similarity`; three 1-D arrays of one
    length. A band of width ~0 shows the similarity depends on k alone, not on i.
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
    if np.issubdtype(k.dtype, np.integer):
        k = k.astype(np.int32)
    else:
        k = k.astype(np.float32)
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
                name="± std over pos",
                hoverinfo="skip",
            ),
            go.Scatter(
                x=k,
                y=mu,
                mode="lines",
                line={"color": "rgb(31, 119, 180)"},
                name="mean over pos",
                customdata=sd,
                hovertemplate="offset %{x}<br>mean %{y:.4f}<br>std %{customdata:.2e}<extra></extra>",
            ),
        ]
    )
    fig.update_layout(
        title="PE[pos]·PE[pos+k] depends on the offset k only",
        xaxis_title="offset k (positions)",
        yaxis_title="PE[pos]·PE[pos+k]",
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
    )
    return fig


def shift_matrix_figure(m: npt.ArrayLike, *, k: int | None = None) -> go.Figure:
    r"""Shift matrix ``m`` = :math:`M_k` [d_model, d_model]: :math:`PE_{pos+k} = M_k PE_{pos}`.

    For the sinusoidal encoding it is block-diagonal: one 2×2 rotation per (sin, cos) pair.
    Rows are output dimensions, columns input dimensions. ``k``, when given, is named in the
    title.
    """
    z = _matrix("M", m, "[d_model, d_model]")
    if z.shape[0] != z.shape[1]:
        raise ValueError(f"M must be square [d_model, d_model], got shape {z.shape}")
    title = "Shift matrix M"
    if k is not None:
        title = f"Shift matrix M_k for k={k}: PE[pos+{k}] = M_k PE[pos]"
    return _square_diverging(
        z,
        "M value",
        "row %{y}, column %{x}<br>%{z:.4f}<extra></extra>",
        title,
        "d_model dimension (input, PE[pos])",
        "d_model dimension (output, PE[pos+k])",
    )


def attention_diff_figure(
    with_pe: npt.ArrayLike,
    without_pe: npt.ArrayLike,
    tokens: Sequence[object],
    *,
    max_side: int | None = MAX_SIDE,
) -> go.Figure:
    """One head's ``pattern`` with and without positional encoding, and their difference.

    ``with_pe``, ``without_pe``: the head's ``pattern`` [query_pos, key_pos] for the same
    tokens, computed with and without positional encoding.
    The two patterns share one colour scale fixed at [0, 1] (the one every pattern heatmap
    uses); the difference (with − without) has its own diverging scale, symmetric around 0.
    A side longer than ``max_side`` is pooled in square blocks like every attention heatmap:
    weights by block max, the difference by the entry of largest magnitude (sign kept).
    """
    a = _matrix("with_pe", with_pe, "[query_pos, key_pos]")
    b = _matrix("without_pe", without_pe, "[query_pos, key_pos]")
    if a.shape != b.shape:
        raise ValueError(f"with_pe has shape {a.shape} but without_pe has shape {b.shape}")
    if a.shape[0] != a.shape[1]:
        raise ValueError(f"with_pe must be square [query_pos, key_pos], got shape {a.shape}")
    check_tokens(tokens, a.shape[0], "with_pe", a.shape)
    diff = a - b  # computed at full resolution, pooled after
    block = pool_plan(a.shape[0], max_side)
    labels = block_labels(tokens, block)
    r = symmetric_range(diff)
    panels: list[tuple[npt.NDArray[np.floating], str, str]] = [
        (max_pool_2d(a, block), "coloraxis", "weight"),
        (max_pool_2d(b, block), "coloraxis", "weight"),
        (signed_absmax_pool_2d(diff, block), "coloraxis2", "\u0394 weight"),
    ]
    if block > 1:
        panels = [(z, ax, f"{v} (largest in block of {block}x{block})") for z, ax, v in panels]
    titles = ("with PE", "without PE", "difference (with \u2212 without)")
    # panels 1 and 2 share the weight scale, whose colorbar sits in the wider gap before the
    # difference panel; the difference's own colorbar sits in the right margin
    gap_12, gap_23 = 0.03, 0.17
    w = (1.0 - gap_12 - gap_23) / 3
    x0 = (0.0, w + gap_12, 2 * w + gap_12 + gap_23)
    domains = [([x, x + w], [0.0, 1.0]) for x in x0]
    pooled = "" if block == 1 else f" (max over blocks of {block})"
    axis = token_axis(tokens, block)
    data: list[dict[str, Any]] = []
    layout: dict[str, Any] = {}
    for i, ((z, coloraxis, value), (xd, yd)) in enumerate(zip(panels, domains, strict=True)):
        sx = "" if i == 0 else str(i + 1)
        data.append({
            "type": "heatmap", "z": np.ascontiguousarray(z, dtype=np.float32),
            "x": labels, "y": labels, "coloraxis": coloraxis,
            "xaxis": f"x{sx}", "yaxis": f"y{sx}",
            "hovertemplate": "query_pos %{y}<br>key_pos %{x}<br>" + value + " %{z:.4f}<extra></extra>",
        })  # fmt: skip
        layout[f"xaxis{sx}"] = {
            **axis,
            "domain": xd,
            "anchor": f"y{sx}",
            "tickangle": -90,
            "title": {"text": "key_pos" + pooled},
        }
        layout[f"yaxis{sx}"] = {**axis, "domain": yd, "anchor": f"x{sx}", "autorange": "reversed"}
        if i:  # the same rows in every panel: zoom together, label once
            layout[f"yaxis{sx}"].update(matches="y", showticklabels=False)
    layout["yaxis"]["title"] = {"text": "query_pos" + pooled}
    bar = {"xanchor": "left", "thickness": 12}
    layout.update(
        title={"text": "How attention changes when positional encoding is switched off"},
        annotations=[panel_title(t, *d) for t, d in zip(titles, domains, strict=True)],
        coloraxis={
            "colorscale": pattern_colorscale(),
            "cmin": 0.0,
            "cmax": 1.0,
            "colorbar": {**bar, "title": {"text": "weight"}, "x": x0[1] + w + 0.01},
        },
        coloraxis2={
            "colorscale": DIVERGING,
            "cmin": -r,
            "cmax": r,
            "colorbar": {**bar, "title": {"text": "\u0394 weight"}, "x": 1.0},
        },
        # room for the labels from the start: no second layout pass (see labels.axis_margin)
        margin={"l": axis_margin(axis), "r": COLORAXIS_BAR_PX, "t": 70, "b": axis_margin(axis)},
    )
    return go.Figure({"data": data, "layout": layout})
