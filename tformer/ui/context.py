"""What a page gets: the sidebar drawn, the capture for the current text, the chosen head."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from ..figures.overview import head_grid_data
from ..capture import TextCapture
from ..encoder import Encoder
from .caches import ModelChoice, get_capture, get_model
from .controls import _keep, no_traceback, sidebar
from .head_grid import head_grid

# --- page context -----------------------------------------------------------------------------


@dataclass(frozen=True)
class PageContext:
    choice: ModelChoice
    capture: TextCapture
    model: Encoder
    text: str

    @property
    def labels(self) -> list[str]:
        return self.capture.labels


def page_context() -> PageContext:
    """Draw the sidebar, then return everything a page needs, or show a friendly message and
    st.stop() when there is nothing to show."""
    choice = None
    with no_traceback():
        choice = sidebar()
    text = st.session_state.get("text", "")
    if choice is None:
        st.info("Fix the model settings in the sidebar to see the attention.")
        st.stop()
    if not text.strip():
        st.info("Type a sentence in the sidebar (English or Chinese) to see what attention computes.")
        st.stop()
    try:
        model, _ = get_model(choice)
        capture = get_capture(choice, text)
    except ValueError as err:
        st.error(f"Could not run {choice.label}: {err}")
        st.stop()
    enc = capture.encoded
    if enc.truncated:
        st.warning(
            f"The text has {enc.n_input_tokens}{'' if enc.n_input_exact else '+'} tokens; this model reads "
            f"at most {len(enc.ids)}, so only the first {len(enc.ids)} are shown."
        )
    return PageContext(choice, capture, model, text)


def layer_head(ctx: PageContext) -> tuple[int, int]:
    """Layer and head pickers whose values survive page switches and model changes."""
    n_layers, n_heads = ctx.capture.n_layers, ctx.capture.n_heads
    for key, n in (("layer", n_layers), ("head", n_heads)):
        kept = st.session_state.get(f"_{key}", 0)
        st.session_state[key] = min(int(kept), n - 1)
    c1, c2 = st.columns(2)
    layer = c1.selectbox("layer", range(n_layers), key="layer", on_change=_keep, args=("layer",))
    head = c2.selectbox("head", range(n_heads), key="head", on_change=_keep, args=("head",))
    return int(layer), int(head)


def select_head(layer: int, head: int) -> None:
    """Make (layer, head) the chosen head on every page (e.g. after a click on the overview)."""
    st.session_state["_layer"], st.session_state["_head"] = layer, head


# --- shared figures ---------------------------------------------------------------------------


@st.cache_data(max_entries=16, show_spinner=False)
def _overview_data(choice: ModelChoice, text: str) -> dict:
    return head_grid_data(get_capture(choice, text).patterns)


def overview(ctx: PageContext, selected: tuple[int, int], *, key: str = "overview") -> None:
    """Every layer x head of the current text as one clickable grid; a click chooses that head
    on every page. The PNG is made once per text (cached); the outline moves on its own."""
    head_grid(_overview_data(ctx.choice, ctx.text), selected, key=key, on_select=select_head)
