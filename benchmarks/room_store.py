#!/usr/bin/env python
"""What a class costs the room store: students polling the teacher's view, and answering.

For the in-process store and for Redis (a redis-server started here on a loopback port, no
persistence), with --students seats in one room:
  * poll (unchanged): one student's `poll(code, since=version)` when nothing changed: median
    and p95 of --polls calls (a poll naming no seat: one GET in Redis);
  * recording poll: the same naming the seat, each one recording it as seen (one script in
    Redis); a following student's poll records at most once every `seen_every_s` (4 s);
  * poll (changed): after a new view (one GET, then ver, view and revealed in one transaction);
  * polls/s from --threads threads at once (as a replica's script threads would);
  * answers: every student submits one answer, from --threads threads: answers/s.

Then a class idling for --seconds: every student polls once a second, as the page's fragment
does, from --threads threads, first naming no seat (the poll before presence was counted),
then naming the seat (the app's poll now): the poll's time, the share of polls that recorded
the seat, and the Redis commands served per poll (INFO commandstats, scripts' inner calls
included).

    .venv/bin/python benchmarks/room_store.py
    .venv/bin/python benchmarks/room_store.py --students 300 --threads 8 --seconds 12
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
from typing import Any

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


def bench(name: str, make: Callable[[RoomLimits], RoomStore], args: argparse.Namespace) -> list[object]:
    store = make(RoomLimits(max_students=max(args.students, 1), answer_burst=5))
    t = store.open_room()
    seats = [store.join(t.code, f"student {i}") for i in range(args.students)]
    view = {"page": "attention", "text": "the quick brown fox " * 20, "layer": "3", "head": "7"}
    version = store.publish(t.code, t.token, view)
    same = timed_us(lambda: store.poll(t.code, since=version), args.polls)
    rec = recording_polls(make, view, args.polls)
    changed = timed_us(lambda: store.poll(t.code, since=-5), args.polls)
    rate = in_threads(lambda i: store.poll(t.code, since=version), args.polls, args.threads)
    answers = in_threads(
        lambda i: store.submit(t.code, seats[i].seat_id, "q1", str(i % 4)), args.students, args.threads
    )
    assert store.tally(t.code, t.token, "q1").answered == args.students
    return [
        name,
        f"{statistics.median(same):.0f} / {p95(same):.0f}",
        f"{statistics.median(rec):.0f} / {p95(rec):.0f}",
        f"{statistics.median(changed):.0f} / {p95(changed):.0f}",
        f"{rate:,.0f}",
        f"{answers:,.0f}",
    ]


def recording_polls(make: Callable[[RoomLimits], RoomStore], view: dict[str, str], polls: int) -> list[float]:
    """Unchanged polls naming a seat, each one due to record it (a store that records every
    poll): what one poll in ``seen_every_s`` costs a following student."""
    store = make(RoomLimits(seen_every_s=1e-6))
    t = store.open_room()
    seat = store.join(t.code, "recorded")
    version = store.publish(t.code, t.token, view)
    return timed_us(lambda: store.poll(t.code, since=version, seat=seat.seat_id), polls)


def idle_class(
    name: str,
    store: RoomStore,
    students: int,
    seconds: float,
    threads: int,
    commands: Callable[[], int] | None = None,
) -> list[list[object]]:
    """Every student polls once a second for ``seconds``, naming no seat, then naming it."""
    t = store.open_room()
    seats = [store.join(t.code, f"idle {i}") for i in range(students)]
    version = store.publish(t.code, t.token, {"page": "attention", "layer": "3"})
    recorded = [0]
    real = store.store_seen

    def counted(*args: Any) -> Any:
        recorded[0] += 1
        return real(*args)

    store.store_seen = counted  # type: ignore[method-assign]
    rows = []
    for named in (False, True):
        recorded[0] = 0
        before = commands() if commands is not None else 0
        took = _poll_every_second(
            store, t.code, version, [s.seat_id if named else None for s in seats], seconds, threads
        )
        served = commands() - before if commands is not None else None
        rows.append(
            [
                name,
                "yes" if named else "no",
                len(took),
                f"{statistics.median(took):.0f} / {p95(took):.0f} / {statistics.fmean(took):.0f}",
                f"{100 * recorded[0] / len(took):.1f} %",
                f"{served / len(took):.2f}" if served is not None else "-",
            ]
        )
    return rows


def _poll_every_second(
    store: RoomStore, code: str, version: int, seats: list[str | None], seconds: float, threads: int
) -> list[float]:
    """Each seat polls once a second (its poll at its own offset in the second), for ``seconds``;
    the polls' times in µs."""
    n = len(seats)
    start = time.perf_counter() + 0.05
    took: list[float] = []
    lock = threading.Lock()

    def work(mine: list[int]) -> None:
        out = []
        for tick in range(int(seconds)):
            for i in mine:
                wait = start + tick + i / n - time.perf_counter()
                if wait > 0:
                    time.sleep(wait)
                t0 = time.perf_counter()
                store.poll(code, since=version, seat=seats[i])
                out.append((time.perf_counter() - t0) * 1e6)
        with lock:
            took.extend(out)

    ts = [threading.Thread(target=work, args=(list(range(k, n, threads)),)) for k in range(threads)]
    for th in ts:
        th.start()
    for th in ts:
        th.join()
    return took


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--students", type=int, default=300)
    ap.add_argument("--polls", type=int, default=3000)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=12.0, help="the idle class's polling time")
    args = ap.parse_args(argv)
    if not (1 <= args.students <= 2000 and 1 <= args.threads <= 64 and 1 <= args.seconds <= 120):
        ap.error("--students in 1..2000, --threads in 1..64, --seconds in 1..120")
    limits = RoomLimits(max_students=max(args.students, 1), answer_burst=5)
    rows = [bench("memory", MemoryRoomStore, args)]
    idle = idle_class("memory", MemoryRoomStore(limits), args.students, args.seconds, args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp)).start()
        try:
            rows.append(bench("redis", lambda lim: RedisRoomStore(server.url, lim), args))
            client = server.client()

            def commands() -> int:
                stats = client.info("commandstats")
                return sum(int(v["calls"]) for k, v in stats.items() if k not in ("cmdstat_info",))

            idle += idle_class(
                "redis",
                RedisRoomStore(server.url, limits),
                args.students,
                args.seconds,
                args.threads,
                commands,
            )
        finally:
            server.stop()
    print(f"{args.students} students in one room; {args.polls} polls; {args.threads} threads")
    print_table(
        [
            "store",
            "poll unchanged µs p50 / p95",
            "recording poll µs p50 / p95",
            "poll changed µs p50 / p95",
            "polls/s (threads)",
            "answers/s",
        ],
        rows,
    )
    print()
    print(
        f"an idle class: {args.students} students each polling once a second for {args.seconds:g} s "
        f"(a seat recorded at most every {limits.seen_every_s:g} s)"
    )
    print_table(
        ["store", "seat named", "polls", "poll µs p50 / p95 / mean", "recorded", "Redis commands per poll"],
        idle,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
