"""The session's `ViewState`, and widgets bound to it by key.

``st.radio("kind", kinds, **bind("attention.kind"))``: before the widget is drawn its value is
restored from the view state, and its on_change callback writes the new value back. A number
widget takes its range from the field too: ``st.number_input("heads", **bind_number("n_heads"))``. A widget's
key is its view-state key (``"n_heads"``, ``"attention.kind"``), so Streamlit dropping the state
of a widget that a page does not draw loses nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from ..rooms.limits import JOIN_PARAM
from .state import SHAPED, ViewState, shaped_asks

_VIEW = "view"
_ASKED = "_link_asked"  # a link's layer / head / query, until a page that knows the model reads them
INVITE = "room.invite"  # a join link's room code (``?room=ABCD-2345``), for the join form


def view() -> ViewState:
    """This session's view state; on a session's first run it is read from the URL's query
    parameters (a shared link), and every value that could not be used is reported once."""
    state = st.session_state.get(_VIEW)
    if isinstance(state, ViewState):
        return state
    raw = {k: st.query_params.get_all(k) for k in st.query_params}
    invite = raw.pop(JOIN_PARAM, None)  # a join link: not a view setting
    if invite:
        st.session_state[INVITE] = str(invite[-1])[:40]
    params, asked = shaped_asks(raw)
    state, notices = ViewState.from_query(params) if params else (ViewState(), [])
    st.session_state[_VIEW] = state
    if asked:
        st.session_state[_ASKED] = asked
    if notices:
        st.session_state["_view_notices"] = notices
    return state


def replace_view(state: ViewState) -> None:
    """Make ``state``'s values this session's view (a live class's student taking the teacher's
    view), in place: whoever holds the session's view object (the page's frame) sees them, and
    every widget bound to it shows its value from the next widget drawn on."""
    v = view()
    for f in dataclasses.fields(ViewState):
        setattr(v, f.name, getattr(state, f.name))


def session_language() -> str | None:
    """The language this browser session chose (`tformer.i18n`'s resolver in the app); None
    outside a script run (a background thread, a notebook)."""
    if get_script_run_ctx(suppress_warning=True) is None:
        return None
    state = st.session_state.get(_VIEW)
    return state.lang if isinstance(state, ViewState) else None


def pop_link_asks() -> dict[str, int]:
    """What the session's link asked for as layer / head / query (`state.shaped_asks`), once:
    the values the user has changed since are left out (nothing to report about them)."""
    asked = st.session_state.pop(_ASKED, None)
    if not isinstance(asked, dict):
        return {}
    v = view()
    out = {}
    for key in SHAPED:
        value = asked.get(key)
        if isinstance(value, int) and v.get(key) == min(value, v.bounds(key)[1]):
            out[key] = value
    return out


def pop_notices() -> list[str]:
    notices = st.session_state.pop("_view_notices", None)
    return list(notices) if isinstance(notices, list) else []


def bind(
    key: str,
    options: Sequence[Any] | None = None,
    *,
    clamp: bool = False,
    fallback: Any = None,
    then: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Widget kwargs (``key``, ``on_change``, ``args``) bound to the view-state value ``key``.

    With ``options`` (radio, selectbox, multiselect), a value that is not among them falls back
    to the field's default, or the first option; with ``clamp`` an integer is clamped into the
    options' range instead (the chosen head after the model shrank), the view state keeping
    the value the user chose. ``fallback`` replaces a value of None (a default that depends on
    the model, such as the dimensions to plot). ``then`` is called, without arguments, after
    a change was stored: a follow-up that belongs to the change (a new run brings its own
    text). Streamlit calls ``on_change(*args)``; keep both together rather than swapping
    ``on_change`` for a function that does not take them.
    """
    v = view()
    value = v.get(key)
    if value is None and fallback is not None:
        value = fallback
    if options is not None and clamp and options:
        value = min(max(value, min(options)), max(options))
    elif options is not None:
        value = _within(v, key, value, list(options))
    # Always set, also when equal: a widget drawn by another page has another id, and only a
    # value set through st.session_state before drawing reaches the new widget.
    st.session_state[key] = value
    return {"key": key, "on_change": _store, "args": (key,) if then is None else (key, then)}


def bind_number(key: str, *, then: Callable[[], None] | None = None) -> dict[str, Any]:
    """`bind` for a number input or slider whose range is its field's: ``min_value``,
    ``max_value`` and ``step`` read from the view state's declared bounds (`ViewState.bounds`,
    `ViewState.step`), so the widget and the check of a link's value are one range."""
    v = view()
    lo, hi = v.bounds(key)
    step = v.step(key)
    extra: dict[str, Any] = {"min_value": lo, "max_value": hi}
    if step is not None:
        extra["step"] = step
    return extra | bind(key, then=then)


def _within(v: ViewState, key: str, value: Any, options: list[Any]) -> Any:
    if isinstance(value, list):
        kept = [x for x in value if x in options]
        return kept if kept or not value else v.default(key)
    if value in options:
        return value
    default = v.default(key)
    return default if default in options or default is None else (options[0] if options else None)


def _store(key: str, then: Callable[[], None] | None = None) -> None:
    value = st.session_state.get(key)
    try:
        view().set(key, list(value) if isinstance(value, tuple) else value)
    except ValueError:
        return  # the widget's own bounds make this unreachable; never store an invalid value
    if then is not None:
        then()


def set_values(**values: Any) -> None:
    """Set view-state values from code (e.g. a click on the heads grid)."""
    v = view()
    for key, value in values.items():
        v.set(key, value)
