r"""One head's queries and keys in one plane: near means attended to.

A head's weights come from dot products of queries and keys,

.. math::
    p_{ij} = \operatorname{softmax}_j\!\Big(\frac{q_i \cdot k_j}{\sqrt{d_\text{head}}}\Big),

so drawing both sets of vectors in one plane (the first two principal components of the
stacked queries and keys, :func:`tformer.analysis.rollout.project_2d`) shows which keys each query
points towards (AttentionViz, Yeh et al., 2023). Lines join the (query, key) pairs with the
largest weights (:func:`tformer.analysis.rollout.top_pairs`), so a class can check the picture
against the heatmap.

The builder duck-types its input (:class:`QKProjection`: anything with ``q2``, ``k2`` and
``explained``), so this module imports numpy and plotly only. Token text is escaped with
:func:`~tformer.figures.labels.safe_label` everywhere it appears; labels on the plot are cut to
:data:`~tformer.figures.labels.MAX_TICK_CHARS` characters, the hover has the full token.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from ..i18n import tr
from .checks import Float32Array, as_float32, check_tokens
from .colors import EMPTY, HIGHLIGHT, INK, KEY_TEXT, NOTE_INK, QUERY_TEXT, WHITE
from .labels import MAX_TICK_CHARS, axis_title, numeric_axis_margin, safe_label, text_px, x_numeric_margin
from .layout import DETAIL_WIDTH, TOP_BARE_PX, TOP_TITLE_PX, base_layout
from .walkthrough import K_COLOR, MINUS, Q_COLOR

# Above this many tokens only the tokens of the drawn pairs and the selected query carry a
# label on the plot (2 x 40 labels already crowd a 700 px plot); the hover names every point.
LABEL_ALL_POINTS = 40
# Labels are darker than their markers: the key orange on white is too light to read as text.
Q_TEXT = QUERY_TEXT
K_TEXT = KEY_TEXT
LINE_COLOR = INK
LABEL_FONT_PX = 13
LEGEND_FONT_PX = 14
TICK_FONT_PX = 12
MARKER_PX = (9, 6)  # up to LABEL_ALL_POINTS tokens, beyond
# Above LABEL_ALL_POINTS tokens the unlabelled points fade, so the labelled ones stand out.
FADED_OPACITY = 0.35
# A white halo keeps labels readable where they cross a line or a marker.
HALO = f"0 0 2px {WHITE}, 0 0 3px {WHITE}"
SELECTED_PX = 15
# Points closer than this (px) are drawn as one: their tokens share one label, "a · b · c +2"
# (e.g. several [UNK] tokens, whose vectors differ by their positions only).
COINCIDE_PX = 6.0
GROUP_NAMES = 3
LINE_PX = 2.5
# Line opacity: the lightest pair is still seen, the heaviest is opaque.
MIN_OPACITY = 0.2
# Room (px) between the outermost points and the plot's edges, for their labels.
X_INSET_PX = 40
Y_INSET_PX = 24
# Plot height limits (px): equal scales make a flat cloud a flat plot, within these.
MIN_PLOT_PX = 280
LEGEND_ROW_PX = 26
RIGHT_PX = 24
Y_TICK_SAMPLE = f"{MINUS}00.0"

# The traces' names: English templates (a trace's name on screen is their translation); the
# query and key traces are told apart by their legend group, which is always the English name.
QUERY_NAME = "query"
KEY_NAME = "key"
SELECTED_NAME = "selected query"
PAIRS_NAME = "query \u2192 key it attends to (darker = more weight)"


class QKProjection(Protocol):
    """What :func:`qk_space_figure` reads (e.g. :class:`tformer.analysis.rollout.Projection`)."""

    @property
    def q2(self) -> npt.ArrayLike: ...  # [pos, 2] queries (PC1, PC2)

    @property
    def k2(self) -> npt.ArrayLike: ...  # [pos, 2] keys (PC1, PC2)

    @property
    def explained(self) -> npt.ArrayLike: ...  # [2] share of variance of PC1, PC2


def pc_title(i: int, share: float) -> str:
    """``"PC1 (62 % of variance)"``: whole percent from 10 %, one decimal below."""
    pct = 100.0 * share
    text = f"{pct:.0f}" if pct >= 9.95 else f"{pct:.1f}"
    return tr("PC{i} ({share} % of variance)", i=i, share=text)


def _check_pairs(pairs: Sequence[Sequence[float]], n: int) -> list[tuple[int, int, float]]:
    out = []
    for pair in pairs:
        if len(pair) != 3:
            raise ValueError(f"each pair must be (query_pos, key_pos, weight), got {tuple(pair)!r}")
        i, j, w = pair
        if not (float(i).is_integer() and float(j).is_integer() and 0 <= i < n and 0 <= j < n):
            raise ValueError(f"pair {tuple(pair)!r} is not (query_pos, key_pos) in 0..{n - 1} ({n} tokens)")
        out.append((int(i), int(j), float(w)))
    return out


def _opacities(weights: Sequence[float]) -> list[float]:
    """Line opacity by weight, relative to the heaviest pair drawn (NaN and negatives as 0)."""
    w = [x if x > 0 else 0.0 for x in weights]  # NaN > 0 is False
    top = max(w, default=0.0)
    return [MIN_OPACITY + (1 - MIN_OPACITY) * (x / top if top > 0 else 0.0) for x in w]


def _ranges(pts: npt.NDArray[np.float32], plot_w: float) -> tuple[list[float], list[float], float]:
    """x range, y range and plot height (px) with one data unit as many px on both axes, the
    points ``X_INSET_PX`` / ``Y_INSET_PX`` clear of the edges; a flat cloud gets a flat plot,
    no lower than :data:`MIN_PLOT_PX`, no taller than it is wide."""
    lo, hi = pts.min(0).astype(np.float64), pts.max(0).astype(np.float64)
    span = hi - lo
    if not span.max() > 0:  # every point in one place
        span = np.ones(2)
        lo, hi = lo - 0.5, hi + 0.5
    span = np.maximum(span, 1e-3 * span.max())  # a cloud flat along x or y still has a scale
    units_px = span[0] / (plot_w - 2 * X_INSET_PX)  # data units per px
    plot_h = span[1] / units_px + 2 * Y_INSET_PX
    max_h = plot_w
    if plot_h > max_h:  # taller than wide: the y span sets the scale
        units_px = span[1] / (max_h - 2 * Y_INSET_PX)
        plot_h = max_h
    plot_h = max(plot_h, MIN_PLOT_PX)
    mid = (lo + hi) / 2
    half_x, half_y = plot_w * units_px / 2, plot_h * units_px / 2
    return [mid[0] - half_x, mid[0] + half_x], [mid[1] - half_y, mid[1] + half_y], plot_h


def _legend_rows(names: Sequence[str], room: float) -> int:
    """Rows a horizontal legend of ``names`` takes in ``room`` px (plotly wraps at the edge)."""
    rows, used = 1, 0.0
    for name in names:
        w = 40 + text_px(name, LEGEND_FONT_PX)
        if used and used + w > room:
            rows, used = rows + 1, 0.0
        used += w
    return rows


def _points(
    xy: npt.NDArray[np.float32],
    labels: Sequence[object],
    idx: npt.NDArray[np.intp],
    *,
    role: str,
    rank: int,
    text: Sequence[str] | None,
    faded: bool = False,
) -> dict[str, Any]:
    """The query or key markers at positions ``idx``, labelled with ``text`` ([pos] escaped
    strings, "" for none; None: no labels at all); a ``faded`` trace is the pale background of
    a long text (no legend entry of its own)."""
    is_query = role == QUERY_NAME
    trace: dict[str, Any] = {
        "type": "scatter",
        "name": tr(role),
        "legendgroup": role,
        "legendrank": rank,
        "showlegend": not faded,
        "x": np.ascontiguousarray(xy[idx, 0]),
        "y": np.ascontiguousarray(xy[idx, 1]),
        "mode": "markers" if text is None else "markers+text",
        "marker": {
            "size": MARKER_PX[1] if len(labels) > LABEL_ALL_POINTS else MARKER_PX[0],
            "symbol": "circle" if is_query else "diamond",
            "color": Q_COLOR if is_query else K_COLOR,
            "opacity": FADED_OPACITY if faded else 0.9,
            "line": {"width": 0.5, "color": WHITE},
        },
        "cliponaxis": False,
        "hovertext": [
            tr("query {i}: {token}", i=i, token=safe_label(labels[i]))
            if is_query
            else tr("key {i}: {token}", i=i, token=safe_label(labels[i]))
            for i in idx.tolist()
        ],
        "hovertemplate": "%{hovertext}<br>PC1 %{x:.3g}, PC2 %{y:.3g}<extra></extra>",
    }
    if text is not None:
        trace.update(
            text=[text[i] for i in idx.tolist()],
            # queries above their marker, keys below: a query and its own key rarely cover each other
            textposition="top center" if is_query else "bottom center",
            textfont={"size": LABEL_FONT_PX, "color": Q_TEXT if is_query else K_TEXT, "shadow": HALO},
        )
    return trace


def _role_traces(
    xy: npt.NDArray[np.float32],
    labels: Sequence[object],
    front: npt.NDArray[np.bool_],
    text: Sequence[str],
    *,
    role: str,
    rank: int,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(background, foreground) traces of the queries or the keys, labelled with ``text``:
    up to :data:`LABEL_ALL_POINTS` tokens, or when no point is in ``front``, one trace in
    front; else the points not in ``front`` fade into a background trace under the lines."""
    every = np.arange(len(labels))
    shown = text if any(text) else None
    if len(labels) <= LABEL_ALL_POINTS or not front.any():
        return [], [_points(xy, labels, every, role=role, rank=rank, text=shown)]
    back = _points(xy, labels, every[~front], role=role, rank=rank, text=None, faded=True)
    return [back], [_points(xy, labels, every[front], role=role, rank=rank, text=shown)]


