"""The FlashAttention page's view: the whole tiled loop cached, the step bar and tile pickers
(`compute`), and the page's parts drawn (`draw`)."""

from __future__ import annotations

from .draw import Loop, controls, end_part, intro, step_part

__all__ = ["Loop", "controls", "end_part", "intro", "step_part"]
