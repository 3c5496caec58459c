"""Several browserless sessions at once: each gets charts of its own text back, no errors."""

from __future__ import annotations

from .streamlit_driver import AppServer
from .ws_client import StreamlitWsSession, run_load, run_sync, session_words, tokens_in


def test_ws_client_sets_the_text_widget_and_reads_the_chart(app_server: AppServer):

    async def go():
        async with StreamlitWsSession(app_server.ws_url, "attention") as s:
            first = await s.run()
            assert first.status == "ok"
            assert {"text", "source"} <= set(s.widgets)
            words = session_words(0, 0)
            r = await s.run({"text": " ".join(words)})
            return first, r

    first, r = run_sync(go)
    assert first.charts, "the attention page sent no chart"
    assert r.status == "ok"
    assert r.exceptions == []
    assert tokens_in(session_words(0, 0), r.ticktext()) == []


def test_five_sessions_three_edits_each(app_server: AppServer):
    rep = run_load(app_server.ws_url, sessions=5, edits=3, url_path="attention", max_seconds=240)
    assert rep.errors == []
    assert len(rep.edit_latencies_s) == 15


def test_five_students_follow_a_teacher_through_redis(app_server_factory, redis_server):
    """benchmarks/class_load.py's follow mode, small: students join by the link, poll as the
    browser does, and each takes every view the teacher publishes."""
    from tformer.rooms import RedisRoomStore

    from .follow_load import run_follow

    server = app_server_factory(extra_env={"TFORMER_REDIS_URL": redis_server.url})
    store = RedisRoomStore(redis_server.url)
    rep = run_follow(server.ws_url, store, students=5, publishes=2, every_s=3.0, idle_s=2.0, max_seconds=300)
    assert rep.errors == []
    assert rep.joined == 5
    assert rep.last_taken == 5
    assert rep.taken() + rep.skipped == 5 * 2
    assert rep.polls_s, "idle polls: fragment runs alone"
    assert rep.idle_polls >= 5  # about one a second each in the idle window
