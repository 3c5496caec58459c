"""The Live class through Redis: the same teacher and students as tests/test_app_classroom.py, with
``TFORMER_REDIS_URL`` pointing at a real redis-server, so every poll, publish, answer, tally and
reveal goes through the Redis store's scripts (the store an nginx deployment's replicas share)."""

from __future__ import annotations

import csv
import io

import pytest

pytest.importorskip("streamlit")

from streamlit.runtime.media_file_manager import MediaFileManager

from tformer.rooms import RedisRoomStore, forget_room_stores
from tformer.ui import room

from ._classroom import CLASSROOM, badge, code_of, goto, run_fragment, seat, student, teacher, unescaped
from .redis_server import RedisServer
from .test_app_lesson_questions import BASICS, IT
from .test_app_pages import assert_clean


@pytest.fixture
def redis_rooms(redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch) -> RedisServer:
    monkeypatch.setenv("TFORMER_REDIS_URL", redis_server.url)
    forget_room_stores()
    return redis_server


@pytest.mark.slow
def test_a_class_through_redis_follows_answers_and_sees_the_reveal(redis_rooms, monkeypatch):
    made: list = []
    real = MediaFileManager.add_deferred

    def keep(self, data, *args, **kwargs):
        made.append(data)
        return real(self, data, *args, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add_deferred", keep)
    t = teacher("pages/attention.py", lesson=BASICS, lesson_step=str(IT))
    assert isinstance(room.store(), RedisRoomStore)
    code = code_of(t)
    keys = sorted(redis_rooms.client().scan_iter(f"tformer:room:{code}:*"))
    assert keys, "the room lives in Redis"
    s = student(code, "Mei")
    assert_clean(s)
    assert seat(s) is not None
    assert "Following your teacher" in badge(s)
    assert s.query_params.get("lesson_step") == str(IT)
    s.button_group(key=f"lq.{IT}.answer").set_value(2).run()
    s.button(key="lq.check").click().run()
    t.run()
    assert "**1 of 1** students present have answered" in unescaped(t)
    t.button(key="room.reveal").click().run()
    assert run_fragment(s, "room.poll").header, "the reveal reruns the student's page"
    t.selectbox(key="head").set_value(4).run()  # the teacher moves on: the poll takes it
    moved = run_fragment(s, "room.poll")
    assert moved.selectbox(key="head").value == 4
    goto(t, CLASSROOM)
    body = made[-1]().decode("utf-8-sig")
    (row,) = list(csv.reader(io.StringIO(body)))[1:]
    assert row[:4] == ["Mei", f"{BASICS}:{IT + 1}", "animal #2", "yes"]
    t.button(key="room.close").click().run()
    assert not redis_rooms.client().exists(f"tformer:room:{code}:meta")
    s.run()
    assert seat(s) is None
    assert "was closed by its teacher" in unescaped(s)
