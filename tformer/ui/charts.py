"""Every chart of every page, with its PNG and SVG buttons (`chart`, `chart_in`). The Export
page's downloads (the tensors, the metrics, the offline report) are in `tformer.ui.views.export`.

An image button's data is a callable here, so nothing is drawn until the button is clicked: Streamlit runs the callable in a worker thread on click (a "deferred" download). The
chart's own toolbar camera also saves a PNG in the browser, at twice the size for a projector.
"""

from __future__ import annotations

import functools
from typing import Any

import streamlit as st

from ..figures.images import IMAGE_TYPES, figure_image, image_export_problem
from ..i18n import tr
from .lesson_questions import figure_hidden, hidden_note, marked

_PLOT_CONFIG = {"displaylogo": False}


@functools.cache
def _problem() -> str | None:
    return image_export_problem()


def image_export_ready() -> bool:
    """Whether the PNG and SVG buttons can draw here (checked once per process: it imports kaleido)."""
    return _problem() is None


def chart(
    fig: Any, *, key: str, container: Any = None, shows: tuple[int, int] | None = None, **kwargs: Any
) -> Any:
    """``st.plotly_chart(fig, key=key)`` in ``container`` (default: the page), with a row of
    PNG and SVG download buttons under it.

    While a lesson's question waits for its answer the chart is replaced by a note (it would
    give the answer away); after the answer, an attention heatmap of the head ``shows``
    (layer, head) gets the answer outlined (`tformer.ui.lesson_questions`)."""
    box = st if container is None else container
    if figure_hidden():
        box.info(hidden_note(), icon="🙈")
        return None
    fig = marked(fig, shows)
    config = {
        **_PLOT_CONFIG,
        "toImageButtonOptions": {"format": "png", "scale": 2, "filename": f"tformer-{key}"},
    }
    out = box.plotly_chart(fig, key=key, config=config, **kwargs)
    image_buttons(fig, key, box)
    return out


def chart_in(container: Any, fig: Any, *, key: str, **kwargs: Any) -> Any:
    """`chart` in a column or other container: ``ui.chart_in(c1, fig, key="x")``."""
    return chart(fig, key=key, container=container, **kwargs)


def image_buttons(fig: Any, key: str, container: Any = None) -> None:
    """PNG and SVG download buttons for ``fig`` (drawn on click by kaleido)."""
    box = st if container is None else container
    row = box.container(horizontal=True, gap="small", key=f"export_{key}")
    problem = _problem()
    for fmt in IMAGE_TYPES:
        label = fmt.upper()
        row.download_button(
            label,
            data=functools.partial(figure_image, fig, fmt),
            file_name=f"tformer-{key}.{fmt}",
            mime=IMAGE_TYPES[fmt],
            key=f"{key}_{fmt}",
            type="tertiary",
            on_click="ignore",
            disabled=problem is not None,
            help=tr("Download this figure as {fmt}", fmt=label)
            if problem is None
            else tr("Images cannot be drawn here: {why}", why=tr(problem)),
        )
