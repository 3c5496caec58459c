"""Heads named as they form: one role's score of every head at each snapshot of a training run,
under the run's loss and held-out accuracy, on one update axis.

:func:`role_timeline_figure` stacks three panels that share their x axis (the update step; one
zoom moves all three): the training loss, the held-out token accuracy, and a strip per head
(``L0H1``: layer 0, head 1; layer 0 on top) colored by its score for the role, on the fixed
0..1 scale of the Head finder's map. A diamond marks the snapshot where a head took the role,
its hover saying so in words; a dotted line carries the first of these moments up through the
loss and accuracy panels, so a class sees what the curves did when the head formed. A solid line
marks the snapshot the page shows below the chart.

Inputs are plain arrays (the caller reads them off a run or a saved run.json); nothing of
tformer outside this package is imported. Every word drawn goes through `tformer.i18n.tr`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from ..i18n import tr
from .attention import weight_ticks
from .checks import Float32Array
from .colors import BLUE, BLUISH_GREEN, INK, MARK_INK, NOTE_INK, SEQUENTIAL, WHITE
from .labels import axis_title, numeric_axis_margin, text_px, x_numeric_margin
from .layout import (
    EDGE_PX,
    FULL_WIDTH,
    TOP_PANEL_TITLE_PX,
    Domain,
    base_layout,
    colorbar,
    colorbar_px,
    panel_title,
    px_domain,
)
from .roles import head_name

__all__ = ["role_timeline_figure"]

TICK_PX = 13
LOSS_PX = 110  # the loss panel's plot height
ACCURACY_PX = 90
PANEL_AIR_PX = 8  # between a panel and the next one's title
# A head's strip: as tall as fits MAX_HEADS_PX for every head, within these bounds.
MIN_ROW_PX = 5
MAX_ROW_PX = 26
MAX_HEADS_PX = 520
MIN_HEADS_PX = 96  # a model of one or two heads: strips tall enough for the colorbar beside them
LABEL_ROW_PX = 12  # below this a strip has no label of its own (each layer's first one has)
MAX_POINTS = 2000  # a curve's points sent at most (every k-th, and the last)
MIN_X = 10
MARKER_PX = 12
Curve = tuple[npt.ArrayLike, npt.ArrayLike]  # (update steps [n], values [n])
# Each curve panel: its title (and the line's name), color and hover (English templates).
CURVES = {
    "loss": ("training loss", BLUE, "update %{x:,}<br>loss %{y:.3g}"),
    "accuracy": ("held-out token accuracy", BLUISH_GREEN, "update %{x:,}<br>accuracy %{y:.1%}"),
}


def _timeline(steps: npt.ArrayLike, scores: npt.ArrayLike) -> tuple[Float32Array, Float32Array]:
    """``steps`` [snap] (whole, >= 0, increasing) and ``scores`` [snap, layer, head_index] (0..1
    or NaN), as float32 x [snap] and z [head (layer-major), snap]."""
    x = np.asarray(steps, dtype=np.float64)
    s = np.asarray(scores, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"steps must be [snap] with at least one snapshot, got shape {x.shape}")
    if not (np.isfinite(x).all() and (x >= 0).all() and (x == np.round(x)).all() and (np.diff(x) > 0).all()):
        raise ValueError(f"steps must be whole update numbers >= 0, increasing, got {x[:6].tolist()}...")
    if s.ndim != 3 or s.shape[0] != x.size or 0 in s.shape:
        raise ValueError(f"scores must be [snap={x.size}, layer, head_index], got shape {s.shape}")
    finite = s[np.isfinite(s)]
    if finite.size and (finite.min() < -1e-6 or finite.max() > 1 + 1e-6):
        raise ValueError("scores must lie in 0..1 (NaN where a head has none)")
    z = s.reshape(x.size, -1).T.astype(np.float32)  # [head, snap]
    return x.astype(np.float32), np.ascontiguousarray(z)


def _curve(curve: Curve | None, name: str) -> tuple[Float32Array, Float32Array] | None:
    """A (steps, values) pair of equal 1-d length as float32, thinned to MAX_POINTS; None stays None."""
    if curve is None:
        return None
    x = np.asarray(curve[0], dtype=np.float64)
    y = np.array(curve[1], dtype=np.float64)  # a copy: the caller's (maybe read-only) array is left as it is
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"{name} must be (steps [n], values [n]), got shapes {x.shape} and {y.shape}")
    if x.size > MAX_POINTS:
        every = math.ceil(x.size / MAX_POINTS)
        keep = np.unique(np.append(np.arange(0, x.size, every), x.size - 1))
        x, y = x[keep], y[keep]
    y[~np.isfinite(y)] = np.nan
    return x.astype(np.float32), y.astype(np.float32)


def _nice_ticks(top: float, n: int = 3) -> list[float]:
    """About ``n`` round ticks over 0..``top`` (> 0): 1, 2 or 5 times a power of ten apart."""
    raw = top / n
    p = 10.0 ** math.floor(math.log10(raw))
    step = next(f * p for f in (1.0, 2.0, 5.0, 10.0) if f * p >= raw)
    return [round(i * step, 10) for i in range(int(top / step + 1e-9) + 1)]


def _update_ticks(x_max: float, plot_w: float) -> dict[str, Any]:
    """Whole update numbers 0..``x_max``, as many as fit side by side at TICK_PX."""
    widest = text_px(f"{int(x_max):,}", TICK_PX) + 2 * TICK_PX
    vals = [int(v) for v in _nice_ticks(max(x_max, 1.0), max(2, int(plot_w // widest) - 1))]
    return {"tickmode": "array", "tickvals": vals, "ticktext": [f"{v:,}" for v in vals]}


def _row_px(n_rows: int) -> float:
    return float(max(MIN_HEADS_PX / n_rows, min(MAX_ROW_PX, max(MIN_ROW_PX, MAX_HEADS_PX / n_rows))))


def _row_axis(n_layers: int, n_heads: int, row_px: float) -> dict[str, Any]:
    """The strips' axis: one row a head, layer 0 on top; every head named while a strip is
    LABEL_ROW_PX tall, else each layer's first head."""
    every = 1 if row_px >= LABEL_ROW_PX else n_heads
    rows = range(0, n_layers * n_heads, every)
    return {
        "tickmode": "array",
        "tickvals": list(rows),
        "ticktext": [head_name(*divmod(r, n_heads)) for r in rows],
        "range": [n_layers * n_heads - 0.5, -0.5],
        "tickfont": {"size": TICK_PX},
        "showgrid": False,
        "zeroline": False,
        "ticks": "",
    }


