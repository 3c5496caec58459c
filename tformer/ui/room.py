"""A live class from the app's side: this session's place in a room, and following the teacher.

A session is a room's teacher (it opened the room: `ticket`, whose token never leaves this
session's state), one of its students (`seat`), or neither. The room store (`tformer.rooms`) is
the same object for every session of the process, in memory or in Redis.

**The teacher publishes.** Every full run of a teacher's page puts the view into the room
(`publish`): the share link's parameters (`ViewState.to_query`) and the page's key, without the
teacher's own language and quiz progress (`LOCAL_KEYS`). Only a view that changed is sent, so a
run that changed nothing costs no store call. The room's own page is not published
(`PageSpec.followed`): students stay on the last view while the teacher shows the QR code.

**Students follow.** A student's session polls the room once a second from a fragment
(`POLL_S`; a poll reads one value while nothing changed). When the room's version grows the
fragment reruns the whole app, and the frame (`follow`, before any widget is drawn) applies the
teacher's parameters to the view and switches to the teacher's page. A student who changes
anything is exploring: `follow` compares the view at the start of each run with the view as it
stood after the last applied one (`settle`, at the end of that run, so whatever the page itself
normalised counts as following), and stops applying. "Back to the teacher's view" applies the
latest one again. A reveal (the teacher showed a question's answer) reaches a student who is
exploring too.

Every string is shown as text (`guard.plain`); a display name never goes through markdown.
A store that cannot be reached is said once per session (`lost`) and retried after
`tformer.rooms.RETRY_S`; the app goes on without rooms meanwhile.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn, TypeVar

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from ..i18n import tr
from ..rooms import (
    RETRY_S,
    RoomError,
    RoomNotFound,
    RoomStatus,
    RoomStore,
    RoomsUnavailable,
    RoomView,
    Seat,
    Tally,
    TeacherTicket,
    format_code,
    room_store,
)
from .binding import INVITE, replace_view, view
from .guard import plain
from .registry import PAGES, PageSpec
from .state import ViewState

__all__ = [
    "LOCAL_KEYS",
    "PAGE_PARAM",
    "POLL_S",
    "TEACHER_POLL_S",
    "Follow",
    "back",
    "close_room",
    "follow",
    "forget_failure",
    "go",
    "join",
    "leave",
    "lost",
    "notice",
    "open_room",
    "publish",
    "reveal",
    "revealed",
    "room_bar",
    "said",
    "seat",
    "settle",
    "show_lost",
    "status",
    "store",
    "submit",
    "tally",
    "teacher_read",
    "teaching",
    "ticket",
    "view_params",
]

POLL_S = 1.0  # a student's poll: the teacher's change shows within about this long
TEACHER_POLL_S = 2.0  # the teacher's count of students present
PAGE_PARAM = "page"  # the published view's page (a registry key); the rest are share-link keys
LOCAL_KEYS = ("lang", "quiz")  # each student keeps their own language and answers

_TICKET = "room.ticket"  # TeacherTicket: the teacher's token lives here and nowhere else
_SEAT = "room.seat"  # Seat
_FOLLOW = "room.follow"  # Follow
_PUBLISHED = "room.published"  # the view this teacher last published
_NOTICE = "room.notice"  # one message for the next run (the room ended, an error)
_FRAME_RAN = "room.frame_ran"  # this full run's frame polled already: the fragment need not
_LOST = "room.lost"  # why the store could not be read (shown until it can be again)
_HERE = "room.here"  # (script, page hash) of this session's last full run
_GOING = "room.going"  # (script, tries): a page switch asked for and not seen arrive yet
MAX_SWITCH_TRIES = 3

T = TypeVar("T")


@dataclass
class Follow:
    """Where a student's following stands."""

    seen: RoomView | None = None  # the room's view as last read
    applied: int = -1  # the room version whose view this session took last
    target: dict[str, str] | None = None  # the view it took (None: none yet)
    settled: dict[str, str] | None = None  # this view right after taking it (None: not yet)
    page: str = ""  # the page of this session's last full run
    exploring: bool = False  # the student changed something since

    @property
    def behind(self) -> bool:
        """The teacher's view changed since this student took it (they are exploring)."""
        return self.seen is not None and bool(self.seen.params) and self.seen.params != self.target


