"""What every page script draws first: page config, the page map, the sidebar controls.

Each page calls it itself (the pages-directory mode runs a page's script alone; see
`tformer.ui.registry` for why), so a direct link to any page gets the whole app.
"""

from __future__ import annotations

import logging
import re
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import streamlit as st

from .binding import pop_notices, view
from .caches import ModelChoice, set_threads
from .registry import PageSpec, page_for
from .sidebar import model_and_text, page_links
from .state import ViewState

log = logging.getLogger("tformer.app")
MAX_NOTICES = 5
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>$~:])")


def plain(text: str, max_chars: int = 80) -> str:
    """``text`` (from a URL or the user) as inert markdown: control characters dropped,
    every markdown and LaTeX sign escaped, cut to ``max_chars``."""
    text = "".join(ch for ch in text if ch.isprintable())[:max_chars]
    return _MARKDOWN.sub(r"\\\1", text)


@contextmanager
def no_traceback() -> Iterator[None]:
    """Turn any error escaping a page into a short message: a user never sees a traceback."""
    try:
        yield
    except Exception as err:  # Streamlit's stop/rerun are BaseExceptions and pass through
        log.error("page failed:\n%s", traceback.format_exc())
        st.error(f"Something went wrong while drawing this page ({type(err).__name__}): {err}")


@dataclass(frozen=True)
class Frame:
    spec: PageSpec
    view: ViewState
    choice: ModelChoice | None  # None: the sidebar's settings are invalid (it says why)

    @property
    def text(self) -> str:
        return self.view.text


@contextmanager
def frame(script: str) -> Iterator[Frame]:
    """The frame for a page that needs no text (pass ``__file__``); the body is guarded::

    with ui.frame(__file__) as fr:
        ...
    """
    fr = draw_frame(script)
    with no_traceback():
        yield fr


def draw_frame(script: str) -> Frame:
    """Draw the frame of the page whose script is ``script`` and its header."""
    spec = page_for(script)
    st.set_page_config(page_title=f"{spec.title} · tformer", page_icon="🔍", layout="wide")
    set_threads()
    v = view()
    page_links(spec)
    choice = None
    with no_traceback():
        choice = model_and_text()
    st.header(spec.heading)
    notices = pop_notices()
    if notices:
        shown = [plain(n) for n in notices[:MAX_NOTICES]]
        more = f" (and {len(notices) - MAX_NOTICES} more)" if len(notices) > MAX_NOTICES else ""
        st.info("From the link: " + "; ".join(shown) + more + ". The rest of the link was used.")
    return Frame(spec, v, choice)
