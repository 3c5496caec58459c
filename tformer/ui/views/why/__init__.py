"""The Why-attention page's view: the layers on the text, the timing sweep and the recall task
run and cached (`compute`), and each section drawn (`draw`)."""

from __future__ import annotations

from .compute import WHY_SECTIONS, why_layers
from .draw import gradients_section, intro, recall_section, steps_section

__all__ = ["WHY_SECTIONS", "gradients_section", "intro", "recall_section", "steps_section", "why_layers"]
