"""Heads by what they do: one role's score for every head, and the heads that score highest.

Inputs are :func:`tformer.analysis.head_roles.role_scores` (or ``average_scores``) output, a mapping
``{role: [layer, head_index]}`` of scores in 0..1, and :func:`tformer.analysis.head_roles.rank_heads`
output, ``[(layer, head, score), ...]``. Both figures color a score alike (sequential, fixed
0..1), so a head has the same color in the map and in the ranking.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from ..i18n import tr
from .attention import weight_ticks
from .checks import Float32Array, as_float32
from .colors import HIGHLIGHT, SEQUENTIAL
from .labels import axis_title, numeric_axis_margin, safe_label, text_px, x_numeric_margin
from .layout import (
    EDGE_PX,
    FULL_WIDTH,
    HALF_WIDTH,
    PANEL_TITLE_PX,
    TOP_BARE_PX,
    base_layout,
    colorbar,
    colorbar_px,
)

# Cell values are written when the grid has at most this many layers and heads (and they fit).
MAX_VALUE_GRID = 12
CELL_FONTS = (14, 13, 12)
CELL_TEXT_PAD = 8
# Cell height: as wide as a cell, within these bounds (px).
MIN_CELL_PX = 28
MAX_CELL_PX = 56
MAX_GRID_PX = 640
INDEX_FONT_PX = 14
# The ranking: px per bar (bar and gap), label and value fonts.
BAR_PX = 34
BAR_FONT_PX = 14
# The roles of :data:`tformer.analysis.head_roles.ROLES`, named on screen by their key in English and by
# the key's translation (the key is the template) in another language.
ROLE_NAMES = ("previous", "next", "self", "cls", "duplicate", "broad")


def head_name(layer: int, head: int) -> str:
    """``"L0H2"``: layer 0, head 2."""
    return f"L{layer}H{head}"


def role_name(role: str) -> str:
    """A role's name in the current language (other names as given)."""
    return tr(role) if role in ROLE_NAMES else role


def format_score(v: float) -> str:
    """A score in 0..1 with two decimals (``"0.85"``, ``"1.00"``); ``""`` for NaN."""
    return f"{v:.2f}".replace("-", "\u2212") if np.isfinite(v) else ""


def _index_axis(title: str, n: int, *, top_down: bool = False) -> dict[str, Any]:
    """An axis of n integer positions (layers or heads), every one labelled."""
    return {
        "title": axis_title(title),
        "tickmode": "array",
        "tickvals": list(range(n)),
        "tickfont": {"size": INDEX_FONT_PX},
        "ticks": "",
        "showgrid": False,
        "zeroline": False,
        "range": [n - 0.5, -0.5] if top_down else [-0.5, n - 0.5],
    }


