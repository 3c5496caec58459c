"""The Precision page's view: the comparisons and their table and captions (`compute`), the
server's worker that times the forwards once per model, device and length band (`jobs`), and
how the page draws them (`draw`)."""

from __future__ import annotations

from .compute import (
    POLL_S,
    float_formats,
    precision_choices,
    precision_dropped,
    precision_layer,
    precision_result,
    precision_run,
    precision_table,
    precision_time_caption,
    precision_timing_notes,
    precision_waiting_note,
    variant_label,
)
from .draw import heads_part, intro, numbers_part

__all__ = [
    "POLL_S",
    "float_formats",
    "heads_part",
    "intro",
    "numbers_part",
    "precision_choices",
    "precision_dropped",
    "precision_layer",
    "precision_result",
    "precision_run",
    "precision_table",
    "precision_time_caption",
    "precision_timing_notes",
    "precision_waiting_note",
    "variant_label",
]
