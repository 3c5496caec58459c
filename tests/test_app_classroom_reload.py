"""A live class's first five minutes under AppTest: screens that stop polling stop counting as
present, a student whose page was reloaded joins again under the same name and is back on their
seat with their answers, a teacher whose page was reloaded takes the room back with the teacher
key (which no link, log or published view ever holds), in English and in Chinese.

A reload is a fresh AppTest opened on the address the old session's browser showed (its page and
query parameters), sharing the process's room store; the old AppTest stands for the tab that was
reloaded or for a second device. The store's clock is the test's, so "13 s later" is a number.
"""

from __future__ import annotations

import logging
import re

import pytest

pytest.importorskip("streamlit")

from streamlit.testing.v1 import AppTest

from tformer.rooms import JOIN_PARAM, MemoryRoomStore, RoomLimits, format_code, format_key
from tformer.ui import room

from ._classroom import (
    BASE_URL,
    CLASSROOM,
    badge,
    code_of,
    goto,
    on_page,
    page_bytes,
    run_fragment,
    seat,
    student,
    teacher,
    ticket,
    unescaped,
)
from ._i18n_check import english_words, visible_strings
from .test_app_lesson_questions import BASICS, IT
from .test_app_pages import assert_clean, charts, open_app

ATTENTION = "pages/attention.py"
AWAY_S = 13.0  # longer than a seat's presence (12 s): the old tab stopped polling


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The process's room store on a clock the test moves (default limits: 12 s of presence)."""
    c = Clock()
    rooms = MemoryRoomStore(RoomLimits(key_tries=2), clock=c)
    monkeypatch.setattr(room, "room_store", lambda: rooms)
    return c


def reload(at: AppTest, page: str, **extra: str) -> AppTest:
    """The same browser tab reloaded: a new session opens the address ``at`` showed."""
    params = {**dict(at.query_params), **extra}
    fresh = open_app(page, **params)
    fresh.context = {"url": BASE_URL}
    return on_page(fresh)


def answered(at: AppTest) -> str:
    found = re.search(r"\*\*(\d+) of (\d+)\*\*", unescaped(at))
    return f"{found.group(1)} of {found.group(2)}" if found else ""


# --- presence -------------------------------------------------------------------------------------


def test_students_present_are_the_screens_that_poll(clock: Clock):
    t = teacher(ATTENTION, lesson=BASICS, lesson_step=str(IT))
    code = code_of(t)
    mei, ana = student(code, "Mei"), student(code, "Ana")
    mei.button_group(key=f"lq.{IT}.answer").set_value(2).run()
    mei.button(key="lq.check").click().run()
    t.run()
    assert "students present: 2" in badge(t)
    assert answered(t) == "1 of 2"
    clock.now += AWAY_S / 2
    run_fragment(mei, "room.poll")  # Mei's tab is open: its timer polls
    clock.now += AWAY_S / 2  # Ana closed her laptop 13 s ago
    t.run()
    assert "students present: 1" in badge(t)
    assert answered(t) == "1 of 1", "answered / present counts the screens that are open"
    goto(t, CLASSROOM)
    metrics = {m.label: m.value for m in t.metric}
    assert (metrics["students present"], metrics["joined"]) == ("1", "2")
    (present,) = [m for m in t.metric if m.label == "students present"]
    assert "last 12 s" in present.help
    run_fragment(ana, "room.poll")  # her laptop wakes up: the same session polls again
    assert seat(ana) is not None
    t.run()
    assert {m.label: m.value for m in t.metric}["students present"] == "2"


def test_answers_of_screens_that_closed_still_count_without_a_fraction_over_one(clock: Clock):
    t = teacher(ATTENTION, lesson=BASICS, lesson_step=str(IT))
    code = code_of(t)
    mei = student(code, "Mei")
    mei.button_group(key=f"lq.{IT}.answer").set_value(2).run()
    mei.button(key="lq.check").click().run()
    clock.now += AWAY_S  # Mei answered, then her phone went to sleep
    t.run()
    text = unescaped(t)
    assert answered(t) == "", "no '1 of 0'"
    assert "**1** students have answered; **0** are present now" in text


# --- a student's reload ---------------------------------------------------------------------------