def _panel_boxes(heads_px: float, has: tuple[bool, bool]) -> list[tuple[str, float, float]]:
    """(panel, top px, bottom px) of each panel drawn, from the plot area's top."""
    boxes, y = [], 0.0
    for name, h, shown in (
        ("loss", LOSS_PX, has[0]),
        ("accuracy", ACCURACY_PX, has[1]),
        ("heads", heads_px, True),
    ):
        if shown:
            boxes.append((name, y, y + h))
            y += h + PANEL_AIR_PX + TOP_PANEL_TITLE_PX
    return boxes


def _curve_trace(
    c: tuple[Float32Array, Float32Array], axis: str, name: str, color: str, hover: str
) -> dict[str, Any]:
    """One curve panel's line: ``name`` and ``hover`` are English templates."""
    return {
        "type": "scatter",
        "mode": "lines",
        "name": tr(name),
        "x": c[0],
        "y": c[1],
        "xaxis": f"x{axis}",
        "yaxis": f"y{axis}",
        "line": {"color": color, "width": 2},
        "connectgaps": False,
        "hovertemplate": tr(hover) + "<extra></extra>",
        "showlegend": False,
    }


def _heads_trace(
    x: Float32Array,
    z: Float32Array,
    names: list[str],
    role: str,
    axis: str,
    bar: dict[str, Any],
    row_px: float,
) -> dict[str, Any]:
    """The strips: one row a head; a 1 px gap between rows tall enough to be labelled (thin
    rows would be more gap than color: `_layer_rules` sets the layers apart instead)."""
    return {
        "type": "heatmap",
        "x": x,
        "z": z,
        "zmin": 0.0,
        "zmax": 1.0,
        "colorscale": SEQUENTIAL,
        "xaxis": f"x{axis}",
        "yaxis": f"y{axis}",
        "customdata": np.array([[n] * x.size for n in names]),
        "hoverongaps": False,
        "hovertemplate": "%{customdata}<br>"
        + tr("update %{x:,}")
        + "<br>"
        + role
        + " %{z:.2f}<extra></extra>",
        "colorbar": bar,
        "ygap": 1 if row_px >= LABEL_ROW_PX else 0,
    }


def _layer_rules(n_layers: int, n_heads: int, axis: str) -> list[dict[str, Any]]:
    """A white line between the strips of one layer and the next."""
    return [
        {
            "type": "line",
            "xref": f"x{axis} domain",
            "yref": f"y{axis}",
            "x0": 0,
            "x1": 1,
            "y0": layer * n_heads - 0.5,
            "y1": layer * n_heads - 0.5,
            "line": {"color": WHITE, "width": 2},
            "layer": "above",
        }
        for layer in range(1, n_layers)
    ]


