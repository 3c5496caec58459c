#!/usr/bin/env python
"""What a class costs the room store: students polling the teacher's view, and answering.

For the in-process store and for Redis (a redis-server started here on a loopback port, no
persistence), with --students seats in one room:
  * poll (unchanged): one student's `poll(code, since=version)` when nothing changed, the call
    every following student makes about once a second: median and p95 of --polls calls;
  * poll (changed): the same after a new view (one GET, then ver, view and revealed in one
    transaction);
  * polls/s from --threads threads at once (as a replica's script threads would);
  * answers: every student submits one answer, from --threads threads: answers/s.

    .venv/bin/python benchmarks/room_store.py
    .venv/bin/python benchmarks/room_store.py --students 300 --threads 8
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._timing import print_table
from tests.redis_server import RedisServer
from tformer.rooms import MemoryRoomStore, RedisRoomStore, RoomLimits, RoomStore


def timed_us(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e6)
    return out


def in_threads(fn: Callable[[int], object], n_calls: int, threads: int) -> float:
    """Calls per second of fn(i) for i in range(n_calls), spread over threads."""
    per = [list(range(t, n_calls, threads)) for t in range(threads)]

    def work(items: list[int]) -> None:
        for i in items:
            fn(i)

    ts = [threading.Thread(target=work, args=(items,)) for items in per]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return n_calls / (time.perf_counter() - t0)


def p95(xs: list[float]) -> float:
    return sorted(xs)[int(0.95 * (len(xs) - 1))]


def bench(name: str, store: RoomStore, students: int, polls: int, threads: int) -> list[object]:
    t = store.open_room()
    seats = [store.join(t.code, f"student {i}") for i in range(students)]
    view = {"page": "attention", "text": "the quick brown fox " * 20, "layer": "3", "head": "7"}
    version = store.publish(t.code, t.token, view)
    same = timed_us(lambda: store.poll(t.code, since=version), polls)
    changed = timed_us(lambda: store.poll(t.code, since=-5), polls)
    rate = in_threads(lambda i: store.poll(t.code, since=version), polls, threads)
    answers = in_threads(
        lambda i: store.submit(t.code, seats[i].seat_id, "q1", str(i % 4)), students, threads
    )
    assert store.tally(t.code, t.token, "q1").answered == students
    return [
        name,
        f"{statistics.median(same):.0f} / {p95(same):.0f}",
        f"{statistics.median(changed):.0f} / {p95(changed):.0f}",
        f"{rate:,.0f}",
        f"{answers:,.0f}",
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--students", type=int, default=300)
    ap.add_argument("--polls", type=int, default=3000)
    ap.add_argument("--threads", type=int, default=8)
    args = ap.parse_args(argv)
    limits = RoomLimits(max_students=max(args.students, 1), answer_burst=5)
    rows = [bench("memory", MemoryRoomStore(limits), args.students, args.polls, args.threads)]
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp)).start()
        try:
            rows.append(
                bench("redis", RedisRoomStore(server.url, limits), args.students, args.polls, args.threads)
            )
        finally:
            server.stop()
    print(f"{args.students} students in one room; {args.polls} polls; {args.threads} threads")
    print_table(
        [
            "store",
            "poll unchanged µs p50 / p95",
            "poll changed µs p50 / p95",
            "polls/s (threads)",
            "answers/s",
        ],
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