# --- the store, with a breaker ----------------------------------------------------------------

_lock = threading.Lock()
_down: list[tuple[float, RoomsUnavailable]] = []  # until when the store is not asked again, why


def store() -> RoomStore:
    """The process's room store. Raises RoomsUnavailable (also for `RETRY_S` after a failure:
    one dead Redis costs every session one connection attempt per `RETRY_S`, not one per run)."""
    with _lock:
        if _down and time.monotonic() < _down[0][0]:
            raise _down[0][1]
    try:
        return room_store()
    except RoomsUnavailable as err:
        _failed(err)
        raise


def forget_failure() -> None:
    """Ask the store again at the next call, even within `RETRY_S` of a failure (tests, a retry)."""
    with _lock:
        _down.clear()


def _failed(err: RoomsUnavailable) -> None:
    with _lock:
        _down[:] = [(time.monotonic() + RETRY_S, err)]


def _call(method: Callable[..., T], *args: object, **kwargs: object) -> T:
    """``method(*args, **kwargs)`` on the store; a RoomsUnavailable opens the breaker."""
    with _lock:
        if _down and time.monotonic() < _down[0][0]:
            raise _down[0][1]
    try:
        out = method(*args, **kwargs)
    except RoomsUnavailable as err:
        _failed(err)
        raise
    with _lock:
        _down.clear()
    st.session_state.pop(_LOST, None)
    return out


def said(err: RoomError) -> str:
    """The refusal in this session's language (it may have been raised in another session's)."""
    return tr(err.template, **err.values)


def notice(text: str | None = None) -> str | None:
    """Keep ``text`` for the next run; without ``text``, take the kept one (once)."""
    if text is not None:
        st.session_state[_NOTICE] = text
        return None
    kept = st.session_state.pop(_NOTICE, None)
    return kept if isinstance(kept, str) else None


def lost() -> str | None:
    """Why the room cannot be read now (the store is down), or None."""
    why = st.session_state.get(_LOST)
    return why if isinstance(why, str) else None


def show_lost() -> None:
    """Say why the room cannot be read now, when it cannot."""
    why = lost()
    if why:
        st.warning(plain(why, 400), icon="⚠️")


def teacher_read(value: T | None) -> T | None:
    """``value`` as a teacher's live fragment read it from the room: when the room ended
    meanwhile the whole app reruns (to say so); when it could not be read, why is shown."""
    _check_timer()
    if not teaching():
        st.rerun(scope="app")
    if value is None:
        show_lost()
    return value


def _unreachable(err: RoomsUnavailable) -> None:
    st.session_state[_LOST] = said(err)


# --- who this session is -----------------------------------------------------------------------


def ticket() -> TeacherTicket | None:
    t = st.session_state.get(_TICKET)
    return t if isinstance(t, TeacherTicket) else None


def seat() -> Seat | None:
    s = st.session_state.get(_SEAT)
    return s if isinstance(s, Seat) else None


def teaching() -> bool:
    return ticket() is not None


def _follow_state() -> Follow:
    f = st.session_state.get(_FOLLOW)
    if not isinstance(f, Follow):
        f = st.session_state[_FOLLOW] = Follow()
    return f


def _ended(err: RoomError) -> None:
    """The room is gone (closed or expired): this session is no longer in it."""
    for key in (_TICKET, _SEAT, _FOLLOW, _PUBLISHED, _LOST):
        st.session_state.pop(key, None)
    notice(said(err))


# --- the teacher --------------------------------------------------------------------------------