def test_a_reloaded_student_joins_under_the_same_name_and_keeps_their_answers(clock: Clock):
    t = teacher(ATTENTION, lesson=BASICS, lesson_step=str(IT))
    code = code_of(t)
    s = student(code, "Mei")
    assert s.query_params[JOIN_PARAM] == format_code(code), "the address bar keeps the way back"
    s.button_group(key=f"lq.{IT}.answer").set_value(2).run()
    s.button(key="lq.check").click().run()
    assert "Right: the model's value is 'animal'" in unescaped(s)

    again = reload(s, ATTENTION)
    assert seat(again) is None
    assert "reloaded this page while in one" in unescaped(again)
    assert [link.proto.page for link in again.main.get("page_link")] == ["classroom"]
    goto(again, CLASSROOM)
    assert again.text_input(key="room.code").value == format_code(code)  # from the address
    again.text_input(key="room.name").input("mei")
    again.button(key="room.join").click().run()
    assert seat(again) is None, "the old tab polled a moment ago: the name is in use"
    (refused,) = again.error
    assert "is using the name" in refused.value
    assert re.search(r"join again in (1[0-2]|[1-9]) s", refused.value.replace("\\", ""))

    clock.now += AWAY_S  # the old tab is gone: nobody polls for that seat
    again.button(key="room.join").click().run()
    assert_clean(again)
    mine = seat(again)
    assert mine is not None
    assert mine.back
    assert "Welcome back to room" in unescaped(again)
    assert "your answers are kept" in unescaped(again)
    assert again.header[0].value == "Attention: who looks at whom"  # on the teacher's page again
    assert "Right: the model's value is 'animal'" in unescaped(again), "her answer, from the address bar"
    assert room.store().my_answers(code, mine.seat_id) == {f"{BASICS}:{IT + 1}": "animal #2"}
    t.run()
    assert "students present: 1" in badge(t), "one student, on one seat"
    assert answered(t) == "1 of 1"

    # the reloaded tab's old session, should it wake, is told its seat was taken
    old = run_fragment(s, "room.poll")
    assert_clean(old)
    assert seat(old) is None
    assert "Your seat in room" in unescaped(old)
    assert "was taken by a new join as “Mei”" in unescaped(old)
    assert charts(old), "the page goes on without the room"
    assert JOIN_PARAM not in old.query_params


def test_a_student_who_left_comes_back_at_once(clock: Clock):
    t = teacher(ATTENTION)
    s = student(code_of(t), "Mei")
    goto(s, CLASSROOM)
    s.button(key="room.leave").click().run()
    assert "join it again under the same name" in unescaped(s)
    assert "Back after a reload? Type the same name" in unescaped(s)
    s.text_input(key="room.code").input(code_of(t))
    s.text_input(key="room.name").input("Mei")
    s.button(key="room.join").click().run()
    assert_clean(s)
    assert seat(s) is not None
    assert seat(s).back


# --- a teacher's reload ---------------------------------------------------------------------------


def _secrets(t: AppTest) -> tuple[str, str]:
    got = ticket(t)
    assert got is not None
    return got.key, got.token


def test_the_teacher_key_is_on_the_projected_page_only_while_asked_for(clock: Clock):
    t = teacher()
    key, _ = _secrets(t)
    shown = format_key(key)
    assert key.encode() not in page_bytes(t)
    assert shown.encode() not in page_bytes(t), "not even inside the collapsed expander"
    t.toggle(key="room.show_key").set_value(True).run()
    assert [c.value for c in t.code if c.value == shown] == [shown]
    assert "Don't project it" in unescaped(t).replace("*", "")
    t.toggle(key="room.show_key").set_value(False).run()
    assert shown.encode() not in page_bytes(t)
    goto(t, ATTENTION)
    goto(t, CLASSROOM)  # shown once is not shown for good: the toggle starts off again
    assert shown.encode() not in page_bytes(t)


def test_a_reloaded_teacher_takes_the_room_back_with_the_key(clock: Clock, caplog: pytest.LogCaptureFixture):
    for logger in ("", "streamlit", "tformer"):  # every record, Streamlit's own included
        caplog.set_level(logging.DEBUG, logger=logger)
    t = teacher(ATTENTION)
    code = code_of(t)
    key, token = _secrets(t)
    shown = format_key(key)
    s = student(code, "Mei")
    assert t.query_params[JOIN_PARAM] == format_code(code)

    back = reload(t, ATTENTION)  # the teacher's tab is reloaded on a page students follow
    assert ticket(back) is None
    assert charts(back)
    goto(back, CLASSROOM)
    assert back.text_input(key="room.take_code").value == format_code(code)
    wrong = ("2" if key[0] != "2" else "3") + key[1:]
    back.text_input(key="room.key").input(wrong)
    back.button(key="room.take").click().run()
    assert ticket(back) is None
    (refused,) = back.error
    assert "That is not the teacher key of room" in refused.value.replace("\\", "")
    back.text_input(key="room.key").input(f" {shown.lower()} ")
    back.button(key="room.take").click().run()
    assert_clean(back)
    again = ticket(back)
    assert again is not None
    assert (again.code, again.key) == (code, key)
    assert again.token != token
    assert "You drive room" in unescaped(back)
    assert back.session_state["room.key"] == "", "the typed key leaves the session once it worked"
    assert shown.encode() not in page_bytes(back)

    goto(back, "pages/qkv.py")  # the class follows the teacher's new tab
    s.run()
    assert s.header[0].value == "Q, K, V: where the scores come from"
    assert "Following your teacher" in badge(s)
    t.run()  # the old tab, still open somewhere
    assert ticket(t) is None
    assert "was taken back with its teacher key in another tab" in unescaped(t)
    assert charts(t), "the old tab goes on without the room"

    store_view = room.store().view(code)
    for at in (t, back, s):
        address = repr(dict(at.query_params))
        assert key not in address.upper().replace("-", "")
        assert token not in address
        assert again.token not in address
    published = repr(store_view.params).upper().replace("-", "")
    assert key not in published
    logged = caplog.text.upper().replace("-", "")
    assert key not in logged


