r"""One head's attention as a heatmap: ``attn_scores`` or ``pattern``, query_pos down, key_pos across.

.. math::
    \text{attn\_scores} = \frac{Q K^\top}{\sqrt{d_\text{head}}}\ (-\infty \text{ where masked})
    \qquad \text{pattern} = \operatorname{softmax}_\text{key\_pos}(\text{attn\_scores})

Payload at long inputs: a full 512 x 512 float32 matrix alone would exceed the whole per-rerun
payload budget once base64-encoded in the JSON Streamlit sends (plotly escapes every "/" of the
base64 as "\u002f"). So a side longer than ``max_side`` (default
:data:`~tformer.figures.pooling.MAX_SIDE`) is max-pooled in square blocks (pattern: block max,
so a one-cell diagonal stays as bright; attn_scores: the entry of largest magnitude, sign kept)
and the hover says which position range a cell covers and that its value is the block's
extreme. Up to ``max_side`` tokens every value is exact. The hover reads tokens from the
category names of the axes (``n`` strings), never from per-cell text or customdata (``n * n``
entries), so it costs nothing that grows with ``n * n`` beyond ``z`` itself. Masked
attn_scores (-inf) are sent as NaN gaps over a uint8 mask layer (1 byte a cell, only when
something is masked) whose hover says "masked".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from ..i18n import tr
from .checks import Float32Array, square_matrix
from .colors import (
    SymmetricScale,
    check_weight_scale,
    log_weights,
    robust_symmetric,
    row_normalized,
    weight_colors,
    weight_scale_ticks,
    weight_scale_title,
)
from .labels import TokenAxis, block_labels, token_axes
from .layout import (
    DETAIL_WIDTH,
    TOP_BARE_PX,
    TOP_TITLE_PX,
    base_layout,
    colorbar,
    colorbar_px,
    fit_side,
)
from .pooling import MAX_SIDE, max_pool_2d, pool_plan, signed_absmax_pool_2d

# The hook short names of the two [query_pos, key_pos] matrices a head computes.
Kind = Literal["pattern", "attn_scores"]
KINDS: tuple[Kind, ...] = ("pattern", "attn_scores")
# English templates: translate where shown, tr(KEY_TITLE) + pooled_note(block) (tformer.i18n).
MASKED_TEXT = "masked (-\u221e, weight 0)"
QUERY_TITLE = "query token (row)"
KEY_TITLE = "key token (column)"
# The detail heatmap's plot keeps at least this side (px) at its default width: its y labels
# give way (smaller font, then shorter) when they would take more.
MIN_DETAIL_PX = 552
# Colorbar tick labels of the weight scale (0 .. 1), for its width.
WEIGHT_TICKS = ("0.25", "0.5", "0.75", "1")


def pooled_note(block: int) -> str:
    """What an axis title adds when cells pool ``block x block`` positions (translated)."""
    return "" if block == 1 else tr(", cells of {block}\u00d7{block} positions", block=block)


def weight_ticks() -> dict[str, Any]:
    """Colorbar ticks of the weight scale."""
    return {"tickmode": "array", "tickvals": [0.0, 0.25, 0.5, 0.75, 1.0], "ticktext": ["0", *WEIGHT_TICKS]}


def weight_hover(scale: str, block: int) -> str:
    """What the hover calls a cell's value on weight scale ``scale`` (translated)."""
    if block == 1:
        names = {"linear": "weight", "log": "log₁₀ weight", "row": "weight ÷ row's largest"}
        return tr(names[scale])
    pooled = {
        "linear": "max weight in block of {block}x{block}",
        "log": "log₁₀ of the max weight in block of {block}x{block}",
        "row": "max weight ÷ row's largest in block of {block}x{block}",
    }
    return tr(pooled[scale], block=block)


def weight_values(matrix: Float32Array, scale: str, block: int) -> npt.NDArray[np.float32]:
    """Weights [query_pos, key_pos] as drawn on ``scale``, pooled in ``block x block`` cells:
    each row divided by its largest weight first ("row", on the exact rows), block maxima, then
    log10 ("log": the log of a block's maximum is its largest log)."""
    check_weight_scale(scale)
    # NaN (a row with nothing to attend to, plain softmax) is drawn as weight 0. Weights are never
    # negative, so pooling first (fmax skips NaN unless a whole block is NaN) and then replacing
    # NaN gives the same cells as replacing first, on 1/block² of the numbers.
    w = row_normalized(np.nan_to_num(matrix, nan=0.0)) if scale == "row" else matrix
    z = np.nan_to_num(max_pool_2d(w, block), nan=0.0)
    return log_weights(z) if scale == "log" else np.asarray(z, dtype=np.float32)