def _marker_trace(formed: Sequence[tuple[int, int, int, str]], n_heads: int, axis: str) -> dict[str, Any]:
    return {
        "type": "scatter",
        "mode": "markers",
        "x": [float(step) for _, _, step, _ in formed],
        "y": [layer * n_heads + head for layer, head, _, _ in formed],
        "xaxis": f"x{axis}",
        "yaxis": f"y{axis}",
        "text": [sentence for *_, sentence in formed],
        "hovertemplate": "%{text}<extra></extra>",
        "cliponaxis": False,  # a diamond on the first or last strip stays whole
        "marker": {
            "symbol": "diamond",
            "size": MARKER_PX,
            "color": WHITE,
            "line": {"color": INK, "width": 1.5},
        },
        "showlegend": False,
        "name": tr("took the role"),
    }


def _vline(step: float, axis: str, *, dash: str, color: str) -> dict[str, Any]:
    return {
        "type": "line",
        "xref": f"x{axis}",
        "yref": f"y{axis} domain",
        "x0": step,
        "x1": step,
        "y0": 0,
        "y1": 1,
        "line": {"color": color, "width": 1.5, "dash": dash},
        "layer": "above",
    }


def role_timeline_figure(
    snapshot_steps: npt.ArrayLike,
    scores: npt.ArrayLike,
    *,
    role: str,
    formed: Sequence[tuple[int, int, int, str]] = (),
    loss: Curve | None = None,
    accuracy: Curve | None = None,
    current: int | None = None,
    width: int = FULL_WIDTH,
) -> go.Figure:
    """One role's score of every head over a run's snapshots, under its loss and accuracy.

    ``snapshot_steps``: [snap] the update each snapshot was taken after; ``scores``: [snap, layer,
    head_index] the role's score of each head there (0..1, NaN where a head has none); ``role``:
    the role's name as shown (translated, no markup). ``formed``: ``(layer, head, step, sentence)``
    for each head that took the role (a diamond at ``step``, its hover the ``sentence``); the
    earliest one also gets a dotted line through the loss and accuracy panels. ``loss`` and
    ``accuracy``: ``(steps, values)`` of the training loss and the held-out token accuracy (0..1);
    a panel is drawn for each one given. ``current``: the update of the snapshot shown below the
    chart (a solid line through every panel). ``layout.meta``: ``role``, ``n_snapshots``,
    ``n_heads``, ``formed`` (their steps), ``current``, ``panels``, ``row_px``.
    """
    x, z = _timeline(snapshot_steps, scores)
    n_layers, n_heads = np.shape(scores)[1:]
    _check_marks(formed, current, n_layers, n_heads)
    loss_c, acc_c = _curve(loss, "loss"), _curve(accuracy, "accuracy")
    x_max = max(
        float(x[-1]), *(float(c[0][-1]) for c in (loss_c, acc_c) if c is not None and c[0].size), MIN_X
    )
    row_px = _row_px(z.shape[0])
    boxes = _panel_boxes(z.shape[0] * row_px, (loss_c is not None, acc_c is not None))
    row_axis = _row_axis(n_layers, n_heads, row_px)
    loss_top = float(np.nanmax(loss_c[1])) if loss_c is not None and np.isfinite(loss_c[1]).any() else 1.0
    loss_ticks = _nice_ticks(max(loss_top, 1e-6) * 1.05, 4)
    bar_ticks = weight_ticks()
    left = numeric_axis_margin(
        max(
            [*row_axis["ticktext"], "100 %", *(f"{v:g}" for v in loss_ticks)],
            key=lambda t: text_px(t, TICK_PX),
        ),
        title=False,
        font=TICK_PX,
    )
    right = max(colorbar_px(bar_ticks["ticktext"]), EDGE_PX)
    plot_w, plot_h = width - left - right, boxes[-1][2]
    domains = {name: px_domain(0.0, plot_w, y0, y1, plot_w, plot_h) for name, y0, y1 in boxes}
    axes = _axes(domains, x_max, plot_w, row_axis, loss_ticks, loss_top)
    heads_axis = _axis_suffix(list(domains), "heads")
    hy = domains["heads"][1]
    bar = colorbar(
        tr("{role} score", role=role), y=(hy[0] + hy[1]) / 2, length=hy[1] - hy[0], ticks=bar_ticks
    )
    shapes, notes = _marks(domains, formed, current, role)
    layout = base_layout(
        plot_h,
        width=width,
        left=left,
        right=right,
        top=TOP_PANEL_TITLE_PX,
        bottom=x_numeric_margin(font=TICK_PX),
        meta={
            "role": role,
            "n_snapshots": int(x.size),
            "n_heads": [int(n_layers), int(n_heads)],
            "formed": sorted(int(step) for _, _, step, _ in formed),
            "current": current,
            "panels": list(domains),
            "row_px": row_px,
        },
        showlegend=False,
        hovermode="closest",
        shapes=[*_layer_rules(n_layers, n_heads, heads_axis), *shapes],
        annotations=[*_titles(domains, role), *notes],
        **axes,
    )
    names = [head_name(layer, head) for layer in range(n_layers) for head in range(n_heads)]
    data = [_heads_trace(x, z, names, role, heads_axis, bar, row_px)]
    if formed:
        data.append(_marker_trace(formed, n_heads, heads_axis))
    for panel, c in (("loss", loss_c), ("accuracy", acc_c)):
        if c is not None:
            data.append(_curve_trace(c, _axis_suffix(list(domains), panel), *CURVES[panel]))
    return go.Figure({"data": data, "layout": layout})