def role_map_figure(
    scores: Mapping[str, npt.ArrayLike],
    role: str,
    *,
    selected: tuple[int, int] | None = None,
    width: int = FULL_WIDTH,
) -> go.Figure:
    """A [layer x head] grid of ``scores[role]``: heads across, layers down, layer 0 on top.

    Colors are sequential on a fixed 0..1 (dark = 0, bright yellow = 1), so maps of different
    roles and texts compare; a NaN score (no query row counted for that head) is a gap, and the
    hover skips it. Each score is written in its cell (two decimals) when the grid has at most
    12 x 12 heads and the cells are wide enough at 12 px or more (``layout.meta["values_shown"]``).
    When no head has a score the grid says so in words.
    ``selected=(layer, head)`` outlines that head. Sized for a column ``width`` px wide
    (default 940): cells as wide as the column allows, 28 to 56 px tall (shorter for
    deep models, so that the grid stays within about 640 px).
    """
    a = _check_role_grid(scores, role, selected)
    n_layers, n_heads = a.shape
    name = safe_label(role_name(role))
    ticks = weight_ticks()
    left = numeric_axis_margin(str(n_layers - 1), font=INDEX_FONT_PX)
    right = colorbar_px(ticks["ticktext"])
    cell_w = (width - left - right) / n_heads
    # square-ish cells, but a deep model's grid stays about one screen tall
    cell_h = float(min(MAX_CELL_PX, max(MIN_CELL_PX, min(cell_w, MAX_GRID_PX / n_layers))))
    font = _cell_font(n_layers, n_heads, cell_w)
    layout = base_layout(
        math.ceil(n_layers * cell_h),
        width=width,
        left=left,
        right=right,
        top=TOP_BARE_PX,
        bottom=x_numeric_margin(font=INDEX_FONT_PX),
        meta={
            "role": role,
            "range": [0.0, 1.0],
            "values_shown": font is not None,
            "selected": None if selected is None else [int(selected[0]), int(selected[1])],
            "n_missing": int(np.isnan(a).sum()),
        },
        xaxis=_index_axis(tr("head"), n_heads),
        yaxis=_index_axis(tr("layer"), n_layers, top_down=True),
        shapes=[] if selected is None else [_outline(*selected)],
        # an empty grid would look like a drawing error
        annotations=[] if np.isfinite(a).any() else [_no_score_note(name)],
    )
    return go.Figure({"data": [_role_heatmap(a, name, ticks, font)], "layout": layout})


def _check_role_grid(
    scores: Mapping[str, npt.ArrayLike], role: str, selected: tuple[int, int] | None
) -> Float32Array:
    """``scores[role]`` as float32 [layer, head_index], checked: a known role, at least one head,
    ``selected`` (when given) inside the grid."""
    if role not in scores:
        raise ValueError(f"role {role!r} is not one of {list(scores)}")
    a = as_float32(scores[role], 2, f"scores[{role!r}]", "[layer, head_index]")
    n_layers, n_heads = a.shape
    if a.size == 0:
        raise ValueError(f"scores[{role!r}] has shape {tuple(a.shape)}: no heads")
    if selected is not None:
        layer, head = selected
        if not (0 <= layer < n_layers and 0 <= head < n_heads):
            raise ValueError(
                f"selected={tuple(selected)} is outside the {n_layers} x {n_heads} [layer, head_index] grid"
            )
    return a


def _cell_font(n_layers: int, n_heads: int, cell_w: float) -> int | None:
    """The largest of :data:`CELL_FONTS` at which a score fits a cell ``cell_w`` px wide, or
    None when the grid is larger than :data:`MAX_VALUE_GRID` a side or no font fits."""
    if n_layers > MAX_VALUE_GRID or n_heads > MAX_VALUE_GRID:
        return None
    widest = "0.00"
    return next((f for f in CELL_FONTS if text_px(widest, f) + CELL_TEXT_PAD <= cell_w), None)


def _role_heatmap(a: Float32Array, name: str, ticks: dict[str, Any], font: int | None) -> dict[str, Any]:
    """The score grid's heatmap on the fixed 0..1 scale, NaN as gaps; the scores written in
    the cells at ``font`` px (none when ``font`` is None)."""
    heat: dict[str, Any] = {
        "type": "heatmap",
        "name": name,
        "z": a,
        # x is the head index, y the layer (plotly's default 0..n-1: nothing sent)
        "zmin": 0.0,
        "zmax": 1.0,
        "colorscale": SEQUENTIAL,
        "hoverongaps": False,
        "hovertemplate": tr("layer %{y}, head %{x}") + "<br>" + name + " %{z:.3f}<extra></extra>",
        "xgap": 1,
        "ygap": 1,
        "colorbar": colorbar(tr("{role} score", role=name), ticks=ticks),
    }
    if font is not None:
        cells = [[format_score(float(v)) for v in row] for row in a]
        heat.update(text=cells, texttemplate="%{text}", textfont={"size": font})
    return heat


