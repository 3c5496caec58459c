"""Streamlit glue shared by the pages: the page registry, the view state, caches, the frame.

Only the app imports this package (``import tformer`` does not load Streamlit). Pages stay thin:
``with ui.page_context(__file__, names) as ctx:`` (or ``with ui.frame(__file__):`` when they
need no text), a figure builder from `tformer.figures`, render. Names are imported from their
modules on first use (PEP 562): importing this package loads no torch, which lets a fresh
server's first page start the browser's chart code early (`tformer.ui.warm`).
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
    "WALK_NAMES": "walk_data",
    "STATS_NAMES": "walk_data",
    "walk": "walk_data",
    "neuron": "walk_data",
    "layouts_agree": "walk_data",
    "WINDOW": "walk_view",
    "ZOOMS": "walk_view",
    "step_bar": "walk_view",
    "show_step": "walk_view",
    "step_facts": "walk_view",
    "StepsState": "state",
    "EncoderState": "state",
    "CompareState": "state",
    "plain": "guard",
    "task_controls": "train_view",
    "model_controls": "train_view",
    "recipe_controls": "train_view",
    "run_status": "train_view",
    "live_view": "train_view",
    "run_budget": "train_view",
    "open_saved_run": "train_view",
    "saved_name": "train_jobs",
    "current_run": "train_jobs",
    "start_training": "train_jobs",
    "start_race": "train_jobs",
    "TrainState": "state",
    "jump_box": "zoom",
    "TAUS": "state",
    "ScalingState": "state",
    "MasksState": "state",
    "LayersState": "state",
    "QKSpaceState": "state",
    "FinderState": "state",
    "window": "walk_view",
    "frame": "entry",
    "CostsState": "state",
    "FlashState": "state",
    "COST_SECTIONS": "cost_data",
    "cost_budget_line": "cost_view",
    "cost_controls": "cost_data",
    "cost_device_line": "cost_data",
    "cost_figures": "cost_view",
    "cost_fit_note": "cost_view",
    "cost_load_note": "cost_view",
    "busy_method": "timing_view",
    "load_note": "timing_view",
    "race_caption": "timing_view",
    "race_times": "timing_view",
    "cost_stops": "cost_view",
    "cost_summary": "cost_view",
    "cost_table": "cost_view",
    "cost_unavailable": "cost_view",
    "run_cost_sweep": "cost_data",
    "sparse_cost_table": "cost_view",
    "sparse_on_text": "cost_data",
    "sparse_patterns": "cost_data",
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
    "precision_run": "precision_data",
    "precision_layer": "precision_data",
    "precision_table": "precision_data",
    "variant_label": "precision_data",
    "float_formats": "precision_data",
    "precision_choices": "precision_data",
    "precision_result": "precision_data",
    "precision_timing_notes": "precision_data",
    "precision_time_caption": "precision_data",
    "precision_dropped": "precision_data",
    "precision_waiting_note": "precision_data",
    "POLL_S": "precision_data",
    "PredictionsState": "state",
}

if TYPE_CHECKING:
    from .binding import bind, set_values, view
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
        WHY_SCALES,
        AttentionState,
        EncoderState,
        HeadsState,
        PositionalState,
        PredictionsState,
        QKVState,
        StepsState,
        ViewState,
        WhyState,
    )
    from .stepper import step_slider
    from .tables import fitted_table
    from .train_jobs import current_run, saved_name, start_race, start_training
    from .train_view import (
        live_view,
        model_controls,
        open_saved_run,
        recipe_controls,
        run_budget,
        run_status,
        task_controls,
    )
    from .walk_data import STATS_NAMES, WALK_NAMES, layouts_agree, neuron, walk
    from .walk_view import WINDOW, ZOOMS, show_step, step_bar, step_facts, window
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
