"""The What attention costs page's view: the sweeps run and cached (`compute`) and how they are
drawn and worded (`draw`); the Why attention page times its layers with the same sweep."""

from __future__ import annotations

from .compute import (
    COST_SECTIONS,
    cost_controls,
    cost_device_line,
    run_cost_sweep,
    sparse_on_text,
    sparse_patterns,
)
from .draw import (
    cost_budget_line,
    cost_figures,
    cost_fit_note,
    cost_load_note,
    cost_stops,
    cost_summary,
    cost_table,
    cost_unavailable,
    sparse_cost_table,
)

__all__ = [
    "COST_SECTIONS",
    "cost_budget_line",
    "cost_controls",
    "cost_device_line",
    "cost_figures",
    "cost_fit_note",
    "cost_load_note",
    "cost_stops",
    "cost_summary",
    "cost_table",
    "cost_unavailable",
    "run_cost_sweep",
    "sparse_cost_table",
    "sparse_on_text",
    "sparse_patterns",
]