def score_scale(matrix: Float32Array) -> SymmetricScale:
    """The diverging range of ``attn_scores``: symmetric over the finite values, robust to a few
    outliers (see :func:`~tformer.figures.colors.robust_symmetric`)."""
    return robust_symmetric(matrix)


def attention_traces(
    matrix: Float32Array,
    labels: Sequence[object],
    *,
    kind: Kind,
    max_side: int | None = MAX_SIDE,
    coloraxis: str | None = None,
    scores: SymmetricScale | None = None,
    weight_scale: str = "linear",
) -> tuple[list[dict[str, Any]], int]:
    """The heatmap trace dicts of :func:`attention_heatmap` and its pooling block (1 = exact).

    ``matrix`` must already be validated float32 [query_pos, key_pos], ``labels`` the token
    labels, one per position; ``kind`` as in
    :func:`attention_heatmap`; with ``coloraxis`` the heatmap uses that layout color axis
    instead of its own scale; ``scores`` overrides the attn_scores range (default
    :func:`score_scale`); ``weight_scale`` ("linear", "log", "row": see
    :data:`~tformer.figures.colors.WEIGHT_SCALES`) how weights become colors. Shared with the multi-panel figures (qkv, heads side by side) so
    every panel hovers and pools alike. Returns ``[heatmap]``, or ``[mask_layer, heatmap]`` when
    some attn_scores are masked: the mask layer (uint8, drawn beneath in light gray) answers the
    hover on the heatmap's NaN gaps, because plotly's hover prints a NaN as "NaN" and ignores
    ``hovertemplatefallback`` for it.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be 'pattern' or 'attn_scores', got {kind!r}")
    n = matrix.shape[0]
    block = pool_plan(n, max_side)
    names = block_labels(labels, block)
    where = tr("query token %{y}<br>key token %{x}<br>")  # plotly placeholders, no values
    traces: list[dict[str, Any]] = []
    z: npt.NDArray[np.floating]
    if kind == "pattern":
        z = weight_values(matrix, weight_scale, block)
        value = weight_hover(weight_scale, block)
        colors: dict[str, Any] = weight_colors(weight_scale)
    else:
        z = np.where(np.isfinite(matrix), matrix, np.float32(np.nan)).astype(np.float32)
        scale = score_scale(z) if scores is None else scores
        z = signed_absmax_pool_2d(z, block)
        value = tr("score") if block == 1 else tr("largest |score| in block of {block}x{block}", block=block)
        colors = scale.colors()
        masked = np.isnan(z)
        if masked.any():
            traces.append(
                {
                    "type": "heatmap",
                    "name": "masked",
                    "showlegend": False,
                    "z": masked.astype(np.uint8),
                    "x": names,
                    "y": names,
                    "zmin": 0,
                    "zmax": 1,
                    "colorscale": [[0.0, "rgba(0,0,0,0)"], [1.0, "rgba(128,128,128,0.35)"]],
                    "showscale": False,
                    "hovertemplate": where + tr(MASKED_TEXT) + "<extra></extra>",
                }
            )
    if coloraxis is not None:
        colors = {"coloraxis": coloraxis}
    traces.append(
        {
            "type": "heatmap",
            "name": kind,
            "showlegend": False,  # the name is the hook's, never shown
            "z": np.ascontiguousarray(z, dtype=np.float32),
            "x": names,
            "y": names,
            "hovertemplate": where + value + " %{z:.4g}<extra></extra>",
            "hoverongaps": False,
            **colors,
        }
    )
    return traces, block


def attention_heatmap(
    matrix: npt.ArrayLike,
    labels: Sequence[object],
    *,
    kind: Kind = "pattern",
    title: str | None = None,
    max_side: int | None = MAX_SIDE,
    width: int = DETAIL_WIDTH,
    weight_scale: str = "linear",
) -> go.Figure:
    """Heatmap of one head's ``matrix`` [query_pos, key_pos] with token tick labels (``labels``,
    one per position).

    ``kind="pattern"``: softmax weights on a fixed 0..1 sequential scale (colored by
    ``weight ** PATTERN_GAMMA`` so that small weights show; the colorbar reads true weights),
    or with ``weight_scale="log"`` log10 of the weights from 0.0001 to 1, or with
    ``weight_scale="row"`` each row divided by its largest weight; the colorbar's title says
    which (``layout.meta["weight_scale"]``).
    ``kind="attn_scores"``: scaled, masked dot products on a diverging scale centred at 0,
    symmetric over the finite values, or over their 99th percentile when a few outliers are
    more than 1.5 times larger (the colorbar's end labels then read "\u2264" and "\u2265");
    ``-inf`` (masked) entries are gaps whose hover says "masked". Query 0 is on top.

    Sized for a column ``width`` px wide (default: the Attention page's ~745 px column): the
    square plot fills the width left of its colorbar, which is as tall as the plot. Up to 64
    tokens every token is labelled on both axes; beyond, every k-th one (same k on both), and
    the hover names every position. Sides longer than ``max_side`` are max-pooled (see the
    module docstring); ``max_side=None`` never pools. ``title`` is shown as given: escape user
    text in it with ``safe_label``. ``layout.meta`` holds ``kind``, ``block``, ``n_pos``,
    ``width``, ``plot_px`` (the plot side), ``tick_step`` and, for attn_scores, ``color``
    (limit, clipped, rule).
    """
    n = len(labels)
    m = square_matrix(matrix, n)
    scale = score_scale(m) if kind == "attn_scores" else None
    traces, block = attention_traces(
        m, labels, kind=kind, max_side=max_side, scores=scale, weight_scale=weight_scale
    )
    ticks = weight_scale_ticks(weight_scale) if scale is None else scale.colorbar_ticks()
    r = colorbar_px(ticks["ticktext"])
    bar_title = weight_scale_title(weight_scale) if scale is None else tr("score")
    traces[-1]["colorbar"] = colorbar(bar_title, ticks=ticks)
    layout = square_token_layout(
        labels, width=width, colorbar_px=r, block=block, title=title, min_plot_px=MIN_DETAIL_PX
    )
    layout["meta"].update({"kind": kind, **({"color": scale.meta()} if scale is not None else {})})
    if scale is None:
        layout["meta"]["weight_scale"] = weight_scale
    return go.Figure({"data": traces, "layout": layout})


def square_token_layout(
    labels: Sequence[object],
    *,
    width: int,
    colorbar_px: int,
    block: int,
    title: str | None,
    min_plot_px: int,
) -> dict[str, Any]:
    """The layout of a square [query_pos, key_pos] heatmap ``width`` px wide with a colorbar of
    ``colorbar_px``: token tick labels on both axes (pooled in cells of ``block``), query 0 on
    top, equal scales, and the largest plot whose labels still fit (`fit_side`). ``meta`` holds
    ``block``, ``n_pos``, ``width``, ``plot_px`` and ``tick_step``; callers add their own."""
    note = pooled_note(block)
    axes: list[tuple[TokenAxis, TokenAxis]] = []

    def available(side: float) -> float:
        axes.append(
            token_axes(
                labels,
                side,
                side,
                block=block,
                x_title=tr(KEY_TITLE) + note,
                y_title=tr(QUERY_TITLE) + note,
                y_max_margin=width - colorbar_px - min_plot_px,
            )
        )
        return width - axes[-1][1].margin - colorbar_px

    side = int(fit_side(available, width - colorbar_px - 90))
    x_axis, y_axis = axes[-1]
    # Margins that fit the labels already: no second layout pass (TokenAxis.margin).
    return base_layout(
        side,
        width=width,
        left=width - colorbar_px - side,
        right=colorbar_px,
        top=TOP_TITLE_PX if title else TOP_BARE_PX,
        bottom=x_axis.margin,
        title=title,
        meta={"block": block, "n_pos": len(labels), "plot_px": side, "tick_step": x_axis.step},
        xaxis={**x_axis.props, "constrain": "domain"},
        yaxis={
            **y_axis.props,
            "autorange": "reversed",
            "scaleanchor": "x",
            "scaleratio": 1,
            "constrain": "domain",
        },
    )
