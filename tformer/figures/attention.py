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

from .checks import Float32Array, square_matrix
from .colors import DIVERGING, pattern_colorscale, symmetric_range
from .labels import axis_margin, block_labels, token_axis
from .layout import COLORBAR_PX, square_plot_px
from .pooling import MAX_SIDE, max_pool_2d, pool_plan, signed_absmax_pool_2d

# The hook short names of the two [query_pos, key_pos] matrices a head computes.
Kind = Literal["pattern", "attn_scores"]
KINDS: tuple[Kind, ...] = ("pattern", "attn_scores")
MASKED_TEXT = "masked (-\u221e, weight 0)"


def attention_traces(
    matrix: Float32Array,
    tokens: Sequence[object],
    *,
    kind: Kind,
    max_side: int | None = MAX_SIDE,
    coloraxis: str | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """The heatmap trace dicts of :func:`attention_heatmap` and its pooling block (1 = exact).

    ``matrix`` must already be validated float32 [query_pos, key_pos]; ``kind`` as in
    :func:`attention_heatmap`; with ``coloraxis`` the heatmap uses that layout color axis
    instead of its own scale. Shared with the multi-panel figures (qkv, heads side by side) so
    every panel hovers and pools alike. Returns ``[heatmap]``, or ``[mask_layer, heatmap]`` when
    some attn_scores are masked: the mask layer (uint8, drawn beneath in light gray) answers the
    hover on the heatmap's NaN gaps, because plotly's hover prints a NaN as "NaN" and ignores
    ``hovertemplatefallback`` for it.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be 'pattern' or 'attn_scores', got {kind!r}")
    n = matrix.shape[0]
    block = pool_plan(n, max_side)
    labels = block_labels(tokens, block)
    where = "query_pos %{y}<br>key_pos %{x}<br>"
    traces: list[dict[str, Any]] = []
    z: npt.NDArray[np.floating]
    if kind == "pattern":
        z = max_pool_2d(np.nan_to_num(matrix, nan=0.0), block)
        value = "weight" if block == 1 else f"max weight in block of {block}x{block}"
        colors: dict[str, Any] = {"zmin": 0.0, "zmax": 1.0, "colorscale": pattern_colorscale()}
    else:
        z = np.where(np.isfinite(matrix), matrix, np.float32(np.nan)).astype(np.float32)
        m = symmetric_range(z)
        z = signed_absmax_pool_2d(z, block)
        value = "score" if block == 1 else f"largest |score| in block of {block}x{block}"
        colors = {"zmin": -m, "zmax": m, "zmid": 0.0, "colorscale": DIVERGING}
        masked = np.isnan(z)
        if masked.any():
            traces.append(
                {
                    "type": "heatmap",
                    "name": "masked",
                    "z": masked.astype(np.uint8),
                    "x": labels,
                    "y": labels,
                    "zmin": 0,
                    "zmax": 1,
                    "colorscale": [[0.0, "rgba(0,0,0,0)"], [1.0, "rgba(128,128,128,0.35)"]],
                    "showscale": False,
                    "hovertemplate": where + MASKED_TEXT + "<extra></extra>",
                }
            )
    if coloraxis is not None:
        colors = {"coloraxis": coloraxis}
    traces.append(
        {
            "type": "heatmap",
            "name": kind,
            "z": np.ascontiguousarray(z, dtype=np.float32),
            "x": labels,
            "y": labels,
            "hovertemplate": where + value + " %{z:.5g}<extra></extra>",
            "hoverongaps": False,
            **colors,
        }
    )
    return traces, block


def attention_heatmap(
    matrix: npt.ArrayLike,
    tokens: Sequence[object],
    *,
    kind: Kind = "pattern",
    title: str | None = None,
    max_side: int | None = MAX_SIDE,
) -> go.Figure:
    """Heatmap of one head's ``matrix`` [query_pos, key_pos] with token tick labels.

    ``kind="pattern"``: softmax weights on a fixed 0..1 scale (colored by
    ``weight ** PATTERN_GAMMA`` so that small weights show; the colorbar reads true weights).
    ``kind="attn_scores"``: scaled, masked dot products on a diverging scale centred at 0,
    symmetric over the finite values; ``-inf`` (masked) entries are gaps whose hover says
    "masked". Query 0 is on top. Sides longer than ``max_side`` are max-pooled (see the module
    docstring); ``max_side=None`` never pools. ``title`` is shown as given: escape user text in
    it with ``safe_label``. ``layout.meta`` holds ``kind``, ``block`` and ``n_pos``.
    """
    n = len(tokens)
    m = square_matrix(matrix, n)
    traces, block = attention_traces(m, tokens, kind=kind, max_side=max_side)
    traces[-1]["colorbar"] = {
        "title": {"text": "weight" if kind == "pattern" else "score"},
        "thickness": 12,
    }
    pooled = "" if block == 1 else f" (max over blocks of {block})"
    axis = token_axis(tokens, block)
    # Margins that fit the labels already: no second layout pass (see labels.axis_margin).
    margin = {"l": axis_margin(axis), "r": COLORBAR_PX, "t": 50 if title else 20, "b": axis_margin(axis)}
    layout: dict[str, Any] = {
        "height": square_plot_px(-(-n // block)) + margin["t"] + margin["b"],
        "margin": margin,
        "xaxis": {**axis, "title": {"text": "key_pos" + pooled}, "constrain": "domain"},
        "yaxis": {
            **axis,
            "title": {"text": "query_pos" + pooled},
            "autorange": "reversed",
            "scaleanchor": "x",
            "scaleratio": 1,
            "constrain": "domain",
        },
        "meta": {"kind": kind, "block": block, "n_pos": n},
    }
    if title:
        layout["title"] = {"text": title}
    return go.Figure({"data": traces, "layout": layout})
