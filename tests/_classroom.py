"""A live class under AppTest: a teacher's session and students' sessions in one process, sharing
the process's room store (memory, or Redis with TFORMER_REDIS_URL), each driven the way
Streamlit calls it.

`run_fragment` runs one fragment alone, as the browser's timer asks for it every ``run_every``
seconds: AppTest has no call for that, so the run request it builds is given the fragment's id
(Streamlit's own `RerunData.fragment_id_queue`, with ``is_auto_rerun`` as the timer sets it).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

from streamlit.runtime.scriptrunner_utils.script_requests import RerunData
from streamlit.testing.v1 import AppTest, local_script_runner

from tformer.rooms import Seat, TeacherTicket

from .test_app_pages import open_app

CLASSROOM = "pages/classroom.py"
BASE_URL = "http://class.example:8080/classroom"  # the address the browser reports (st.context.url)


def on_page(at: AppTest) -> AppTest:
    """From now on each run asks for the page the last run finished on, as a browser reruns the
    page it shows. (AppTest asks again for the page of its last ``switch_page``, so a student
    whom the app itself sent to the teacher's page would be sent back by the test.)"""
    at._page_hash = ""
    return at


def goto(at: AppTest, page: str) -> AppTest:
    """The reader opens ``page`` (a sidebar link), then stays on whatever page the app shows."""
    return on_page(at.switch_page(page).run())


def teacher(page: str = CLASSROOM, **params: str) -> AppTest:
    """A teacher's session that opened a room (on the Live class page), then moved to ``page``."""
    at = open_app(CLASSROOM, **params)
    at.context = {"url": BASE_URL}
    at.button(key="room.open").click().run()
    assert ticket(at) is not None, [e.value for e in at.info]
    if page != CLASSROOM:
        at.switch_page(page).run()
    return at


def ticket(at: AppTest) -> TeacherTicket | None:
    t = at.session_state.get("room.ticket", None)
    return t if isinstance(t, TeacherTicket) else None


def seat(at: AppTest) -> Seat | None:
    s = at.session_state.get("room.seat", None)
    return s if isinstance(s, Seat) else None


def code_of(at: AppTest) -> str:
    t = ticket(at)
    assert t is not None
    return t.code


def student(code: str, name: str = "Mei", **params: str) -> AppTest:
    """A student's session that opened the join link (``?room=CODE``) and joined as ``name``."""
    at = on_page(open_app(CLASSROOM, room=code, **params))
    at.text_input(key="room.name").input(name)
    at.button(key="room.join").click().run()
    return at


def run_fragment(at: AppTest, key: str) -> AppTest:
    """Run the fragment ``key`` alone, as its ``run_every`` timer does in a browser."""
    ids = at._fragment_storage.resolve_target(key)
    assert ids, f"no fragment {key!r} in the last run"
    original = local_script_runner.RerunData
    local_script_runner.RerunData = functools.partial(  # type: ignore[misc]
        RerunData, fragment_id_queue=list(ids), is_auto_rerun=True
    )
    try:
        return at.run()
    finally:
        local_script_runner.RerunData = original  # type: ignore[misc]


def _walk(node: Any) -> Iterator[Any]:
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _walk(child)


def page_bytes(at: AppTest) -> bytes:
    """Every element the last run sent, serialized, and the address's query string."""
    parts = [n.proto.SerializeToString() for n in _walk(at._tree) if getattr(n, "proto", None) is not None]
    parts.append(repr(dict(at.query_params)).encode())
    return b"\n".join(parts)


def unescaped(at: AppTest) -> str:
    """Every markdown, caption and alert, markdown escapes removed."""
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [a.value for kind in ("info", "warning", "success", "error") for a in getattr(at, kind)]
    return " ".join(parts).replace("\\", "")


def badge(at: AppTest) -> str:
    """The room bar's first line."""
    return next((m.value for m in at.markdown if "room " in m.value.lower() or "课堂 " in m.value), "")