def _check_marks(
    formed: Sequence[tuple[int, int, int, str]], current: int | None, n_layers: int, n_heads: int
) -> None:
    """Each diamond on a head of the grid at an update >= 0; the snapshot shown at an update >= 0."""
    for i, mark in enumerate(formed):
        if len(mark) != 4:
            raise ValueError(f"formed[{i}] must be (layer, head, step, sentence), got {mark!r}")
        layer, head, step, _ = mark
        if not (0 <= layer < n_layers and 0 <= head < n_heads and 0 <= step):
            raise ValueError(
                f"formed[{i}] = layer {layer} head {head} at update {step}: not a head of the "
                f"{n_layers} x {n_heads} grid at an update >= 0"
            )
    if current is not None and not current >= 0:
        raise ValueError(f"current={current!r} must be an update >= 0 (or None)")


def _axis_suffix(panels: list[str], name: str) -> str:
    i = panels.index(name)
    return "" if i == 0 else str(i + 1)


def _axes(
    domains: dict[str, Domain],
    x_max: float,
    plot_w: float,
    row_axis: dict[str, Any],
    loss_ticks: list[float],
    loss_top: float,
) -> dict[str, Any]:
    """Every panel's x axis (one zoom for all; ticks labelled on the bottom panel only) and
    its y axis: the loss from 0, accuracy 0..100 %, the heads' rows."""
    panels = list(domains)
    ticks = _update_ticks(x_max, plot_w)
    y_of = {
        "loss": {"range": [0.0, max(loss_top, 1e-6) * 1.08], "tickmode": "array", "tickvals": loss_ticks,
                 "ticktext": [f"{v:g}" for v in loss_ticks]},
        "accuracy": {"range": [-0.03, 1.05], "tickmode": "array", "tickvals": [0.0, 0.5, 1.0],
                     "ticktext": ["0 %", "50 %", "100 %"]},
        "heads": row_axis,
    }  # fmt: skip
    out: dict[str, Any] = {}
    for name, (xd, yd) in domains.items():
        sfx = _axis_suffix(panels, name)
        bottom = name == panels[-1]
        out[f"xaxis{sfx}"] = {
            "domain": xd,
            "anchor": f"y{sfx}",
            "range": [0.0, x_max * 1.015],
            **ticks,
            "showticklabels": bottom,
            "tickfont": {"size": TICK_PX},
            "zeroline": False,
            "automargin": False,
            **({"title": axis_title(tr("update step"))} if bottom else {}),
            **({"matches": "x"} if sfx else {}),
        }
        out[f"yaxis{sfx}"] = {
            "domain": yd,
            "anchor": f"x{sfx}",
            "tickfont": {"size": TICK_PX},
            "zeroline": False,
            "automargin": False,
            **y_of[name],
        }
    return out


def _titles(domains: dict[str, Domain], role: str) -> list[dict[str, Any]]:
    heads = tr("each head's {role} score (◆ the head takes the role)", role=role)
    return [panel_title(heads if n == "heads" else tr(CURVES[n][0]), *d) for n, d in domains.items()]


def _marks(
    domains: dict[str, Domain], formed: Sequence[tuple[int, int, int, str]], current: int | None, role: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The dotted line of the first head to take the role through the curve panels (and its
    label), and the solid line of the snapshot shown below through every panel."""
    panels = list(domains)
    shapes: list[dict[str, Any]] = []
    notes: list[dict[str, Any]] = []
    if formed:
        first = min(step for _, _, step, _ in formed)
        shapes.extend(_vline(first, _axis_suffix(panels, n), dash="dot", color=MARK_INK) for n in panels)
        top = _axis_suffix(panels, panels[0])
        notes.append(
            {
                "text": tr("first {role} head: update {step:,}", role=role, step=first),
                "xref": f"x{top}",
                "yref": f"y{top} domain",
                "x": first,
                "y": 1.0,
                "xanchor": "left",
                "yanchor": "top",
                "xshift": 4,
                "showarrow": False,
                "bgcolor": "rgba(255,255,255,0.85)",
                "font": {"size": TICK_PX, "color": NOTE_INK},
            }
        )
    if current is not None:
        shapes.extend(
            _vline(float(current), _axis_suffix(panels, n), dash="solid", color=INK) for n in panels
        )
    return shapes, notes
