#!/usr/bin/env python
"""A class through nginx: N browserless sessions against 1, 2, ... replicas (deploy/serve_class.py).

For each replica count, starts the deployment on free loopback ports (Redis, the replicas,
nginx), runs one warm-up session on every replica (so model loading is not counted), then
--sessions sessions at once through nginx, and prints one table row: throughput, latency
p50 / p95 / max, errors, and how nginx spread the sessions over the replicas.

Modes (--mode):

- "edit": each session opens the Attention page (or --url-path) and edits its text --edits times
  with its own words, checking the words come back in the chart (tests/e2e/ws_client.py's load
  run, as benchmarks/load.py runs it against one server).
- "follow": a live class. The sessions are students: each opens the join link of one room, types
  a name and joins, then polls as the browser does (a run of the page's poll fragment whenever
  its one-second timer comes round). This process is the teacher: it opens the room in the
  deployment's Redis and, after --idle seconds of polls with nothing new, publishes --edits new
  views (a new text on the Attention page) --every seconds apart (tests/e2e/follow_load.py).
  Measured: the delay from each publish to the end of each student's page run that shows it,
  page runs and polls per second, an idle poll's round trip, and the replicas' CPU time per idle
  poll (from /proc: what a following student costs the server while nothing changes).

    .venv/bin/python benchmarks/class_load.py                        # 1 and 2 replicas, 100 sessions
    .venv/bin/python benchmarks/class_load.py --replicas 1,2,4 --sessions 50 --edits 3
    .venv/bin/python benchmarks/class_load.py --replicas 2 --edits 5 --url-path steps
    .venv/bin/python benchmarks/class_load.py --mode follow --sessions 100 --edits 5 --every 5

Loopback only; at most 100 sessions x 50 edits; --max-seconds bounds each run. Exit status 1
when any session saw an error.
"""

from __future__ import annotations

import argparse
import os
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
from tests.e2e.follow_load import run_follow
from tests.e2e.ws_client import MAX_EDITS, MAX_SESSIONS, StreamlitWsSession, run_load, run_sync

WARM_TIMEOUT_S = 180.0
Row = tuple[list[object], list[str]]  # a table row, and the errors behind it


@dataclass(frozen=True)
class Mode:
    name: str
    url_path: str  # the page each session opens (and the warm-up runs)
    header: tuple[str, ...]
    run: Callable[[ClassDeployment, argparse.Namespace], Row]  # its row, before "sessions per replica"
    caption: str