def open_room() -> None:
    """Button callback: open a room with this session as its teacher."""
    if teaching() or seat() is not None:
        return
    try:
        t = _call(store().open_room)
    except RoomsUnavailable as err:
        _unreachable(err)
        notice(said(err))
        return
    except RoomError as err:
        notice(said(err))
        return
    st.session_state[_TICKET] = t
    st.session_state.pop(_PUBLISHED, None)


def close_room() -> None:
    """Button callback: end the room (its students are told it was closed)."""
    t = ticket()
    if t is None:
        return
    try:
        _call(store().close, t.code, t.token)
    except RoomsUnavailable as err:
        notice(said(err))
        return
    except RoomError:
        pass  # gone already: closing it is done
    for key in (_TICKET, _PUBLISHED):
        st.session_state.pop(key, None)
    notice(tr("You closed room {code}.", code=format_code(t.code)))


def view_params(page: str) -> dict[str, str]:
    """The view as a room shares it: the share link's parameters, except what each student keeps
    (`LOCAL_KEYS`), and the page."""
    out = {k: v for k, v in view().to_query().items() if k not in LOCAL_KEYS}
    out[PAGE_PARAM] = page
    return out


def publish(spec: PageSpec) -> None:
    """A teacher's full run: make this view the room's, when it changed."""
    t = ticket()
    if t is None or not spec.followed:
        return
    params = view_params(spec.key)
    if params == st.session_state.get(_PUBLISHED):
        return
    try:
        _call(store().publish, t.code, t.token, params)
    except RoomsUnavailable as err:
        _unreachable(err)
        return
    except RoomNotFound as err:
        _ended(err)
        return
    except RoomError as err:  # a view over the room's bounds (a text too long to share)
        st.session_state[_LOST] = said(err)
        return
    st.session_state[_PUBLISHED] = params


def status() -> RoomStatus | None:
    """The teacher's room now (None when it cannot be read; `lost` or a notice says why)."""
    t = ticket()
    if t is None:
        return None
    try:
        return _call(store().status, t.code, t.token)
    except RoomsUnavailable as err:
        _unreachable(err)
    except RoomNotFound as err:
        _ended(err)
    return None


def tally(step: str) -> Tally | None:
    """How the room answered question ``step`` (counts only; None when it cannot be read)."""
    t = ticket()
    if t is None:
        return None
    try:
        return _call(store().tally, t.code, t.token, step)
    except RoomsUnavailable as err:
        _unreachable(err)
    except RoomNotFound as err:
        _ended(err)
    return None


def reveal(step: str) -> None:
    """Button callback: show question ``step``'s answer on every student's screen."""
    t = ticket()
    if t is None:
        return
    try:
        _call(store().reveal, t.code, t.token, step)
    except RoomsUnavailable as err:
        _unreachable(err)
    except RoomNotFound as err:
        _ended(err)
    except RoomError as err:
        notice(said(err))


# --- the students -------------------------------------------------------------------------------


def join(code: str, name: str) -> str | None:
    """Take a seat in room ``code`` as ``name``; the refusal's words, or None when seated."""
    if teaching() or seat() is not None:
        return None
    try:
        s = _call(store().join, code, name)
    except RoomsUnavailable as err:
        _unreachable(err)
        return said(err)
    except RoomError as err:
        return said(err)
    st.session_state[_SEAT] = s
    st.session_state[_FOLLOW] = Follow()
    return None


def leave() -> None:
    """Button callback: leave the room (the seat and its answers stay in it)."""
    s = seat()
    if s is None:
        return
    with contextlib.suppress(RoomError):  # gone, or unreachable: this session leaves it either way
        _call(store().leave, s.code, s.seat_id)
    for key in (_SEAT, _FOLLOW, _LOST):
        st.session_state.pop(key, None)
    notice(tr("You left room {code}.", code=format_code(s.code)))


def submit(step: str, answer: str, correct: bool | None) -> None:
    """Send this student's answer to question ``step``; raises the store's RoomError."""
    s = seat()
    if s is None:
        return
    try:
        _call(store().submit, s.code, s.seat_id, step, answer, correct=correct)
    except RoomsUnavailable as err:
        _unreachable(err)
        raise
    except RoomNotFound as err:
        _ended(err)
        raise


