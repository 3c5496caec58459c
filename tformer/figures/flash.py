r"""Figures of the FlashAttention page: where the tiled loop is, and what one row of a tile keeps.

:func:`tile_grid` draws the n × n score matrix the loop never builds as its grid of tiles (done,
the current one, still to do, skipped because fully masked), with the current query tile's rows
and key tile's columns shaded. It sends one cell per *tile* (a uint8 state), never one per
score: 512 tokens in tiles of 2 are 65,536 bytes, not 262,144 floats. :func:`running_rows`
shows, for each query row of the current tile, the online softmax's state:

.. math::
    m^{\text{new}} = \max(m^{\text{old}}, \mathrm{rowmax}\,S_{ij}),\quad
    \alpha = e^{m^{\text{old}} - m^{\text{new}}},\quad
    \ell^{\text{new}} = \alpha\,\ell^{\text{old}} + \mathrm{rowsum}\,\tilde P_{ij}

The tile's own scores and partial outputs are drawn with
:func:`tformer.figures.walkthrough.step_heatmap`. Plotly and numpy only.
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
from .colors import BLACK, FOCUS, FOCUS_EDGE, GRID, MARK_INK, PAST, QUERY, TILE_STATES, WEIGHT, WHITE
from .labels import TokenAxis, axis_title, safe_label, token_axes
from .layout import DETAIL_WIDTH, EDGE_PX, FULL_WIDTH, TOP_BARE_PX, base_layout, panel_title

# Tile states (the grid heatmap's z) and their colors.
TODO, DONE, SKIPPED, CURRENT = 0, 1, 2, 3
STATE_COLORS = TILE_STATES
BAND_LINE = FOCUS_EDGE  # outlines the current query tile's rows and key tile's columns
CURRENT_MIN_PX = 14
HOVER_TILES = 4096  # up to this many tiles each one says which tokens it covers
MINUS_INF = "\u2212\u221e"
LEGEND_PX = 34
# running_rows: the three panels' share of the plot width, the gap between them (px)
PANEL_SHARES = (0.38, 0.38, 0.24)
PANEL_GAP_PX = 40
ROW_PX = 26
RUNNING_TOP_PX = 96  # the legend's row and the panel titles above the plot
OLD_COLOR = PAST
NEW_COLOR = WEIGHT
TILE_COLOR = FOCUS


def _states(t_r: int, t_c: int, step: int, skipped: npt.NDArray[np.bool_] | None) -> npt.NDArray[np.uint8]:
    """uint8 [query tile, key tile]: TODO, DONE, SKIPPED or CURRENT (steps run row by row)."""
    order = np.arange(t_r * t_c).reshape(t_r, t_c)
    z = np.where(order < step, DONE, TODO).astype(np.uint8)
    if skipped is not None:
        z[skipped] = SKIPPED
    z.flat[step] = CURRENT
    return z


def _edges(n: int, block: int) -> list[float]:
    """Tile edges in token coordinates (cells span pos - 0.5 .. pos + 0.5)."""
    return [float(a) - 0.5 for a in range(0, n, block)] + [n - 0.5]


def _band(axis: str, lo: int, hi: int) -> dict[str, Any]:
    """An outlined band over positions lo..hi-1 across the whole plot (x: columns, y: rows)."""
    other = "y" if axis == "x" else "x"
    return {
        "type": "rect",
        f"{axis}ref": axis,
        f"{other}ref": f"{other} domain",
        f"{axis}0": lo - 0.5,
        f"{axis}1": hi - 0.5,
        f"{other}0": 0,
        f"{other}1": 1,
        "fillcolor": "rgba(0,0,0,0)",
        "line": {"color": BAND_LINE, "width": 2, "dash": "dot"},
        "layer": "above",
    }


def _current(q0: int, q1: int, k0: int, k1: int, token_px: float) -> dict[str, Any]:
    """A black frame around the current tile, at least CURRENT_MIN_PX wide: findable at 512
    tokens, where a tile of 2 is 2 px."""
    grow = max(0.0, (CURRENT_MIN_PX / token_px - min(q1 - q0, k1 - k0)) / 2)
    return {
        "type": "rect",
        "xref": "x",
        "yref": "y",
        "x0": k0 - 0.5 - grow,
        "x1": k1 - 0.5 + grow,
        "y0": q0 - 0.5 - grow,
        "y1": q1 - 0.5 + grow,
        "fillcolor": "rgba(0,0,0,0)",
        "line": {"color": BLACK, "width": 2},
        "layer": "above",
    }


@dataclass(frozen=True)
class _Step:
    """Where the tiled loop is: the grid of ``t_r`` × ``t_c`` tiles over ``n_q`` queries and
    ``n_k`` keys, the current tile (i, j) and its query and key ranges (ends exclusive)."""

    n_q: int
    n_k: int
    t_r: int
    t_c: int
    i: int
    j: int
    q: tuple[int, int]
    k: tuple[int, int]


def _tile_step(
    labels: Sequence[object],
    key_labels: Sequence[object],
    n_keys: int | None,
    *,
    block_q: int,
    block_k: int,
    step: int,
) -> _Step:
    """The loop's position at ``step`` (row by row over the tiles), checked: one label per
    query and per key (``n_keys``, default one per key label), blocks and step in range."""
    n_q = len(labels)
    n_k = len(key_labels) if n_keys is None else n_keys
    if n_q < 1 or n_k < 1:
        raise ValueError(f"need at least one query and one key, got {n_q} and {n_k}")
    if len(key_labels) != n_k:
        raise ValueError(f"{len(key_labels)} key labels were given for {n_k} keys")
    if block_q < 1 or block_k < 1:
        raise ValueError(f"block_q={block_q} and block_k={block_k} must be at least 1")
    t_r, t_c = math.ceil(n_q / block_q), math.ceil(n_k / block_k)
    if not 0 <= step < t_r * t_c:
        raise ValueError(f"step={step} is outside 0..{t_r * t_c - 1} ({t_r} × {t_c} tiles)")
    i, j = divmod(step, t_c)
    q = (i * block_q, min((i + 1) * block_q, n_q))
    k = (j * block_k, min((j + 1) * block_k, n_k))
    return _Step(n_q, n_k, t_r, t_c, i, j, q, k)


def _tile_axes(
    labels: Sequence[object], key_labels: Sequence[object], width: int
) -> tuple[float, TokenAxis, TokenAxis]:
    """The square plot's side (px) and its key (x) and query (y) token axes: the labels'
    margin depends on the side, the side on the margin."""
    side = float(width - 140)
    for _ in range(3):
        x_axis, y_axis = token_axes(
            list(key_labels), side, side, x_title=tr("key token (column)"), y_title=tr("query token (row)")
        )
        side = max(120.0, float(width - y_axis.margin - EDGE_PX))
    if key_labels is not labels:  # two different label lists: plan the y axis for its own
        _, y_axis = token_axes(list(labels), side, side, y_title=tr("query token (row)"))
    return side, x_axis, y_axis


def _tile_hover(t: _Step, block_q: int, block_k: int) -> dict[str, Any]:
    """Each tile's hover: which query and key tile it is, from which tokens."""
    custom = np.empty((t.t_r, t.t_c, 4), dtype=np.int32)
    custom[..., 0] = np.arange(t.t_r)[:, None]
    custom[..., 1] = np.arange(t.t_c)[None, :]
    custom[..., 2] = (np.arange(t.t_r) * block_q)[:, None]
    custom[..., 3] = (np.arange(t.t_c) * block_k)[None, :]
    template = tr(
        "query tile {i}: tokens from {q0}<br>key tile {j}: tokens from {k0}",
        i="%{customdata[0]}",
        q0="%{customdata[2]}",
        j="%{customdata[1]}",
        k0="%{customdata[3]}",
    )
    return {"customdata": custom, "hovertemplate": template + "<extra></extra>"}


