"""A lesson's questions in a live class: students' answers go to the room, the teacher sees them
arrive and reveals the answer.

A question is named in the room by its lesson and step (`step_id`: ``attention-basics:3``). A
student's answer is sent as the app graded it (`send`, from the lesson bar's Check): its value
in a form that reads the same in every language (`room_answer`: a token with its position, a
number, an option's key) and right or wrong as computed on the server. The teacher's lesson bar
shows, instead of an answer box, how many of the students present answered and how the answers
split (`class_tally`: counts only, no names, live), and a button that reveals the answer on every
student's screen.
"""

from __future__ import annotations

import re

import streamlit as st

from ..figures.answers import MAX_BARS, answers_figure
from ..i18n import tr
from ..questions import ChoiceAnswer, DirectionAnswer, Grade, NumberAnswer, Question, TokenAnswer
from ..rooms import AnswersClosed, RateLimited, RoomError, RoomNotFound, RoomsUnavailable, Tally
from . import room

__all__ = [
    "TALLY_S",
    "answer_right",
    "class_tally",
    "revealed_to_me",
    "room_answer",
    "send",
    "shown_answer",
    "step_id",
    "teacher_revealed",
]

TALLY_S = 1.0  # the teacher's tally is read this often while the question is open
MAX_LABEL = 60
_POSITION = re.compile(r"#(\d{1,5})$")


def step_id(lesson_id: str, index: int) -> str:
    """A lesson step's question as the room names it: the lesson and the step's number."""
    return f"{lesson_id}:{index + 1}"


def room_answer(question: Question, grade: Grade) -> str:
    """The graded answer as the room counts it: the same words in every student's language."""
    a = question.answer
    if isinstance(a, TokenAnswer) and isinstance(grade.value, int):
        return f"{a.labels[grade.value][:MAX_LABEL]} #{grade.value}"
    if isinstance(a, NumberAnswer) and isinstance(grade.value, float):
        return f"{grade.value:.6g}"
    return str(grade.value)[:MAX_LABEL]  # an option's or a direction's key


def _value(question: Question, answer: str) -> int | float | str | None:
    """``answer`` (as `room_answer` wrote it) as the question's own value, or None."""
    a = question.answer
    try:
        if isinstance(a, TokenAnswer):
            m = _POSITION.search(answer)
            return int(m.group(1)) if m and int(m.group(1)) < len(a.labels) else None
        if isinstance(a, NumberAnswer):
            return float(answer)
    except ValueError:
        return None
    if isinstance(a, (ChoiceAnswer, DirectionAnswer)) and answer in dict(a.options):
        return answer
    return None


def shown_answer(question: Question, answer: str) -> str:
    """``answer`` in the teacher's words: an option's label, a number as the feedback writes it."""
    value = _value(question, answer)
    a = question.answer
    if isinstance(a, NumberAnswer) and isinstance(value, float):
        return a.show(value)
    if isinstance(a, (ChoiceAnswer, DirectionAnswer)) and isinstance(value, str):
        return a.show(value)
    return answer


def answer_right(question: Question, answer: str) -> bool | None:
    """Whether ``answer`` is right for the teacher's question (None: it cannot be read)."""
    value = _value(question, answer)
    return None if value is None else bool(question.answer.check(value))  # type: ignore[arg-type]


# --- the student ---------------------------------------------------------------------------------


def send(lesson_id: str, index: int, question: Question, grade: Grade) -> str | None:
    """A student in a room sends their graded answer. Returns why it must be sent again (sent too
    fast): the answer is then not kept here either; any other refusal is said in the room's bar
    and the answer is kept here."""
    if room.seat() is None:
        return None
    try:
        room.submit(step_id(lesson_id, index), room_answer(question, grade), grade.correct)
    except RateLimited as err:
        return room.said(err)
    except (AnswersClosed, RoomNotFound, RoomsUnavailable):
        return None  # revealed meanwhile, the room ended, the store is down: the bar says so
    except RoomError as err:
        room.notice(room.said(err))
    return None


def revealed_to_me(lesson_id: str, index: int) -> bool:
    """Whether this student's teacher revealed the answer of the step's question."""
    return room.revealed(step_id(lesson_id, index))


# --- the teacher ---------------------------------------------------------------------------------


def teacher_revealed(step: str) -> bool:
    """Whether the teacher has revealed ``step`` in the room (read now)."""
    t = room.tally(step)
    return t is not None and t.revealed


def class_tally(lesson_id: str, index: int, question: Question, *, revealed: bool) -> None:
    """The class's answers to the step's question, live, and (before the reveal) the button that
    reveals the answer on every student's screen."""
    step = step_id(lesson_id, index)
    _live_tally(step, question, revealed)
    if not revealed:
        st.button(
            tr("Reveal the answer to the class"),
            key="room.reveal",
            type="primary",
            on_click=room.reveal,
            args=(step,),
        )


@st.fragment(run_every=TALLY_S, key="room.tally")
def _live_tally(step: str, question: Question, revealed: bool) -> None:
    t = room.teacher_read(room.tally(step))
    if t is None:
        return
    if t.revealed != revealed:  # revealed from another of this teacher's runs
        st.rerun(scope="app")
    _draw(t, question)


def _draw(t: Tally, question: Question) -> None:
    st.markdown(
        tr(
            "**{answered} of {present}** students present have answered.",
            answered=t.answered,
            present=t.present,
        )
    )
    if not t.counts:
        st.caption(tr("Answers appear here as they arrive: counts only, no names."))
        return
    counts = list(t.counts)
    if len(counts) > MAX_BARS:  # the long tail of typed numbers in one bar
        rest = sum(n for _, n in counts[MAX_BARS - 1 :])
        counts = [*counts[: MAX_BARS - 1], ("", rest)]
    labels = [shown_answer(question, a) if a else tr("other answers") for a, _ in counts]
    right = [answer_right(question, a) if a else None for a, _ in counts] if t.revealed else None
    fig = answers_figure(
        labels,
        [n for _, n in counts],
        right=right,
        title=tr("The class's answers (no names)"),
    )
    st.plotly_chart(fig, key="room.tally", config={"displaylogo": False})
    if t.revealed:
        st.caption(tr("{right} of {answered} answers are right.", right=t.correct, answered=t.answered))