def _group_text(names: Sequence[str]) -> str:
    """One label for coinciding points: ``"a · b · c +2"``."""
    more = len(names) - GROUP_NAMES
    return " \u00b7 ".join(names[:GROUP_NAMES]) + (f" +{more}" if more > 0 else "")


def _place_labels(
    px: npt.NDArray[np.float64],
    names: Sequence[str],
    wanted: npt.NDArray[np.bool_],
    order: Sequence[int],
    seed: int | None = None,
) -> list[str]:
    """The label of each point ("" for none) among the ``wanted`` ones, visited in ``order``
    (first come, first labelled; ``seed`` before all).

    ``px``: [pos, 2] point positions in px; ``names``: escaped, cut tokens. Points within
    :data:`COINCIDE_PX` of a labelled point join its label (several tokens at one spot read as
    one word stacked on another, a smudge); a label that repeats the same word almost on top
    of a labelled copy is left out. Other overlaps stay: the points are apart, and a zoom
    separates them."""
    groups: dict[int, list[str]] = {} if seed is None else {seed: [names[seed]]}
    for i in dict.fromkeys(order):  # each position once, in its first place
        if not wanted[i] or i in groups:
            continue
        x, y = px[i]
        home = next((a for a in groups if math.hypot(x - px[a][0], y - px[a][1]) < COINCIDE_PX), None)
        if home is not None:
            if names[i] not in groups[home]:
                groups[home].append(names[i])
            continue
        half_w = text_px(html.unescape(names[i]), LABEL_FONT_PX) / 2
        if any(
            names[i] in group and abs(x - px[a][0]) < half_w + 2 and abs(y - px[a][1]) < 0.9 * LABEL_FONT_PX
            for a, group in groups.items()
        ):
            continue
        groups[i] = [names[i]]
    out = [""] * len(names)
    for a, group in groups.items():
        out[a] = _group_text(group)
    return out


