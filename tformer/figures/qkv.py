r"""Q, K and V of one head beside the scores (or weights) they produce, and the head's output.

.. math::
    Q = X W_Q,\quad K = X W_K,\quad V = X W_V,\qquad
    \text{scores} = \frac{Q K^\top}{\sqrt{d_\text{head}}},\qquad
    z = \operatorname{softmax}(\text{scores})\, V

Q, K and V are [pos, d_head] (a few thousand to 16k cells: always sent exactly); the
[query_pos, key_pos] panel pools like :func:`attention_heatmap` above 256 positions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ._common import (
    DIVERGING,
    MAX_SIDE,
    as_float32,
    check_tokens,
    pattern_colorscale,
    square_heatmap_height,
    symmetric_range,
    token_axis,
    token_labels,
)
from .attention import Kind, attention_traces

PANEL_TITLES = ("Q = X W_Q", "K = X W_K", "V = X W_V")
MATRIX_TITLES = {
    "scores": "scores = Q K\u1d40 / \u221ad_head",
    "pattern": "pattern = softmax(scores)",
}


def _vector_heatmap(a: np.ndarray, labels: list[str], name: str, **extra) -> go.Heatmap:
    return go.Heatmap(
        z=a,
        y=labels,  # x: d_head index 0..d_head-1 (plotly's default, nothing sent)
        name=name,
        hovertemplate="pos %{y}<br>d_head %{x}<br>" + name + " %{z:.5g}<extra></extra>",
        **extra,
    )


def qkv_figure(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    matrix: np.ndarray,
    tokens: Sequence[object],
    *,
    kind: Kind = "scores",
    max_side: int | None = MAX_SIDE,
) -> go.Figure:
    """Four panels: Q, K, V [pos, d_head] and ``matrix`` [query_pos, key_pos].

    Q, K and V share one diverging color axis (symmetric over all three), so their magnitudes
    compare; the last panel has its own (``kind`` as in :func:`attention_heatmap`). Rows are
    positions in every panel with the same token labels (query 0 on top).
    """
    n = len(tokens)
    arrays = []
    for name, a in (("q", q), ("k", k), ("v", v)):
        arr = as_float32(a, 2, name, "[pos, d_head]")
        check_tokens(tokens, arr.shape[0], name, tuple(arr.shape))
        arrays.append(arr)
    if not (arrays[0].shape == arrays[1].shape == arrays[2].shape):
        raise ValueError(
            "q, k, v must share one shape [pos, d_head], got "
            + ", ".join(str(tuple(a.shape)) for a in arrays)
        )
    m = as_float32(matrix, 2, "matrix", "[query_pos, key_pos]")
    if m.shape != (n, n):
        raise ValueError(
            f"matrix has shape {tuple(m.shape)} [query_pos, key_pos] but {n} tokens were given "
            f"(expected ({n}, {n}))"
        )
    if n == 0:
        raise ValueError("q has shape (0, d_head): at least one token is needed")

    matrix_traces, block = attention_traces(
        m, tokens, kind=kind, max_side=max_side, coloraxis="coloraxis2"
    )
    fig = make_subplots(
        rows=1,
        cols=4,
        column_widths=[0.16, 0.16, 0.16, 0.52],
        horizontal_spacing=0.03,
        subplot_titles=(*PANEL_TITLES, MATRIX_TITLES[kind]),
    )
    labels = token_labels(tokens)
    for col, (name, arr) in enumerate(zip("QKV", arrays), start=1):
        fig.add_trace(_vector_heatmap(arr, labels, name, coloraxis="coloraxis"), row=1, col=col)
    for tr in matrix_traces:
        fig.add_trace(tr, row=1, col=4)

    m_qkv = max(symmetric_range(a) for a in arrays)
    if kind == "pattern":
        axis2 = {"cmin": 0.0, "cmax": 1.0, "colorscale": pattern_colorscale()}
        bar2 = "weight"
    else:
        m_s = symmetric_range(np.where(np.isfinite(m), m, np.nan))
        axis2 = {"cmin": -m_s, "cmax": m_s, "cmid": 0.0, "colorscale": DIVERGING}
        bar2 = "score"
    tok_y = token_axis(tokens)
    n_cells = -(-n // block)
    layout: dict = {
        "height": square_heatmap_height(n_cells) + 40,
        "margin": {"l": 10, "r": 10, "t": 60, "b": 10},
        "coloraxis": {
            "cmin": -m_qkv,
            "cmax": m_qkv,
            "cmid": 0.0,
            "colorscale": DIVERGING,
            "colorbar": {"title": {"text": "Q, K, V"}, "orientation": "h", "x": 0.25,
                         "xanchor": "center", "y": -0.08, "yanchor": "top", "len": 0.45,
                         "thickness": 10},
        },
        "coloraxis2": {**axis2, "colorbar": {"title": {"text": bar2}, "thickness": 12}},
        "yaxis": {**tok_y, "autorange": "reversed", "title": {"text": "pos"}},
        "xaxis4": {**token_axis(tokens, block), "title": {"text": "key_pos"}},
        "yaxis4": {**token_axis(tokens, block), "autorange": "reversed"},
        "meta": {"kind": kind, "block": block, "n_pos": n},
    }
    for i in (2, 3):
        layout[f"yaxis{i}"] = {**tok_y, "autorange": "reversed", "matches": "y",
                               "showticklabels": False}
    for i in (1, 2, 3):
        layout["xaxis" if i == 1 else f"xaxis{i}"] = {"title": {"text": "d_head"},
                                                     "showgrid": False, "zeroline": False}
    if block == 1:  # same rows as Q, K, V: move together when zoomed
        layout["yaxis4"].update(matches="y", showticklabels=False)
    fig.update_layout(layout)
    return fig


def head_output_heatmap(
    z: np.ndarray, tokens: Sequence[object], *, title: str | None = None
) -> go.Figure:
    """The head's output ``z = pattern V`` [pos, d_head], one row per token (pos 0 on top)."""
    arr = as_float32(z, 2, "z", "[pos, d_head]")
    check_tokens(tokens, arr.shape[0], "z", tuple(arr.shape))
    if arr.shape[0] == 0:
        raise ValueError("z has shape (0, d_head): at least one token is needed")
    m = symmetric_range(arr)
    trace = _vector_heatmap(
        arr,
        token_labels(tokens),
        "z",
        zmin=-m,
        zmax=m,
        zmid=0.0,
        colorscale=DIVERGING,
        colorbar={"title": {"text": "z"}, "thickness": 12},
    )
    fig = go.Figure(trace)
    n = arr.shape[0]
    fig.update_layout(
        title={"text": title} if title else None,
        height=min(640, max(200, 18 * n)) + 120,
        margin={"l": 10, "r": 10, "t": 50 if title else 20, "b": 10},
        xaxis={"title": {"text": "d_head"}, "showgrid": False, "zeroline": False},
        yaxis={**token_axis(tokens), "autorange": "reversed", "title": {"text": "pos"}},
    )
    return fig
