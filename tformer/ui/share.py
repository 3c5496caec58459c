"""Share links: the address bar always holds the view.

Every run writes the session's `ViewState` to the URL's query parameters (only the values that
differ from their defaults, and the text), so copying the address gives a link that opens the
same page with the same text, model, layer, head, query token and page choices in a fresh
browser; `binding.view` reads such a link on a session's first run and reports what it could
not use. The sidebar also shows the link in a box with a copy button.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlencode, urlsplit, urlunsplit

import streamlit as st

from ..i18n import tr
from .binding import view


def sync_url(extra: Mapping[str, str] | None = None) -> None:
    """Put the view into the URL (history.replaceState on the browser side; no reload), and
    ``extra`` parameters that are not the view's (a live class's join code)."""
    wanted = {**view().to_query(), **(extra or {})}
    if st.query_params.to_dict() != wanted:
        st.query_params.from_dict(wanted)


def share_link(url_path: str) -> str:
    """The link to this view on the page served at ``url_path``, on the host the browser used."""
    try:
        parts = urlsplit(st.context.url or "")
    except (AttributeError, RuntimeError, ValueError):
        parts = urlsplit("")
    base = parts.path.rsplit("/", 1)[0] if parts.path else ""
    path = f"{base}/{url_path}" if url_path else (base or "/")
    return urlunsplit((parts.scheme, parts.netloc, path, urlencode(view().to_query()), ""))


def share_box(url_path: str) -> None:
    """The sidebar's "share this view" box. The link is drawn only when asked for: a box whose
    text changed with every pick of a head or token slowed every rerun in the browser
    (docs/performance.md)."""
    with st.sidebar.expander(tr("Share this view")):
        st.caption(
            tr(
                "The address bar always holds this view: the page, the text, the model and your choices. "
                "Copy it, or copy the link below."
            )
        )
        if st.button(tr("Show the link"), key="share_show", type="tertiary"):
            st.code(share_link(url_path), language=None, wrap_lines=True)