def _qk_inputs(
    proj: QKProjection, labels: Sequence[object], pairs: Sequence[Sequence[float]] | None, query: int | None
) -> tuple[Float32Array, Float32Array, npt.NDArray[np.float64], list[tuple[int, int, float]], int | None]:
    """``q2``, ``k2`` [pos, 2] (finite, one shape, one label a position), ``explained`` [2],
    the pairs to draw and the selected query position (``None``: none)."""
    q2 = as_float32(proj.q2, 2, "q2", "[pos, 2]")
    k2 = as_float32(proj.k2, 2, "k2", "[pos, 2]")
    if q2.shape != k2.shape or q2.shape[1:] != (2,):
        raise ValueError(f"q2 and k2 must be [pos, 2] of one shape, got {q2.shape} and {k2.shape}")
    n = int(q2.shape[0])
    if n == 0:
        raise ValueError("q2 has shape (0, 2): at least one token is needed")
    check_tokens(labels, n, "q2", tuple(q2.shape))
    explained = np.asarray(proj.explained, dtype=np.float64)
    if explained.shape != (2,):
        raise ValueError(f"explained must be [2] (PC1, PC2), got shape {explained.shape}")
    if not (np.isfinite(q2).all() and np.isfinite(k2).all()):
        raise ValueError("q2 and k2 must be finite")
    drawn = _check_pairs(pairs or [], n)
    if query is not None and not 0 <= int(query) < n:
        raise ValueError(f"query={query} is not a position in 0..{n - 1} ({n} tokens)")
    return q2, k2, explained, drawn, None if query is None else int(query)


