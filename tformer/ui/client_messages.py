"""What a browser's messages may do to the server: each Streamlit `BackMsg` type, what it can do
to other sessions, and a guard that drops the ones that reach past their sender.

Any client on the websocket can send any `BackMsg`, not only what Streamlit's frontend offers
(its "Clear cache" command is hidden here, `client.toolbarMode = "minimal"`, but a student
with the developer tools can send the message by hand). Streamlit 1.67 obeys ``clear_cache``
for everyone: it empties ``st.cache_data`` and ``st.cache_resource`` of the whole process, so
one visitor could make every session rebuild its model and captures again and again. The
guard wraps `AppSession.handle_backmsg` (the one place where the server dispatches a
session's messages) and drops the refused types before Streamlit sees them.

The sender of a refused message gets nothing (no reply, no change): Streamlit's own frontend
never sends these with this app's settings, and a visitor who wants a fresh start reloads the
page, which opens a new session. There is no client-side way to clear the caches; an operator
who wants them empty restarts the server (they live in its memory only).

``debug_disconnect_websocket`` and ``debug_shutdown_runtime`` never reach `handle_backmsg`:
Streamlit's websocket endpoint obeys them only under ``global.developmentMode`` or
``global.e2eTest``, which .streamlit/config.toml pins off; `install` logs an error if either
is on anyway.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("tformer.app")

__all__ = ["BACKEND_OPERATIONS", "MESSAGES", "Decision", "install", "installed", "refusal", "uninstall"]


@dataclass(frozen=True)
class Decision:
    allowed: bool
    effect: str  # what the message can do to other sessions (the README's table says the same)


# Every type of the BackMsg "type" oneof in Streamlit 1.67 (a test holds this list to the proto).
MESSAGES: dict[str, Decision] = {
    "rerun_script": Decision(True, "runs the sender's page script: only its own session's run"),
    "stop_script": Decision(True, "stops the sender's own script run"),
    "app_heartbeat": Decision(True, "answered with an acknowledgement to the sender"),
    "set_run_on_save": Decision(True, "sets the sender's own flag; the server watches no files"),
    "backend_operation_request": Decision(True, "depends on its payload: see BACKEND_OPERATIONS"),
    "clear_cache": Decision(
        False, "empties st.cache_data and st.cache_resource for every session (models, captures)"
    ),
    "load_git_info": Decision(
        False,
        "runs git on the server, on the event loop every session waits on, and sends the sender "
        "the repository, branch and names of uncommitted files",
    ),
    "file_urls_request": Decision(False, "hands out upload addresses for a file uploader; the app has none"),
    "debug_disconnect_websocket": Decision(
        False, "closes the sender's websocket; obeyed only in development mode (pinned off)"
    ),
    "debug_shutdown_runtime": Decision(
        False, "stops the server for everyone; obeyed only in development mode (pinned off)"
    ),
}

# Every payload of BackendOperationRequest in Streamlit 1.67.
BACKEND_OPERATIONS: dict[str, Decision] = {
    "deferred_file": Decision(
        True, "builds a download its own page offered (a random id per button): one image, as a click does"
    ),
    "dataframe_chunk": Decision(
        True, "sends rows of a table its own page showed (Streamlit checks the session)"
    ),
    "install_skills": Decision(
        False,
        "writes Streamlit's agent skills into the app's folder (Streamlit allows it off headless mode "
        "from loopback, which is every visitor behind a proxy on the same machine)",
    ),
    "dismiss_skills_nudge": Decision(False, "writes a marker file into the server's config folder"),
}


def refusal(msg: Any) -> str | None:
    """The name of what ``msg`` (a `BackMsg`) asks for if the guard drops it, else None."""
    kind = msg.WhichOneof("type")
    if kind is None:
        return None
    decision = MESSAGES.get(kind)
    if decision is not None and not decision.allowed:
        return str(kind)
    if kind == "backend_operation_request":
        payload = msg.backend_operation_request.WhichOneof("payload")
        op = BACKEND_OPERATIONS.get(payload) if payload is not None else None
        if op is not None and not op.allowed:
            return f"backend_operation_request.{payload}"
    return None


_lock = threading.Lock()
_logged: set[str] = set()  # the refused kinds logged as a warning so far
_MARK = "_tformer_guard_original"  # on the wrapper: the handler it wraps


def _effect(what: str) -> str:
    kind, _, payload = what.partition(".")
    decision = BACKEND_OPERATIONS[payload] if payload else MESSAGES[kind]
    return decision.effect


def _log_refusal(what: str, session_id: str) -> None:
    """One warning per kind and process (a client repeating it cannot flood the log), then
    debug lines."""
    with _lock:
        first = what not in _logged
        _logged.add(what)
    level = logging.WARNING if first else logging.DEBUG
    log.log(level, "refused a client's %s message (session %s): it %s", what, session_id, _effect(what))


def _guarded(original: Callable[[Any, Any], None]) -> Callable[[Any, Any], None]:
    def handle_backmsg(self: Any, msg: Any) -> None:
        what = refusal(msg)
        if what is not None:
            _log_refusal(what, str(getattr(self, "id", "?")))
            return
        original(self, msg)

    handle_backmsg.__doc__ = original.__doc__
    setattr(handle_backmsg, _MARK, original)
    return handle_backmsg


def installed() -> bool:
    from streamlit.runtime.app_session import AppSession

    return hasattr(AppSession.handle_backmsg, _MARK)


def install() -> bool:
    """Put the guard in front of every session's messages, once per process (later calls do
    nothing). True when this call installed it. Raises RuntimeError if Streamlit no longer
    dispatches through `AppSession.handle_backmsg`: the app must not run unguarded."""
    from streamlit import config
    from streamlit.runtime.app_session import AppSession

    with _lock:
        current = getattr(AppSession, "handle_backmsg", None)
        if not callable(current):
            raise RuntimeError("streamlit's AppSession.handle_backmsg is gone: the client guard cannot run")
        if hasattr(current, _MARK):
            return False
        setattr(AppSession, "handle_backmsg", _guarded(current))  # noqa: B010 (an assignment would need two mypy ignores)
    for option in ("global.developmentMode", "global.e2eTest"):
        if config.get_option(option):
            log.error("%s is on: any client can shut this server down (debug_shutdown_runtime)", option)
    return True


def uninstall() -> bool:
    """Take the guard away again (for tests that show what it prevents). True if it was on."""
    from streamlit.runtime.app_session import AppSession

    with _lock:
        original = getattr(AppSession.handle_backmsg, _MARK, None)
        if original is None:
            return False
        setattr(AppSession, "handle_backmsg", original)  # noqa: B010
        return True
