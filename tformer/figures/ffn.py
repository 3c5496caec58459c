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
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from ..i18n import tr
from .checks import Float32Array, before_after, check_highlight
from .colors import HIGHLIGHT, robust_symmetric
from .labels import (
    LABEL_ALL,
    TokenAxis,
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
    base_layout,
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


@dataclass(frozen=True)
class _FfnGrid:
    """How the two panels pool and where they sit: cells pooled, the plot's height, the
    margins and each panel's width."""

    row_block: int  # tokens per row
    col_block: int  # units per column
    d_ff: int
    plot_h: int
    y_axis: TokenAxis  # the token axis both panels share (the right one hides its labels)
    margin: dict[str, int]  # l, r, t, b
    paper_w: int
    panel_w: float


def ffn_activations_figure(
    before: npt.ArrayLike,
    after: npt.ArrayLike,
    labels: Sequence[object],
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
    names the nonlinearity in the title. ``labels`` are the tokens (escaped here).

    Payload: a panel holds at most 65,536 cells. Above that, cells keep the value of largest
    magnitude (sign kept) of a block of units (and of 2+ tokens above 256 tokens), which the axis
    titles say; a pooled cell is 0 only if every value in it is. ``highlight``: a token
    position, outlined in both panels. Sized for a column ``width`` px wide (default 940).
    """
    h, a = before_after(before, after, labels, "[pos, d_mlp]", "unit")
    n, d_ff = a.shape
    check_highlight(highlight, n)
    if not tol > 0:
        raise ValueError(f"tol={tol!r} must be > 0")
    shares = _ffn_shares(h, a, tol, zero_share, near_zero_share)
    scale = robust_symmetric(np.concatenate([h.ravel(), a.ravel()]))
    ticks = scale.colorbar_ticks()
    grid = _ffn_grid(labels, d_ff, colorbar_px(ticks["ticktext"]), width)
    meta = {"n_pos": n, "d_ff": d_ff, "block_rows": grid.row_block, "block_cols": grid.col_block, **shares}
    meta |= {"tol": tol, "highlight": highlight, "tick_step": grid.y_axis.step, "color": scale.meta()}
    m = grid.margin
    layout = base_layout(
        grid.plot_h, width=width, left=m["l"], right=m["r"], top=m["t"], bottom=m["b"], meta=meta
    )
    layout["coloraxis"] = {**scale.colors("c"), "colorbar": colorbar(tr("value"), ticks=ticks)}
    titles = _ffn_titles(activation, shares, tol)
    panels = [signed_absmax_pool(v, grid.row_block, grid.col_block) for v in (h, a)]
    data = _ffn_panels(layout, panels, titles, labels, grid)
    layout["shapes"] = (
        [] if highlight is None else [_highlight_row(i, highlight // grid.row_block) for i in range(2)]
    )
    return go.Figure({"data": data, "layout": layout})


def _ffn_shares(
    h: Float32Array, a: Float32Array, tol: float, zero_share: float | None, near_zero_share: float | None
) -> dict[str, float]:
    """The shares the titles state, at full resolution: h ≤ 0 (``inactive_share``), a == 0 and
    |a| < ``tol``, the last two unless the caller passed them."""
    return {
        "zero_share": float((a == 0).mean()) if zero_share is None else float(zero_share),
        "near_zero_share": float((np.abs(a) < tol).mean())
        if near_zero_share is None
        else float(near_zero_share),
        "inactive_share": float((h <= 0).mean()),
    }


def _ffn_grid(labels: Sequence[object], d_ff: int, colorbar_r: int, width: int) -> _FfnGrid:
    """The pooling (:func:`ffn_pool_plan`), the plot's height (18 px a row up to 560 px, 560 px
    beyond 64 tokens), the token axis planned for it, the margins (the colorbar's on the
    right) and the two panels' width."""
    n = len(labels)
    row_block, col_block = ffn_pool_plan(n, d_ff)
    plot_h = min(FFN_LONG_PX, max(240, FFN_MIN_ROW_PX * n)) if n <= LABEL_ALL else FFN_LONG_PX
    step = tick_step(labels, [("y", plot_h)], block=row_block)
    y_title = tr("token") if row_block == 1 else tr("token (rows of {block})", block=row_block)
    y_axis = token_axis(labels, plot_h, "y", step=step, block=row_block, title=y_title)
    margin = {"l": y_axis.margin, "r": colorbar_r, "t": TOP_PANEL_TITLE_PX + 6, "b": x_numeric_margin()}
    paper_w = width - margin["l"] - margin["r"]
    return _FfnGrid(row_block, col_block, d_ff, plot_h, y_axis, margin, paper_w, (paper_w - PANEL_GAP_PX) / 2)


def _ffn_titles(activation: str | None, shares: dict[str, float], tol: float) -> tuple[str, str]:
    """The panels' titles: the share of h ≤ 0 before the nonlinearity, of zeros and of
    |a| < ``tol`` after it."""
    act = {"relu": "ReLU", "gelu": "GELU"}.get(activation or "", activation or "")
    act_name = safe_label(act) if act else tr("the nonlinearity")
    return (
        tr(
            "before {act}: h = xW<sub>1</sub> + b<sub>1</sub>, {share} \u2264 0",
            act=act_name,
            share=share_text(shares["inactive_share"]),
        ),
        tr(
            "after {act}: {zero} zeros, {near} |a| < {tol}",
            act=act_name,
            zero=share_text(shares["zero_share"]),
            near=share_text(shares["near_zero_share"]),
            tol=f"{tol:g}",
        ),
    )


def _unit_centres(n_cols: int, col_block: int, d_ff: int) -> Float32Array:
    """The x of each (pooled) column: the centre of the units it pools, so the axis reads in
    unit indices (the last block may be short)."""
    x = (np.arange(n_cols, dtype=np.float32) * col_block + (min(col_block, d_ff) - 1) / 2).astype(np.float32)
    if col_block > 1:
        x[-1] = (n_cols - 1) * col_block + (d_ff - 1 - (n_cols - 1) * col_block) / 2
    return x


def _ffn_panels(
    layout: dict[str, Any],
    panels: list[Float32Array],
    titles: tuple[str, str],
    labels: Sequence[object],
    grid: _FfnGrid,
) -> list[dict[str, Any]]:
    """The two heatmaps (h left, a right); their axes and titles go into ``layout``."""
    row_block, col_block, d_ff = grid.row_block, grid.col_block, grid.d_ff
    x = _unit_centres(panels[0].shape[1], col_block, d_ff)
    names = block_labels(labels, row_block)
    unit_title = tr("FFN unit (d_ff = {d_ff})", d_ff=d_ff)
    if col_block > 1:
        unit_title = tr("FFN unit, max |value| of {block} per column", block=col_block)
    hover_head = tr("token") + " %{y}<br>" + tr("unit") + " %{x}<br>"
    data: list[dict[str, Any]] = []
    layout["annotations"] = []
    for i, (z, name) in enumerate(zip(panels, ("h (mlp_pre)", "a (mlp_post)"), strict=True)):
        sx = "" if i == 0 else "2"
        x0 = i * (grid.panel_w + PANEL_GAP_PX)
        xd, yd = px_domain(x0, x0 + grid.panel_w, 0, grid.plot_h, grid.paper_w, grid.plot_h)
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
        layout[f"yaxis{sx}"] = {
            **grid.y_axis.props,
            "domain": yd,
            "anchor": f"x{sx}",
            "autorange": "reversed",
        }
        title = panel_title(titles[i], xd, yd)
        title["font"] = _fit_title(titles[i], grid.panel_w + PANEL_GAP_PX - 4)
        layout["annotations"].append(title)
    layout["yaxis2"].update(matches="y", showticklabels=False, title=None)
    return data


def _highlight_row(panel: int, row: int) -> dict[str, Any]:
    """The outline of the highlighted token's (pooled) row in panel 0 (h) or 1 (a)."""
    sx = "" if panel == 0 else "2"
    return {
        "type": "rect",
        "name": f"highlight.{panel}",
        "xref": f"x{sx} domain",
        "yref": f"y{sx}",
        "x0": 0,
        "x1": 1,
        "y0": row - 0.5,
        "y1": row + 0.5,
        "line": {"color": HIGHLIGHT, "width": 2.5},
        "fillcolor": "rgba(0,0,0,0)",
    }
