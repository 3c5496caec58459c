"""No client message and no cache clear reaches what every session shares: the guard's table
covers every BackMsg type Streamlit has, a refused message changes nothing, and a running
training run stays listed, stoppable and counted against the limits after any cache clear."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import streamlit as st
from streamlit.proto.BackMsg_pb2 import BackendOperationRequest, BackMsg
from streamlit.runtime.app_session import AppSession

from tformer.training.runs import RunHandle
from tformer.ui import client_messages, singletons
from tformer.ui.client_messages import BACKEND_OPERATIONS, MESSAGES, refusal


@pytest.fixture
def guard():
    """The guard on for this test, and taken off again if this test installed it."""
    was_on = client_messages.installed()
    client_messages.install()
    yield
    if not was_on:
        client_messages.uninstall()


def oneof_names(descriptor: Any, oneof: str) -> set[str]:
    return {f.name for f in descriptor.oneofs_by_name[oneof].fields}


def message_of(kind: str, payload: str | None = None) -> BackMsg:
    msg = BackMsg()
    field = msg.DESCRIPTOR.fields_by_name[kind]
    if field.message_type is None:
        setattr(msg, kind, True)
    else:
        getattr(msg, kind).SetInParent()
    if payload is not None:
        getattr(msg.backend_operation_request, payload).SetInParent()
    return msg


def test_every_backmsg_type_and_backend_payload_has_a_decision():
    # A Streamlit upgrade that adds a message type fails here until someone decides on it.
    assert set(MESSAGES) == oneof_names(BackMsg.DESCRIPTOR, "type")
    assert set(BACKEND_OPERATIONS) == oneof_names(BackendOperationRequest.DESCRIPTOR, "payload")


@pytest.mark.parametrize("kind", sorted(MESSAGES))
def test_refusal_follows_the_table(kind):
    msg = message_of(kind)
    assert msg.WhichOneof("type") == kind
    assert refusal(msg) == (None if MESSAGES[kind].allowed else kind)


@pytest.mark.parametrize("payload", sorted(BACKEND_OPERATIONS))
def test_backend_operations_are_refused_by_payload(payload):
    msg = message_of("backend_operation_request", payload)
    expected = None if BACKEND_OPERATIONS[payload].allowed else f"backend_operation_request.{payload}"
    assert refusal(msg) == expected


def test_the_cache_clear_and_anything_writing_files_are_refused():
    refused = {k for k, d in MESSAGES.items() if not d.allowed}
    assert {"clear_cache", "load_git_info", "debug_shutdown_runtime"} <= refused
    assert {"rerun_script", "stop_script", "app_heartbeat"}.isdisjoint(refused)
    assert not BACKEND_OPERATIONS["install_skills"].allowed
    assert refusal(BackMsg()) is None  # an empty message: Streamlit logs "no handler" itself


def test_install_wraps_the_dispatcher_once():
    was_on = client_messages.installed()
    client_messages.uninstall()
    plain = AppSession.handle_backmsg
    try:
        assert client_messages.install() is True
        wrapped = AppSession.handle_backmsg
        assert wrapped is not plain
        assert client_messages.installed()
        assert client_messages.install() is False  # every page calls it: later calls change nothing
        assert AppSession.handle_backmsg is wrapped
        assert client_messages.uninstall()
        assert AppSession.handle_backmsg is plain
    finally:
        if was_on:
            client_messages.install()


class FakeSession:
    """What Streamlit's real handlers touch on an AppSession, recorded: its clear_cache handler
    is Streamlit's own, so the test shows what the message does without the guard."""

    _handle_clear_cache_request = AppSession._handle_clear_cache_request

    def __init__(self) -> None:
        self.id = "fake-session"
        self.reruns = 0
        self.state_cleared = 0
        session = self

        class State:
            def clear(self) -> None:
                session.state_cleared += 1

        self._session_state = State()

    def _handle_rerun_script_request(self, client_state: Any = None) -> None:
        self.reruns += 1

    def handle_backmsg_exception(self, e: BaseException) -> None:
        raise e


def send(session: FakeSession, msg: BackMsg) -> None:
    AppSession.handle_backmsg(session, msg)  # type: ignore[arg-type]


calls: list[str] = []


@st.cache_data(show_spinner=False)
def cached_square(x: int) -> int:
    calls.append(f"square {x}")
    return x * x