def _legend_names(sel: int | None, drawn: Sequence[tuple[int, int, float]]) -> list[str]:
    """The legend's entries, translated: queries, keys, the selected query and the lines
    where there are any."""
    names = (
        [QUERY_NAME, KEY_NAME]
        + ([SELECTED_NAME] if sel is not None else [])
        + ([PAIRS_NAME] if drawn else [])
    )
    return [tr(name) for name in names]


def _qk_labels(
    px: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]],
    cut: Sequence[str],
    drawn: Sequence[tuple[int, int, float]],
    sel: int | None,
) -> tuple[list[str], list[str], npt.NDArray[np.bool_], npt.NDArray[np.bool_], str]:
    """Which queries and keys are drawn in front and what each is labelled (``px``: their
    positions in px; ``cut``: the escaped, cut tokens): up to :data:`LABEL_ALL_POINTS` tokens
    all of them, beyond only the pairs' ends. Labels go by priority: the selected query, the
    pairs' ends (heaviest first), then by position. Returns the query and key labels, the
    query and key front masks, and the selected query's label, which moves onto its ring's
    trace, clear of the ring."""
    n = len(cut)
    q_front = np.full(n, n <= LABEL_ALL_POINTS)
    k_front = q_front.copy()
    for i, j, _ in drawn:
        q_front[i], k_front[j] = True, True
    q_text = _place_labels(px[0], cut, q_front, [i for i, _, _ in drawn] + list(range(n)), sel)
    k_text = _place_labels(px[1], cut, k_front, [j for _, j, _ in drawn] + list(range(n)))
    ring_text = ""
    if sel is not None:
        ring_text, q_text[sel] = q_text[sel], ""
    return q_text, k_text, q_front, k_front, ring_text


def _pair_lines(
    q2: Float32Array, k2: Float32Array, labels: Sequence[object], drawn: Sequence[tuple[int, int, float]]
) -> list[dict[str, Any]]:
    """One line a pair from its query to its key, darker for more weight; one legend entry."""
    data: list[dict[str, Any]] = []
    for n_line, ((i, j, w), opacity) in enumerate(zip(drawn, _opacities([p[2] for p in drawn]), strict=True)):
        a, b = q2[i], k2[j]
        hover = tr(
            "query {i}: {query} \u2192 key {j}: {key}<br>weight {w:.3g}",
            i=i,
            query=safe_label(labels[i]),
            j=j,
            key=safe_label(labels[j]),
            w=w,
        )
        data.append(
            {
                "type": "scatter",
                "name": tr(PAIRS_NAME),
                "legendgroup": "pairs",
                "legendrank": 4,
                "showlegend": n_line == 0,
                # the midpoint gives the line a hover of its own, away from the markers
                "x": np.array([a[0], (a[0] + b[0]) / 2, b[0]], dtype=np.float32),
                "y": np.array([a[1], (a[1] + b[1]) / 2, b[1]], dtype=np.float32),
                "mode": "lines",
                "line": {"color": LINE_COLOR, "width": LINE_PX},
                "opacity": round(opacity, 3),
                "hovertext": [hover] * 3,
                "hovertemplate": "%{hovertext}<extra></extra>",
            }
        )
    return data


def _selected_trace(xy: Float32Array, sel: int, token: object, cut: str, ring_text: str) -> dict[str, Any]:
    """The selected query ``sel`` (at ``xy`` [2]): a query dot in a red ring over its own
    marker, its token in bold and any tokens that coincide with it after it (``ring_text``)."""
    return {
        "type": "scatter",
        "name": tr(SELECTED_NAME),
        "legendrank": 3,
        "x": np.array([xy[0]], dtype=np.float32),
        "y": np.array([xy[1]], dtype=np.float32),
        "mode": "markers+text",
        "text": [f"<b>{cut}</b>{ring_text[len(cut) :]}"],
        "textposition": "top center",
        "textfont": {"size": LABEL_FONT_PX, "color": Q_TEXT, "shadow": HALO},
        "marker": {
            "size": SELECTED_PX,
            "symbol": "circle",
            "color": Q_COLOR,
            "line": {"width": 3.5, "color": HIGHLIGHT},
        },
        "cliponaxis": False,
        "hovertext": [tr("selected query {i}: {token}", i=sel, token=safe_label(token))],
        "hovertemplate": "%{hovertext}<extra></extra>",
    }


def _pc_axis(title_text: str, rng: list[float]) -> dict[str, Any]:
    """A principal-component axis over ``rng`` with a light grid."""
    return {
        "title": axis_title(title_text),
        "range": rng,
        "tickfont": {"size": TICK_FONT_PX, "color": NOTE_INK},
        "ticks": "",
        "showgrid": True,
        "gridcolor": EMPTY,
        "zeroline": False,
        "nticks": 7,
    }


