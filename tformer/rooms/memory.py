"""Rooms in this process's memory: the default, for `streamlit run app.py` alone.

One lock guards every room (each operation is a few dictionary updates, so one lock costs
nothing next to a script run). Expiry is lazy: a room is dropped when it is next looked at, or
when rooms are counted for `open_room`. The clock is injectable, so tests move time instead of
sleeping.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from .limits import RoomLimits
from .rules import decode_view
from .store import AnswerRow, Outcome, RoomStore

__all__ = ["MemoryRoomStore"]


@dataclass
class _Answer:
    answer: str
    correct: bool | None
    at: float


@dataclass
class _Seat:
    name: str
    key: str
    seen_at: float  # when its screen last polled (or it joined, or answered)
    left: bool = False
    answers: dict[str, _Answer] = field(default_factory=dict)
    tokens: float = 0.0
    tokens_at: float = 0.0


@dataclass
class _Room:
    digest: str
    key_digest: str
    expires_at: float
    key_tries: float
    key_tries_at: float
    version: int = 0
    view_json: str = "{}"
    revealed: set[str] = field(default_factory=set)
    seats: dict[str, _Seat] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)  # name key -> seat
    tallies: dict[str, Counter[str]] = field(default_factory=dict)  # step -> answer -> count
    correct: Counter[str] = field(default_factory=Counter)  # step -> correct answers
    n_answers: int = 0

    def present(self, now: float, within_s: float) -> int:
        return sum(1 for s in self.seats.values() if not s.left and now - s.seen_at < within_s)

    def present_for(self, seat: _Seat, now: float, within_s: float) -> float:
        """How much longer ``seat`` counts as present (0: it is not present)."""
        return 0.0 if seat.left else max(within_s - (now - seat.seen_at), 0.0)


def _refilled(tokens: float, elapsed_s: float, burst: int, refill_s: float) -> float:
    """A token bucket's tokens after ``elapsed_s``: one more per ``refill_s``, at most ``burst``."""
    return min(float(burst), tokens + max(elapsed_s, 0.0) / refill_s)


def _seen_seat(room: _Room, seat: str, now: float) -> _Seat | None:
    """``seat`` when it is the room's and has not left, seen now; else None."""
    s = room.seats.get(seat)
    if s is None or s.left:
        return None
    s.seen_at = now
    return s


