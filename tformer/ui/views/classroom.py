"""The Live class page's parts: opening a room and running it (the teacher), joining one (a student).

The teacher's panel shows what the class needs to join (the code, the link, its QR code drawn
here by segno: no request to any host), how many students are present and how the lesson's
questions were answered (counts, no names; live), the answers as a CSV file (display names,
question, answer, right or wrong, time; cells a spreadsheet cannot run as formulas) and closing
the room. The teacher's token stays in the session's state (`tformer.ui.room`): nothing here
shows it or puts it in a link. A student's panel says which room and name they are in, and
leaves it. Names are students' text: always shown as text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from ...i18n import tr
from ...rooms import (
    CSV_HEADER,
    RoomError,
    TeacherTicket,
    answers_csv,
    format_code,
    join_link,
    join_qr,
)
from .. import room, room_questions
from ..binding import INVITE, view
from ..guard import plain
from ..lessons import lesson_by_id, local
from ..tables import fitted_table

__all__ = [
    "answers_file",
    "join_panel",
    "link_for",
    "open_panel",
    "student_panel",
    "teacher_panel",
    "unavailable",
]

_JOIN_ERROR = "room.join_error"
QR_PX = 320  # the QR code on a projected screen: a phone reads it from the back rows


def unavailable() -> str | None:
    """Why rooms cannot be used on this server now (the store is down or misconfigured), or None."""
    try:
        room.store()
    except RoomError as err:
        return room.said(err)
    return None


# --- no room yet ---------------------------------------------------------------------------------


def open_panel() -> None:
    st.subheader(tr("Teach a room"))
    st.markdown(
        tr(
            "Open a room and show its code or QR code: your students' screens follow yours, the page, "
            "the text, the model, the head and the lesson step, on their own devices. Their answers to "
            "the lesson's questions arrive here as they send them, counted without names."
        )
    )
    st.button(tr("Open a room"), key="room.open", type="primary", on_click=room.open_room)


def _join() -> None:
    code = str(st.session_state.get("room.code") or "")
    name = str(st.session_state.get("room.name") or "")
    refused = room.join(code, name)
    if refused is not None:
        st.session_state[_JOIN_ERROR] = refused
    else:
        st.session_state.pop(INVITE, None)


def join_panel() -> None:
    st.subheader(tr("Join your teacher's room"))
    invite = st.session_state.get(INVITE)
    if isinstance(invite, str) and not st.session_state.get("room.code"):
        st.session_state["room.code"] = invite  # from the join link
    st.text_input(tr("join code"), key="room.code", max_chars=20, placeholder="7K2M-9Q4T")
    st.text_input(
        tr("your display name"),
        key="room.name",
        max_chars=80,
        help=tr(
            "Your teacher sees it in the answers file only; the class's screen shows counts, never names."
        ),
    )
    st.button(tr("Join"), key="room.join", type="primary", on_click=_join)
    refused = st.session_state.pop(_JOIN_ERROR, None)
    if isinstance(refused, str):
        st.error(plain(refused, 400), icon="✋")


# --- the teacher ---------------------------------------------------------------------------------


def link_for(code: str) -> str | None:
    """The join link on the address this browser uses (None when the browser sent none)."""
    try:
        return join_link(st.context.url or "", code, "classroom")
    except (ValueError, RuntimeError):
        return None


@st.cache_data(max_entries=32, show_spinner=False)
def _qr_png(link: str) -> bytes:
    return join_qr(link, "png", scale=8)


def answers_file(t: TeacherTicket, header: tuple[str, ...]) -> Callable[[], bytes]:
    """A callable that reads every answer of the room when its download button is clicked (in a
    worker thread: no session there, so the ticket and the translated header are passed in)."""

    def build() -> bytes:
        return answers_csv(room.store().answers(t.code, t.token), header)

    return build


def teacher_panel(t: TeacherTicket) -> None:
    code = format_code(t.code)
    link = link_for(t.code)
    words, picture = st.columns([3, 2], gap="large")
    with words:
        st.markdown(tr("Students open the link or scan the code, then type a display name. The join code:"))
        st.markdown(f"## {code}")
        if link is not None:
            st.code(link, language=None, wrap_lines=True)
        else:
            st.caption(tr("Students open this app's “Live class” page and type the code."))
        _live_status()
        st.download_button(
            tr("Download every answer (CSV)"),
            data=answers_file(t, tuple(tr(h) for h in CSV_HEADER)),
            file_name=f"tformer-room-{code}.csv",
            mime="text/csv",
            key="room.csv",
            on_click="ignore",
            help=tr("Display names, question, answer, right or wrong, and time, one row per answer."),
        )
        with st.popover(tr("Close the room")):
            st.markdown(
                tr("Closing ends the room for everyone and deletes its answers: download them first.")
            )
            st.button(tr("Close room {code} now", code=code), key="room.close", on_click=room.close_room)
    with picture:
        if link is not None:
            st.image(_qr_png(link), width=QR_PX, caption=tr("the join link as a QR code"))
    st.caption(
        tr(
            "Your students follow the next page you open (this page stays yours). Start a lesson from the "
            "Start page: its question steps count the class's answers in the lesson bar."
        )
    )


@st.fragment(run_every=room.TEACHER_POLL_S, key="room.status")
def _live_status() -> None:
    now = room.teacher_read(room.status())
    if now is None:
        return
    row = st.container(horizontal=True, gap="large")
    row.metric(tr("students present"), now.present)
    row.metric(tr("joined"), now.students)
    row.metric(tr("answers"), now.answers)
    minutes = max(0, round(now.expires_in_s / 60))
    st.caption(tr("Without activity the room ends in {minutes} min.", minutes=minutes))
    _lesson_answers()


def _lesson_answers() -> None:
    """The lesson's question steps: how many answered each, and how many were right once revealed."""
    lesson_id = view().lesson
    lesson = lesson_by_id(lesson_id) if lesson_id else None
    if lesson is None:
        return
    rows: list[dict[str, Any]] = []
    for i, step in enumerate(lesson.steps):
        if step.question is None:
            continue
        t = room.tally(room_questions.step_id(lesson.id, i))
        if t is None:
            return
        rows.append(
            {
                tr("step"): i + 1,
                tr("title"): local(step.title),
                tr("answered"): f"{t.answered} / {t.present}",
                tr("right"): str(t.correct) if t.revealed else tr("not revealed yet"),
            }
        )
    if rows:
        st.markdown(tr("**Answers in “{lesson}”**", lesson=local(lesson.title)))
        fitted_table(rows, key="room.answers")


# --- a student -----------------------------------------------------------------------------------


def student_panel() -> None:
    s = room.seat()
    if s is None:
        return
    st.markdown(
        tr("You are in room **{code}** as “{name}”.", code=format_code(s.code), name=plain(s.name, 60))
    )
    st.caption(
        tr(
            "Your screen follows your teacher's: the page, the text, the model, the head and the lesson step. "
            "Change anything to explore on your own; the bar at the top brings you back."
        )
    )
    st.button(tr("Leave the room"), key="room.leave", on_click=room.leave)
