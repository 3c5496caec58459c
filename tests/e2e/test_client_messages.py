"""One visitor's hand-made `clear_cache` message, over the app's websocket, leaves every other
session alone: another session's repeated edit is answered from the caches (Streamlit's own
hit/miss counters on /_stcore/metrics show no miss, no model rebuilt), and a training run
started on the Train page stays listed, counted against the limit of runs at once, and
stoppable."""

from __future__ import annotations

import asyncio
import re
import time

from streamlit.proto.BackMsg_pb2 import BackMsg

from .streamlit_driver import FIRST_RUN_TIMEOUT_MS, AppServer
from .ws_client import RunResult, StreamlitWsSession, cache_lookups, run_sync, session_words, tokens_in

TRAIN = "train.task=copy&train.steps=20000&train.stop_at_99=0"  # runs far longer than the test
CACHES = ("tformer.ui.caches.get_model", "tformer.ui.caches._capture")
CAPTURE_HITS = ("tformer.ui.caches._capture", "hit")


def update_of(res: RunResult) -> int:
    """The update the Train page's progress line shows; -1 when it shows none."""
    found = [int(m.group(1)) for t in res.progress for m in [re.search(r"update (\d+)", t)] if m]
    return max(found, default=-1)


def message(kind: str) -> BackMsg:
    msg = BackMsg()
    setattr(msg, kind, True)
    return msg


async def until(session: StreamlitWsSession, done, what: str, timeout: float = 60.0) -> RunResult:
    """Rerun ``session`` until ``done(result)``; the Train page's live part polls the same way."""
    end = time.monotonic() + timeout
    while True:
        res = await session.run(follow_reruns=True)
        assert res.status == "ok", (res.status, res.exceptions)
        assert res.exceptions == [], (res.status, res.exceptions)
        if done(res):
            return res
        assert time.monotonic() < end, f"timed out waiting for {what}: {res.alerts} {res.progress}"
        await asyncio.sleep(0.5)


def test_a_clear_cache_message_leaves_other_sessions_caches_and_training_runs(app_server_factory, tmp_path):
    server = app_server_factory(
        extra_env={"TFORMER_RUNS_DIR": str(tmp_path / "runs"), "TFORMER_MAX_TRAINING": "1"}
    )
    first_s = FIRST_RUN_TIMEOUT_MS / 1000
    words = session_words(28, 0)
    text = " ".join(words)

    async def go() -> None:
        async with (
            StreamlitWsSession(server.ws_url, "attention") as editor,
            StreamlitWsSession(server.ws_url, "train", query=TRAIN) as trainer,
        ):
            assert (await editor.run(timeout=first_s)).status == "ok"
            edit = await editor.run({"text": text})
            assert edit.status == "ok"
            assert tokens_in(words, edit.ticktext()) == []

            await trainer.run(timeout=first_s)
            trainer.press("train.start")
            await trainer.run(follow_reruns=True)
            started = update_of(await until(trainer, lambda r: update_of(r) > 0, "the run's first updates"))

            before = cache_lookups(server.url)
            async with StreamlitWsSession(server.ws_url, "attention") as visitor:
                for kind in ("clear_cache", "load_git_info", "debug_shutdown_runtime"):
                    await visitor.send(message(kind))
                await visitor.heartbeat()  # answered only after those were handled
            repeat = await editor.run({"text": text})  # the same edit again
            after = cache_lookups(server.url)
            for name in CACHES:  # nothing rebuilt: Streamlit counts every miss; clears do not reset it
                misses = before.get((name, "miss")), after.get((name, "miss"))
                assert misses[0] == misses[1], f"{name} missed again after the clear: {misses}"
            hits = before[CAPTURE_HITS], after[CAPTURE_HITS]
            assert hits[1] > hits[0], f"the repeated edit did not read the capture cache: {hits}"
            assert repeat.status == "ok"
            assert repeat.exceptions == []
            assert tokens_in(words, repeat.ticktext()) == []

            listed = await trainer.run(follow_reruns=True)
            assert update_of(listed) >= started > 0, f"the run is no longer listed: {listed.alerts}"
            async with StreamlitWsSession(server.ws_url, "train", query=TRAIN) as other:
                await other.run(timeout=first_s)
                other.press("train.start")
                queued = await other.run(follow_reruns=True)
                # it waits: the running one still counts against the limit of one run at once
                assert any("Waiting: 1 run ahead" in a for a in queued.alerts), (
                    queued.alerts,
                    queued.progress,
                )
                assert update_of(queued) == -1
                trainer.press("train.stop")
                await trainer.run(follow_reruns=True)
                await until(
                    trainer, lambda r: any("saved as" in a for a in r.alerts), "the stopped run's end"
                )
                await until(other, lambda r: update_of(r) > 0, "the queued run to start")
                other.press("train.stop")
                await other.run(follow_reruns=True)

    run_sync(go)
    log = server.log_tail()
    assert "refused a client's clear_cache message" in log, log  # the guard refused it, not chance


def put_upload(http_url: str, session_id: str, data: bytes) -> int:
    """PUT one file to Streamlit's upload address as its frontend would (XSRF cookie and header
    from the server itself); the HTTP status."""
    import http.cookies
    import urllib.error
    import urllib.request

    with urllib.request.urlopen(f"{http_url}/_stcore/health", timeout=30) as resp:
        jar = http.cookies.SimpleCookie("; ".join(resp.headers.get_all("Set-Cookie") or []))
    token = jar["_streamlit_xsrf"].value
    boundary = "tformer-test-boundary"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    req = urllib.request.Request(
        f"{http_url}/_stcore/upload_file/{session_id}/file-1",
        data=body,
        method="PUT",
        headers={
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "X-Xsrftoken": token,
            "Cookie": f"_streamlit_xsrf={token}",
        },
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code


def upload_status(server: AppServer, data: bytes) -> int:
    async def go() -> int:
        async with StreamlitWsSession(server.ws_url, "") as s:
            await s.run(timeout=FIRST_RUN_TIMEOUT_MS / 1000)
            assert s.session_id
            return await asyncio.to_thread(put_upload, server.url, s.session_id, data)

    return run_sync(go)


def test_no_session_can_store_uploads_in_the_servers_memory(app_server, app_server_factory):
    one_mib = b"x" * 2**20
    # server.maxUploadSize = 0: the app has no uploader, and any file is refused. A small one, so
    # the client has sent all of it before the server answers 413 and closes (with 1 MiB still
    # being written, a quick server's close broke the client's pipe before it read the answer).
    assert upload_status(app_server, b"x" * 1024) == 413
    # The same request where uploads are allowed (Streamlit's default): it is well formed, and
    # the file would sit in the server's memory until the session ends.
    default = app_server_factory(extra_args=["--server.maxUploadSize", "200"])
    assert upload_status(default, one_mib) == 204
