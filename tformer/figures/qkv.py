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

from ..i18n import tr
from .attention import KEY_TITLE, Kind, attention_traces, pooled_note, score_scale, weight_ticks
from .checks import Float32Array, as_float32, check_tokens, square_matrix
from .colors import SymmetricScale, pattern_colorscale, robust_symmetric
from .labels import (
    AXIS_TITLE_FONT_PX,
    LABEL_ALL,
    TokenAxis,
    tick_step,
    token_axis,
    token_labels,
    x_numeric_margin,
)
from .layout import (
    FULL_WIDTH,
    MODEBAR_PX,
    TOP_BARE_PX,
    TOP_PANEL_TITLE_PX,
    TOP_TITLE_PX,
    Domain,
    base_layout,
    colorbar,
    colorbar_px,
    fit_side,
    panel_title,
    px_domain,
)
from .pooling import MAX_SIDE

# English templates, translated where drawn (tformer.i18n).
PANEL_TITLES = ("Q = XW<sub>Q</sub>", "K = XW<sub>K</sub>", "V = XW<sub>V</sub>")
MATRIX_TITLES: dict[Kind, str] = {
    "attn_scores": "attn_scores = Q K\u1d40 / \u221ad_head",
    "pattern": "pattern = softmax(attn_scores)",
}
TOKEN_TITLE = "token"
# Gaps between the Q, K, V panels and before the [query_pos, key_pos] panel (px).
VECTOR_GAP_PX = 10
MATRIX_GAP_PX = 14
# Rows at least this many px apart while every token is labelled (n <= LABEL_ALL).
MIN_ROW_PX = 12
# The [query_pos, key_pos] panel's smallest side (px): below it the figure cannot be drawn legibly.
MIN_MATRIX_PX = 120


def head_dim_title(d_head: int) -> str:
    """The x title of a [pos, d_head] panel, in plain words (translated)."""
    return tr("dimension of the head (d_head = {d_head})", d_head=d_head)


def vector_panel_px(d_head: int) -> int:
    """Width (px) of one Q, K or V panel: ~2 px a dimension, 48..90 px."""
    return int(min(90, max(48, 2 * d_head + 8)))