def _bottom_legend() -> dict[str, Any]:
    """A horizontal legend at the bottom of the figure, below the x axis's title."""
    return {
        "orientation": "h",
        "x": 0,
        "xanchor": "left",
        "y": 0,
        "yanchor": "bottom",
        "yref": "container",
        "font": {"size": LEGEND_FONT_PX},
        "itemsizing": "constant",
    }


def qk_space_figure(
    proj: QKProjection,
    labels: Sequence[object],
    *,
    pairs: Sequence[Sequence[float]] | None = None,
    query: int | None = None,
    title: str | None = None,
    width: int = DETAIL_WIDTH,
) -> go.Figure:
    """One head's queries and keys (``proj``, e.g. from :func:`tformer.analysis.rollout.project_2d`) in
    the plane of their first two principal components.

    Queries are purple circles, keys orange diamonds (the neuron view's q and k colors), each
    labelled with its token (``labels``: one per position, user text, escaped here). Above
    :data:`LABEL_ALL_POINTS` tokens only the queries and keys of ``pairs`` and the selected
    ``query`` are labelled, and the other points fade; the hover names every point. Points
    that coincide on screen (closer than :data:`COINCIDE_PX`) share one label ``"a · b · c
    +2"``, and a word is not repeated right beside itself. ``pairs``: ``(query_pos, key_pos,
    weight)`` tuples (e.g. :func:`tformer.analysis.rollout.top_pairs`), each drawn as a line from the
    query to the key, darker for more weight (opacity relative to the heaviest pair drawn; the
    hover gives the weight). ``query``: a position whose query marker gets a red ring and a
    label. Both axes have one scale (a circle stays a circle); their titles say how much of
    the variance each component holds. ``title`` is shown as given (escape user text in it
    with ``safe_label``).

    ``layout.meta``: ``n_pos``, ``pairs`` (lines drawn), ``labelled`` (points with a label on
    the plot), ``query``, ``explained``, ``width``, ``plot_px`` ([w, h]).
    """
    q2, k2, explained, drawn, sel = _qk_inputs(proj, labels, pairs, query)

    # Geometry: margins first, then a plot as wide as the column and as tall as equal scales need.
    left = numeric_axis_margin(Y_TICK_SAMPLE, font=TICK_FONT_PX)
    plot_w = width - left - RIGHT_PX
    legend_px = _legend_rows(_legend_names(sel, drawn), plot_w) * LEGEND_ROW_PX
    x_range, y_range, plot_h = _ranges(np.concatenate([q2, k2]), plot_w)
    units_px = (x_range[1] - x_range[0]) / plot_w
    origin = np.array([x_range[0], y_range[0]])
    cut = [safe_label(t, MAX_TICK_CHARS) for t in labels]
    q_text, k_text, q_front, k_front, ring_text = _qk_labels(
        ((q2 - origin) / units_px, (k2 - origin) / units_px), cut, drawn, sel
    )
    layout = base_layout(
        math.ceil(plot_h),
        width=width,
        left=left,
        right=RIGHT_PX,
        top=TOP_TITLE_PX if title else TOP_BARE_PX,
        bottom=x_numeric_margin(font=TICK_FONT_PX) + legend_px + 6,
        title=title,
        meta={
            "n_pos": len(labels),
            "pairs": len(drawn),
            "labelled": sum(map(bool, q_text)) + sum(map(bool, k_text)) + bool(ring_text),
            "query": sel,
            "explained": [float(x) for x in explained],
            "plot_px": [plot_w, math.ceil(plot_h)],
        },
        xaxis={**_pc_axis(pc_title(1, float(explained[0])), x_range), "constrain": "range"},
        # one data unit is as many px up as across, also after a zoom
        yaxis={**_pc_axis(pc_title(2, float(explained[1])), y_range), "scaleanchor": "x", "scaleratio": 1},
        showlegend=True,
        legend=_bottom_legend(),
        hovermode="closest",
        plot_bgcolor=WHITE,
    )

    # Pale background points, then the lines, then the labelled points and the selected query.
    k_back, k_fore = _role_traces(k2, labels, k_front, k_text, role=KEY_NAME, rank=2)
    q_back, q_fore = _role_traces(q2, labels, q_front, q_text, role=QUERY_NAME, rank=1)
    ring = [] if sel is None else [_selected_trace(q2[sel], sel, labels[sel], cut[sel], ring_text)]
    data = [*k_back, *q_back, *_pair_lines(q2, k2, labels, drawn), *k_fore, *q_fore, *ring]
    return go.Figure({"data": data, "layout": layout})
