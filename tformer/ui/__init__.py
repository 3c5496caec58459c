"""Streamlit glue shared by the pages: the page registry, the view state, caches, the frame.

Only the app imports this package (``import tformer`` does not load Streamlit). Pages stay thin:
``with ui.page_context(__file__, names) as ctx:`` (or ``with ui.frame(__file__):`` when they
need no text), a figure builder from `tformer.figures`, render. Names are imported from their
modules on first use (PEP 562): importing this package loads no torch, which lets a fresh
server's first page start the browser's chart code early (`tformer.ui.warm`). The ``TYPE_CHECKING``
imports name the same names for mypy (tests/test_rooms_of_pages.py holds the two lists equal), as
``name as name``: mypy's strict mode reads only that form (or a literal ``__all__``) as a re-export. A
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
    "memory_note": "memory",
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
    from .binding import bind as bind
    from .binding import bind_number as bind_number
    from .binding import set_values as set_values
    from .binding import view as view
    from .caches import CaptureTooLarge as CaptureTooLarge
    from .caches import ModelChoice as ModelChoice
    from .caches import device as device
    from .caches import get_capture as get_capture
    from .caches import get_model as get_model
    from .caches import set_threads as set_threads
    from .caches import shared_figure as shared_figure
    from .charts import chart as chart
    from .charts import chart_in as chart_in
    from .charts import image_buttons as image_buttons
    from .context import MATRIX_LABELS as MATRIX_LABELS
    from .context import PageContext as PageContext
    from .context import formula as formula
    from .context import layer_head as layer_head
    from .context import layer_head_query as layer_head_query
    from .context import matrix_kind as matrix_kind
    from .context import overview as overview
    from .context import query_token as query_token
    from .context import section as section
    from .context import select_head as select_head
    from .context import source as source
    from .context import source_text as source_text
    from .context import weight_scale as weight_scale
    from .entry import frame as frame
    from .entry import page_context as page_context
    from .guard import no_traceback as no_traceback
    from .guard import plain as plain
    from .lesson_mode import lesson_bar as lesson_bar
    from .lesson_mode import start_lesson as start_lesson
    from .lesson_questions import figure_hidden as figure_hidden
    from .memory import memory_note as memory_note
    from .opening import ROLE_NAMES as ROLE_NAMES
    from .opening import opening_note as opening_note
    from .page_frame import Frame as Frame
    from .registry import LESSON_MAP as LESSON_MAP
    from .registry import PAGES as PAGES
    from .registry import SECTIONS as SECTIONS
    from .registry import PageSpec as PageSpec
    from .registry import by_section as by_section
    from .state import TAUS as TAUS
    from .state import WHY_SCALES as WHY_SCALES
    from .state import AttentionState as AttentionState
    from .state import CompareState as CompareState
    from .state import CostsState as CostsState
    from .state import EncoderState as EncoderState
    from .state import FinderState as FinderState
    from .state import FlashState as FlashState
    from .state import HeadsState as HeadsState
    from .state import LayersState as LayersState
    from .state import MasksState as MasksState
    from .state import PositionalState as PositionalState
    from .state import PredictionsState as PredictionsState
    from .state import QKSpaceState as QKSpaceState
    from .state import QKVState as QKVState
    from .state import ScalingState as ScalingState
    from .state import StepsState as StepsState
    from .state import TrainState as TrainState
    from .state import ViewState as ViewState
    from .state import WhyState as WhyState
    from .stepper import step_slider as step_slider
    from .tables import fitted_table as fitted_table
    from .timing_view import busy_method as busy_method
    from .timing_view import load_note as load_note
    from .zoom import jump_box as jump_box

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
