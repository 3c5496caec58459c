"""Shared helpers for the figure builders: safe label text, token axes, color scales, pooling.

No streamlit, no torch: numpy and plotly only. Everything here is deterministic.

Payload rules every builder follows (the browser, not the model, is the bottleneck):

- arrays handed to plotly are float32 or uint8 numpy (plotly.py base64-encodes those;
  float16 would become text JSON, ~40x larger);
- a [query_pos, key_pos] matrix is sent at full resolution up to ``MAX_SIDE`` positions a side
  and max-pooled in square blocks above that (see :func:`pool_plan`);
- token axes are *category* axes whose category names are unique ``"pos: token"`` strings, so
  the hover shows the token and its position at a cost of ``n`` short strings instead of the
  ``n * n`` strings (or customdata) a per-cell hover text would need; tick marks sit at
  integer positions (category index) with ``tickvals``/``ticktext``, so repeated tokens never
  merge and shapes can be drawn at integer positions.
"""

from __future__ import annotations

import functools
import html
import math
import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np
from plotly.colors import hex_to_rgb

# A side above this is max-pooled: 256 * 256 float32 cells = 256 KiB raw, 350 KB base64, and
# ~390 KB in the JSON, because plotly's to_json (which Streamlit calls) writes every "/" of the
# base64 text as "\u002f" (6 bytes), and "/" is frequent in float32 data.
MAX_SIDE = 256
# Tick labels shown on a token axis at most (every k-th token; hover always has all of them).
MAX_TICKS = 60
# Tick text longer than this is cut (the hover keeps the full token).
MAX_TICK_CHARS = 14
# Attention weights are colored by weight ** PATTERN_GAMMA so that the small weights spread over
# hundreds of keys (1/512 ~ 0.002) remain visible; the colorbar still reads in true weights.
PATTERN_GAMMA = 0.5

# Sequential map for weights in [0, 1] (Viridis: perceptually uniform, colorblind-safe,
# dark at 0 so a thumbnail stands out from its transparent gaps).
_SEQUENTIAL_STOPS = (
    "#440154", "#482878", "#3e4989", "#31688e", "#26828e",
    "#1f9e89", "#35b779", "#6ece58", "#b5de2b", "#fde725",
)  # fmt: skip
# Diverging map for signed values (scores, Q, K, V): blue negative, white 0, red positive.
DIVERGING = [
    [0.0, "rgb(5,48,97)"],
    [0.1, "rgb(33,102,172)"],
    [0.2, "rgb(67,147,195)"],
    [0.3, "rgb(146,197,222)"],
    [0.4, "rgb(209,229,240)"],
    [0.5, "rgb(247,247,247)"],
    [0.6, "rgb(253,219,199)"],
    [0.7, "rgb(244,165,130)"],
    [0.8, "rgb(214,96,77)"],
    [0.9, "rgb(178,24,43)"],
    [1.0, "rgb(103,0,31)"],
]
# A plain sequential scale for unsigned metrics (no gamma).
SEQUENTIAL = [[i / (len(_SEQUENTIAL_STOPS) - 1), c] for i, c in enumerate(_SEQUENTIAL_STOPS)]

HIGHLIGHT = "#ff4b4b"  # selection outline (Streamlit's primary red)


# ---------------------------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------------------------
def safe_label(s: object, max_chars: int | None = None) -> str:
    """Return ``s`` as text that plotly shows literally.

    Plotly renders a subset of HTML in every text field (``<b>``, ``<br>``, ``<a href>``) and
    typesets ``$...$`` as LaTeX when MathJax is present. Tokens are user text, so ``&``, ``<``
    and ``>`` become entities and every ``$`` becomes ``&#36;`` (plotly looks for TeX in the raw
    text, before it decodes entities, and its pattern matches a ``$`` pair anywhere, not only a
    leading one). Plotly decodes entities in a single pass, so ``"&lt;"`` typed by a user is
    shown as ``&lt;``, not as ``<``.

    ``max_chars`` cuts the text (before escaping, so an entity is never cut) and marks the cut
    with an ellipsis. Control characters (newline, tab) are shown as visible symbols.
    """
    text = str(s)
    if max_chars is not None and len(text) > max_chars:
        text = text[: max(1, max_chars - 1)] + "\u2026"
    text = text.replace("\n", "\u21b5").replace("\r", "\u21b5").replace("\t", "\u21e5")
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace("$", "&#36;")
    )


