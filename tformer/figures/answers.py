"""A live class's answers to one question, for the projected screen: how many gave each answer.

:func:`answers_figure` draws one horizontal bar per distinct answer, the most frequent on top,
each with its count and its share of the students who answered. No names: the room store gives
the teacher's screen counts only (`tformer.rooms.Tally`). Before the reveal every bar has one
colour (the screen must not give the answer away); after it, right answers are drawn in
``ANSWER_RIGHT`` and wrong ones in ``ANSWER_WRONG``. The answers are students' text: every label
goes through `safe_label`, so plotly shows it literally.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from ..i18n import tr
from .colors import ANSWER, ANSWER_RIGHT, ANSWER_WRONG
from .labels import safe_label, text_px
from .layout import DETAIL_WIDTH, TOP_TITLE_PX, base_layout

__all__ = ["MAX_BARS", "answers_figure"]

MAX_BARS = 12  # more distinct answers than this: the caller folds the rest into one bar
BAR_PX = 34  # one bar's row: readable from the back of a lecture hall
MAX_LABEL_CHARS = 28
LABEL_FONT_PX = 16
COUNT_ROOM_PX = 110  # "12 (40 %)" beside the longest bar


def answers_figure(
    labels: Sequence[str],
    counts: Sequence[int],
    *,
    title: str,
    right: Sequence[bool | None] | None = None,
    width: int = DETAIL_WIDTH,
) -> go.Figure:
    """Bars of ``counts`` [n] labelled by ``labels`` [n] (students' answers, shown literally),
    in the order given; ``right`` [n] colours them once the answer is revealed (None: not known,
    or not revealed). ``layout.meta``: the labels and counts drawn."""
    n = len(counts)
    if n == 0 or n > MAX_BARS:
        raise ValueError(f"answers_figure draws 1..{MAX_BARS} answers, got {n}")
    if len(labels) != n or (right is not None and len(right) != n):
        raise ValueError(
            f"{len(labels)} labels and {len(right) if right is not None else n} verdicts for {n} counts"
        )
    if any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in counts):
        raise ValueError(f"counts must be whole numbers >= 0, got {list(counts)}")
    total = sum(counts)
    shown = [safe_label(lab, MAX_LABEL_CHARS) for lab in labels]
    verdicts = list(right) if right is not None else [None] * n
    colors = [ANSWER if v is None else ANSWER_RIGHT if v else ANSWER_WRONG for v in verdicts]
    left = int(min(0.45 * width, max(60, max(text_px(lab, LABEL_FONT_PX) for lab in labels) + 24)))
    layout = base_layout(
        BAR_PX * n + 20,
        width=width,
        left=left,
        right=COUNT_ROOM_PX,
        top=TOP_TITLE_PX,
        bottom=48,
        title=title,
        meta={"labels": list(labels), "counts": list(counts)},
        showlegend=False,
        bargap=0.25,
        yaxis={
            "tickmode": "array",
            "tickvals": list(range(n)),
            "ticktext": shown,
            "autorange": "reversed",
            "tickfont": {"size": LABEL_FONT_PX},
        },
        xaxis={
            "title": {"text": tr("students")},
            "range": [0, max(1, max(counts)) * 1.02],
            "dtick": max(1, -(-max(1, max(counts)) // 8)),  # whole students, at most ~8 ticks
            "rangemode": "tozero",
        },
    )
    share = [c / total if total else 0.0 for c in counts]
    fig = go.Figure(layout=layout)
    fig.add_trace(
        go.Bar(
            x=list(counts),
            y=list(range(n)),
            orientation="h",
            marker_color=colors,
            text=[f"{c} ({p:.0%})" for c, p in zip(counts, share, strict=True)],
            textposition="outside",
            textfont={"size": LABEL_FONT_PX},
            cliponaxis=False,
            hovertext=shown,
            hovertemplate="%{hovertext}: %{x}<extra></extra>",
        )
    )
    return fig