def revealed(step: str) -> bool:
    """Whether this student's teacher has revealed question ``step``'s answer."""
    f = st.session_state.get(_FOLLOW)
    return seat() is not None and isinstance(f, Follow) and f.seen is not None and step in f.seen.revealed


def _poll(f: Follow) -> RoomView | None:
    """The room's view when it changed since ``f.seen`` (None: unchanged, or not readable)."""
    s = seat()
    assert s is not None
    try:
        return _call(store().poll, s.code, f.seen.version if f.seen else -1)
    except RoomsUnavailable as err:
        _unreachable(err)
    except RoomNotFound as err:
        _ended(err)
    return None


_SCRIPTS = {p.key: p.script for p in PAGES if p.followed}


def _take(params: dict[str, str]) -> None:
    """Make the teacher's ``params`` this session's view; this student keeps `LOCAL_KEYS` (their
    quiz only while the lesson stays the same)."""
    shared = {k: v for k, v in params.items() if k != PAGE_PARAM and k not in LOCAL_KEYS}
    new, _ = ViewState.from_query(shared)  # parsed and bounded like any link's
    old = view()
    new.lang = old.lang
    new.quiz = old.quiz if new.lesson == old.lesson else ""
    replace_view(new)


def follow(spec: PageSpec) -> None:
    """A student's full run, before any widget: read the room and take the teacher's view when
    this student follows it; open the teacher's page (does not return then)."""
    _arrive(spec)
    if seat() is None:
        return
    st.session_state[_FRAME_RAN] = True
    f = _follow_state()
    got = _poll(f)
    if seat() is None:  # the room ended
        return
    if got is not None:
        f.seen = got
    f.page = spec.key
    f.exploring = f.target is not None and f.settled is not None and view_params(spec.key) != f.settled
    if f.exploring:
        return
    if f.seen is not None and f.seen.version != f.applied:
        f.applied = f.seen.version
        params = dict(f.seen.params)
        if params and params != f.target:  # else nothing published yet, or a reveal only
            f.target, f.settled = params, None
            _take(params)
    page = _page_of(f)
    if page is not None and page != spec.key:
        # also when a switch asked for earlier was lost (a rerun the browser asked for at the
        # same moment took its place): a following student is always on the teacher's page
        f.settled = None
        go(_SCRIPTS[page])


# --- page switches and the fragments' timers ------------------------------------------------------
#
# A room's page polls from a fragment on a timer, and the browser asks for each timed run with the
# page it shows. When the server switches the page (a student following, the lesson bar's Next),
# a timed run the browser asked for before it learnt of the switch carries the old page: when it
# arrives while the switch's run is still waiting, Streamlit folds the two into one run of the
# newer request's page (`ScriptRequests`), and the switch is lost; when it arrives after, it runs
# on the old page. `go` keeps the switch asked for and the next full run makes it again
# (`_arrive`); a room fragment run on another page than the last full run sends the browser back
# to that page (`_check_timer`). (Read in Streamlit 1.67's code; not seen to happen in a test.)


def go(script: str) -> NoReturn:
    """``st.switch_page(script)``, made again by the next full run if a fragment's timer lost it."""
    going = st.session_state.get(_GOING)
    tries = going[1] + 1 if isinstance(going, tuple) and going[0] == script else 1
    st.session_state[_GOING] = (script, tries)
    st.switch_page(script)


def _arrive(spec: PageSpec) -> None:
    going = st.session_state.get(_GOING)
    if isinstance(going, tuple) and going[0] != spec.script and going[1] < MAX_SWITCH_TRIES:
        go(going[0])
    st.session_state.pop(_GOING, None)
    ctx = get_script_run_ctx()
    st.session_state[_HERE] = (spec.script, ctx.page_script_hash if ctx is not None else "")


