"""Streamlit glue shared by app.py and the pages: caches, sidebar, page context, page data.

Only the app imports this package (``import tformer`` does not load Streamlit). Pages stay thin:
they call `page_context()`, pick a figure builder from `tformer.figures` and render.
"""

from .caches import ModelChoice, device, examples, get_capture, get_model, set_threads, shared_figure
from .context import PageContext, layer_head, overview, page_context, select_head
from .page_data import (
    ablation_change,
    default_heads,
    head_names,
    head_similarity,
    head_stats,
    model_positions,
    patterns_without_pe,
    shift_check,
    sinusoids,
)
from .controls import no_traceback, sidebar

__all__ = [
    "ModelChoice",
    "PageContext",
    "ablation_change",
    "default_heads",
    "device",
    "examples",
    "get_capture",
    "get_model",
    "head_names",
    "head_similarity",
    "head_stats",
    "layer_head",
    "model_positions",
    "no_traceback",
    "overview",
    "page_context",
    "patterns_without_pe",
    "select_head",
    "set_threads",
    "shared_figure",
    "shift_check",
    "sidebar",
    "sinusoids",
]
