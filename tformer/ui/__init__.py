"""Streamlit glue shared by the pages: the page registry, the view state, caches, the frame.

Only the app imports this package (``import tformer`` does not load Streamlit). Pages stay thin:
they call `page_context(__file__, names)` (or `frame(__file__)` when they need no text), pick a
figure builder from `tformer.figures` and render.
"""

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
from .context import (
    MATRIX_LABELS,
    PageContext,
    formula,
    layer_head,
    matrix_kind,
    overview,
    page_context,
    section,
    select_head,
    source,
)
from .frame import Frame, frame, no_traceback
from .page_data import (
    ablation_change,
    head_names,
    head_similarity,
    head_stats,
    model_positions,
    patterns_without_pe,
    shift_check,
    sinusoids,
)
from .registry import PAGES, SECTIONS, PageSpec, by_section
from .state import AttentionState, HeadsState, PositionalState, QKVState, ViewState

__all__ = [
    "MATRIX_LABELS",
    "matrix_kind",
    "PAGES",
    "SECTIONS",
    "AttentionState",
    "CaptureTooLarge",
    "Frame",
    "HeadsState",
    "ModelChoice",
    "PageContext",
    "PageSpec",
    "PositionalState",
    "QKVState",
    "ViewState",
    "ablation_change",
    "bind",
    "by_section",
    "device",
    "formula",
    "frame",
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
    "set_values",
    "shared_figure",
    "shift_check",
    "section",
    "sinusoids",
    "source",
    "view",
]
