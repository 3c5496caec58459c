#!/usr/bin/env python
"""A class through nginx: N browserless sessions against 1, 2, ... replicas (deploy/serve_class.py).

For each replica count, starts the deployment on free loopback ports (Redis, the replicas,
nginx), runs one warm-up session on every replica (so model loading is not counted), then
--sessions sessions at once through nginx, and prints one table row: throughput, latency
p50 / p95 / max, errors, and how nginx spread the sessions over the replicas.

Modes (--mode): "edit": each session opens the Attention page and edits its text --edits
times with its own words, checking the words come back in the chart (tests/e2e/ws_client.py's
load run). A "follow" mode (students following a teacher's room) is one more entry in MODES
once the student view exists: a function (ws_url, sessions, edits, max_seconds) -> LoadReport.

    .venv/bin/python benchmarks/class_load.py                        # 1 and 2 replicas, 100 sessions
    .venv/bin/python benchmarks/class_load.py --replicas 1,2,4 --sessions 50 --edits 3

Loopback only; at most 100 sessions x 50 edits; --max-seconds bounds each run. Exit status 1
when any session saw an error.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._timing import print_table
from tests.e2e.class_deploy import ClassDeployment
from tests.e2e.ws_client import MAX_EDITS, MAX_SESSIONS, LoadReport, StreamlitWsSession, run_load, run_sync

WARM_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class Mode:
    name: str
    url_path: str  # the page each session opens (and the warm-up runs)
    run: Callable[[str, int, int, float], LoadReport]  # (ws_url, sessions, edits, max_seconds)


def _edit(ws_url: str, sessions: int, edits: int, max_seconds: float) -> LoadReport:
    return run_load(ws_url, sessions=sessions, edits=edits, url_path="attention", max_seconds=max_seconds)


MODES = {"edit": Mode("edit", "attention", _edit)}


def warm(d: ClassDeployment, url_path: str) -> None:
    """One first run of the page on every replica (through nginx, pinned by cookie)."""

    async def once(route: str) -> None:
        async with StreamlitWsSession(d.ws_url, url_path, headers={"Cookie": f"tformer_route={route}"}) as s:
            r = await s.run(timeout=WARM_TIMEOUT_S)
            if r.status != "ok" or r.exceptions:
                raise RuntimeError(f"warm-up run failed: {r.status} {r.exceptions[:1]}")

    for route in d.cookie_for_each_replica().values():
        run_sync(lambda route=route: once(route))


def spread(d: ClassDeployment, since: int) -> str:
    """How many of the load's websocket sessions each replica held, from nginx's log."""
    hits = [h for h in d.hits()[since:] if h.path.startswith("/_stcore/stream") and h.status == 101]
    per = Counter(h.upstream.rsplit(":", 1)[-1] for h in hits)
    return " / ".join(str(per.get(str(p), 0)) for p in d.app_ports)


def measure(
    replicas: int, mode: Mode, sessions: int, edits: int, max_seconds: float
) -> tuple[list[object], list[str]]:
    with (
        tempfile.TemporaryDirectory(prefix="class-load-") as tmp,
        ClassDeployment(Path(tmp), replicas=replicas) as d,
    ):
        warm(d, mode.url_path)
        before = len(d.hits())
        rep = mode.run(d.ws_url, sessions, edits, max_seconds)
        lat = sorted(x * 1000 for x in rep.edit_latencies_s)
        rate = len(lat) / rep.wall_s if rep.wall_s else 0.0
        first = statistics.median(rep.first_run_s) if rep.first_run_s else float("nan")
        row: list[object] = [
            replicas,
            sessions,
            len(lat),
            f"{rep.wall_s:.1f}",
            f"{rate:.1f}",
            f"{rep.p50() * 1000:.0f}" if lat else "-",
            f"{rep.p95() * 1000:.0f}" if lat else "-",
            f"{lat[-1]:.0f}" if lat else "-",
            f"{first:.2f}",
            len(rep.errors),
            spread(d, before),
        ]
        return row, rep.errors


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--replicas", default="1,2", help="replica counts to run, comma-separated")
    ap.add_argument("--sessions", type=int, default=100, help=f"concurrent sessions (1..{MAX_SESSIONS})")
    ap.add_argument("--edits", type=int, default=3, help=f"edits per session (1..{MAX_EDITS})")
    ap.add_argument("--mode", choices=sorted(MODES), default="edit")
    ap.add_argument("--max-seconds", type=float, default=300.0, help="bound on each load run")
    args = ap.parse_args(argv)
    counts = [int(x) for x in args.replicas.split(",") if x.strip()]
    if not counts or not all(1 <= n <= 16 for n in counts):
        ap.error("--replicas: counts in 1..16")
    mode = MODES[args.mode]
    header = [
        "replicas", "sessions", "edits", "wall s", "edits/s", "p50 ms", "p95 ms", "max ms",
        "first run p50 s", "errors", "sessions per replica",
    ]  # fmt: skip
    rows, errors = [], []
    for n in counts:
        row, errs = measure(n, mode, args.sessions, args.edits, args.max_seconds)
        rows.append(row)
        errors += errs
        print(f"{n} replica(s) done", file=sys.stderr, flush=True)
    print(f"mode {mode.name}: page {mode.url_path}, latency = BackMsg sent -> script_finished, through nginx")
    print_table(header, rows)
    for e in errors[:20]:
        print(f"  {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