def test_wrong_teacher_keys_are_limited_and_said(clock: Clock):
    t = teacher(ATTENTION)
    key, _ = _secrets(t)
    back = reload(t, CLASSROOM)
    wrong = ("2" if key[0] != "2" else "3") + key[1:]
    for _ in range(2):  # this store allows 2 wrong keys, then one per 10 s
        back.text_input(key="room.key").input(wrong)
        back.button(key="room.take").click().run()
        assert "not the teacher key" in back.error[0].value
    back.text_input(key="room.key").input(key)
    back.button(key="room.take").click().run()
    assert ticket(back) is None
    assert "Too many wrong teacher keys" in back.error[0].value
    assert re.search(r"wait 10 s", back.error[0].value.replace("\\", ""))
    back.text_input(key="room.key").input("not a key")
    back.button(key="room.take").click().run()
    assert "is not a teacher key" in back.error[0].value.replace("\\", "")
    assert "not a key" not in back.error[0].value.replace("\\", "")
    clock.now += 10
    back.text_input(key="room.key").input(key)
    back.button(key="room.take").click().run()
    assert ticket(back) is not None


# --- 中文 -------------------------------------------------------------------------------------------


def _left(at: AppTest, *extra: str) -> dict[str, str]:
    assert not at.exception, [e.message for e in at.exception]
    words = re.findall(r"[A-Za-z]+", at.text_area(key="text").value) if at.text_area else []
    return english_words(visible_strings(at), [*words, *extra])


@pytest.mark.slow
def test_coming_back_after_a_reload_in_chinese_has_no_english_left(clock: Clock):
    t = teacher(ATTENTION, lang="zh")
    code = code_of(t)
    key, _ = _secrets(t)
    letters = re.findall(r"[A-Za-z]+", format_code(code))  # the join code's letters are a name
    s = student(code, "小红", lang="zh")
    goto(t, CLASSROOM)
    t.toggle(key="room.show_key").set_value(True).run()
    assert "显示密钥" in [w.label for w in t.toggle]
    assert not _left(t, *letters), "the teacher's key panel"

    back = reload(s, ATTENTION)
    assert "刷新了这个页面" in unescaped(back)
    assert not _left(back, *letters), "a reloaded student's pointer to the Live class page"
    goto(back, CLASSROOM)
    back.text_input(key="room.name").input("小红")
    back.button(key="room.join").click().run()
    assert back.error
    assert not _left(back, *letters), "a name in use"
    clock.now += AWAY_S
    back.button(key="room.join").click().run()
    assert "欢迎回到课堂" in unescaped(back)
    assert not _left(back, *letters), "welcome back"
    old = run_fragment(s, "room.poll")
    assert "占用了你的座位" in unescaped(old)
    assert not _left(old, *letters), "the old tab's seat was taken"

    teacher_back = reload(t, CLASSROOM)
    teacher_back.text_input(key="room.key").input("2" * 12 if key != "2" * 12 else "3" * 12)
    teacher_back.button(key="room.take").click().run()
    assert teacher_back.error
    assert not _left(teacher_back, *letters), "a wrong teacher key"
    teacher_back.text_input(key="room.key").input(key)
    teacher_back.button(key="room.take").click().run()
    assert ticket(teacher_back) is not None
    assert "你重新控制了课堂" in unescaped(teacher_back)
    assert not _left(teacher_back, *letters), "the room taken back"
    t.run()
    assert "用教师密钥收回" in unescaped(t)
    assert not _left(t, *letters), "the old teacher tab"