def token_labels(tokens: Sequence[object]) -> list[str]:
    """Unique hover/category names ``"pos: token"`` (escaped): repeated tokens stay apart."""
    return [f"{i}: {safe_label(t)}" for i, t in enumerate(tokens)]


def tick_positions(n: int, max_ticks: int = MAX_TICKS) -> np.ndarray:
    """Every k-th position of ``range(n)`` so that at most ``max_ticks`` labels are shown."""
    if n <= 0:
        return np.zeros(0, dtype=np.int64)
    step = max(1, math.ceil(n / max_ticks))
    return np.arange(0, n, step)


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------
def as_float32(x: Any, ndim: int, name: str, dims: str) -> np.ndarray:
    """``x`` as a C-contiguous float32 array of rank ``ndim`` (``dims`` names the axes)."""
    arr = np.asarray(x)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D {dims}, got shape {tuple(arr.shape)}")
    return np.ascontiguousarray(arr, dtype=np.float32)


def check_tokens(tokens: Sequence[object], n: int, name: str, shape: tuple[int, ...]) -> None:
    if len(tokens) != n:
        raise ValueError(
            f"{name} has shape {shape} but {len(tokens)} tokens were given "
            f"(expected {n} tokens)"
        )


def square_matrix(matrix: Any, n: int) -> np.ndarray:
    """``matrix`` as float32 [query_pos, key_pos], checked against ``n`` tokens (n >= 1)."""
    m = as_float32(matrix, 2, "matrix", "[query_pos, key_pos]")
    if m.shape != (n, n):
        raise ValueError(
            f"matrix has shape {tuple(m.shape)} [query_pos, key_pos] but {n} tokens were given "
            f"(expected ({n}, {n}))"
        )
    if n == 0:
        raise ValueError("matrix has shape (0, 0): at least one token is needed")
    return m


# ---------------------------------------------------------------------------------------------
# Pooling (thumbnails and long inputs)
# ---------------------------------------------------------------------------------------------
def pool_plan(n: int, max_side: int | None) -> int:
    """Positions per block so that ``ceil(n / block) <= max_side`` (1 = full resolution)."""
    if max_side is None or n <= max_side:
        return 1
    return math.ceil(n / max_side)


def _max_pool_axis(a: np.ndarray, block: int, axis: int) -> np.ndarray:
    n = a.shape[axis]
    head: list[slice] = [slice(None)] * a.ndim
    head[axis] = slice(0, n, block)
    out = a[tuple(head)].copy()
    for j in range(1, block):
        head[axis] = slice(j, n, block)
        part = a[tuple(head)]
        dst: list[slice] = [slice(None)] * a.ndim
        dst[axis] = slice(0, part.shape[axis])
        np.fmax(out[tuple(dst)], part, out=out[tuple(dst)])
    return out


def max_pool_2d(a: np.ndarray, block: int) -> np.ndarray:
    """Max over ``block x block`` squares of the last two axes (the last block may be short).

    Max, not mean: a one-cell-wide diagonal must stay as bright as it is at full resolution.
    NaN is ignored unless a whole block is NaN. Computed as ``block`` strided maxima per axis
    (7x faster than ``np.maximum.reduceat``: 18 ms vs 130 ms for 72 heads at 512 tokens).
    """
    if block == 1:
        return a
    return _max_pool_axis(_max_pool_axis(a, block, a.ndim - 2), block, a.ndim - 1)


def signed_absmax_pool_2d(a: np.ndarray, block: int) -> np.ndarray:
    """Per block, the entry of largest magnitude, sign kept; NaN (masked) only if all are NaN."""
    if block == 1:
        return a
    hi = max_pool_2d(a, block)
    lo = -max_pool_2d(-a, block)
    out = np.where(np.abs(lo) > np.abs(hi), lo, hi)  # NaN only where the whole block is NaN
    return out.astype(np.float32, copy=False)


