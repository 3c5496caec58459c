"""Layout pieces of the figures that stack two panels over one token x axis with a one-row
legend above them: :mod:`.sublayers` (sublayer norms) and :mod:`.layernorm`."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

from ..i18n import tr
from .labels import text_px, tick_step, token_axis
from .layout import EDGE_PX

CORNER_LEGEND_PX = 30  # the top margin's room for :func:`corner_legend`


def fitted_token_x_axis(
    labels: Sequence[object], width: int, margin_l: int
) -> tuple[dict[str, Any], int, int]:
    """A token x axis filling ``width`` minus ``margin_l`` and the right margin its last flat
    label needs (it may hang past the axis's end): (axis props, px its labels take below the
    axis, right margin)."""
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
    return axis.props, axis.margin, margin_r


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
