"""What a hostile saved run costs the server: its RSS and the time until a visitor's page is
answered, for a first and a second visitor of a link to it.

Each case gets a fresh `streamlit run` server with its own runs folder holding a sane run and
the hostile one (a sane run's config.json edited). The server is warmed on the sane run (torch
and the page code loaded), then two sessions open ``attention?source=run&run=hostile`` one after
the other over the websocket. A watchdog samples the server's RSS every 50 ms and kills the
server past ``--cap-gb`` (the unfixed app allocated 16.8 GB for one case).

    python benchmarks/hostile_runs.py                       # this checkout
    python benchmarks/hostile_runs.py --app-dir /work/main  # another checkout (before a fix)
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests._folders import tiny_run
from tests.e2e.streamlit_driver import AppServer, read_rss_bytes
from tests.e2e.ws_client import StreamlitWsSession, run_sync

CASES = {
    "max_len 2**31": {"max_len": 2**31},
    "d_model 10**12": {"d_model": 10**12, "n_heads": 1},
    "3.2 G parameters": {"d_model": 4096, "n_heads": 64, "n_layers": 16, "d_ff": 16384},
    "268 M, weights disagree": {"vocab_size": 262_144, "d_model": 1024, "n_heads": 2},
}


class Watch:
    """The server's peak RSS while it runs; kills it past ``cap`` bytes."""

    def __init__(self, server: AppServer, cap: int) -> None:
        self.server, self.cap = server, cap
        self.peak, self.killed_after = 0, None
        self._stop = threading.Event()
        self._start = time.monotonic()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                rss = read_rss_bytes(self.server.pid)
            except (OSError, RuntimeError, AssertionError):
                return
            self.peak = max(self.peak, rss)
            if rss > self.cap:
                self.killed_after = time.monotonic() - self._start
                self.server.stop()
                return
            time.sleep(0.05)

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(2)


def visit(server: AppServer, query: str, timeout: float) -> tuple[float, str]:
    async def once() -> tuple[float, str]:
        async with StreamlitWsSession(server.ws_url, "attention", query=query) as s:
            start = time.perf_counter()
            res = await s.run(timeout=timeout)
            shown = res.exceptions or [a for a in res.alerts if "run" in a.lower()]
            return time.perf_counter() - start, (shown[0] if shown else res.status)[:110]

    try:
        return run_sync(once)
    except Exception as exc:  # the server was killed, or never answered
        return float("nan"), f"no answer: {type(exc).__name__}"


def measure(app_dir: Path, name: str, changes: dict, cap: int, timeout: float) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tiny_run(root, "sane")
        bad = tiny_run(root, "hostile")
        config = bad / "config.json"
        config.write_text(json.dumps({**json.loads(config.read_text()), **changes}))
        server = AppServer(
            app_dir=app_dir,
            extra_env={"TFORMER_RUNS_DIR": str(root), "PYTHONPATH": str(app_dir)},
            log_path=root / "server.log",
        ).start()
        try:
            visit(server, "source=run&run=sane", 120)
            base = server.rss_bytes()
            watch = Watch(server, cap)
            rows = []
            for who in ("first visitor", "second visitor"):
                seconds, shown = visit(server, "source=run&run=hostile", timeout)
                rows.append(f"{name:24s} {who:15s} {seconds:7.2f} s   {shown}")
                if watch.killed_after is not None:
                    break
            watch.stop()
            killed = (
                f" (killed past {cap / 2**30:.0f} GB after {watch.killed_after:.1f} s)"
                if watch.killed_after is not None
                else ""
            )
            rows.append(
                f"{name:24s} server RSS {base / 2**20:.0f} MiB before, peak {watch.peak / 2**20:.0f} MiB{killed}"
            )
            return rows
        finally:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--app-dir", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--cap-gb", type=float, default=4.0)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds one visit may take")
    parser.add_argument("--case", action="append", choices=list(CASES), help="default: every case")
    args = parser.parse_args()
    print(f"app: {args.app_dir}")
    for name in args.case or list(CASES):
        for row in measure(args.app_dir.resolve(), name, CASES[name], int(args.cap_gb * 2**30), args.timeout):
            print(row, flush=True)


if __name__ == "__main__":
    main()