def _outline(layer: int, head: int) -> dict[str, Any]:
    """A rectangle around the cell of ``(layer, head)``."""
    return {
        "type": "rect",
        "xref": "x",
        "yref": "y",
        "x0": head - 0.5,
        "x1": head + 0.5,
        "y0": layer - 0.5,
        "y1": layer + 0.5,
        "line": {"color": HIGHLIGHT, "width": 3},
        "fillcolor": "rgba(0,0,0,0)",
    }


def _no_score_note(name: str) -> dict[str, Any]:
    """The words in the middle of a grid where no head has a score."""
    return {
        "text": tr("no head has a {role} score:<br>no query row counted", role=name),
        "x": 0.5,
        "y": 0.5,
        "xref": "paper",
        "yref": "paper",
        "showarrow": False,
        "font": {"size": PANEL_TITLE_PX},
    }


def role_ranking_figure(
    ranked: Sequence[tuple[int, int, float]], role: str, *, width: int = HALF_WIDTH
) -> go.Figure:
    """Horizontal bars, one per head of ``ranked`` (``[(layer, head, score), ...]``, best
    first, as :func:`tformer.analysis.head_roles.rank_heads` returns it), the first on top.

    Each bar is named ``"L0H2"`` (layer 0, head 2) and labelled with its score (two decimals);
    the x axis is fixed at 0..1 and bars take the map's colors. A NaN score gets no bar and
    the label "n/a". Sized for a column ``width`` px wide (default 460), 34 px a bar.
    """
    if len(ranked) == 0:
        raise ValueError("ranked is empty: at least one (layer, head, score) is needed")
    try:
        heads = [(int(layer), int(head)) for layer, head, _ in ranked]
        values = np.array([float(s) for _, _, s in ranked], dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"ranked must hold (layer, head, score) triples, got {list(ranked)[:3]!r}") from exc
    n = len(heads)
    names = [head_name(layer, head) for layer, head in heads]
    name = safe_label(role_name(role))
    missing = np.isnan(values)
    none = tr("n/a")
    texts = [none if m else format_score(float(v)) for v, m in zip(values, missing, strict=True)]
    bars: dict[str, Any] = {
        "type": "bar",
        "orientation": "h",
        "name": name,
        "x": np.where(missing, 0.0, values).astype(np.float32),
        "y": list(range(n)),
        "text": texts,
        "textposition": "outside",
        "textfont": {"size": BAR_FONT_PX},
        "cliponaxis": False,
        "customdata": names,
        "hovertemplate": "%{customdata}<br>" + name + " %{text}<extra></extra>",
        "marker": {
            "color": np.where(missing, 0.0, values).astype(np.float32),
            "cmin": 0.0,
            "cmax": 1.0,
            "colorscale": SEQUENTIAL,
            "line": {"width": 0},
        },
    }
    layout = base_layout(
        n * BAR_PX,
        width=width,
        left=numeric_axis_margin(max(names, key=len), title=False, font=BAR_FONT_PX),
        # the score label of a full bar stands beyond the axis's end
        right=math.ceil(text_px("1.00", BAR_FONT_PX) + 12),
        top=TOP_BARE_PX - EDGE_PX // 2,
        bottom=x_numeric_margin(font=BAR_FONT_PX),
        meta={"role": role, "order": [list(h) for h in heads], "n_bars": n},
        bargap=0.25,
        xaxis={
            "title": axis_title(tr("{role} score", role=name)),
            "range": [0.0, 1.0],
            "tickmode": "array",
            "tickvals": [0.0, 0.25, 0.5, 0.75, 1.0],
            "ticktext": ["0", "0.25", "0.5", "0.75", "1"],
            "tickfont": {"size": BAR_FONT_PX},
            "ticks": "",
            "showgrid": True,
            "zeroline": False,
        },
        yaxis={
            "tickmode": "array",
            "tickvals": list(range(n)),
            "ticktext": names,
            "tickfont": {"size": BAR_FONT_PX},
            "ticks": "",
            "showgrid": False,
            "zeroline": False,
            "range": [n - 0.5, -0.5],
        },
    )
    return go.Figure({"data": [bars], "layout": layout})
