"""Streamlit glue shared by the pages: the page registry, the view state, caches, the frame.

Only the app imports this package (``import tformer`` does not load Streamlit). Pages stay thin:
``with ui.page_context(__file__, names) as ctx:`` (or ``with ui.frame(__file__):`` when they
need no text), a figure builder from `tformer.figures`, render. Names are imported from their
modules on first use (PEP 562): importing this package loads no torch, which lets a fresh
server's first page start the browser's chart code early (`tformer.ui.warm`). The ``TYPE_CHECKING``
imports name the same names for mypy (tests/test_rooms_of_pages.py holds the two lists equal). A
page's own compute and helpers are not here: they are its view, `tformer.ui.views`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "chart": "charts",
    "chart_in": "charts",
    "start_lesson": "lesson_mode",
    "LESSON_MAP": "registry",
    "lesson_bar": "lesson_mode",
    "figure_hidden": "lesson_questions",
    "image_buttons": "charts",
    "bind": "binding",
    "bind_number": "binding",
    "set_values": "binding",
    "view": "binding",
    "CaptureTooLarge": "caches",
    "ModelChoice": "caches",
    "device": "caches",
    "get_capture": "caches",
    "get_model": "caches",
    "set_threads": "caches",
    "shared_figure": "caches",
    "MATRIX_LABELS": "context",
    "PageContext": "context",
    "formula": "context",
    "layer_head": "context",
    "matrix_kind": "context",
    "overview": "context",
    "section": "context",
    "fitted_table": "tables",
    "opening_note": "opening",
    "ROLE_NAMES": "opening",
    "weight_scale": "context",
    "select_head": "context",
    "source": "context",
    "source_text": "context",
    "query_token": "context",
    "layer_head_query": "context",
    "StepsState": "state",
    "EncoderState": "state",
    "CompareState": "state",
    "plain": "guard",
    "TrainState": "state",
    "jump_box": "zoom",
    "TAUS": "state",
    "ScalingState": "state",
    "MasksState": "state",
    "LayersState": "state",
    "QKSpaceState": "state",
    "FinderState": "state",
    "frame": "entry",
    "CostsState": "state",
    "FlashState": "state",
    "busy_method": "timing_view",
    "load_note": "timing_view",
    "page_context": "entry",
    "Frame": "page_frame",
    "no_traceback": "guard",
    "PAGES": "registry",
    "SECTIONS": "registry",
    "PageSpec": "registry",
    "by_section": "registry",
    "AttentionState": "state",
    "HeadsState": "state",
    "PositionalState": "state",
    "QKVState": "state",
    "ViewState": "state",
    "WhyState": "state",
    "step_slider": "stepper",
    "WHY_SCALES": "state",
    "PredictionsState": "state",
}

if TYPE_CHECKING:
    from .binding import bind, bind_number, set_values, view
    from .caches import (
        CaptureTooLarge,
        ModelChoice,
        device,
        get_capture,
        get_model,
        set_threads,
        shared_figure,
    )
    from .charts import chart, chart_in, image_buttons
    from .context import (
        MATRIX_LABELS,
        PageContext,
        formula,
        layer_head,
        layer_head_query,
        matrix_kind,
        overview,
        query_token,
        section,
        select_head,
        source,
        source_text,
        weight_scale,
    )
    from .entry import frame, page_context
    from .guard import no_traceback, plain
    from .lesson_mode import lesson_bar, start_lesson
    from .lesson_questions import figure_hidden
    from .opening import ROLE_NAMES, opening_note
    from .page_frame import Frame
    from .registry import LESSON_MAP, PAGES, SECTIONS, PageSpec, by_section
    from .state import (
        TAUS,
        WHY_SCALES,
        AttentionState,
        CompareState,
        CostsState,
        EncoderState,
        FinderState,
        FlashState,
        HeadsState,
        LayersState,
        MasksState,
        PositionalState,
        PredictionsState,
        QKSpaceState,
        QKVState,
        ScalingState,
        StepsState,
        TrainState,
        ViewState,
        WhyState,
    )
    from .stepper import step_slider
    from .tables import fitted_table
    from .timing_view import busy_method, load_note
    from .zoom import jump_box

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tformer.ui' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