def block_labels(tokens: Sequence[object], block: int) -> list[str]:
    """Category names for pooled positions: ``"a-b: tok_a ... tok_b"`` (unique)."""
    if block == 1:
        return token_labels(tokens)
    n = len(tokens)
    out = []
    for a in range(0, n, block):
        b = min(a + block, n) - 1
        if a == b:
            out.append(f"{a}: {safe_label(tokens[a])}")
        else:
            out.append(f"{a}\u2013{b}: {safe_label(tokens[a])} \u2026 {safe_label(tokens[b])}")
    return out


def token_axis(tokens: Sequence[object], block: int = 1, *, max_ticks: int = MAX_TICKS) -> dict:
    """Axis properties for a token axis: category axis, ticks at integer (block) positions."""
    n_cells = math.ceil(len(tokens) / block) if len(tokens) else 0
    ticks = tick_positions(n_cells, max_ticks)
    axis = {
        "type": "category",
        "tickmode": "array",
        "tickvals": ticks.tolist(),
        "ticktext": [safe_label(tokens[int(i) * block], MAX_TICK_CHARS) for i in ticks],
        "showgrid": False,
        "zeroline": False,
        "automargin": True,
    }
    if len(ticks) > 24:  # 60 labels of 10 px fit a 640 px axis
        axis["tickfont"] = {"size": 10}
    return axis


# ---------------------------------------------------------------------------------------------
# Colors
# ---------------------------------------------------------------------------------------------
def _rgb(c: str) -> tuple[int, int, int]:
    if c.startswith("#"):
        return tuple(hex_to_rgb(c))  # type: ignore[return-value]
    return tuple(int(v) for v in c[c.index("(") + 1 : c.index(")")].split(","))  # type: ignore


def sequential_lut(n: int = 255) -> np.ndarray:
    """``n`` RGB uint8 colors of the sequential map, linearly interpolated: shape [n, 3]."""
    stops = np.array([_rgb(c) for c in _SEQUENTIAL_STOPS], dtype=np.float64)
    at = np.linspace(0.0, 1.0, len(stops))
    t = np.linspace(0.0, 1.0, n)
    lut = np.stack([np.interp(t, at, stops[:, ch]) for ch in range(3)], axis=1)
    return np.rint(lut).astype(np.uint8)


@functools.lru_cache(maxsize=8)
def _pattern_colorscale(gamma: float, n_stops: int) -> tuple[tuple[float, str], ...]:
    lut = sequential_lut(256)
    stops = []
    for i in range(n_stops):
        u = i / (n_stops - 1)  # position along the color map
        r, g, b = lut[int(round(u * 255))]
        stops.append((0.0 if i == 0 else 1.0 if i == n_stops - 1 else u ** (1.0 / gamma),
                      f"rgb({r},{g},{b})"))
    return tuple(stops)


def pattern_colorscale(gamma: float = PATTERN_GAMMA, n_stops: int = 33) -> list[list[Any]]:
    """Colorscale for weights on zmin=0 / zmax=1 whose color at weight w is ``map(w ** gamma)``.

    The same mapping the overview mosaic uses, so a head looks alike in both figures, while the
    colorbar and hover still show true weights.
    """
    return [list(stop) for stop in _pattern_colorscale(float(gamma), int(n_stops))]


def symmetric_range(values: np.ndarray) -> float:
    """Largest finite magnitude (1.0 when nothing finite or all zero): for zmin=-m, zmax=m."""
    finite = values[np.isfinite(values)]
    m = float(np.abs(finite).max()) if finite.size else 0.0
    return m if m > 0 else 1.0