def _tile_traces(
    z: npt.NDArray[np.uint8], t: _Step, *, block_q: int, block_k: int, side: float
) -> list[dict[str, Any]]:
    """The tiles as one heatmap of states (with a hover up to HOVER_TILES tiles) and a
    legend entry for each state shown (always "this step")."""
    gap = 1 if side / max(t.t_r, t.t_c) >= 4 else 0
    heat: dict[str, Any] = {
        "type": "heatmap",
        "name": tr("tiles"),
        "z": z,
        "x": _edges(t.n_k, block_k),
        "y": _edges(t.n_q, block_q),
        "zmin": 0,
        "zmax": 3,
        "colorscale": _discrete(),
        "showscale": False,
        "xgap": gap,
        "ygap": gap,
    }
    heat.update(_tile_hover(t, block_q, block_k) if t.t_r * t.t_c <= HOVER_TILES else {"hoverinfo": "skip"})
    names = {
        DONE: tr("tiles done"),
        CURRENT: tr("this step"),
        TODO: tr("still to do"),
        SKIPPED: tr("skipped: every cell masked"),
    }
    legend = [
        {
            "type": "scatter",
            "x": [None],
            "y": [None],
            "mode": "markers",
            "name": names[s],
            "marker": {"symbol": "square", "size": 13, "color": STATE_COLORS[s], "line": {"width": 0}},
            "hoverinfo": "skip",
            "showlegend": True,
        }
        for s in (DONE, CURRENT, TODO, SKIPPED)
        if s == CURRENT or bool((z == s).any())
    ]
    return [heat, *legend]


