r"""The FFN's hidden layer for one layer: ``mlp_pre`` and ``mlp_post`` [pos, d_mlp] side by side.

:func:`ffn_activations_figure` shows h = xW₁ + b₁ before the nonlinearity and act(h) after it,
one row per token, on one diverging color axis centred at 0, so the units the nonlinearity
switched off are white. Long inputs are pooled (:func:`signed_absmax_pool`) to at most
:data:`FFN_MAX_CELLS` cells a panel.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from ..i18n import tr
from .checks import Float32Array, as_float32, check_tokens
from .colors import HIGHLIGHT, robust_symmetric
from .labels import (
    LABEL_ALL,
    axis_title,
    block_labels,
    safe_label,
    text_px,
    tick_step,
    token_axis,
    x_numeric_margin,
)
from .layout import (
    FULL_WIDTH,
    PANEL_GAP_PX,
    PANEL_TITLE_PX,
    TOP_PANEL_TITLE_PX,
    colorbar,
    colorbar_px,
    panel_title,
    px_domain,
)
from .pooling import pool_plan


def share_text(share: float) -> str:
    """A share as a whole percentage; "<1%" and ">99%" where rounding would say 0 or 100."""
    if 0 < share < 0.005:
        return "<1%"
    if 0.995 <= share < 1:
        return ">99%"
    return f"{share:.0%}"


# Cells per panel sent at most: 512 tokens x 1536 units would be 3 MB of float32 per panel.
FFN_MAX_CELLS = 1 << 16
FFN_MAX_ROWS = 256
FFN_MIN_ROW_PX = 18  # rows this tall while they fit FFN_LONG_PX: room for upright CJK labels
FFN_LONG_PX = 560  # the tallest plot (beyond 31 tokens rows get thinner, labels stagger or thin)


def signed_absmax_pool(a: Float32Array, rows: int, cols: int) -> Float32Array:
    """Per block of ``rows x cols`` cells, the entry of largest magnitude, sign kept (the last
    blocks may be short). A block is 0 only when every entry in it is 0."""
    out = a
    for axis, block in ((0, rows), (1, cols)):
        if block == 1:
            continue
        n = out.shape[axis]
        pad = (-n) % block
        widths = [(0, 0), (0, 0)]
        widths[axis] = (0, pad)
        padded = np.pad(out, widths)  # zeros never win a max-abs unless the block is all zero
        shape = list(padded.shape)
        shape[axis : axis + 1] = [shape[axis] // block, block]
        blocks = padded.reshape(shape)
        pick = np.abs(blocks).argmax(axis=axis + 1)
        out = np.take_along_axis(blocks, np.expand_dims(pick, axis + 1), axis=axis + 1).squeeze(axis + 1)
    return np.ascontiguousarray(out, dtype=np.float32)


def ffn_pool_plan(n_pos: int, d_ff: int) -> tuple[int, int]:
    """(rows, columns) pooled per cell so one panel holds at most ``FFN_MAX_CELLS`` cells:
    rows above 256 tokens first, then units."""
    row_block = pool_plan(n_pos, FFN_MAX_ROWS)
    n_rows = math.ceil(n_pos / row_block)
    col_block = pool_plan(d_ff, max(1, FFN_MAX_CELLS // n_rows))
    return row_block, col_block


def _fit_title(text: str, room: float) -> dict[str, Any]:
    """Panel title font: 15 px, or down to 12 px when the text would be wider than ``room``."""
    plain = html.unescape(text.replace("<sub>", "").replace("</sub>", ""))
    for size in (PANEL_TITLE_PX, 14, 13, 12):
        if text_px(plain, size) <= room:
            return {"size": size}
    return {"size": 12}


def ffn_activations_figure(
    before: npt.ArrayLike,
    after: npt.ArrayLike,
    row_labels: Sequence[object],
    *,
    highlight: int | None = None,
    activation: str | None = None,
    tol: float = 1e-2,
    zero_share: float | None = None,
    near_zero_share: float | None = None,
    width: int = FULL_WIDTH,
) -> go.Figure:
    r"""The FFN's hidden layer for one layer: ``mlp_pre`` (h = xW₁ + b₁) and ``mlp_post`` (act(h)).

    Two heatmaps side by side, [pos, d_mlp] each, one row per token (pos 0 on top), sharing one
    diverging color axis centred at 0 (white = 0, so the units the nonlinearity switched off are
    white on the right), symmetric over both panels or clipped at the 99th percentile of the
    magnitudes when a few outliers are larger (``layout.meta["color"]``).

    The titles give the share of h ≤ 0 (left) and the shares of exact zeros and of |a| < ``tol``
    (right), computed at full resolution here unless ``zero_share`` / ``near_zero_share`` are
    passed (e.g. from ``tformer.analysis.layer_stats.ffn_sparsity``). ``activation`` ("relu", "gelu")
    names the nonlinearity in the title.

    Payload: a panel holds at most 65,536 cells. Above that, cells keep the value of largest
    magnitude (sign kept) of a block of units (and of 2+ tokens above 256 tokens), which the axis
    titles say; a pooled cell is 0 only if every value in it is. ``highlight``: a token
    position, outlined in both panels. Sized for a column ``width`` px wide (default 940).
    """
    h = as_float32(before, 2, "before", "[pos, d_mlp]")
    a = as_float32(after, 2, "after", "[pos, d_mlp]")
    if h.shape != a.shape:
        raise ValueError(f"before has shape {tuple(h.shape)} but after has shape {tuple(a.shape)}")
    n, d_ff = a.shape
    check_tokens(row_labels, n, "before", tuple(h.shape))
    if n == 0 or d_ff == 0:
        raise ValueError(f"before has shape {tuple(h.shape)}: at least one token and one unit are needed")
    if highlight is not None and not 0 <= highlight < n:
        raise ValueError(f"highlight={highlight} is not a position of the {n} tokens")
    if not tol > 0:
        raise ValueError(f"tol={tol!r} must be > 0")
    zero = float((a == 0).mean()) if zero_share is None else float(zero_share)
    near = float((np.abs(a) < tol).mean()) if near_zero_share is None else float(near_zero_share)
    inactive = float((h <= 0).mean())

    row_block, col_block = ffn_pool_plan(n, d_ff)
    panels = [signed_absmax_pool(m, row_block, col_block) for m in (h, a)]
    n_cols = panels[0].shape[1]
    # each cell sits at the centre of the units it pools, so the axis reads in unit indices
    x = (np.arange(n_cols, dtype=np.float32) * col_block + (min(col_block, d_ff) - 1) / 2).astype(np.float32)
    if col_block > 1:
        x[-1] = (n_cols - 1) * col_block + (d_ff - 1 - (n_cols - 1) * col_block) / 2
    scale = robust_symmetric(np.concatenate([h.ravel(), a.ravel()]))
    ticks = scale.colorbar_ticks()
    r = colorbar_px(ticks["ticktext"])
    plot_h = min(FFN_LONG_PX, max(240, FFN_MIN_ROW_PX * n)) if n <= LABEL_ALL else FFN_LONG_PX
    step = tick_step(row_labels, [("y", plot_h)], block=row_block)
    y_title = tr("token") if row_block == 1 else tr("token (rows of {block})", block=row_block)
    y_axis = token_axis(row_labels, plot_h, "y", step=step, block=row_block, title=y_title)
    margin = {"l": y_axis.margin, "r": r, "t": TOP_PANEL_TITLE_PX + 6, "b": x_numeric_margin()}
    paper_w = width - margin["l"] - margin["r"]
    panel_w = (paper_w - PANEL_GAP_PX) / 2
    names = block_labels(row_labels, row_block)
    act = {"relu": "ReLU", "gelu": "GELU"}.get(activation or "", activation or "")
    act_name = safe_label(act) if act else tr("the nonlinearity")
    titles = (
        tr(
            "before {act}: h = xW<sub>1</sub> + b<sub>1</sub>, {share} \u2264 0",
            act=act_name,
            share=share_text(inactive),
        ),
        tr(
            "after {act}: {zero} zeros, {near} |a| < {tol}",
            act=act_name,
            zero=share_text(zero),
            near=share_text(near),
            tol=f"{tol:g}",
        ),
    )
    unit_title = tr("FFN unit (d_ff = {d_ff})", d_ff=d_ff)
    if col_block > 1:
        unit_title = tr("FFN unit, max |value| of {block} per column", block=col_block)
    hover_head = tr("token") + " %{y}<br>" + tr("unit") + " %{x}<br>"
    data: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    shapes: list[dict[str, Any]] = []
    layout: dict[str, Any] = {}
    for i, (z, name) in enumerate(zip(panels, ("h (mlp_pre)", "a (mlp_post)"), strict=True)):
        sx = "" if i == 0 else "2"
        x0 = i * (panel_w + PANEL_GAP_PX)
        xd, yd = px_domain(x0, x0 + panel_w, 0, plot_h, paper_w, plot_h)
        data.append(
            {
                "type": "heatmap",
                "name": name,
                "z": z,
                "x": x,
                "y": names,
                "coloraxis": "coloraxis",
                "xaxis": f"x{sx}",
                "yaxis": f"y{sx}",
                "hovertemplate": hover_head + name + " %{z:.3g}<extra></extra>",
            }
        )
        layout[f"xaxis{sx}"] = {
            "domain": xd,
            "anchor": f"y{sx}",
            "title": axis_title(unit_title),
            "tickfont": {"size": 12},
            "ticks": "",
            "showgrid": False,
            "zeroline": False,
            "nticks": 5,
            "range": [-0.5, d_ff - 0.5],
        }
        layout[f"yaxis{sx}"] = {**y_axis.props, "domain": yd, "anchor": f"x{sx}", "autorange": "reversed"}
        if i:
            layout["yaxis2"].update(matches="y", showticklabels=False, title=None)
        title = panel_title(titles[i], xd, yd)
        title["font"] = _fit_title(titles[i], panel_w + PANEL_GAP_PX - 4)
        annotations.append(title)
        if highlight is not None:
            row = highlight // row_block
            shapes.append(
                {
                    "type": "rect",
                    "name": f"highlight.{i}",
                    "xref": f"x{sx} domain",
                    "yref": f"y{sx}",
                    "x0": 0,
                    "x1": 1,
                    "y0": row - 0.5,
                    "y1": row + 0.5,
                    "line": {"color": HIGHLIGHT, "width": 2.5},
                    "fillcolor": "rgba(0,0,0,0)",
                }
            )
    layout.update(
        height=plot_h + margin["t"] + margin["b"],
        margin={**margin, "pad": 0},
        annotations=annotations,
        shapes=shapes,
        coloraxis={**scale.colors("c"), "colorbar": colorbar(tr("value"), ticks=ticks)},
        meta={
            "n_pos": n,
            "d_ff": d_ff,
            "block_rows": row_block,
            "block_cols": col_block,
            "zero_share": zero,
            "near_zero_share": near,
            "inactive_share": inactive,
            "tol": tol,
            "highlight": highlight,
            "tick_step": step,
            "width": width,
            "color": scale.meta(),
        },
    )
    return go.Figure({"data": data, "layout": layout})
