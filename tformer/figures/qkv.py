r"""``q``, ``k`` and ``v`` of one head beside the ``attn_scores`` (or ``pattern``) they produce,
and the head's output ``z``.

.. math::
    Q = X W_Q,\quad K = X W_K,\quad V = X W_V,\qquad
    \text{attn\_scores} = \frac{Q K^\top}{\sqrt{d_\text{head}}},\qquad
    z = \operatorname{softmax}(\text{attn\_scores})\, V = \text{pattern}\, V

q, k and v are [pos, d_head] (a few thousand to 16k cells: always sent exactly); the
[query_pos, key_pos] panel pools like :func:`attention_heatmap` above ``max_side`` positions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from .attention import Kind, attention_traces
from .checks import Float32Array, as_float32, check_tokens, square_matrix
from .colors import DIVERGING, pattern_colorscale, symmetric_range
from .labels import AXIS_TITLE_PX, TICK_FONT_PX, axis_margin, token_axis, token_labels
from .layout import COLORAXIS_BAR_PX, COLORBAR_PX, grid_domains, panel_title, square_plot_px
from .pooling import MAX_SIDE

PANEL_TITLES = ("Q = X W_Q", "K = X W_K", "V = X W_V")
# A horizontal colorbar under the Q, K, V panels: bar, tick labels and title on top (px).
H_COLORBAR_PX = 56
# Numeric (d_head) tick labels drawn horizontally under an axis with a title.
NUMERIC_AXIS_PX = AXIS_TITLE_PX + TICK_FONT_PX + 6
# The [query_pos, key_pos] panel is about half as wide as a full heatmap: half the labels.
MATRIX_TICKS = 30
MATRIX_TITLES: dict[Kind, str] = {
    "attn_scores": "attn_scores = Q K\u1d40 / \u221ad_head",
    "pattern": "pattern = softmax(attn_scores)",
}


def _vector_heatmap(a: Float32Array, labels: list[str], name: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "heatmap",
        "name": name,
        "z": a,
        "y": labels,  # x: d_head index 0..d_head-1 (plotly's default, nothing sent)
        "hovertemplate": "pos %{y}<br>d_head %{x}<br>" + name + " %{z:.5g}<extra></extra>",
        **extra,
    }


def qkv_figure(
    q: npt.ArrayLike,
    k: npt.ArrayLike,
    v: npt.ArrayLike,
    matrix: npt.ArrayLike,
    tokens: Sequence[object],
    *,
    kind: Kind = "attn_scores",
    max_side: int | None = MAX_SIDE,
) -> go.Figure:
    """Four panels: ``q``, ``k``, ``v`` [pos, d_head] and ``matrix`` [query_pos, key_pos].

    ``matrix`` is the head's ``attn_scores`` or its ``pattern``, as ``kind`` says (see
    :func:`attention_heatmap`). q, k and v share one diverging color axis (symmetric over all
    three), so their magnitudes compare; the last panel has its own. Rows are positions in
    every panel with the same token labels (query 0 on top); above ``max_side`` positions the
    last panel is max-pooled and its rows are blocks of positions.
    """
    n = len(tokens)
    arrays: list[Float32Array] = []
    for name, a in (("q", q), ("k", k), ("v", v)):
        arr = as_float32(a, 2, name, "[pos, d_head]")
        check_tokens(tokens, arr.shape[0], name, tuple(arr.shape))
        arrays.append(arr)
    if not (arrays[0].shape == arrays[1].shape == arrays[2].shape):
        raise ValueError(
            "q, k, v must share one shape [pos, d_head], got "
            + ", ".join(str(tuple(a.shape)) for a in arrays)
        )
    m = square_matrix(matrix, n)

    matrix_traces, block = attention_traces(m, tokens, kind=kind, max_side=max_side, coloraxis="coloraxis2")
    labels = token_labels(tokens)
    data = [
        {
            **_vector_heatmap(arr, labels, name, coloraxis="coloraxis"),
            "xaxis": "x" if i == 0 else f"x{i + 1}",
            "yaxis": "y" if i == 0 else f"y{i + 1}",
        }
        for i, (name, arr) in enumerate(zip("QKV", arrays, strict=True))
    ]
    data += [{**tr, "xaxis": "x4", "yaxis": "y4"} for tr in matrix_traces]

    m_qkv = max(symmetric_range(a) for a in arrays)
    if kind == "pattern":
        axis2: dict[str, Any] = {"cmin": 0.0, "cmax": 1.0, "colorscale": pattern_colorscale()}
        bar2 = "weight"
    else:
        m_s = symmetric_range(np.where(np.isfinite(m), m, np.nan))
        axis2 = {"cmin": -m_s, "cmax": m_s, "cmid": 0.0, "colorscale": DIVERGING}
        bar2 = "score"
    domains = grid_domains(1, 4, hspace=0.03, vspace=0.0, col_widths=[0.16, 0.16, 0.16, 0.52])
    titles = (*PANEL_TITLES, MATRIX_TITLES[kind])
    tok_y = token_axis(tokens)
    key_x = token_axis(tokens, block, max_ticks=MATRIX_TICKS)
    # Room for every label from the start (no second layout pass, see labels.axis_margin);
    # the Q, K, V colorbar sits in the bottom margin, anchored to the figure, not the plot.
    margin = {
        "l": axis_margin(tok_y),
        "r": COLORAXIS_BAR_PX,
        "t": 60,
        "b": max(axis_margin(key_x), NUMERIC_AXIS_PX) + H_COLORBAR_PX + 10,
    }
    layout: dict[str, Any] = {
        "height": square_plot_px(-(-n // block)) + margin["t"] + margin["b"],
        "margin": margin,
        "annotations": [panel_title(t, *d) for t, d in zip(titles, domains, strict=True)],
        "coloraxis": {
            "cmin": -m_qkv,
            "cmax": m_qkv,
            "cmid": 0.0,
            "colorscale": DIVERGING,
            "colorbar": {
                "title": {"text": "Q, K, V", "side": "top"},
                "orientation": "h",
                "x": 0.25,
                "xanchor": "center",
                "yref": "container",
                "y": 0.0,
                "yanchor": "bottom",
                "len": 0.4,
                "thickness": 10,
            },
        },
        # x=1 (not plotly's 1.02): a bar outside the paper pushes the margin by 2% of the width
        "coloraxis2": {**axis2, "colorbar": {"title": {"text": bar2}, "thickness": 12, "x": 1.0}},
        "meta": {"kind": kind, "block": block, "n_pos": n},
    }
    for i, (xd, yd) in enumerate(domains):
        sx = "" if i == 0 else str(i + 1)
        if i < 3:
            # one "d_head" title, under the middle of the three panels
            layout[f"xaxis{sx}"] = {
                "domain": xd,
                "anchor": f"y{sx}",
                "showgrid": False,
                "zeroline": False,
                "title": {"text": "d_head" if i == 1 else ""},
            }
            layout[f"yaxis{sx}"] = {**tok_y, "domain": yd, "anchor": f"x{sx}", "autorange": "reversed"}
            if i:  # same rows as Q: zoom together, label once
                layout[f"yaxis{sx}"].update(matches="y", showticklabels=False)
            else:
                layout["yaxis"]["title"] = {"text": "pos"}
        else:
            layout["xaxis4"] = {**key_x, "domain": xd, "anchor": "y4", "title": {"text": "key_pos"}}
            layout["yaxis4"] = {
                **token_axis(tokens, block),
                "domain": yd,
                "anchor": "x4",
                "autorange": "reversed",
            }
            if block == 1:  # same rows as Q, K, V
                layout["yaxis4"].update(matches="y", showticklabels=False)
    return go.Figure({"data": data, "layout": layout})


def head_output_heatmap(z: npt.ArrayLike, tokens: Sequence[object], *, title: str | None = None) -> go.Figure:
    """The head's output ``z = pattern V`` [pos, d_head], one row per token (pos 0 on top).

    Diverging colors symmetric around 0. ``title`` is shown as given (escape user text with
    ``safe_label``).
    """
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
    n = arr.shape[0]
    y_axis = token_axis(tokens)
    margin = {"l": axis_margin(y_axis), "r": COLORBAR_PX, "t": 50 if title else 20, "b": NUMERIC_AXIS_PX}
    layout: dict[str, Any] = {
        "height": min(640, max(200, 18 * n)) + margin["t"] + margin["b"],
        "margin": margin,
        "xaxis": {"title": {"text": "d_head"}, "showgrid": False, "zeroline": False},
        "yaxis": {**y_axis, "autorange": "reversed", "title": {"text": "pos"}},
    }
    if title:
        layout["title"] = {"text": title}
    return go.Figure({"data": [trace], "layout": layout})
