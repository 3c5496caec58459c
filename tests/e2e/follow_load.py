"""A class following its teacher, browserless: N students in one room, each polling as a browser
does, while the teacher publishes a new view every few seconds (benchmarks/class_load.py's
"follow" mode, and a small e2e run).

Each student is one websocket session (`ws_client.StreamlitWsSession`). It opens the join link
(the Live class page with ``?room=CODE``), types a name and joins, as a student does; the app then
takes the teacher's view and opens its page. From then on it asks for a run of the page's poll
fragment whenever the fragment's timer (``run_every``, as the page announced it) comes round, one
request at a time, as the browser does. The teacher is this process: it opens the room in the
same store the app uses (Redis: the deployment's) and publishes ``{"page": "attention", "text":
...}``, each text with its own words (each one MiniLM token). A student has taken publication i
when a run of theirs ends with a chart whose tick labels hold i's words: the delay counted is
from the publish to the end of that run (the poll's wait, the fragment's run, the page's run).

Measured: every delay, every idle poll's round trip (a fragment run that found nothing new), how
many runs of each kind the servers did, and errors (an exception on the page, a run that did not
finish, a publication a student never took). Loopback only; at most MAX_SESSIONS students and
MAX_EDITS publications; ``max_seconds`` bounds the whole run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tformer.rooms import RoomStore, TeacherTicket

from .ws_client import (
    StreamlitWsSession,
    check_bounds,
    run_sync,
    session_words,
    tokens_in,
)

POLL_KEY = "room.poll"  # the students' poll fragment (tformer.ui.room)


@dataclass
class FollowReport:
    students: int
    publishes: int
    delays_s: list[float] = field(default_factory=list)  # publish -> a student's run showing it
    polls_s: list[float] = field(default_factory=list)  # idle polls: request -> fragment run finished
    full_runs: int = 0  # page runs the polls led to
    errors: list[str] = field(default_factory=list)
    wall_s: float = 0.0  # from the first publication after joining to the end
    idle_polls: int = 0  # polls in the idle window (no publication)
    idle_cpu_s: float | None = None  # the servers' CPU seconds in that window (``cpu`` given)
    joined: int = 0
    skipped: int = 0  # publications a student went past (they took a newer one first)
    last_taken: int = 0  # students who took the last publication

    def taken(self) -> int:
        return len(self.delays_s)


@dataclass
class _Class:
    code: str
    published: list[tuple[float, list[str]]] = field(default_factory=list)  # (when, words)
    idle: bool = False  # the idle window: polls counted, nothing published
    last: int = -1  # the index of the last publication there will be
    done: asyncio.Event = field(default_factory=asyncio.Event)


def _words(i: int) -> list[str]:
    return session_words(10_000 + i, 0)


async def _join(idx: int, ws_url: str, room: _Class, deadline: float) -> StreamlitWsSession:
    s = StreamlitWsSession(ws_url, "classroom", query=f"room={room.code}")
    await s.__aenter__()
    first = await s.run(timeout=max(1.0, deadline - time.monotonic()))
    if first.exceptions:
        raise RuntimeError(f"student {idx} joining: {first.exceptions[0]}")
    s.set("room.name", f"student {idx}")
    s.press("room.join")
    joined = await s.run(timeout=max(1.0, deadline - time.monotonic()), follow_reruns=True)
    if joined.status != "ok" or joined.exceptions or not joined.charts:
        raise RuntimeError(
            f"student {idx} did not land on the teacher's page: {joined.status} {joined.exceptions}"
        )
    if not s.timers:
        raise RuntimeError(f"student {idx}: the page announced no poll timer ({POLL_KEY})")
    return s


async def _follow(idx: int, s: StreamlitWsSession, room: _Class, rep: FollowReport, deadline: float) -> None:
    taken: set[int] = {0}  # publication 0 was taken on joining
    fragment, every = next(iter(s.timers.items()))
    next_at = time.monotonic()
    while not room.done.is_set():
        if time.monotonic() > deadline:
            raise TimeoutError(f"student {idx}: the run exceeded its time bound")
        await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        next_at = time.monotonic() + every  # the browser's timer: one request at a time
        idle = room.idle
        r = await s.run_fragment(fragment, timeout=max(1.0, deadline - time.monotonic()))
        end = time.perf_counter()
        if r.exceptions:
            rep.errors.append(f"student {idx}: {r.exceptions[0]}")
        if r.status not in ("ok", "fragment_ok"):
            rep.errors.append(f"student {idx}: a poll finished with status {r.status}")
        if r.status == "fragment_ok":
            rep.polls_s.append(r.elapsed_s)
            rep.idle_polls += idle
            continue
        rep.full_runs += 1
        labels = r.ticktext()
        for i, (when, words) in enumerate(room.published):
            if i not in taken and not tokens_in(words, labels):
                rep.skipped += sum(1 for j in range(i) if j not in taken)
                taken.update(range(i + 1))
                rep.delays_s.append(end - when)
                rep.last_taken += i == room.last
        if s.timers:
            fragment, every = next(iter(s.timers.items()))


def run_follow(
    ws_url: str,
    store: RoomStore,
    *,
    students: int = 10,
    publishes: int = 3,
    every_s: float = 5.0,
    idle_s: float = 10.0,
    settle_s: float = 30.0,
    max_seconds: float = 600.0,
    cpu: Callable[[], float] | None = None,
) -> FollowReport:
    """``students`` join a room opened in ``store`` (the app's own store: the same Redis) and
    follow it while this process publishes ``publishes`` views ``every_s`` seconds apart, after
    ``idle_s`` seconds of polls with nothing new; ``cpu()`` (the servers' CPU seconds so far)
    measures what that idle window cost them."""
    check_bounds(ws_url, students, publishes)
    rep = FollowReport(students=students, publishes=publishes)
    ticket = store.open_room()

    async def main() -> None:
        deadline = time.monotonic() + max_seconds
        room = _Class(ticket.code)
        _publish(store, ticket, room, 0)
        sessions = await asyncio.gather(
            *(_join(i, ws_url, room, deadline) for i in range(students)), return_exceptions=True
        )
        joined = [(i, s) for i, s in enumerate(sessions) if isinstance(s, StreamlitWsSession)]
        rep.errors += [
            f"student {i}: {type(s).__name__}: {s}"
            for i, s in enumerate(sessions)
            if isinstance(s, BaseException)
        ]
        rep.joined = len(joined)
        followers = [asyncio.create_task(_follow(i, s, room, rep, deadline)) for i, s in joined]
        try:
            await _teach(
                store, ticket, room, rep, publishes, every_s, idle_s, settle_s, cpu, joined, deadline
            )
        finally:
            room.done.set()
            for i, r in zip(
                [i for i, _ in joined], await asyncio.gather(*followers, return_exceptions=True), strict=True
            ):
                if isinstance(r, BaseException):
                    rep.errors.append(f"student {i}: {type(r).__name__}: {r}")
            for _, s in joined:
                await s.__aexit__(None, None, None)

    try:
        run_sync(main)
    finally:
        store.close(ticket.code, ticket.token)
    return rep


def _publish(store: RoomStore, ticket: TeacherTicket, room: _Class, i: int) -> None:
    words = _words(i)
    store.publish(ticket.code, ticket.token, {"page": "attention", "text": " ".join(words)})
    room.published.append((time.perf_counter(), words))


async def _teach(
    store: RoomStore,
    ticket: TeacherTicket,
    room: _Class,
    rep: FollowReport,
    publishes: int,
    every_s: float,
    idle_s: float,
    settle_s: float,
    cpu: Callable[[], float] | None,
    joined: list[tuple[int, StreamlitWsSession]],
    deadline: float,
) -> None:
    """The teacher: an idle window (students poll, nothing changes), then a publication every
    ``every_s`` seconds, then up to ``settle_s`` seconds for the last one to reach everyone."""
    room.idle = True
    before = cpu() if cpu is not None else 0.0
    await asyncio.sleep(idle_s)
    room.idle = False
    if cpu is not None:
        rep.idle_cpu_s = cpu() - before
    t0 = time.perf_counter()
    room.last = publishes
    for i in range(1, publishes + 1):
        _publish(store, ticket, room, i)
        await asyncio.sleep(every_s if i < publishes else 0.0)
    end = min(time.monotonic() + settle_s, deadline)
    while rep.last_taken < len(joined) and time.monotonic() < end:
        await asyncio.sleep(0.1)
    rep.wall_s = time.perf_counter() - t0
    if rep.last_taken < len(joined):
        rep.errors.append(
            f"{len(joined) - rep.last_taken} of {len(joined)} students never took the last view "
            f"within {settle_s:.0f} s"
        )