def tile_grid(
    labels: Sequence[object],
    *,
    block_q: int,
    block_k: int,
    step: int,
    skipped: npt.ArrayLike | None = None,
    n_keys: int | None = None,
    key_labels: Sequence[object] | None = None,
    width: int = DETAIL_WIDTH,
    title: str | None = None,
) -> go.Figure:
    """The [query_pos, key_pos] score matrix as the loop's tiles at step ``step`` (0-based).

    ``labels``: the query tokens' labels; ``key_labels``: the keys' (default: the same).
    Tiles before ``step`` are done (blue), ``step``'s tile is amber, later ones light gray;
    ``skipped`` (bool [query tile, key tile]) tiles are gray: fully masked, never computed.
    The current query tile's rows and key tile's columns are outlined. Query 0 is on top.
    ``layout.meta``: step, shown (step + 1), n_steps, i, j, q0, q1, k0, k1 (ends exclusive),
    block_q, block_k, tiles ([T_r, T_c]), done, skipped, width.
    """
    key_labels = labels if key_labels is None else key_labels
    t = _tile_step(labels, key_labels, n_keys, block_q=block_q, block_k=block_k, step=step)
    skip = None if skipped is None else np.asarray(skipped, dtype=bool)
    if skip is not None and skip.shape != (t.t_r, t.t_c):
        raise ValueError(f"skipped has shape {skip.shape}; expected {(t.t_r, t.t_c)} tiles")
    (q0, q1), (k0, k1) = t.q, t.k

    side, x_axis, y_axis = _tile_axes(labels, key_labels, width)
    layout = base_layout(
        int(side),
        width=width,
        left=int(width - side - EDGE_PX),
        right=EDGE_PX,
        top=TOP_BARE_PX + LEGEND_PX + (30 if title else 0),
        bottom=x_axis.margin,
        title=title,
        meta={
            "step": step,
            "shown": step + 1,
            "n_steps": t.t_r * t.t_c,
            "i": t.i,
            "j": t.j,
            "q0": q0,
            "q1": q1,
            "k0": k0,
            "k1": k1,
            "block_q": block_q,
            "block_k": block_k,
            "tiles": [t.t_r, t.t_c],
            "done": step,
            "skipped": int(skip.sum()) if skip is not None else 0,
        },
        xaxis={**x_axis.props, "type": "linear", "range": [-0.5, t.n_k - 0.5], "constrain": "domain"},
        yaxis={**y_axis.props, "type": "linear", "range": [t.n_q - 0.5, -0.5], "constrain": "domain"},
        shapes=[_band("y", q0, q1), _band("x", k0, k1), _current(q0, q1, k0, k1, side / max(t.n_q, t.n_k))],
        legend={"orientation": "h", "x": 0, "xanchor": "left", "y": 1, "yanchor": "bottom", "yref": "paper"},
        plot_bgcolor=WHITE,
    )
    z = _states(t.t_r, t.t_c, step, skip)
    data = _tile_traces(z, t, block_q=block_q, block_k=block_k, side=side)
    return go.Figure({"data": data, "layout": layout})


def _discrete() -> list[list[Any]]:
    """A colorscale with one flat color per state 0..3."""
    out: list[list[Any]] = []
    for s, color in enumerate(STATE_COLORS):
        out += [[s / 4, color], [(s + 1) / 4, color]]
    out[-1][0] = 1.0
    return out


