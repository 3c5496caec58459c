"""Back / a slider / next over the steps of something shown one step at a time (the
FlashAttention loop's tiles, the recurrent layers' positions), bound to a view-state integer."""

from __future__ import annotations

import streamlit as st

from ..i18n import tr
from .binding import bind, set_values, view


def step_slider(key: str, n_steps: int, *, label: str = "step", single: str = "") -> int:
    """The step shown, 1..``n_steps``, with ◀ back and next ▶ buttons (``key`` + ".prev" / ".next")
    beside a slider bound to the view-state value ``key``; with one step, the caption ``single``
    instead of the slider. ``label`` and ``single`` are English templates, translated here."""
    current = min(max(int(view().get(key)), 1), n_steps)
    back, middle, forward = st.columns([1, 8, 1], vertical_alignment="bottom")
    back.button(
        tr("◀ back"), key=f"{key.split('.')[0]}.prev", on_click=set_values, kwargs={key: max(current - 1, 1)},
        disabled=current == 1, width="stretch",
    )  # fmt: skip
    forward.button(
        tr("next ▶"), key=f"{key.split('.')[0]}.next", on_click=set_values,
        kwargs={key: min(current + 1, n_steps)}, disabled=current == n_steps, width="stretch",
    )  # fmt: skip
    if n_steps == 1:
        middle.caption(tr(single))
        return 1
    return int(middle.slider(tr(label), 1, n_steps, **bind(key, range(1, n_steps + 1), clamp=True)))