class MemoryRoomStore(RoomStore):
    """`RoomStore` in one process. ``clock``: seconds (Unix time by default)."""

    def __init__(self, limits: RoomLimits | None = None, *, clock: Callable[[], float] = time.time) -> None:
        super().__init__(limits)
        self._clock = clock
        self._lock = threading.Lock()
        self._rooms: dict[str, _Room] = {}
        self._closed: dict[str, float] = {}  # code -> until when students are told so

    def seen_clock(self) -> float:
        return self._clock()

    def _room(self, code: str, now: float) -> _Room | None:
        room = self._rooms.get(code)
        if room is not None and room.expires_at <= now:
            del self._rooms[code]
            room = None
        return room

    def _touch(self, room: _Room, now: float) -> None:
        room.expires_at = now + self.limits.idle_s

    def _expire_all(self, now: float) -> None:
        for code in [c for c, r in self._rooms.items() if r.expires_at <= now]:
            del self._rooms[code]
        for code in [c for c, t in self._closed.items() if t <= now]:
            del self._closed[code]

    # --- the teacher ----------------------------------------------------------------------------

    def store_open(self, code: str, digest: str, key_digest: str) -> Outcome:
        with self._lock:
            now = self._clock()
            self._expire_all(now)
            if len(self._rooms) >= self.limits.max_rooms:
                return ("too_many_rooms",)
            if code in self._rooms or code in self._closed:
                return ("taken",)
            self._rooms[code] = _Room(
                digest=digest,
                key_digest=key_digest,
                expires_at=now + self.limits.idle_s,
                key_tries=float(self.limits.key_tries),
                key_tries_at=now,
            )
            return ("ok",)

    def store_key_try(self, code: str) -> Outcome:
        lim = self.limits
        with self._lock:
            now = self._clock()
            room = self._room(code, now)
            if room is None:
                return ("no_room",)
            tries = _refilled(room.key_tries, now - room.key_tries_at, lim.key_tries, lim.key_refill_s)
            room.key_tries_at = now
            if tries < 1.0:
                room.key_tries = tries
                return ("rate", (1.0 - tries) * lim.key_refill_s)
            room.key_tries = tries - 1.0
            return ("ok", room.key_digest)

    def store_reclaim(self, code: str, digest: str) -> Outcome:
        with self._lock:
            now = self._clock()
            room = self._room(code, now)
            if room is None:
                return ("no_room",)
            room.digest = digest
            room.key_tries = min(float(self.limits.key_tries), room.key_tries + 1.0)
            self._touch(room, now)
            return ("ok",)

    def store_was_closed(self, code: str) -> bool:
        with self._lock:
            until = self._closed.get(code)
            return until is not None and until > self._clock()

    def store_digest(self, code: str) -> Outcome:
        with self._lock:
            room = self._room(code, self._clock())
            return ("no_room",) if room is None else ("ok", room.digest)

    def store_touch(self, code: str) -> Outcome:
        with self._lock:
            now = self._clock()
            room = self._room(code, now)
            if room is None:
                return ("no_room",)
            self._touch(room, now)
            return ("ok",)

    def store_publish(self, code: str, view_json: str) -> Outcome:
        with self._lock:
            now = self._clock()
            room = self._room(code, now)
            if room is None:
                return ("no_room",)
            self._touch(room, now)
            if room.view_json == view_json:
                return ("same", room.version)
            room.view_json = view_json
            room.version += 1
            return ("ok", room.version)

    def store_reveal(self, code: str, step: str) -> Outcome:
        with self._lock:
            now = self._clock()
            room = self._room(code, now)
            if room is None:
                return ("no_room",)
            self._touch(room, now)
            if step in room.revealed:
                return ("same", room.version)
            if len(room.revealed) >= self.limits.max_questions:
                return ("questions_full",)
            room.revealed.add(step)
            room.version += 1
            return ("ok", room.version)

    def store_tally(self, code: str, step: str) -> Outcome:
        with self._lock:
            now = self._clock()
            room = self._room(code, now)
            if room is None:
                return ("no_room",)
            self._touch(room, now)
            counts = dict(room.tallies.get(step, {}))
            present = room.present(now, self.limits.present_s)
            return ("ok", present, counts, room.correct[step], step in room.revealed)

    def store_rows(self, code: str) -> Outcome:
        with self._lock:
            now = self._clock()
            room = self._room(code, now)
            if room is None:
                return ("no_room",)
            self._touch(room, now)
            rows = [
                AnswerRow(name=s.name, step=step, answer=a.answer, correct=a.correct, at=a.at)
                for s in room.seats.values()
                for step, a in s.answers.items()
            ]
            return ("ok", rows)

    def store_status(self, code: str) -> Outcome:
        with self._lock:
            now = self._clock()
            room = self._room(code, now)
            if room is None:
                return ("no_room",)
            self._touch(room, now)
            return (
                "ok",
                room.version,
                len(room.seats),
                room.present(now, self.limits.present_s),
                room.n_answers,
                sum(1 for t in room.tallies.values() if sum(t.values())),
                set(room.revealed),
                room.expires_at - now,
            )

    def store_close(self, code: str) -> Outcome:
        with self._lock:
            now = self._clock()
            if self._room(code, now) is None:
                return ("no_room",)
            del self._rooms[code]
            self._closed[code] = now + self.limits.closed_notice_s
            return ("ok",)

    # --- the students ---------------------------------------------------------------------------

    def store_join(self, code: str, name: str, key: str, resume: str, fresh: str) -> Outcome:
        with self._lock:
            now = self._clock()
            room = self._room(code, now)
            if room is None:
                return ("no_room",)
            owner = room.names.get(key)
            seat = room.seats.get(resume) if resume else None
            if seat is not None:
                if owner is not None and owner != resume:
                    return ("name_taken", name)
                return self._seat_back(room, resume, resume, name, key, now)
            if owner is not None:
                wait_s = room.present_for(room.seats[owner], now, self.limits.present_s)
                if wait_s > 0:
                    return ("name_in_use", name, wait_s)
                return self._seat_back(room, owner, fresh, name, key, now)
            if len(room.seats) >= self.limits.max_students:
                return ("full",)
            room.seats[fresh] = _Seat(
                name=name, key=key, seen_at=now, tokens=self.limits.answer_burst, tokens_at=now
            )
            room.names[key] = fresh
            self._touch(room, now)
            return ("ok", fresh, 0)

    def _seat_back(self, room: _Room, old: str, new: str, name: str, key: str, now: float) -> Outcome:
        """Seat ``old`` (its answers and rate limit) is ``new``'s now, under ``name``, present."""
        seat = room.seats.pop(old)
        del room.names[seat.key]
        seat.name, seat.key, seat.left, seat.seen_at = name, key, False, now
        room.seats[new] = seat
        room.names[key] = new
        self._touch(room, now)
        return ("ok", new, 1)

    def store_leave(self, code: str, seat: str) -> Outcome:
        with self._lock:
            now = self._clock()
            room = self._room(code, now)
            if room is None:
                return ("no_room",)
            s = room.seats.get(seat)
            if s is None:
                return ("no_seat",)
            s.left = True
            self._touch(room, now)
            return ("ok",)

    def store_poll(self, code: str, since: int) -> Outcome:
        with self._lock:
            room = self._room(code, self._clock())
            if room is None:
                return ("no_room",)
            return self._view(room, since)

    def store_seen(self, code: str, seat: str, since: int) -> Outcome:
        with self._lock:
            now = self._clock()
            room = self._room(code, now)
            if room is None:
                return ("no_room",)
            if _seen_seat(room, seat, now) is None:
                return ("no_seat",)
            return self._view(room, since)

    @staticmethod
    def _view(room: _Room, since: int) -> Outcome:
        if room.version == since:
            return ("same",)
        return ("ok", room.version, decode_view(room.view_json), set(room.revealed))

    def store_submit(self, code: str, seat: str, step: str, answer: str, correct: bool | None) -> Outcome:
        lim = self.limits
        with self._lock:
            now = self._clock()
            room = self._room(code, now)
            if room is None:
                return ("no_room",)
            s = _seen_seat(room, seat, now)
            if s is None:
                return ("no_seat",)
            # token bucket: refill since the last attempt, then spend one
            s.tokens = _refilled(s.tokens, now - s.tokens_at, lim.answer_burst, lim.answer_refill_s)
            s.tokens_at = now
            if s.tokens < 1.0:
                return ("rate", (1.0 - s.tokens) * lim.answer_refill_s)
            s.tokens -= 1.0
            if step in room.revealed:
                return ("revealed",)
            prev = s.answers.get(step)
            tally = room.tallies.get(step)
            if prev is None:
                if room.n_answers >= lim.max_answers:
                    return ("answers_full",)
                if tally is None and len(room.tallies) >= lim.max_questions:
                    return ("questions_full",)
            if tally is None:
                tally = room.tallies[step] = Counter()
            if prev is not None:
                tally[prev.answer] -= 1
                if tally[prev.answer] <= 0:
                    del tally[prev.answer]
                room.correct[step] -= prev.correct is True
            else:
                room.n_answers += 1
            tally[answer] += 1
            room.correct[step] += correct is True
            s.answers[step] = _Answer(answer=answer, correct=correct, at=now)
            self._touch(room, now)
            return ("ok",)

    def store_my_answers(self, code: str, seat: str) -> Outcome:
        with self._lock:
            room = self._room(code, self._clock())
            if room is None:
                return ("no_room",)
            s = room.seats.get(seat)
            if s is None:
                return ("no_seat",)
            return ("ok", {step: a.answer for step, a in s.answers.items()})
