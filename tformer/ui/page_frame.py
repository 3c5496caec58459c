"""What every page script draws first: page config, the page map, the sidebar controls.

Each page calls it itself (the pages-directory mode runs a page's script alone; see
`tformer.ui.registry` for why), so a direct link to any page gets the whole app.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

from ..i18n import set_resolver, tr
from .binding import pop_notices, session_language, view
from .caches import ModelChoice, set_threads
from .client_messages import install as guard_client_messages
from .guard import MAX_NOTICES, no_traceback, plain
from .lesson_mode import lesson_bar
from .registry import PageSpec, page_for
from .room import follow, publish, room_bar
from .share import share_box, sync_url
from .sidebar import model_and_text, page_links
from .state import ViewState


@dataclass(frozen=True)
class Frame:
    spec: PageSpec
    view: ViewState
    choice: ModelChoice | None  # None: the sidebar's settings are invalid (it says why)
    length_note: Any = None  # the sidebar's slot under the text box (st.empty) for the length limit

    @property
    def text(self) -> str:
        return self.view.text


def draw_frame(script: str) -> Frame:
    """Draw the frame of the page whose script is ``script`` and its header."""
    guard_client_messages()  # once per process: no visitor's message may clear what all share
    spec = page_for(script)
    set_resolver(session_language)
    v = view()  # first: a link's language must reach the tab title
    st.set_page_config(page_title=f"{tr(spec.title)} · tformer", page_icon="🔍", layout="wide")
    set_threads()
    follow(spec)  # a live class's student takes the teacher's view before any widget is drawn
    choice, length_note = None, None
    # The text and the model first: with 14 pages the page map would push the text box and the
    # example picker below a laptop screen's fold (the picker's list then failed to open).
    with no_traceback():
        choice, length_note = model_and_text()
    page_links()
    sync_url()
    publish(spec)  # a live class's teacher: the view, when it changed
    share_box(spec.url_path)
    room_bar(spec)
    st.header(tr(spec.heading))
    lesson_bar(spec.key, choice)
    notices = pop_notices()
    if notices:
        shown = [plain(n) for n in notices[:MAX_NOTICES]]
        listed = "; ".join(shown)
        if len(notices) > MAX_NOTICES:
            listed = tr("{listed} (and {n} more)", listed=listed, n=len(notices) - MAX_NOTICES)
        st.info(tr("From the link: {listed}. The rest of the link was used.", listed=listed))
    return Frame(spec, v, choice, length_note)