def test_a_clear_cache_message_changes_nothing_and_other_messages_still_pass(guard):
    calls.clear()
    session = FakeSession()
    assert cached_square(3) == 9
    assert calls == ["square 3"]
    send(session, message_of("clear_cache"))
    assert cached_square(3) == 9, "the message cleared the shared cache"
    assert calls == ["square 3"], "the message cleared the shared cache"
    assert session.state_cleared == 0  # the sender gets nothing either: it may reload its page
    send(session, message_of("rerun_script"))
    assert session.reruns == 1  # allowed types still reach Streamlit


def test_without_the_guard_the_message_clears_every_sessions_cache():
    # What the guard prevents (Streamlit 1.67's own handler): if this starts failing, Streamlit
    # changed its handling and the README's note on client messages needs another look.
    was_on = client_messages.uninstall()
    try:
        calls.clear()
        cached_square(4)
        send(FakeSession(), message_of("clear_cache"))
        cached_square(4)
        assert calls == ["square 4", "square 4"]
    finally:
        if was_on:
            client_messages.install()


def wait_for(condition, timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


@pytest.fixture
def one_run_at_a_time(monkeypatch):
    monkeypatch.setenv("TFORMER_MAX_TRAINING", "1")  # before runs_dir makes the manager


def test_a_running_run_survives_every_cache_clear(guard, one_run_at_a_time, runs_dir):
    from tformer.ui.views.train.jobs import manager

    started = threading.Event()

    def job(handle: RunHandle) -> None:
        started.set()
        while not handle.should_stop():
            time.sleep(0.01)

    runs = manager()
    assert runs.max_running == 1
    first = runs.submit("first", job, owner="session-a")
    assert started.wait(5.0)
    assert first.state == "running"

    send(FakeSession(), message_of("clear_cache"))  # a visitor's message, through the guard
    st.cache_data.clear()  # and every cache emptied from the server itself
    st.cache_resource.clear()

    assert manager() is runs, "a cache clear replaced the training manager"
    assert manager().get(first.id) is first
    assert first in manager().runs()  # still listed
    assert first.state == "running"
    assert manager().active_count() == 1
    second = manager().submit("second", job, owner="session-b")
    assert second.state == "queued"
    assert second.queue_position() == 1  # the limit still counts it
    first.stop()  # still stoppable from the manager every page asks
    assert first.wait(5.0)
    assert first.state == "stopped"
    assert wait_for(lambda: second.state == "running")
    second.stop()
    assert second.wait(5.0)


def test_singletons_are_made_once_even_when_asked_at_once():
    made: list[object] = []
    gate = threading.Barrier(8)
    got: list[object] = []

    def make() -> object:
        made.append(object())
        time.sleep(0.01)  # widen the window two makers would need
        return made[-1]

    def ask() -> None:
        gate.wait()
        got.append(singletons.shared("test.once", make))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1
    assert all(g is made[0] for g in got)
    st.cache_resource.clear()
    assert singletons.shared("test.once", object) is made[0]
    assert singletons.reset("test.once") == {"test.once": made[0]}
    assert "test.once" not in singletons.names()


ROOT = Path(__file__).resolve().parent.parent


def readme_table() -> dict[str, str]:
    """Message (or backend payload) -> "allowed" / "refused", from the README's operator note."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("**What a visitor's browser can ask of the server.**", 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    out: dict[str, str] = {}
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        for name in re.findall(r"`([a-z_]+)`", cells[0]):
            out[name] = cells[-1]
    return out


def test_the_readme_lists_every_message_with_what_the_guard_does():
    table = readme_table()
    for name, decision in {**MESSAGES, **BACKEND_OPERATIONS}.items():
        if name == "backend_operation_request":
            continue  # its rows are by payload
        assert table.get(name) == ("allowed" if decision.allowed else "refused"), name


def test_no_page_asks_for_uploads():
    # file_urls_request is refused and server.maxUploadSize is 0: a page that adds an uploader
    # must change both (tformer.ui.client_messages, .streamlit/config.toml).
    sources = [*ROOT.joinpath("tformer").rglob("*.py"), *ROOT.joinpath("pages").glob("*.py"), ROOT / "app.py"]
    for path in sources:
        text = path.read_text(encoding="utf-8")
        for widget in ("file_uploader(", "camera_input(", "audio_input(", "accept_file="):
            assert widget not in text, f"{path.relative_to(ROOT)} uses {widget}"
    config = (ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8")
    assert re.search(r"^maxUploadSize = 0$", config, re.M)
    assert re.search(r"^developmentMode = false$", config, re.M)
