"""Layout pieces of the figures drawn over one token x axis: the axis fitted to a width (the
sublayer norms, LayerNorm and head-ablation figures) and the one-row legend above two stacked
panels (:mod:`.sublayers`, :mod:`.layernorm`)."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from ..i18n import tr
from .labels import text_px, tick_step, token_axis
from .layout import EDGE_PX

CORNER_LEGEND_PX = 30  # the top margin's room for :func:`corner_legend`


class FittedAxis(NamedTuple):
    props: dict[str, Any]  # the x axis's layout properties
    labels_px: int  # px its labels take below the axis
    margin_r: int  # the right margin its last flat label needs
    step: int  # every step-th token is labelled


def fitted_token_x_axis(labels: Sequence[object], width: int, margin_l: int) -> FittedAxis:
    """A token x axis filling ``width`` minus ``margin_l`` and the right margin its last flat
    label needs (it may hang past the axis's end)."""
    margin_r = EDGE_PX
    for _ in range(3):
        plot_w = width - margin_l - margin_r
        step = tick_step(labels, [("x", plot_w)])
        axis = token_axis(labels, plot_w, "x", step=step, title=tr("token"))
        last = html.unescape(str(axis.props["ticktext"][-1]).split("<br>")[-1])
        need = math.ceil(text_px(last, axis.font)) if axis.angle == 0 else EDGE_PX
        if need <= margin_r:
            break
        margin_r = need
    return FittedAxis(axis.props, axis.margin, margin_r, step)


def corner_legend() -> dict[str, Any]:
    """A one-row legend at the figure's top left, above the first panel's title."""
    return {
        "orientation": "h",
        "x": 0,
        "xanchor": "left",
        "y": 1,
        "yanchor": "top",
        "yref": "container",
        "font": {"size": 13},
    }