# ---------------------------------------------------------------------------------------------
# Margins that need no second layout pass
# ---------------------------------------------------------------------------------------------
# An axis with automargin (Streamlit's theme turns it on for every cartesian axis) measures its
# drawn tick labels and, when they need more room than layout.margin gives, makes plotly lay
# the whole figure out and draw it a second time. Measured in Chromium on 2 cores: the detail
# heatmap takes 71 ms with the default small margins and 13 ms with margins that already fit
# (16 tokens). So builders reserve what the labels will need, estimated from their text, and
# keep automargin on only as a safety net for labels wider than the estimate.
TICK_FONT_PX = 12  # Streamlit's theme: tick labels at 0.75 rem
# Beyond the tick labels, measured in Streamlit's theme (1.67): axis title + standoff + pad.
AXIS_TITLE_PX = 64
AXIS_NO_TITLE_PX = 30
# A vertical colorbar (thickness <= 16) with its tick labels and a short title on top.
COLORBAR_PX = 84
# A colorbar of a layout coloraxis gets Streamlit's theme padding: wider than a trace's.
COLORAXIS_BAR_PX = COLORBAR_PX + 30


def text_px(text: str, size: float = TICK_FONT_PX) -> float:
    """Upper estimate of the drawn width of ``text`` (plain, unescaped) at font ``size`` px.

    Proportional sans-serif fonts average ~0.5 em a character; this errs wide (0.62 em, 0.78
    em for capitals and wide letters, 1 em for East Asian wide characters) because too wide
    costs a little whitespace and too narrow costs a second layout pass.
    """
    em = 0.0
    for ch in text:
        if unicodedata.east_asian_width(ch) in "WF":
            em += 1.0
        elif ch.isupper() or ch in "mwMW@%#&":
            em += 0.78
        else:
            em += 0.62
    return em * size


def tick_label_px(axis: dict) -> float:
    """Longest tick label of an axis dict (``ticktext``), in px, at its tick font size."""
    size = (axis.get("tickfont") or {}).get("size", TICK_FONT_PX)
    texts = axis.get("ticktext") or []
    return max((text_px(html.unescape(str(t)), size) for t in texts), default=0.0)


def axis_margin(axis: dict, *, title: bool = True) -> int:
    """Margin (px) that an axis with these tick labels needs on its side (labels of an x axis
    may be drawn vertically, so their length counts there too)."""
    return math.ceil(tick_label_px(axis) + (AXIS_TITLE_PX if title else AXIS_NO_TITLE_PX))


def square_plot_px(n_cells: int) -> int:
    """Side in px of the plot area of an ``n x n`` heatmap: ~24 px cells when short, 640 at most."""
    return min(640, max(220, 24 * n_cells))


def square_heatmap_height(n_cells: int, *, title: bool = True) -> int:
    """Figure height in px for an ``n x n`` heatmap with room for its axes and title."""
    return square_plot_px(n_cells) + 130 + (30 if title else 0)


# ---------------------------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------------------------
# Builders assemble plain dicts and validate once in ``go.Figure(dict)``: make_subplots plus
# update_layout re-validate on every call (65 ms vs 13 ms for a 12-panel figure).
def grid_domains(
    rows: int,
    cols: int,
    *,
    hspace: float,
    vspace: float,
    col_widths: Sequence[float] | None = None,
) -> list[tuple[list[float], list[float]]]:
    """Paper-space (x domain, y domain) of each cell, row-major, first row on top."""
    widths = np.asarray(col_widths if col_widths is not None else [1.0] * cols, dtype=float)
    widths = widths / widths.sum() * (1.0 - hspace * (cols - 1))
    x0 = np.concatenate([[0.0], np.cumsum(widths + hspace)[:-1]])
    height = (1.0 - vspace * (rows - 1)) / rows
    out = []
    for r in range(rows):
        top = 1.0 - r * (height + vspace)
        for c in range(cols):
            out.append(
                ([float(x0[c]), float(min(1.0, x0[c] + widths[c]))],
                 [float(max(0.0, top - height)), float(top)])
            )
    return out


def panel_title(text: str, x_domain: Sequence[float], y_domain: Sequence[float]) -> dict:
    """A subplot title annotation centred above the panel (as make_subplots places them)."""
    return {
        "text": text,
        "x": (x_domain[0] + x_domain[1]) / 2,
        "y": y_domain[1],
        "xref": "paper",
        "yref": "paper",
        "xanchor": "center",
        "yanchor": "bottom",
        "showarrow": False,
        "font": {"size": 13},
    }
