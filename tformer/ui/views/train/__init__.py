"""The Train page's view: the server's training runs and heads races (`jobs`: a worker shared by
every session), the page's controls, live view and race times (`draw`), and the saved runs side
by side (`compare`)."""

from __future__ import annotations

from .compare import compare_view
from .draw import (
    live_view,
    model_controls,
    open_saved_run,
    race_caption,
    race_times,
    recipe_controls,
    run_budget,
    run_status,
    task_controls,
)
from .jobs import (
    current_run,
    saved_name,
    start_race,
    start_training,
)
from .memory import memory_view
from .overfit import overfit_view
from .precision import precision_view
from .roles import preset_controls, saved_roles_view

__all__ = [
    "compare_view",
    "current_run",
    "live_view",
    "memory_view",
    "model_controls",
    "open_saved_run",
    "overfit_view",
    "precision_view",
    "preset_controls",
    "race_caption",
    "race_times",
    "recipe_controls",
    "run_budget",
    "run_status",
    "saved_name",
    "saved_roles_view",
    "start_race",
    "start_training",
    "task_controls",
]
