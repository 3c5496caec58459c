r"""Figures of the seeds' last step, "Linear -> Softmax -> Output".

:func:`top_tokens_figure` draws the ``k`` most probable outputs at one position as horizontal
bars, the most probable on top, each with its probability and its logit:

.. math::
    p_j = \frac{e^{z_j / T}}{\sum_k e^{z_k / T}}

:func:`generation_attention_figure` draws, for one head, where each greedily generated token's
predicting position looked: one row per new token, one column per position of the text so
far; the positions that did not exist yet at that step are gray.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from ..i18n import tr
from .labels import safe_label, text_px
from .layout import DETAIL_WIDTH, TOP_TITLE_PX, figure_title
from .walkthrough import BAR_HIGHLIGHT, BAR_WEIGHT, step_heatmap

__all__ = ["generation_attention_figure", "top_tokens_figure"]

BAR_PX = 28  # one bar's row
MAX_LABEL_CHARS = 24


def top_tokens_figure(
    labels: Sequence[str],
    probs: npt.ArrayLike,
    logits: npt.ArrayLike,
    *,
    title: str,
    highlight: int | None = None,
    width: int = DETAIL_WIDTH,
) -> go.Figure:
    """Bars of ``probs`` [k] (largest first) labelled by ``labels`` [k], the logit of each in
    its hover and beside its probability; ``highlight`` (an index into them, e.g. the token the
    text really has there) is drawn in the highlight color. ``layout.meta``: k, labels."""
    p = np.asarray(probs, dtype=np.float64)
    z = np.asarray(logits, dtype=np.float64)
    if p.ndim != 1 or p.size == 0:
        raise ValueError(f"probs must be a non-empty 1-D [k] array, got shape {tuple(p.shape)}")
    if len(labels) != p.size or z.shape != p.shape:
        raise ValueError(
            f"{len(labels)} labels and logits of shape {tuple(z.shape)} for {p.size} probabilities"
        )
    if highlight is not None and not 0 <= highlight < p.size:
        raise ValueError(f"highlight={highlight} is outside 0..{p.size - 1}")
    k = p.size
    shown = [safe_label(lab, MAX_LABEL_CHARS) for lab in labels]
    colors = [BAR_HIGHLIGHT if i == highlight else BAR_WEIGHT for i in range(k)]
    text = [f"{v:.1%} · z = {zi:.2f}" for v, zi in zip(p, z, strict=True)]
    margin_l = int(min(0.4 * width, max(60, max(text_px(s, 14) for s in shown) + 24)))
    fig = go.Figure(
        go.Bar(
            x=p,
            y=list(range(k)),
            orientation="h",
            marker_color=colors,
            text=text,
            textposition="outside",
            cliponaxis=False,
            customdata=np.stack([z], axis=-1),
            hovertext=shown,
            hovertemplate="%{hovertext}<br>p = %{x:.4f}<br>z = %{customdata[0]:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        title=figure_title(title),
        width=width,
        height=TOP_TITLE_PX + 60 + BAR_PX * k,
        margin=dict(l=margin_l, r=150, t=TOP_TITLE_PX, b=50),
        showlegend=False,
        meta={"k": k, "labels": list(labels)},
    )
    fig.update_yaxes(
        tickmode="array", tickvals=list(range(k)), ticktext=shown, autorange="reversed", tickfont_size=14
    )
    top = max(1e-9, float(p.max()))
    fig.update_xaxes(  # whole percents repeat when the largest bar is a few percent: one decimal then
        title_text=tr("probability"), range=[0, top * 1.05], tickformat=".0%" if top >= 0.1 else ".1%"
    )
    return fig


def generation_attention_figure(
    rows: Sequence[npt.ArrayLike],
    labels: Sequence[str],
    n_prompt: int,
    *,
    title: str,
) -> go.Figure:
    """``rows[s]`` [n_prompt + s] is step s's weights of the position that chose new token s
    over every position before it; ``labels`` [n_prompt + len(rows)] names the prompt's and the
    new tokens. One row per new token; cells it could not see (later tokens) are gray."""
    n_new = len(rows)
    if n_new == 0:
        raise ValueError("rows must hold at least one step")
    if len(labels) != n_prompt + n_new:
        raise ValueError(f"{len(labels)} labels for {n_prompt} prompt tokens and {n_new} new ones")
    total = n_prompt + n_new
    grid = np.full((n_new, total), np.nan, dtype=np.float32)
    for s, row in enumerate(rows):
        r = np.asarray(row, dtype=np.float32)
        if r.shape != (n_prompt + s,):
            raise ValueError(f"step {s}'s row has shape {tuple(r.shape)}, expected ({n_prompt + s},)")
        grid[s, : n_prompt + s] = r
    new = [f"→ {lab}" for lab in labels[n_prompt:]]
    return step_heatmap(
        grid,
        new,
        list(labels),
        title=title,
        weights=True,
        row_title=tr("new token"),
        col_title=tr("key token"),
    )
