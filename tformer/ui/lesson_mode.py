"""Lesson mode: a bar at the top of every page that walks a lesson's steps.

Each step names a page, the settings it opens with (share-link keys) and what the teacher says,
in the interface's language. Previous / Next apply the step's settings to the view and open its
page; the lesson and the step are part of the view (and so of a share link: a student who opens
the teacher's link lands on the same step).
"""

from __future__ import annotations

import streamlit as st

from ..i18n import language, tr
from .binding import view
from .caches import ModelChoice
from .lesson_questions import figure_hidden, question_box, reset_gate, summary
from .lessons import Lesson, lesson_by_id, local
from .registry import PAGES
from .room import go, teaching
from .state import ViewState


def apply_step(lesson: Lesson, index: int) -> str:
    """Put step ``index`` of ``lesson`` into the view; return the script of its page. A lesson
    opened afresh starts with no answers."""
    step = lesson.steps[index]
    v = view()
    if v.lesson != lesson.id:
        v.quiz = ""
    v.set("lesson", lesson.id)
    v.set("lesson_step", index)
    parsed, _ = ViewState.from_query(step.settings)  # checked when the lessons were loaded
    for key in step.settings:
        v.set(key, parsed.get(key))
    text = step.text_in(language())
    if text is not None:
        v.set("text", text)
    return next(p.script for p in PAGES if p.key == step.page)


def in_lesson() -> bool:
    """Whether the view is in a lesson (a lesson bar with its own Previous / Next is drawn):
    a page's own back / next buttons give way to it, so a class sees one Next."""
    lesson_id = view().lesson
    return lesson_id is not None and lesson_by_id(lesson_id) is not None


def start_lesson(lesson: Lesson, index: int = 0) -> None:
    """Open ``lesson`` at step ``index`` (switches page; does not return)."""
    go(apply_step(lesson, index))


def lesson_bar(page_key: str, choice: ModelChoice | None = None) -> None:
    """The lesson bar, when the view is in a lesson; nothing otherwise. A step with a question
    asks it here (`tformer.ui.lesson_questions`), on ``choice`` (the sidebar's model)."""
    reset_gate()
    v = view()
    lesson = lesson_by_id(v.lesson) if v.lesson else None
    if lesson is None:
        return
    index = min(v.lesson_step, len(lesson.steps) - 1)
    step = lesson.steps[index]
    with st.container(border=True, key="lesson_bar"):
        st.markdown(
            tr(
                "📘 **{lesson}** · step {i} of {n}: **{title}**",
                lesson=local(lesson.title),
                i=index + 1,
                n=len(lesson.steps),
                title=local(step.title),
            )
        )
        question_box(lesson, index, step, choice, page_key)
        if step.page != page_key:
            spec = next(p for p in PAGES if p.key == step.page)
            st.caption(tr("This step is on the page “{page}”.", page=tr(spec.title)))
        elif figure_hidden():  # the notes name the answer: they follow it
            st.caption(
                tr("The step's notes follow the reveal.")
                if teaching()
                else tr("The step's notes follow your answer.")
            )
        else:
            st.markdown(local(step.say))
        if index == len(lesson.steps) - 1:
            summary(lesson, choice)
        row = st.container(horizontal=True, gap="small")
        back = row.button(tr("◀ Previous"), key="lesson_prev", disabled=index == 0)
        here = row.button(tr("Open this step"), key="lesson_here", disabled=step.page == page_key)
        forward = row.button(
            tr("Next ▶"), key="lesson_next", disabled=index == len(lesson.steps) - 1, type="primary"
        )
        leave = row.button(tr("End the lesson"), key="lesson_end", type="tertiary")
    if leave:
        v.lesson = None
        v.lesson_step = 0
        v.quiz = ""
        reset_gate()
        st.rerun()
    target = index - 1 if back else index + 1 if forward else index if here else None
    if target is not None:
        script = apply_step(lesson, target)
        if next(p.key for p in PAGES if p.script == script) == page_key:
            st.rerun()
        go(script)
