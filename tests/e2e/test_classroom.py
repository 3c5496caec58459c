"""A live class on one server, in Chromium: the teacher in one browser context, two students in
two others (one at a phone's width, in Chinese). The teacher opens a room; the students open the join link
and type a name; they follow the teacher onto the lesson's question step; one answers, the
teacher's tally shows it, the teacher reveals and the other student sees the answer; the teacher
picks a head and the students' pickers follow; a student who explores stays put until "Back to
the teacher's view"."""

from __future__ import annotations

import contextlib
from typing import Any

from tformer.ui.lessons import lesson_by_id

from .class_room import badge, click, eventually, go, join, open_room, path_of, pick
from .conftest import PageProbe, new_page
from .streamlit_driver import exception_boxes, open_page, screenshot, selectbox_value, widget


def _it_step() -> int:
    lesson = lesson_by_id("attention-basics")
    assert lesson is not None
    return next(i for i, s in enumerate(lesson.steps) if s.question and s.question.template == "argmax_key")


IT = _it_step()
PHONE = 420  # px: a student on a phone
LANG = {"Mei": "en", "Ana": "zh"}  # each student's own language: the teacher's does not reach them


def _context(browser: Any, url: str, width: int = 1400) -> Any:
    ctx = browser.new_context(base_url=url + "/", viewport={"width": width, "height": 1000})
    ctx.set_default_timeout(60_000)
    return ctx


def start_class(teacher: Any, students: dict[str, Any]) -> str:
    """The teacher opens the lesson's question step, then a room; the students join by the link
    and follow onto the step. Returns the join code."""
    open_page(teacher, f"attention?lesson=attention-basics&lesson_step={IT}", timeout=180_000)
    go(teacher, "classroom")
    code = open_room(teacher)
    link = teacher.locator('[data-testid="stCode"]').first.inner_text().strip()
    assert link.endswith(f"/classroom?room={code}"), link
    assert teacher.locator('[data-testid="stImage"] img').count() == 1  # the QR code
    screenshot(teacher, "classroom-teacher-room")
    for name, student in students.items():
        open_page(student, f"classroom?room={code}&lang={LANG[name]}")
        assert widget(student, "room.code").locator("input").input_value() == code
        join(student, name)
        eventually(f"{name} waits for the first view", lambda s=student: "⏳" in badge(s), page=student)
    screenshot(students["Ana"], "classroom-student-waiting-phone-zh")
    go(teacher, "attention")  # the lesson's question step: everyone follows
    for name, s in students.items():
        took = eventually(
            f"{name} follows onto the teacher's page",
            lambda s=s: path_of(s) == "attention" and "🟢" in badge(s),
            page=s,
        )
        print(f"{name} on the teacher's page after {took:.1f} s")
        eventually("the question is asked", lambda s=s: widget(s, f"lq.{IT}.answer").count() == 1, page=s)
    main = teacher.locator('[data-testid="stMain"]').inner_text()
    assert "Hidden until you reveal the answer to the class" in main
    return code


def answer_and_reveal(teacher: Any, mei: Any, ana: Any) -> None:
    click(mei, f"lq.{IT}.answer", "animal")
    click(mei, "lq.check")
    assert "Right: the model's value is 'animal'" in widget(mei, "lesson_bar").inner_text()
    tally = eventually(
        "the answer reaches the teacher's tally",
        lambda: (
            "1 of 2" in widget(teacher, "lesson_bar").inner_text()
            and teacher.locator(".st-key-room-tally [data-testid=stPlotlyChart]").count() == 1
        ),
    )
    print(f"the answer on the teacher's screen after {tally:.1f} s")
    screenshot(teacher, "classroom-teacher-tally")
    screenshot(mei, "classroom-student-answered")
    click(teacher, "room.reveal")
    revealed = eventually(
        "the reveal reaches the student who did not answer",
        lambda: "老师公布了答案" in widget(ana, "lesson_bar").inner_text(),  # in her language
        page=ana,
    )
    print(f"the reveal on a student's screen after {revealed:.1f} s")
    assert widget(ana, "lq.check").count() == 0
    screenshot(ana, "classroom-student-revealed-phone-zh")


def follow_explore_and_return(teacher: Any, mei: Any, ana: Any) -> None:
    pick(teacher, "head", "5")
    for s in (mei, ana):
        moved = eventually(
            "the students' head follows", lambda s=s: selectbox_value(s, "head") == "5", page=s
        )
        print(f"a head the teacher picked on a student's screen after {moved:.1f} s")
    pick(mei, "head", "7")  # Mei explores
    eventually("Mei is exploring", lambda: "Exploring on your own" in badge(mei), page=mei)
    pick(teacher, "head", "6")
    eventually("Ana follows", lambda: selectbox_value(ana, "head") == "6", page=ana)
    eventually("Mei is told the teacher moved on", lambda: "moved on" in badge(mei), page=mei)
    assert selectbox_value(mei, "head") == "7"
    screenshot(mei, "classroom-student-exploring")
    click(mei, "room.back")
    eventually(
        "Mei is back", lambda: selectbox_value(mei, "head") == "6" and "Following" in badge(mei), page=mei
    )


def test_students_follow_the_teacher_answer_live_and_see_the_reveal(browser, app_server):
    widths = {"teacher": 1400, "Mei": 1400, "Ana": PHONE}
    contexts = {who: _context(browser, app_server.url, w) for who, w in widths.items()}
    probes = {who: PageProbe() for who in widths}
    pages = {who: new_page(contexts[who], probes[who]) for who in widths}
    teacher, mei, ana = pages["teacher"], pages["Mei"], pages["Ana"]
    try:
        start_class(teacher, {"Mei": mei, "Ana": ana})
        answer_and_reveal(teacher, mei, ana)
        follow_explore_and_return(teacher, mei, ana)
        for who, p in pages.items():
            assert exception_boxes(p) == 0, who
            assert probes[who].page_errors == [], who
    except BaseException:
        for who, p in pages.items():
            with contextlib.suppress(Exception):
                screenshot(p, f"FAILED-classroom-{who}", settle_ms=0)
        raise
    finally:
        for c in contexts.values():
            c.close()
