"""Every layer × every head as one plotly figure: the overview mosaic (`overview.mosaic_png`)
as an image, with layers and heads on its axes. For notebooks and reports; the app draws the
same PNG in its own clickable grid."""

from __future__ import annotations

import base64

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from ..i18n import tr
from .overview import GAP_PX, default_cell_px, mosaic_png


def overview_figure(pattern: npt.ArrayLike, *, width: int = 900) -> go.Figure:
    """``pattern`` [layer, head_index, query_pos, key_pos] as one image: layers are rows,
    heads are columns, each thumbnail one head's weights (queries down, keys across)."""
    p = np.asarray(pattern, dtype=np.float32)
    if p.ndim != 4:
        raise ValueError(f"pattern must be [layer, head_index, query_pos, key_pos], got shape {p.shape}")
    n_layers, n_heads, n_pos, _ = p.shape
    cell = default_cell_px(n_pos)
    step = cell + GAP_PX
    png = base64.b64encode(mosaic_png(p, cell)).decode("ascii")
    fig = go.Figure(go.Image(source=f"data:image/png;base64,{png}", hoverinfo="skip"))
    fig.update_xaxes(
        title=tr("head"),
        tickvals=[h * step + cell / 2 for h in range(n_heads)],
        ticktext=list(map(str, range(n_heads))),
        showgrid=False,
        zeroline=False,
    )
    fig.update_yaxes(
        title=tr("layer"),
        tickvals=[i * step + cell / 2 for i in range(n_layers)],
        ticktext=list(map(str, range(n_layers))),
        showgrid=False,
        zeroline=False,
    )
    height = int(width * n_layers / max(n_heads, 1)) + 120
    fig.update_layout(
        title=tr("Every layer × every head"),
        width=width,
        height=height,
        margin={"l": 60, "r": 20, "t": 60, "b": 50},
    )
    return fig
