#!/usr/bin/env python
"""Concurrent browserless sessions against the app: rerun latency, errors, server memory.

Each of --sessions websocket sessions (default 10) loads the page, then edits the text widget
--edits times (default 5) with its own words, and checks those words come back among the
ticktext of the plotly charts it receives. Latency is BackMsg sent -> script_finished
received (server work plus transfer; no browser rendering: see benchmarks/latency.py).
Loopback servers only; at most 100 sessions x 50 edits; --max-seconds bounds the whole run.

    .venv/bin/python benchmarks/load.py                      # starts the repo's app
    .venv/bin/python benchmarks/load.py --sessions 20 --edits 3 --app-dir /tmp/other
    .venv/bin/python benchmarks/load.py --port 8501          # a server already running
    .venv/bin/python benchmarks/load.py --sessions 100 --replicas 2 --url-path steps

One server is one Python process: every session's script runs under its one GIL. --replicas N
(N > 1) runs the same load through nginx against N replicas instead, the deployment a class
uses (deploy/serve_class.py; Debian's nginx and redis-server must be installed): it is
`benchmarks/class_load.py --mode edit --replicas N`, which prints its table.

Exit status 1 when any session saw an error.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.e2e.streamlit_driver import (
    AppServer,
    default_app_dir,
    pid_listening_on,
    read_rss_bytes,
)
from tests.e2e.ws_client import MAX_EDITS, MAX_SESSIONS, run_load


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=10, help=f"concurrent sessions (1..{MAX_SESSIONS})")
    ap.add_argument("--edits", type=int, default=5, help=f"text edits per session (1..{MAX_EDITS})")
    ap.add_argument(
        "--app-dir",
        type=Path,
        default=None,
        help="folder with app.py (default: repo root or $TFORMER_APP_DIR)",
    )
    ap.add_argument("--port", type=int, default=None, help="use a server already listening on 127.0.0.1:PORT")
    ap.add_argument("--url-path", default="attention", help='page to load ("" = the start page)')
    ap.add_argument("--key", default="text", help="key of the text widget")
    ap.add_argument("--max-seconds", type=float, default=300.0, help="bound on the whole run")
    ap.add_argument(
        "--replicas",
        type=int,
        default=1,
        help="N > 1: through nginx against N replicas (benchmarks/class_load.py)",
    )
    args = ap.parse_args(argv)
    if args.replicas > 1:
        if args.port is not None or args.app_dir is not None or args.key != "text":
            ap.error("--replicas starts its own deployment of this checkout: no --port, --app-dir or --key")
        from benchmarks.class_load import main as class_load

        return class_load(
            [
                *("--mode", "edit", "--replicas", str(args.replicas), "--url-path", args.url_path),
                *("--sessions", str(args.sessions), "--edits", str(args.edits)),
                *("--max-seconds", str(args.max_seconds)),
            ]
        )

    server = None
    if args.port is None:
        server = AppServer(app_dir=(args.app_dir or default_app_dir()).resolve()).start()
        port, pid = server.port, server.pid
    else:
        port, pid = args.port, pid_listening_on(args.port)
    ws_url = f"ws://127.0.0.1:{port}/_stcore/stream"

    def rss() -> str:
        if pid is None:
            return "unknown (no pid for the port)"
        return f"{read_rss_bytes(pid) / 2**20:.0f} MiB"

    try:
        rss_start = rss()
        # One session first, so model loading is not counted as load latency.
        warm = run_load(
            ws_url, sessions=1, edits=1, url_path=args.url_path, key=args.key, max_seconds=args.max_seconds
        )
        rss_before = rss()
        rep = run_load(
            ws_url,
            sessions=args.sessions,
            edits=args.edits,
            url_path=args.url_path,
            key=args.key,
            max_seconds=args.max_seconds,
        )
        rss_after = rss()
    finally:
        if server is not None:
            server.stop()

    lat_ms = [x * 1000 for x in rep.edit_latencies_s]
    print(f"server 127.0.0.1:{port} (pid {pid}); page {args.url_path or '(default)'}")
    print(
        f"warm-up session: first run {warm.first_run_s[0] * 1000:.0f} ms, one edit "
        f"{warm.edit_latencies_s[0] * 1000:.0f} ms"
        if warm.edit_latencies_s
        else "warm-up failed"
    )
    rate = len(lat_ms) / rep.wall_s if rep.wall_s else 0.0
    print(
        f"{rep.sessions} sessions x {rep.edits} edits: {len(lat_ms)} edits in {rep.wall_s:.1f} s ({rate:.1f} edits/s)"
    )
    if lat_ms:
        print(
            f"edit latency (sent -> script_finished): p50 {rep.p50() * 1000:.0f} ms, "
            f"p95 {rep.p95() * 1000:.0f} ms, max {max(lat_ms):.0f} ms"
        )
        print(
            f"first run per session: p50 {statistics.median(rep.first_run_s) * 1000:.0f} ms; "
            f"bytes per edit: median {statistics.median(rep.edit_bytes):,.0f}"
        )
    print(f"errors: {len(rep.errors) + len(warm.errors)}")
    for e in (warm.errors + rep.errors)[:20]:
        print(f"  {e}")
    print(f"server RSS: at start {rss_start}, after warm-up {rss_before}, after load {rss_after}")
    return 1 if rep.errors or warm.errors else 0


if __name__ == "__main__":
    sys.exit(main())