def _dims_axis(d_head: int) -> dict[str, Any]:
    """Numeric x axis of a [pos, d_head] panel: first, middle and last dimension."""
    # 0 and the middle: a last tick ("31") would run into the next panel's "0"
    ticks = sorted({0, d_head // 2})
    return {
        "tickmode": "array",
        "tickvals": ticks,
        "ticktext": [str(t) for t in ticks],
        "tickfont": {"size": 12},
        "ticks": "",
        "showgrid": False,
        "zeroline": False,
    }


def _vector_heatmap(a: Float32Array, labels: list[str], name: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "heatmap",
        "name": name,
        "z": a,
        "y": labels,  # x: d_head index 0..d_head-1 (plotly's default, nothing sent)
        "hovertemplate": tr("token %{y}<br>dimension %{x}<br>") + name + " %{z:.4g}<extra></extra>",
        **extra,
    }


def _qkv_inputs(
    q: npt.ArrayLike, k: npt.ArrayLike, v: npt.ArrayLike, matrix: npt.ArrayLike, labels: Sequence[object]
) -> tuple[list[Float32Array], Float32Array]:
    """``[q, k, v]`` as float32 [pos, d_head] of one shape with one label a position, and
    ``matrix`` as float32 [query_pos, key_pos] over the same positions."""
    arrays: list[Float32Array] = []
    for name, a in (("q", q), ("k", k), ("v", v)):
        arr = as_float32(a, 2, name, "[pos, d_head]")
        check_tokens(labels, arr.shape[0], name, tuple(arr.shape))
        arrays.append(arr)
    if not (arrays[0].shape == arrays[1].shape == arrays[2].shape):
        raise ValueError(
            "q, k, v must share one shape [pos, d_head], got "
            + ", ".join(str(tuple(a.shape)) for a in arrays)
        )
    return arrays, square_matrix(matrix, len(labels))


def _qkv_side(labels: Sequence[object], *, block: int, room: float) -> tuple[int, int, TokenAxis, TokenAxis]:
    """The side (px) of the [query_pos, key_pos] panel, the rows' height (px: at least
    :data:`MIN_ROW_PX` a row while every token is labelled), the token axis at the left and
    the key axis under the matrix; ``room``: the width left for the token labels and the side."""
    n = len(labels)
    plan: list[tuple[TokenAxis, TokenAxis]] = []

    def rows_px(side: float) -> float:
        return max(side, MIN_ROW_PX * n) if n <= LABEL_ALL else side

    def available(side: float) -> float:
        step = tick_step(labels, [("y", rows_px(side)), ("x", side)], block=block)
        y_axis = token_axis(labels, rows_px(side), "y", step=step, title=tr(TOKEN_TITLE))
        x_axis = token_axis(
            labels, side, "x", step=step, block=block, title=tr(KEY_TITLE) + pooled_note(block)
        )
        plan.append((y_axis, x_axis))
        return room - y_axis.margin

    side = int(fit_side(available, room - 100))
    return side, int(rows_px(side)), *plan[-1]


def _qkv_traces(
    arrays: Sequence[Float32Array], matrix_traces: Sequence[dict[str, Any]], labels: Sequence[object]
) -> list[dict[str, Any]]:
    """The Q, K, V heatmaps on the shared color axis, then the matrix's traces in panel 4."""
    rows = token_labels(labels)
    data = [
        {
            **_vector_heatmap(arr, rows, name, coloraxis="coloraxis"),
            "xaxis": "x" if i == 0 else f"x{i + 1}",
            "yaxis": "y" if i == 0 else f"y{i + 1}",
        }
        for i, (name, arr) in enumerate(zip("qkv", arrays, strict=True))
    ]
    return data + [{**trace, "xaxis": "x4", "yaxis": "y4"} for trace in matrix_traces]


def _dims_title(d_head: int, domains: Sequence[Domain]) -> dict[str, Any]:
    """One x title under the three Q, K, V panels (an annotation: it is wider than one panel)."""
    return {
        "text": head_dim_title(d_head),
        "x": (domains[0][0][0] + domains[2][0][1]) / 2,
        "y": 0,
        "xref": "paper",
        "yref": "paper",
        "xanchor": "center",
        "yanchor": "top",
        "yshift": -(x_numeric_margin(title=False) - 2),
        "showarrow": False,
        "font": {"size": AXIS_TITLE_FONT_PX},
    }


def _qkv_axes(
    domains: Sequence[Domain], *, d_head: int, tok_y: TokenAxis, key_x: TokenAxis, block: int
) -> dict[str, Any]:
    """The Q, K, V panels' dimension axes and their shared token rows (labelled once, left of
    Q), the matrix's key axis and its rows, matched to Q's while not pooled."""
    axes: dict[str, Any] = {}
    for i, (xd, yd) in enumerate(domains[:3]):
        sx = "" if i == 0 else str(i + 1)
        axes[f"xaxis{sx}"] = {**_dims_axis(d_head), "domain": xd, "anchor": f"y{sx}"}
        axes[f"yaxis{sx}"] = {**tok_y.props, "domain": yd, "anchor": f"x{sx}", "autorange": "reversed"}
        if i:  # same rows as Q: zoom together, label once
            axes[f"yaxis{sx}"].update(matches="y", showticklabels=False, title=None)
    xd, yd = domains[3]
    axes["xaxis4"] = {**key_x.props, "domain": xd, "anchor": "y4"}
    # Rows line up with the Q, K, V rows (a pooled cell spans `block` of them): the token
    # labels on the left serve every panel.
    axes["yaxis4"] = {
        "type": "category",
        "domain": yd,
        "anchor": "x4",
        "autorange": "reversed",
        "showticklabels": False,
        "ticks": "",
        "showgrid": False,
        "zeroline": False,
    }
    if block == 1:
        axes["yaxis4"]["matches"] = "y"
    return axes


def _matrix_coloraxis(scores: SymmetricScale | None, ticks: dict[str, Any]) -> dict[str, Any]:
    """The matrix panel's color axis, its colorbar at the right edge: weights 0..1, or the
    scores' diverging scale."""
    if scores is None:
        axis: dict[str, Any] = {"cmin": 0.0, "cmax": 1.0, "colorscale": pattern_colorscale()}
        return {**axis, "colorbar": colorbar(tr("weight"), x=1.0, ticks=ticks)}
    return {**scores.colors("c"), "colorbar": colorbar(tr("score"), x=1.0, ticks=ticks)}


def qkv_figure(
    q: npt.ArrayLike,
    k: npt.ArrayLike,
    v: npt.ArrayLike,
    matrix: npt.ArrayLike,
    labels: Sequence[object],
    *,
    kind: Kind = "attn_scores",
    max_side: int | None = MAX_SIDE,
    width: int = FULL_WIDTH,
) -> go.Figure:
    """Four panels in one row: ``q``, ``k``, ``v`` [pos, d_head] and ``matrix`` [query_pos, key_pos].

    ``matrix`` is the head's ``attn_scores`` or its ``pattern``, as ``kind`` says (see
    :func:`attention_heatmap`). q, k and v share one diverging color axis centred at 0,
    symmetric over all three, or over the 99th percentile of their magnitudes when a few
    outliers are more than 1.5 times larger (then the colorbar's ends read "\u2264"/"\u2265" and
    ``layout.meta["qkv_color"]`` says so: limit, clipped, rule), so their magnitudes compare;
    its colorbar sits right of the V panel. The last panel has its own scale and colorbar.

    Rows are positions in every panel with the same token ``labels`` (query 0 on top), at least
    12 px apart while every token is labelled (up to 64 tokens: the figure grows taller
    instead); above ``max_side`` positions the last panel is max-pooled (its cells then span
    ``block`` rows). Sized for a column ``width`` px wide (default 940, the full main area).
    """
    arrays, m = _qkv_inputs(q, k, v, matrix, labels)
    d_head = arrays[0].shape[1]
    scores: SymmetricScale | None = score_scale(m) if kind == "attn_scores" else None
    matrix_traces, block = attention_traces(
        m, labels, kind=kind, max_side=max_side, coloraxis="coloraxis2", scores=scores
    )
    qkv_scale = robust_symmetric(np.concatenate([a.ravel() for a in arrays]))
    qkv_ticks = qkv_scale.colorbar_ticks()
    ticks2 = weight_ticks() if scores is None else scores.colorbar_ticks()

    # Geometry: three vector panels, the Q, K, V colorbar, the matrix and its colorbar in a row.
    bar1, bar2 = colorbar_px(qkv_ticks["ticktext"]), colorbar_px(ticks2["ticktext"])
    w_vec = vector_panel_px(d_head)
    fixed = 3 * w_vec + 2 * VECTOR_GAP_PX + bar1 + MATRIX_GAP_PX + bar2
    side, plot_h, tok_y, key_x = _qkv_side(labels, block=block, room=width - fixed)
    left = width - fixed - side
    if side < MIN_MATRIX_PX or left < tok_y.margin:
        raise ValueError(
            f"width={width} px is too narrow for qkv_figure with {len(labels)} tokens and d_head={d_head}: "
            f"the Q, K, V panels and both colorbars take {fixed} px, which leaves {width - fixed} px for "
            f"the token labels ({tok_y.margin} px) and a [query_pos, key_pos] panel of at least "
            f"{MIN_MATRIX_PX} px; give it a wider column"
        )
    paper_w = width - left - bar2
    x0 = [i * (w_vec + VECTOR_GAP_PX) for i in range(3)] + [
        3 * w_vec + 2 * VECTOR_GAP_PX + bar1 + MATRIX_GAP_PX
    ]
    widths = [w_vec] * 3 + [side]
    domains = [px_domain(a, a + w, 0, plot_h, paper_w, plot_h) for a, w in zip(x0, widths, strict=True)]
    titles = [tr(t) for t in (*PANEL_TITLES, MATRIX_TITLES[kind])]
    layout = base_layout(
        plot_h,
        width=width,
        left=left,
        right=bar2,
        top=TOP_PANEL_TITLE_PX + MODEBAR_PX,
        bottom=max(key_x.margin, x_numeric_margin()),
        meta={
            "kind": kind,
            "block": block,
            "n_pos": len(labels),
            "plot_px": side,
            "rows_px": plot_h,
            "tick_step": tok_y.step,
            "qkv_color": qkv_scale.meta(),
            **({"color": scores.meta()} if scores is not None else {}),
        },
        annotations=[panel_title(t, *d) for t, d in zip(titles, domains, strict=True)]
        + [_dims_title(d_head, domains)],
        coloraxis={
            **qkv_scale.colors("c"),
            # right beside the V panel, as tall as the plots
            "colorbar": colorbar("Q, K, V", x=domains[2][0][1], ticks=qkv_ticks),
        },
        coloraxis2=_matrix_coloraxis(scores, ticks2),
        **_qkv_axes(domains, d_head=d_head, tok_y=tok_y, key_x=key_x, block=block),
    )
    return go.Figure({"data": _qkv_traces(arrays, matrix_traces, labels), "layout": layout})


def head_output_heatmap(
    z: npt.ArrayLike, labels: Sequence[object], *, title: str | None = None, width: int = FULL_WIDTH
) -> go.Figure:
    """The head's output ``z = pattern V`` [pos, d_head], one row per token (pos 0 on top).

    Diverging colors centred at 0, symmetric over the values or over the 99th percentile of
    their magnitudes when a few outliers are more than 1.5 times larger (``layout.meta["color"]``
    says which). Rows (one token label each) are at least 12 px apart while every token is
    labelled (up to 64), and the plot fills a column ``width`` px wide. ``title`` is shown as
    given (escape user text with ``safe_label``).
    """
    arr = as_float32(z, 2, "z", "[pos, d_head]")
    check_tokens(labels, arr.shape[0], "z", tuple(arr.shape))
    if arr.shape[0] == 0:
        raise ValueError("z has shape (0, d_head): at least one token is needed")
    n, d_head = arr.shape
    scale = robust_symmetric(arr)
    ticks = scale.colorbar_ticks()

    plot_h = max(240, MIN_ROW_PX * n) if n <= LABEL_ALL else 560
    step = tick_step(labels, [("y", plot_h)])
    y_axis = token_axis(labels, plot_h, "y", step=step, title=tr(TOKEN_TITLE))
    layout = base_layout(
        plot_h,
        width=width,
        left=y_axis.margin,
        right=colorbar_px(ticks["ticktext"]),
        top=TOP_TITLE_PX if title else TOP_BARE_PX,
        bottom=x_numeric_margin(),
        title=title,
        meta={"n_pos": n, "tick_step": step, "color": scale.meta()},
        xaxis={
            "title": {"text": head_dim_title(d_head), "font": {"size": AXIS_TITLE_FONT_PX}, "standoff": 6},
            "showgrid": False,
            "zeroline": False,
            "ticks": "",
            "tickfont": {"size": 12},
        },
        yaxis={**y_axis.props, "autorange": "reversed"},
    )
    trace = _vector_heatmap(
        arr, token_labels(labels), "z", **scale.colors(), colorbar=colorbar("z", ticks=ticks)
    )
    return go.Figure({"data": [trace], "layout": layout})