def _finite(a: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """float64 with ±∞ as NaN (plotly has no infinity; NaN leaves a gap)."""
    x = np.asarray(a, dtype=np.float64)
    return np.where(np.isfinite(x), x, np.nan)


def _short(v: float) -> str:
    if math.isinf(v):
        return MINUS_INF if v < 0 else "\u221e"
    text = f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
    return text.replace("-", "\u2212")


def _span(values: Sequence[npt.NDArray[np.float64]], *, zero: bool) -> list[float]:
    finite = np.concatenate([v[np.isfinite(v)] for v in values]) if values else np.zeros(0)
    lo = float(finite.min()) if finite.size else -1.0
    hi = float(finite.max()) if finite.size else 1.0
    if zero:
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    pad = 0.18 * ((hi - lo) or 1.0)
    return [lo - pad, hi + pad]


def _row_arrays(rows: int, **arrays: npt.ArrayLike) -> list[npt.NDArray[np.float64]]:
    """Each array as float64 [rows], in the order given, checked against the row labels."""
    out = []
    for name, a in arrays.items():
        x = np.asarray(a, dtype=np.float64)
        if x.shape != (rows,):
            raise ValueError(f"{name} has shape {x.shape} but {rows} row labels were given")
        out.append(x)
    return out


def _running_traces(
    mo: npt.NDArray[np.float64],
    mn: npt.NDArray[np.float64],
    lo: npt.NDArray[np.float64],
    ln: npt.NDArray[np.float64],
    al: npt.NDArray[np.float64],
    ts: npt.NDArray[np.float64],
    m_range: Sequence[float],
) -> list[dict[str, Any]]:
    """The three panels' traces, one row a query: m before and after (x), the old sum
    rescaled plus this tile's rowsum as stacked bars with ℓ before as a tick (x2), α (x3);
    "−∞" written at the left of the m panel for rows with no allowed key yet."""
    y = list(range(len(mo)))
    text_font = {"size": 12}

    def texts(v: npt.NDArray[np.float64]) -> list[str]:
        return [_short(float(x)) for x in v]

    data: list[dict[str, Any]] = [
        {
            "type": "scatter", "xaxis": "x", "yaxis": "y", "name": tr("m before this tile"),
            "x": _finite(mo), "y": y, "mode": "markers",
            "marker": {"symbol": "circle-open", "size": 11, "color": OLD_COLOR, "line": {"width": 2}},
            "hovertemplate": tr("m before: %{x:.4g}") + "<extra></extra>",
        },
        {
            "type": "scatter", "xaxis": "x", "yaxis": "y", "name": tr("m after this tile"),
            "x": _finite(mn), "y": y, "mode": "markers+text", "text": texts(mn),
            "textposition": "middle right", "textfont": text_font, "cliponaxis": False,
            "marker": {"symbol": "circle", "size": 10, "color": NEW_COLOR},
            "hovertemplate": tr("m after: %{x:.4g}") + "<extra></extra>",
        },
        {
            "type": "scatter", "xaxis": "x2", "yaxis": "y", "name": tr("ℓ before this tile"),
            "x": lo, "y": y, "mode": "markers",
            "marker": {"symbol": "line-ns-open", "size": 18, "color": OLD_COLOR, "line": {"width": 3}},
            "hovertemplate": tr("ℓ before: %{x:.4g}") + "<extra></extra>",
        },
        {
            "type": "bar", "orientation": "h", "xaxis": "x2", "yaxis": "y", "name": tr("α·ℓ before: the old sum, rescaled"),
            "x": np.nan_to_num(al * lo), "y": y, "marker": {"color": NEW_COLOR},
            "hovertemplate": tr("α·ℓ before: %{x:.4g}") + "<extra></extra>",
        },
        {
            "type": "bar", "orientation": "h", "xaxis": "x2", "yaxis": "y", "name": tr("+ this tile's rowsum(P̃)"),
            "x": ts, "y": y, "marker": {"color": TILE_COLOR}, "text": texts(ln), "textposition": "outside",
            "textfont": text_font, "cliponaxis": False,
            "hovertemplate": tr("this tile adds %{x:.4g}") + "<extra></extra>",
        },
        {
            "type": "bar", "orientation": "h", "xaxis": "x3", "yaxis": "y", "name": "α", "showlegend": False,
            "x": al, "y": y, "marker": {"color": QUERY}, "text": texts(al), "textposition": "outside",
            "textfont": text_font, "cliponaxis": False,
            "hovertemplate": tr("rescaling factor: %{x:.4g}") + "<extra></extra>",
        },
    ]  # fmt: skip
    never = [k for k in y if math.isinf(mn[k])]
    if never:  # rows with no allowed key yet: say −∞ where the marker would be
        data.append(
            {
                "type": "scatter", "xaxis": "x", "yaxis": "y", "name": tr("no allowed key yet: m = −∞, ℓ = 0"),
                "x": [m_range[0]] * len(never), "y": never, "mode": "text", "text": [MINUS_INF] * len(never),
                "textposition": "middle right", "textfont": {"size": 13, "color": MARK_INK},
                "hoverinfo": "skip",
            }
        )  # fmt: skip
    return data


def _panel_domains(paper_w: float) -> list[list[float]]:
    """The three panels' x domains: their PANEL_SHARES of the plot, PANEL_GAP_PX apart."""
    plot_w = paper_w - 2 * PANEL_GAP_PX
    widths = [s * plot_w for s in PANEL_SHARES]
    starts = [0.0, widths[0] + PANEL_GAP_PX, widths[0] + widths[1] + 2 * PANEL_GAP_PX]
    return [[x0 / paper_w, (x0 + w) / paper_w] for x0, w in zip(starts, widths, strict=True)]


def _running_axes(
    ticktext: Sequence[str], domains: Sequence[Sequence[float]], m_range: Sequence[float], l_top: float
) -> dict[str, Any]:
    """The rows' query axis (row 0 on top) and the three panels' value axes."""
    rows = len(ticktext)
    common: dict[str, Any] = {
        "zeroline": False,
        "showgrid": True,
        "gridcolor": GRID,
        "tickfont": {"size": 12},
    }
    return {
        "yaxis": {
            "tickmode": "array", "tickvals": list(range(rows)), "ticktext": list(ticktext), "range": [rows - 0.5, -0.5],
            "tickfont": {"size": 13}, "zeroline": False, "showgrid": False, "title": axis_title(tr("query token (row)")),
        },
        "xaxis": {**common, "domain": domains[0], "range": m_range, "anchor": "y", "title": axis_title("m")},
        "xaxis2": {
            **common, "domain": domains[1], "range": [0, 1.25 * l_top], "anchor": "y", "title": axis_title("ℓ"),
        },
        "xaxis3": {**common, "domain": domains[2], "range": [0, 1.3], "anchor": "y", "title": axis_title("α")},
    }  # fmt: skip


def running_rows(
    labels: Sequence[object],
    *,
    m_old: npt.ArrayLike,
    m_new: npt.ArrayLike,
    l_old: npt.ArrayLike,
    l_new: npt.ArrayLike,
    alpha: npt.ArrayLike,
    tile_sum: npt.ArrayLike,
    width: int = FULL_WIDTH,
) -> go.Figure:
    """Each query row of the current tile (``labels``, top to bottom) in three panels: the
    running maximum m before (gray) and after (blue) this tile; the running sum ℓ as the old
    sum rescaled (α ℓ_old, blue) plus this tile's rowsum(P̃) (amber), with ℓ_old as a gray
    tick; the rescaling factor α = exp(m_old − m_new) in 0..1. −∞ (no allowed key seen yet)
    is written, not drawn. ``layout.meta``: rows, m_new, l_new, alpha (lists, −∞ as None),
    width.
    """
    rows = len(labels)
    mo, mn, lo, ln, al, ts = _row_arrays(
        rows, m_old=m_old, m_new=m_new, l_old=l_old, l_new=l_new, alpha=alpha, tile_sum=tile_sum
    )
    ticktext = [safe_label(t, 14) for t in labels]
    left = min(200, 24 + max(len(t) for t in ticktext) * 8)
    plot_h = max(ROW_PX * rows, 60)
    domains = _panel_domains(width - left - EDGE_PX)
    m_range = _span([mo, mn], zero=False)
    l_top = max(float(np.nanmax(np.concatenate([lo, ln]))) if rows else 1.0, 1e-9)
    layout = base_layout(
        plot_h,
        width=width,
        left=left,
        right=EDGE_PX,
        top=RUNNING_TOP_PX,
        bottom=64,
        meta={
            "rows": rows,
            "m_new": [None if math.isinf(v) else float(v) for v in mn],
            "l_new": [float(v) for v in ln],
            "alpha": [float(v) for v in al],
        },
        barmode="stack",
        annotations=[
            panel_title(tr("running maximum m"), domains[0], [0, 1]),
            panel_title(tr("running sum ℓ"), domains[1], [0, 1]),
            panel_title(tr("rescaling factor α"), domains[2], [0, 1]),
        ],
        legend={
            "orientation": "h",
            "x": 0,
            "xanchor": "left",
            "y": 1 + 30 / plot_h,
            "yanchor": "bottom",
            "traceorder": "normal",
        },
        **_running_axes(ticktext, domains, m_range, l_top),
    )
    return go.Figure({"data": _running_traces(mo, mn, lo, ln, al, ts, m_range), "layout": layout})
