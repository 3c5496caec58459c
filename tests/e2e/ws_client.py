"""A browserless Streamlit client: speaks the app's websocket protocol directly.

Protocol (streamlit 1.67, measured): connect to ws://HOST:PORT/_stcore/stream with subprotocol
"streamlit"; every frame is one binary protobuf. The client sends a `BackMsg` whose
`rerun_script` is a `ClientState` (page, widget states); the server answers with
`ForwardMsg`s: new_session, deltas (one element each), navigation, ... and `script_finished`.

Setting a widget: a `WidgetState` needs the widget's id, which the client cannot compute
(a hash of the element's arguments). It is learned from the first run's deltas: a widget made
with `key="text"` has an id ending in "-text" (`$$ID-<md5>-text`). Like the browser, the
client then sends every widget value it has set on every later rerun.

A button is pressed for one run only (`press`: a trigger value, as the browser sends it), and
`send` puts any other `BackMsg` on the wire, as a hand-made client could (`heartbeat` then
tells when the server has handled everything sent before it: one websocket is read in order).

By default no cached-message hashes are sent, so the server always sends whole messages (never
`ref_hash`). With `remember_messages=True` the session, like the browser, keeps the hashes of the
cacheable messages it received and sends them with every rerun: an unchanged large element then
comes back as a reference.
Uses `websockets`, which streamlit itself depends on: no new dependency.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import re
import time
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.NumberInput_pb2 import NumberInput
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import ClientConnection, connect

T = TypeVar("T")

FINISHED = {
    ForwardMsg.FINISHED_SUCCESSFULLY: "ok",
    ForwardMsg.FINISHED_WITH_COMPILE_ERROR: "compile_error",
    ForwardMsg.FINISHED_EARLY_FOR_RERUN: "interrupted",
    ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY: "fragment_ok",
}


@dataclass
class Widget:
    key: str
    id: str
    kind: str  # the Element oneof name: text_area, selectbox, number_input, slider, ...
    proto: Any


@dataclass
class RunResult:
    status: str  # "ok", "compile_error", "interrupted", "fragment_ok"
    elapsed_s: float  # BackMsg sent -> script_finished received
    bytes_received: int
    n_messages: int
    charts: list[dict[str, Any]] = field(default_factory=list)  # parsed plotly specs
    exceptions: list[str] = field(default_factory=list)  # "Type: message"
    alerts: list[str] = field(default_factory=list)  # st.error/warning/info bodies
    markdown: list[str] = field(default_factory=list)
    progress: list[str] = field(default_factory=list)  # st.progress texts
    timers: dict[str, float] = field(default_factory=dict)  # fragment id -> run_every seconds

    def ticktext(self) -> list[str]:
        """Every ticktext label of every axis of every chart (layout.xaxis*, yaxis*)."""
        out: list[str] = []
        for spec in self.charts:
            for name, axis in spec.get("layout", {}).items():
                if re.match(r"^[xy]axis\d*$", name) and isinstance(axis, dict):
                    out.extend(str(t) for t in axis.get("ticktext") or [])
        return out


class StreamlitWsSession:
    """One app session over one websocket. Use as `async with StreamlitWsSession(url) as s:`.

    ws_url: ws://127.0.0.1:PORT/_stcore/stream. url_path: the page ("" = default page).
    headers: sent with the websocket handshake (a cookie that pins the session to a replica).
    """

    def __init__(
        self,
        ws_url: str,
        url_path: str = "",
        open_timeout: float = 30.0,
        query: str = "",
        headers: dict[str, str] | None = None,
        *,
        remember_messages: bool = False,
    ) -> None:
        self.ws_url = ws_url
        self.url_path = url_path.strip("/")
        self.query = query  # the address's query string (a share link), sent with every run
        self.open_timeout = open_timeout
        self.headers = headers or {}  # e.g. a balancer's affinity cookie
        self.ws: ClientConnection | None = None
        self.widgets: dict[str, Widget] = {}
        self.page_script_hash = ""
        self.pages: dict[str, str] = {}  # url_pathname -> page_script_hash
        self.session_id = ""  # the server's id for this session, from its first run
        self._states: dict[str, WidgetState] = {}
        self._triggers: dict[str, WidgetState] = {}  # buttons pressed for the next run only
        self.runs = 0
        # the fragments the page runs on a timer (st.fragment(run_every=...)): id -> seconds, as
        # the last full run announced them; `run_fragment` asks for one as the browser's timer does
        self.timers: dict[str, float] = {}
        # hashes of cacheable messages received, sent back as the browser does (None: not kept)
        self.cached_hashes: set[str] | None = set() if remember_messages else None

    async def __aenter__(self) -> StreamlitWsSession:
        self.ws = await connect(
            self.ws_url,
            subprotocols=["streamlit"],  # type: ignore[list-item]
            max_size=None,  # a chart can be megabytes
            open_timeout=self.open_timeout,
            ping_interval=None,  # the server is busy running scripts; don't time it out
            additional_headers=self.headers or None,
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.ws is not None:
            await self.ws.close()
            self.ws = None

    def set(self, key: str, value: Any) -> None:
        """Queue a widget value for the next `run()`; the widget must have been seen."""
        if key not in self.widgets:
            raise KeyError(f"no widget with key {key!r} seen yet; keys: {sorted(self.widgets)}")
        w = self.widgets[key]
        st = WidgetState(id=w.id)
        if w.kind in ("text_area", "text_input", "selectbox", "radio", "color_picker"):
            st.string_value = str(value)
        elif w.kind == "number_input":
            if w.proto.data_type == NumberInput.INT:
                st.int_value = int(value)
            else:
                st.double_value = float(value)
        elif w.kind == "checkbox":
            st.bool_value = bool(value)
        elif w.kind == "slider":
            vals = value if isinstance(value, (list, tuple)) else [value]
            st.double_array_value.data.extend(float(v) for v in vals)
        elif w.kind in ("multiselect", "select_slider"):
            vals = value if isinstance(value, (list, tuple)) else [value]
            st.string_array_value.data.extend(str(v) for v in vals)
        else:
            raise ValueError(f"setting a {w.kind} widget is not supported ({key!r})")
        self._states[w.id] = st

    def press(self, key: str) -> None:
        """Press the button ``key`` in the next `run()` only."""
        if key not in self.widgets or self.widgets[key].kind != "button":
            raise KeyError(f"no button with key {key!r} seen yet; keys: {sorted(self.widgets)}")
        w = self.widgets[key]
        self._triggers[w.id] = WidgetState(id=w.id, trigger_value=True)

    async def run(
        self, updates: dict[str, Any] | None = None, timeout: float = 120.0, *, follow_reruns: bool = False
    ) -> RunResult:
        """Set widgets (by key), request a rerun, read until script_finished. With
        ``follow_reruns``, a run the page itself restarted (st.rerun) is followed to the end of
        the last one."""
        for k, v in (updates or {}).items():
            self.set(k, v)
        return await self._request(timeout, follow_reruns=follow_reruns)

    async def run_fragment(self, fragment_id: str, timeout: float = 120.0) -> RunResult:
        """Ask for one run of the fragment ``fragment_id`` as the browser's timer does (a run of
        that fragment alone, ``is_auto_rerun``); a full run the fragment asks for (st.rerun) is
        followed to its end."""
        return await self._request(timeout, follow_reruns=True, fragment_id=fragment_id)

    async def _request(self, timeout: float, *, follow_reruns: bool, fragment_id: str = "") -> RunResult:
        assert self.ws is not None, "use `async with`"
        msg = BackMsg()
        cs = msg.rerun_script
        if self.page_script_hash:
            cs.page_script_hash = self.page_script_hash
        else:
            cs.page_name = self.url_path
        cs.query_string = self.query
        cs.widget_states.SetInParent()
        cs.widget_states.widgets.extend([*self._states.values(), *self._triggers.values()])
        if fragment_id:
            cs.fragment_id = fragment_id
            cs.is_auto_rerun = True
        if self.cached_hashes:
            cs.cached_message_hashes.extend(sorted(self.cached_hashes))
        self._triggers.clear()
        t0 = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        res = await asyncio.wait_for(self._read_run(t0), timeout)
        while follow_reruns and res.status == "interrupted":
            res = await asyncio.wait_for(self._read_run(t0), timeout)
        if res.status == "ok":  # a full run: its fragments' timers are the page's now
            self.timers = dict(res.timers)
        self.runs += 1
        return res

    async def send(self, msg: BackMsg) -> None:
        """Send any `BackMsg` as it is."""
        assert self.ws is not None, "use `async with`"
        await self.ws.send(msg.SerializeToString())

    async def heartbeat(self, timeout: float = 30.0) -> None:
        """Send an app heartbeat and wait for its acknowledgement: by then the server has handled
        every message this session sent before it."""
        assert self.ws is not None, "use `async with`"
        msg = BackMsg()
        msg.app_heartbeat = True
        await self.send(msg)

        async def acked() -> None:
            assert self.ws is not None
            while True:
                fm = ForwardMsg()
                raw = await self.ws.recv()
                if isinstance(raw, bytes):
                    fm.ParseFromString(raw)
                    if fm.WhichOneof("type") == "heartbeat_ack":
                        return

        await asyncio.wait_for(acked(), timeout)

    async def _read_run(self, t0: float) -> RunResult:
        assert self.ws is not None
        res = RunResult(status="", elapsed_s=0.0, bytes_received=0, n_messages=0)
        started = False
        while True:
            raw = await self.ws.recv()
            if isinstance(raw, str):
                raise ValueError("text frame from the server: Streamlit sends binary protobufs")
            fm = ForwardMsg()
            fm.ParseFromString(raw)
            kind = fm.WhichOneof("type")
            res.bytes_received += len(raw)
            res.n_messages += 1
            if self.cached_hashes is not None and fm.metadata.cacheable and fm.hash:
                self.cached_hashes.add(fm.hash)
            if kind == "new_session":
                started = True
                if fm.new_session.initialize.session_id:
                    self.session_id = fm.new_session.initialize.session_id
                if fm.new_session.page_script_hash:
                    self.page_script_hash = fm.new_session.page_script_hash
            elif kind == "navigation":
                self.page_script_hash = fm.navigation.page_script_hash
                self.pages = {p.url_pathname: p.page_script_hash for p in fm.navigation.app_pages}
            elif kind == "delta":
                self._delta(fm, res)
            elif kind == "auto_rerun":
                res.timers[fm.auto_rerun.fragment_id] = fm.auto_rerun.interval
            elif kind == "stop_auto_rerun":
                for fid in fm.stop_auto_rerun.fragment_ids:
                    self.timers.pop(fid, None)
            elif kind == "script_finished" and started:
                res.status = FINISHED.get(fm.script_finished, str(fm.script_finished))
                res.elapsed_s = time.perf_counter() - t0
                return res

    def _delta(self, fm: ForwardMsg, res: RunResult) -> None:
        d = fm.delta
        if d.WhichOneof("type") != "new_element":
            return
        el = d.new_element
        kind = el.WhichOneof("type")
        if kind is None:
            return
        body = getattr(el, kind)
        if kind == "plotly_chart":
            res.charts.append(json.loads(body.spec))
        elif kind == "exception":
            res.exceptions.append(f"{body.type}: {body.message}")
        elif kind == "alert":
            res.alerts.append(body.body)
        elif kind == "markdown":
            res.markdown.append(body.body)
        elif kind == "progress":
            res.progress.append(body.text)
        wid = getattr(body, "id", "")
        if isinstance(wid, str) and wid.startswith("$$ID-") and wid.count("-") >= 2:
            key = wid.split("-", 2)[2]  # $$ID-<md5>-<user key>
            self.widgets[key] = Widget(key=key, id=wid, kind=kind, proto=body)


def run_sync(make_coro: Callable[[], Awaitable[T]]) -> T:
    """asyncio.run(make_coro()), in a worker thread when this thread already runs a loop
    (Playwright's sync API keeps one running in the main thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make_coro())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as ex:
        return ex.submit(lambda: asyncio.run(make_coro())).result()


_LOOKUP = re.compile(r"^cache_lookups_total\{(?P<labels>[^}]*)\} (?P<n>\d+)$", re.M)


def cache_lookups(http_url: str, timeout: float = 30.0) -> dict[tuple[str, str], int]:
    """(cached function, "hit" or "miss") -> lookups since the server started, from Streamlit's
    own /_stcore/metrics counters (they survive cache clears: only a restart resets them)."""
    url = f"{http_url}/_stcore/metrics?families=cache_lookups"
    with urllib.request.urlopen(url, timeout=timeout) as resp:  # loopback test server only
        text = resp.read().decode("utf-8")
    out: dict[tuple[str, str], int] = {}
    for m in _LOOKUP.finditer(text):
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group("labels")))
        out[labels["cache"], labels["result"]] = int(m.group("n"))
    return out