def _check_timer() -> None:
    """In a room's fragment: a timed run of a page the session has left goes back to the page."""
    here = st.session_state.get(_HERE)
    ctx = get_script_run_ctx()
    if isinstance(here, tuple) and ctx is not None and here[1] and ctx.page_script_hash != here[1]:
        st.switch_page(here[0])


def _page_of(f: Follow) -> str | None:
    """The teacher's page a student follows onto (None: none yet, or one not followed)."""
    page = f.target.get(PAGE_PARAM) if f.target is not None else None
    return page if page in _SCRIPTS else None


def settle() -> None:
    """The end of a full run: a view just taken, as the teacher's page left it, is the one to
    compare the next runs with."""
    f = st.session_state.get(_FOLLOW)
    if seat() is None or not isinstance(f, Follow) or f.settled is not None or not f.page:
        return
    page = _page_of(f)
    if page is not None and page != f.page:  # not there yet: the switch is still to come
        return
    f.settled = view_params(f.page)


def back() -> None:
    """Button callback: back to the teacher's current view."""
    f = st.session_state.get(_FOLLOW)
    if isinstance(f, Follow):
        f.applied, f.target, f.settled, f.exploring = -1, None, None, False
    st.rerun()  # the whole app: the frame takes the view and opens its page


def _tick() -> None:
    """A student's poll between full runs: rerun the app when there is something to take."""
    f = _follow_state()
    before = f.seen.revealed if f.seen is not None else frozenset()
    got = _poll(f)
    if seat() is None:  # the room ended: say so
        st.rerun(scope="app")
    if got is None:
        return
    f.seen = got
    if not f.exploring or got.revealed != before:
        st.rerun(scope="app")


# --- the bar on every page ------------------------------------------------------------------------


def room_bar(spec: PageSpec) -> None:
    """The room's line above the page: the teacher's code and students present, or the student's
    following badge; any message the last run left."""
    said_once = notice()
    if said_once:
        st.info(plain(said_once, 400), icon="🎓")
    if seat() is not None:
        _student_bar()
    elif teaching() and spec.followed:
        _teacher_bar()
    elif spec.followed and isinstance(invite := st.session_state.get(INVITE), str):
        # a join link opened on another page than the Live class page (its join form is there)
        st.info(tr("You were invited to a live class: join it on the Live class page."), icon="🎓")
        st.page_link("pages/classroom.py", label=tr("Live class"), icon="🎓", help=plain(invite, 40))


@st.fragment(run_every=POLL_S, key="room.poll")
def _student_bar() -> None:
    if not st.session_state.pop(_FRAME_RAN, False):  # a poll between full runs
        _check_timer()
        _tick()
    s = seat()
    if s is None:
        return
    f = _follow_state()
    where = tr("room {code} · you are {name}", code=format_code(s.code), name=plain(s.name, 60))
    with st.container(border=True, horizontal=True, vertical_alignment="center", key="room_bar"):
        if f.exploring:
            moved = tr(" · your teacher has moved on") if f.behind else ""
            st.markdown(tr("🧭 **Exploring on your own**") + moved + f" · {where}")
            st.button(tr("Back to the teacher's view"), key="room.back", on_click=back, type="primary")
        elif f.target is None:
            st.markdown(tr("⏳ **Waiting for your teacher's first view**") + f" · {where}")
        else:
            st.markdown(tr("🟢 **Following your teacher**") + f" · {where}")
    show_lost()


@st.fragment(run_every=TEACHER_POLL_S, key="room.teacher")
def _teacher_bar() -> None:
    _check_timer()
    t = ticket()
    if t is None:
        return
    now = teacher_read(status())
    with st.container(border=True, horizontal=True, vertical_alignment="center", key="room_bar"):
        present = "?" if now is None else str(now.present)
        st.markdown(
            tr(
                "🎓 **Room {code}** · students present: {present} · they follow this screen",
                code=format_code(t.code),
                present=present,
            )
        )
        st.page_link("pages/classroom.py", label=tr("QR code and answers"), icon="🔗")
