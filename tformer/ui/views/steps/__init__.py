"""The Step by step page's view: the walk through one layer on the text (`walk`), how one step
is drawn (`draw`: the step bar, the tensor window, the check, the code) and its notes (`notes`).
The Whole encoder page reads the walk's hook names (`STATS_NAMES`) and its window too."""

from __future__ import annotations

from .draw import (
    WINDOW,
    ZOOMS,
    show_step,
    step_bar,
    step_facts,
    window,
)
from .walk import (
    STATS_NAMES,
    WALK_NAMES,
    layouts_agree,
    neuron,
    walk,
)

__all__ = [
    "STATS_NAMES",
    "WALK_NAMES",
    "WINDOW",
    "ZOOMS",
    "layouts_agree",
    "neuron",
    "show_step",
    "step_bar",
    "step_facts",
    "walk",
    "window",
]
