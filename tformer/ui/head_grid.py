"""The heads overview in the app: one image of every head, one button per head on top of it.

A Streamlit v2 component (``st.components.v2``, no iframe) whose JavaScript and CSS live in
``static/``. With a key its element id stays the same while its data changes, so the browser
keeps the grid and only swaps the image when the text changes or moves the outline when the
chosen head changes (``tformer/figures/overview.py`` says why this is not a Plotly chart).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import streamlit as st

from ..figures.overview import grid_labels, grid_selection

_STATIC = Path(__file__).with_name("static")
_COMPONENT = st.components.v2.component(
    "tformer_head_grid",
    js=(_STATIC / "head_grid.js").read_text(encoding="utf-8"),
    css=(_STATIC / "head_grid.css").read_text(encoding="utf-8"),
    isolate_styles=False,
)


def picked_head(value: object) -> tuple[int, int] | None:
    """(layer, head) from the grid's session-state value ``{"select": [layer, head]}`` (a dict
    in Streamlit 1.67), or None for anything else (the browser is not trusted to send
    well-formed values)."""
    pick = value.get("select") if isinstance(value, Mapping) else None
    if not isinstance(pick, (list, tuple)) or len(pick) != 2:
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in pick):
        return None
    return int(pick[0]), int(pick[1])


def _no_lists(data: dict[str, Any]) -> dict[str, Any]:
    """Lists as tuples (the same JSON): Streamlit scans a component's list values for
    dataframes, and that scan imports pandas on the app's first run (docs/performance.md)."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}


def head_grid(
    data: dict[str, Any], selected: tuple[int, int], *, key: str, on_select: Callable[[int, int], None]
) -> None:
    """Draw `head_grid_data`'s ``data`` with ``selected`` outlined and its words in the
    session's language (`grid_labels`); a click calls ``on_select(layer, head)`` before the
    rerun it starts (so the pickers already show it)."""

    def _clicked() -> None:
        pick = picked_head(st.session_state.get(key))
        if pick is not None:
            on_select(*pick)

    _COMPONENT(
        key=key,
        data=_no_lists({**grid_selection(data, *selected), "labels": grid_labels()}),
        on_select_change=_clicked,
        width="stretch",
        height="content",
    )