def _edit(d: ClassDeployment, args: argparse.Namespace) -> Row:
    rep = run_load(
        d.ws_url,
        sessions=args.sessions,
        edits=args.edits,
        url_path=args.url_path,
        max_seconds=args.max_seconds,
    )
    lat = sorted(x * 1000 for x in rep.edit_latencies_s)
    rate = len(lat) / rep.wall_s if rep.wall_s else 0.0
    first = statistics.median(rep.first_run_s) if rep.first_run_s else float("nan")
    row: list[object] = [
        args.sessions,
        len(lat),
        f"{rep.wall_s:.1f}",
        f"{rate:.1f}",
        f"{rep.p50() * 1000:.0f}" if lat else "-",
        f"{rep.p95() * 1000:.0f}" if lat else "-",
        f"{lat[-1]:.0f}" if lat else "-",
        f"{first:.2f}",
        len(rep.errors),
    ]
    return row, rep.errors


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)  # nearest rank, as LoadReport's
    return s[min(len(s) - 1, max(0, int(-(-q * len(s) // 100)) - 1))] if s else float("nan")


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU seconds the processes ``pids`` used so far (/proc/<pid>/stat)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / tick


def _follow(d: ClassDeployment, args: argparse.Namespace) -> Row:
    from tformer.rooms import RedisRoomStore

    pids = [d.replica_pid(i) for i in range(d.replicas)]
    rep = run_follow(
        d.ws_url,
        RedisRoomStore(d.redis_url()),
        students=args.sessions,
        publishes=args.edits,
        every_s=args.every,
        idle_s=args.idle,
        max_seconds=args.max_seconds,
        cpu=lambda: cpu_seconds(pids),
    )
    delays = rep.delays_s
    polls_ms = [x * 1000 for x in rep.polls_s]
    per_poll = (
        1000 * rep.idle_cpu_s / rep.idle_polls if rep.idle_cpu_s is not None and rep.idle_polls else None
    )
    row: list[object] = [
        args.sessions,
        rep.joined,
        f"{len(delays)}+{rep.skipped}",
        f"{_pct(delays, 50):.2f}",
        f"{_pct(delays, 95):.2f}",
        f"{max(delays):.2f}" if delays else "-",
        f"{rep.full_runs / rep.wall_s:.1f}" if rep.wall_s else "-",
        f"{len(rep.polls_s) / max(rep.wall_s, 1e-9):.0f}",
        f"{_pct(polls_ms, 50):.0f} / {_pct(polls_ms, 95):.0f}",
        f"{per_poll:.1f}" if per_poll is not None else "-",
        len(rep.errors),
    ]
    return row, rep.errors


FOLLOW_HEADER = (
    "students", "joined", "views taken+skipped", "delay p50 s", "p95 s", "max s", "page runs/s",
    "polls/s", "idle poll ms p50 / p95", "server CPU ms per idle poll", "errors",
)  # fmt: skip
MODES = {
    "edit": Mode(
        "edit",
        "attention",
        ("sessions", "edits", "wall s", "edits/s", "p50 ms", "p95 ms", "max ms", "first run p50 s", "errors"),
        _edit,
        "latency = BackMsg sent -> script_finished, through nginx",
    ),
    "follow": Mode(
        "follow",
        "attention",
        FOLLOW_HEADER,
        _follow,
        "delay = the teacher's publish -> the end of the student's page run showing it (poll wait, "
        "fragment run, page run), through nginx; polls/s over the publishing window; CPU from /proc "
        "over the idle window",
    ),
}


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


def measure(replicas: int, mode: Mode, args: argparse.Namespace) -> Row:
    with (
        tempfile.TemporaryDirectory(prefix="class-load-") as tmp,
        ClassDeployment(Path(tmp), replicas=replicas) as d,
    ):
        warm(d, page_of(mode, args))
        before = len(d.hits())
        row, errors = mode.run(d, args)
        return [replicas, *row, spread(d, before)], errors


def page_of(mode: Mode, args: argparse.Namespace) -> str:
    """The page the sessions open: --url-path in edit mode, the Attention page when following."""
    return args.url_path if mode.name == "edit" else mode.url_path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--replicas", default="1,2", help="replica counts to run, comma-separated")
    ap.add_argument("--sessions", type=int, default=100, help=f"concurrent sessions (1..{MAX_SESSIONS})")
    ap.add_argument("--edits", type=int, default=3, help=f"edits per session (1..{MAX_EDITS})")
    ap.add_argument("--mode", choices=sorted(MODES), default="edit")
    ap.add_argument(
        "--url-path",
        default="attention",
        help="edit: the page every session opens and edits (attention, heads, steps...)",
    )
    ap.add_argument("--max-seconds", type=float, default=300.0, help="bound on each load run")
    ap.add_argument("--every", type=float, default=5.0, help="follow: seconds between the teacher's views")
    ap.add_argument("--idle", type=float, default=15.0, help="follow: seconds of polls before the first view")
    args = ap.parse_args(argv)
    counts = [int(x) for x in args.replicas.split(",") if x.strip()]
    if not counts or not all(1 <= n <= 16 for n in counts):
        ap.error("--replicas: counts in 1..16")
    if not (1 <= args.every <= 60 and 0 <= args.idle <= 120):
        ap.error("--every in 1..60 s and --idle in 0..120 s")
    mode = MODES[args.mode]
    header = ["replicas", *mode.header, "sessions per replica"]
    rows, errors = [], []
    for n in counts:
        row, errs = measure(n, mode, args)
        rows.append(row)
        errors += errs
        print(f"{n} replica(s) done", file=sys.stderr, flush=True)
    print(f"mode {mode.name}: page {page_of(mode, args)}, {mode.caption}")
    print_table(header, rows)
    for e in errors[:20]:
        print(f"  {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