def tokens_in(words: list[str], labels: list[str]) -> list[str]:
    """The words (case-insensitive) missing from the labels; [] when all came back."""
    have = {str(t).lower().lstrip("#") for t in labels}
    return [w for w in words if w.lower() not in have]


# --------------------------------------------------------------------------------------------
# Load: N concurrent sessions, each editing its own text E times
# --------------------------------------------------------------------------------------------

# Each is one MiniLM token (checked against its vocabulary), so a word's presence among the
# chart's tick labels proves the session got a chart of its own text back.
WORDS = (
    "apple river music garden window yellow silver planet forest ocean winter summer doctor "
    "teacher market bridge castle dragon rocket island letter morning evening mountain village "
    "coffee pencil school camera guitar orange purple thunder shadow candle basket"
).split()
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
MAX_SESSIONS = 100
MAX_EDITS = 50


def session_words(session: int, edit: int, n_words: int = 6) -> list[str]:
    """Distinct, deterministic words for one edit of one session."""
    import random

    return random.Random(session * 1009 + edit).sample(WORDS, n_words)


@dataclass
class LoadReport:
    sessions: int
    edits: int
    edit_latencies_s: list[float] = field(default_factory=list)
    first_run_s: list[float] = field(default_factory=list)
    edit_bytes: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    @staticmethod
    def _pct(xs: list[float], q: float) -> float:
        if not xs:
            return float("nan")
        s = sorted(xs)
        # nearest-rank percentile: no interpolation past the largest observation
        return s[min(len(s) - 1, max(0, int(-(-q * len(s) // 100)) - 1))]

    def p50(self) -> float:
        return self._pct(self.edit_latencies_s, 50)

    def p95(self) -> float:
        return self._pct(self.edit_latencies_s, 95)


async def _load_session(
    idx: int, ws_url: str, url_path: str, edits: int, key: str, rep: LoadReport, deadline: float
) -> None:
    def left() -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("load run exceeded its time bound")
        return remaining

    async with StreamlitWsSession(ws_url, url_path) as s:
        first = await s.run(timeout=left())
        rep.first_run_s.append(first.elapsed_s)
        if first.exceptions:
            rep.errors.append(f"session {idx} first run: {first.exceptions[0]}")
        if key not in s.widgets:
            raise KeyError(f"session {idx}: no widget with key {key!r}; saw {sorted(s.widgets)}")
        for e in range(edits):
            words = session_words(idx, e)
            r = await s.run({key: " ".join(words)}, timeout=left())
            problem = ""
            if r.status != "ok":
                problem = f"script finished with status {r.status}"
            elif r.exceptions:
                problem = f"exception in app: {r.exceptions[0]}"
            elif not r.charts:
                problem = "no chart in the rerun"
            else:
                missing = tokens_in(words, r.ticktext())
                if missing:
                    problem = f"its words {missing} are missing from the chart ticktext"
            if problem:
                rep.errors.append(f"session {idx} edit {e}: {problem}")
            rep.edit_latencies_s.append(r.elapsed_s)
            rep.edit_bytes.append(r.bytes_received)


def check_bounds(ws_url: str, sessions: int, edits: int) -> None:
    """A load run's bounds: a loopback server, at most MAX_SESSIONS sessions and MAX_EDITS edits
    (or views published) each. ValueError otherwise."""
    host = re.sub(r"^wss?://", "", ws_url).rsplit(":", 1)[0]
    if host not in LOOPBACK:
        raise ValueError(f"load runs only against a loopback server, not {host!r}")
    if not (1 <= sessions <= MAX_SESSIONS and 1 <= edits <= MAX_EDITS):
        raise ValueError(f"sessions in 1..{MAX_SESSIONS} and edits in 1..{MAX_EDITS}")


def run_load(
    ws_url: str,
    sessions: int = 10,
    edits: int = 5,
    *,
    url_path: str = "",
    key: str = "text",
    max_seconds: float = 300.0,
) -> LoadReport:
    """Run `sessions` concurrent browserless sessions, each editing widget `key` `edits` times.

    Bounded: loopback servers only, at most MAX_SESSIONS x MAX_EDITS, and max_seconds overall.
    """
    check_bounds(ws_url, sessions, edits)
    rep = LoadReport(sessions=sessions, edits=edits)

    async def main() -> None:
        deadline = time.monotonic() + max_seconds
        results = await asyncio.gather(
            *(_load_session(i, ws_url, url_path, edits, key, rep, deadline) for i in range(sessions)),
            return_exceptions=True,
        )
        for i, r in enumerate(results):
            if isinstance(r, BaseException):
                rep.errors.append(f"session {i}: {type(r).__name__}: {r}")

    t0 = time.perf_counter()
    run_sync(main)
    rep.wall_s = time.perf_counter() - t0
    return rep
