"""Guards that need neither torch nor the model: a page never shows a traceback, and text from
a URL or the user is shown as text."""

from __future__ import annotations

import logging
import re
import traceback
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from ..i18n import tr

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
        st.error(
            tr(
                "Something went wrong while drawing this page ({kind}): {err}",
                kind=type(err).__name__,
                err=err,
            )
        )


@contextmanager
def stop_on_error() -> Iterator[None]:
    """`no_traceback` for what runs before a page's body (its frame, its model, its capture):
    the error is shown as a short message and the page stops there, since nothing below it
    could be drawn. Without it, an error raised inside ``page_context`` before its ``yield``
    reached Streamlit's generic error box."""
    try:
        yield
    except Exception as err:
        log.error("page could not start:\n%s", traceback.format_exc())
        st.error(
            tr(
                "Something went wrong while drawing this page ({kind}): {err}",
                kind=type(err).__name__,
                err=err,
            )
        )
        st.stop()
