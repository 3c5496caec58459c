"""The room store's interface: what a teacher and the students of a live class can do.

A teacher opens a room and gets a `TeacherTicket`: the join code students type (or read off the
QR code) and a secret token that only the teacher's browser session holds. Every teacher action
takes the token; students act with the seat id they got when joining. The teacher publishes
the current view (share-link parameters); students poll it cheaply about once a second and
follow it. Students answer the lesson's questions; the teacher sees how many answered and how
the answers split (no names), reveals a question's answer, and downloads every answer.

`RoomStore` does the checking that does not need storage (formats, sizes, the token compare)
and maps each storage outcome to one exception, so its two implementations, in process
(`MemoryRoomStore`) and Redis (`RedisRoomStore`), refuse alike; the tests run one suite on both.

Activity, which postpones a room's idle expiry: opening it, every teacher action (reads of the
tally, the answers and the status included: the teacher's screen polls them), a join, a leave,
an accepted answer. A student's `poll` and `my_answers` postpone nothing, so a room left on a
projector with nobody acting still ends.

Presence: a seat is present while its screen polls the room (within ``present_s``, 12 s). A
student's poll names its seat, and the store records when it last saw that seat at most once
every ``seen_every_s`` (4 s) per seat, deciding here, in the process that serves the student's
session: three idle polls in four stay a single read. A join, an answer and a recorded poll
count as seen; leaving ends presence at once.

Coming back: a join under a name whose seat is not present takes that seat over (its answers
and rate limit kept) under a fresh seat id, so a student who reloaded the page (a new session,
the seat id lost) is back where they were; the old id stops working, so two sessions never
share a seat. A name whose seat is present is refused. A teacher whose session was lost takes
the room back with the teacher key (`reclaim`): a new token for the new session, the old one
drives the room no more.
"""

from __future__ import annotations

import math
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import errors as E
from .errors import (
    AnswersClosed,
    NameTaken,
    NotInRoom,
    NotTeacher,
    RateLimited,
    RoomClosed,
    RoomFull,
    RoomLimitReached,
    RoomNotFound,
    TooManyRooms,
)
from .limits import RoomLimits
from .rules import (
    check_seat,
    check_step,
    clean_answer,
    clean_name,
    encode_view,
    format_code,
    name_key,
    new_code,
    new_seat,
    new_teacher_key,
    new_teacher_token,
    normalize_code,
    normalize_key,
    token_digest,
    token_matches,
)

__all__ = ["AnswerRow", "RoomStatus", "RoomStore", "RoomView", "Seat", "Tally", "TeacherTicket"]

# A storage outcome: a status word and its details, e.g. ("ok", 3) or ("rate", 1500).
Outcome = tuple[Any, ...]
# The polls a store remembers recording (`RoomStore._due`): past this many, those older than
# seen_every_s are dropped (they would be recorded at their next poll anyway).
_SEEN_ENTRIES = 4096


@dataclass(frozen=True)
class TeacherTicket:
    """What opening a room gives the teacher. ``token`` and ``key`` are secrets: keep them in
    the teacher's session only; never put them in a link, a log or the published view.
    ``token`` drives the room from this session; ``key`` (shown to the teacher on demand,
    `format_key`) takes the room back from a new session (`RoomStore.reclaim`)."""

    code: str  # normalized: ABCD2345 (show it with format_code: ABCD-2345)
    token: str = field(repr=False)
    key: str = field(repr=False)  # normalized: 12 characters (show it with format_key)


@dataclass(frozen=True)
class Seat:
    """A student's place in a room. ``seat_id`` lets its holder answer as this student: keep it
    in their session only (it also brings them back to this seat: `join(..., seat=seat_id)`)."""

    code: str
    seat_id: str = field(repr=False)
    name: str  # as cleaned and stored; escape it wherever it is shown
    back: bool = False  # this join took back an earlier seat of the name: its answers are kept


@dataclass(frozen=True)
class RoomView:
    """What a student follows: the teacher's share-link parameters, and the revealed questions.

    ``version`` grows by one with every change a student sees (a new view, a reveal), so a
    poller compares one integer. Version 0 is a room whose teacher published nothing yet."""

    code: str
    version: int
    params: dict[str, str]
    revealed: frozenset[str]


@dataclass(frozen=True)
class Tally:
    """The answers to one question, for the projected screen: counts only, no names."""

    step: str
    present: int  # students whose screen polled the room in the last present_s seconds
    answered: int  # students with an answer to this question
    correct: int  # of those, answers the app marked correct
    counts: tuple[tuple[str, int], ...]  # (answer, how many), most frequent first
    revealed: bool


@dataclass(frozen=True)
class AnswerRow:
    """One answer, for the teacher's download (`tformer.rooms.answers_csv`)."""

    name: str
    step: str
    answer: str
    correct: bool | None  # None: the app did not say
    at: float  # when it was (last) sent, Unix seconds


@dataclass(frozen=True)
class RoomStatus:
    code: str
    version: int
    students: int  # seats taken (a student who left keeps theirs)
    present: int  # of those, seats whose screen polled the room in the last present_s seconds
    answers: int
    questions: int  # questions with at least one answer
    revealed: frozenset[str]
    expires_in_s: float  # without activity, the room ends in this many seconds
    present_s: float  # the store's window of presence (RoomLimits.present_s)


def _sorted_counts(counts: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(((a, n) for a, n in counts.items() if n > 0), key=lambda an: (-an[1], an[0])))


class RoomStore(ABC):
    """Rooms of live classes. Thread-safe; every method may raise `RoomsUnavailable`.

    Codes may be given as typed (any case, with spaces or a dash); they come back normalized.
    """

    def __init__(self, limits: RoomLimits | None = None) -> None:
        self.limits = limits if limits is not None else RoomLimits()
        self._seen_lock = threading.Lock()
        self._seen: dict[tuple[str, str], float] = {}  # (code, seat) -> when a poll recorded it

    def seen_clock(self) -> float:
        """Seconds, for `_due`: when this process last had a seat recorded (monotonic)."""
        return time.monotonic()

    # --- the teacher ----------------------------------------------------------------------------

    def open_room(self) -> TeacherTicket:
        """A new room, empty, at version 0. Raises TooManyRooms.

        The join code is short enough to read off a projector and still not guessable in
        practice: 30**8 ≈ 6.6e11 codes for at most ``max_rooms`` open rooms, each guess a
        full script run, and a room lives only while used (the numbers: `tformer.rooms.rules`).
        The token (192 random bits) is what drives the room; the code only lets a student in.
        """
        for _ in range(16):  # a draw hits an open room's code with p <= 200 / 6.6e11
            code, token, key = new_code(), new_teacher_token(), new_teacher_key()
            outcome = self.store_open(code, token_digest(token), token_digest(key))
            if outcome[0] == "ok":
                return TeacherTicket(code=code, token=token, key=key)
            if outcome[0] == "too_many_rooms":
                raise TooManyRooms(E.TOO_MANY_ROOMS, n=self.limits.max_rooms)
        raise RuntimeError("16 join codes in a row were taken: the code generator is broken")

    def reclaim(self, code: str, key: str) -> TeacherTicket:
        """Take room ``code`` back with its teacher key, from a new session (the teacher's page
        was reloaded): returns a ticket with a new token; the old token drives the room no more.
        Each try spends one of the room's key tries, given back when the key is right, so only
        wrong keys are limited. Raises InvalidInput (not a key's form), RoomNotFound, RateLimited
        (too many wrong keys lately), NotTeacher (a wrong key). No message repeats the key."""
        c = normalize_code(code)
        k = normalize_key(key)
        outcome = self.store_key_try(c)
        if outcome[0] == "rate":
            wait_s = max(float(outcome[1]), 0.0)
            raise RateLimited(
                E.KEY_RATE_LIMITED,
                retry_after_s=wait_s,
                code=format_code(c),
                seconds=max(1, math.ceil(wait_s)),
            )
        if not token_matches(k, self._raise_for(outcome, c)[1]):
            raise NotTeacher(E.WRONG_KEY, code=format_code(c))
        token = new_teacher_token()
        self._raise_for(self.store_reclaim(c, token_digest(token)), c)
        return TeacherTicket(code=c, token=token, key=k)

    def check_teacher(self, code: str, token: str) -> str:
        """The normalized code when ``token`` is the room's teacher token; counts as activity.
        Raises RoomNotFound (or RoomClosed) and NotTeacher."""
        c = self._teacher(code, token)
        self._raise_for(self.store_touch(c), c)
        return c

    def publish(self, code: str, token: str, params: Mapping[str, str]) -> int:
        """Make ``params`` the view students follow; returns the version. Publishing the view
        already published changes nothing (same version), so a page may call it every run."""
        text = encode_view(params, self.limits)
        c = self._teacher(code, token)
        return int(self._raise_for(self.store_publish(c, text), c)[1])

    def reveal(self, code: str, token: str, step: str) -> int:
        """Show question ``step``'s answer on every student's screen and close its answers;
        returns the version. Revealing twice changes nothing."""
        s = check_step(step, self.limits)
        c = self._teacher(code, token)
        return int(self._raise_for(self.store_reveal(c, s), c)[1])

    def tally(self, code: str, token: str, step: str) -> Tally:
        """How many answered question ``step`` and how the answers split (no names)."""
        s = check_step(step, self.limits)
        c = self._teacher(code, token)
        _, present, counts, correct, revealed = self._raise_for(self.store_tally(c, s), c)
        return Tally(
            step=s,
            present=int(present),
            answered=sum(counts.values()),
            correct=int(correct),
            counts=_sorted_counts(counts),
            revealed=bool(revealed),
        )

    def answers(self, code: str, token: str) -> list[AnswerRow]:
        """Every answer of the room, by question id, then name (for `answers_csv`)."""
        c = self._teacher(code, token)
        rows: list[AnswerRow] = self._raise_for(self.store_rows(c), c)[1]
        return sorted(rows, key=lambda r: (r.step, r.name.casefold(), r.name))

    def status(self, code: str, token: str) -> RoomStatus:
        c = self._teacher(code, token)
        _, version, students, present, answers, questions, revealed, left_s = self._raise_for(
            self.store_status(c), c
        )
        return RoomStatus(
            code=c,
            version=int(version),
            students=int(students),
            present=int(present),
            answers=int(answers),
            questions=int(questions),
            revealed=frozenset(revealed),
            expires_in_s=float(left_s),
            present_s=self.limits.present_s,
        )

    def close(self, code: str, token: str) -> None:
        """End the room: everything in it is deleted; its students are told it was closed."""
        c = self._teacher(code, token)
        self._raise_for(self.store_close(c), c)

    # --- the students ---------------------------------------------------------------------------

    def join(self, code: str, name: str, *, seat: str | None = None) -> Seat:
        """Take a seat in the room under a display name (unique in the room, ignoring case).

        A name whose seat is not present (its screen has not polled for ``present_s``, or its
        student left) is taken back: the join gets that seat, its answers and its rate limit,
        under a fresh seat id (``back`` is True). A name whose seat is present is refused.
        With ``seat`` (from an earlier join of this room, in the same session), come back to
        that seat and its answers, under ``name`` (which may change; another seat's name is
        refused); an unknown seat gets a new one. Raises RoomNotFound, RoomFull, NameTaken,
        InvalidInput."""
        c = normalize_code(code)
        cleaned = clean_name(name, self.limits)
        resume = check_seat(seat) if seat is not None else ""
        outcome = self._raise_for(self.store_join(c, cleaned, name_key(cleaned), resume, new_seat()), c)
        seat_id = str(outcome[1])
        self._recorded(c, seat_id, self.seen_clock())
        return Seat(code=c, seat_id=seat_id, name=cleaned, back=bool(outcome[2]))

    def leave(self, code: str, seat: str) -> None:
        """Leave the room: no longer present; the seat and its answers stay (a join under its
        name takes them back)."""
        c = normalize_code(code)
        self._raise_for(self.store_leave(c, check_seat(seat)), c)

    def poll(self, code: str, since: int = -1, *, seat: str | None = None) -> RoomView | None:
        """The room's view when its version is not ``since``, else None. Meant to be called
        about once a second by every student: when nothing changed it reads one small value.

        With ``seat``, the student's screen is seen: the seat is recorded present, at most once
        every ``seen_every_s`` per seat (three polls in four stay the one read). A recording
        poll of a seat that is no longer the room's (it left, or a join under its name took it
        over while this screen was away) raises NotInRoom. Raises RoomNotFound (RoomClosed) once
        the room is gone."""
        c = normalize_code(code)
        if seat is not None and self._due(c, check_seat(seat)):
            outcome = self._raise_for(self.store_seen(c, seat, int(since)), c)
        else:
            outcome = self._raise_for(self.store_poll(c, int(since)), c)
        if outcome[0] == "same":
            return None
        _, version, params, revealed = outcome
        return RoomView(code=c, version=int(version), params=params, revealed=frozenset(revealed))

    def view(self, code: str) -> RoomView:
        """The room's current view."""
        got = self.poll(code, -1)
        assert got is not None  # no version is -1
        return got

    def submit(self, code: str, seat: str, step: str, answer: str, *, correct: bool | None = None) -> None:
        """Answer question ``step``. A later answer to the same question replaces the earlier
        one until the teacher reveals it; then answers to it are refused (AnswersClosed).

        ``correct`` is the app's verdict, computed on the server from the lesson (never taken
        from the browser). Each attempt spends one of the student's tokens (RateLimited when
        none is left). Raises NotInRoom, RoomLimitReached, InvalidInput too."""
        c = normalize_code(code)
        s = check_seat(seat)
        st = check_step(step, self.limits)
        a = clean_answer(answer, self.limits)
        if correct is not None and not isinstance(correct, bool):
            raise TypeError(f"correct is a bool or None, not {type(correct).__name__}")
        self._raise_for(self.store_submit(c, s, st, a, correct), c, step=st)

    def my_answers(self, code: str, seat: str) -> dict[str, str]:
        """This student's current answers, by question id."""
        c = normalize_code(code)
        return dict(self._raise_for(self.store_my_answers(c, check_seat(seat)), c)[1])

    # --- shared checks --------------------------------------------------------------------------

    def _due(self, code: str, seat: str) -> bool:
        """Whether a poll of ``seat`` is to record it now (none did for ``seen_every_s``); if so,
        it counts as recorded from now. A Streamlit session lives in one process, so deciding
        here (not in the store) holds per student, whichever replica serves them."""
        now = self.seen_clock()
        with self._seen_lock:
            last = self._seen.get((code, seat))
            if last is not None and now - last < self.limits.seen_every_s:
                return False
        self._recorded(code, seat, now)
        return True

    def _recorded(self, code: str, seat: str, now: float) -> None:
        with self._seen_lock:
            if len(self._seen) >= _SEEN_ENTRIES:
                fresh = now - self.limits.seen_every_s
                self._seen = {k: t for k, t in self._seen.items() if t > fresh}
            self._seen[(code, seat)] = now

    def _teacher(self, code: str, token: str) -> str:
        c = normalize_code(code)
        outcome = self._raise_for(self.store_digest(c), c)
        if not token_matches(token, outcome[1]):
            raise NotTeacher(E.NOT_TEACHER, code=format_code(c))
        return c

    def _raise_for(self, outcome: Outcome, code: str, step: str = "") -> Outcome:
        """``outcome`` when it is "ok" or "same"; else the exception it stands for."""
        status = outcome[0]
        if status in ("ok", "same"):
            return outcome
        shown = format_code(code)
        if status == "no_room":
            if self.store_was_closed(code):
                raise RoomClosed(E.ROOM_CLOSED, code=shown)
            raise RoomNotFound(E.ROOM_NOT_FOUND, code=shown, minutes=math.ceil(self.limits.idle_s / 60))
        if status == "no_seat":
            raise NotInRoom(E.NOT_IN_ROOM, code=shown)
        if status == "full":
            raise RoomFull(E.ROOM_FULL, code=shown, n=self.limits.max_students)
        if status == "name_taken":
            raise NameTaken(E.NAME_TAKEN, code=shown, name=outcome[1])
        if status == "name_in_use":
            raise NameTaken(
                E.NAME_IN_USE,
                code=shown,
                name=outcome[1],
                seconds=max(1, math.ceil(float(outcome[2]))),
                away=f"{self.limits.present_s:g}",
            )
        if status == "rate":
            wait_s = max(float(outcome[1]), 0.0)
            raise RateLimited(E.RATE_LIMITED, retry_after_s=wait_s, seconds=f"{max(wait_s, 0.1):.1f}")
        if status == "revealed":
            raise AnswersClosed(E.ANSWERS_CLOSED, step=step)
        if status == "answers_full":
            raise RoomLimitReached(E.ROOM_ANSWERS_FULL, code=shown, n=self.limits.max_answers)
        if status == "questions_full":
            raise RoomLimitReached(E.TOO_MANY_QUESTIONS, code=shown, n=self.limits.max_questions)
        raise RuntimeError(f"unknown room store outcome {outcome!r}")

    # --- storage: each returns an Outcome; "no_room" when the room does not exist -----------------

    @abstractmethod
    def store_open(self, code: str, digest: str, key_digest: str) -> Outcome:
        """("ok",) | ("taken",) when the code is in use | ("too_many_rooms",). ``digest``: the
        teacher token's; ``key_digest``: the teacher key's."""

    @abstractmethod
    def store_key_try(self, code: str) -> Outcome:
        """("ok", teacher key digest), one key try spent | ("rate", seconds to wait) when none
        is left (``key_tries``, refilled one per ``key_refill_s``)."""

    @abstractmethod
    def store_reclaim(self, code: str, digest: str) -> Outcome:
        """("ok",): ``digest`` is the teacher token's now; the key try is given back; activity."""

    @abstractmethod
    def store_was_closed(self, code: str) -> bool:
        """Whether the room was closed by its teacher lately (``closed_notice_s``)."""

    @abstractmethod
    def store_digest(self, code: str) -> Outcome:
        """("ok", teacher token digest)"""

    @abstractmethod
    def store_touch(self, code: str) -> Outcome:
        """("ok",): activity, the idle clock starts again."""

    @abstractmethod
    def store_publish(self, code: str, view_json: str) -> Outcome:
        """("ok", version) | ("same", version) when the view is unchanged (still activity)"""

    @abstractmethod
    def store_reveal(self, code: str, step: str) -> Outcome:
        """("ok", version) | ("same", version) | ("questions_full",)"""

    @abstractmethod
    def store_tally(self, code: str, step: str) -> Outcome:
        """("ok", present, {answer: count}, correct count, revealed)"""

    @abstractmethod
    def store_rows(self, code: str) -> Outcome:
        """("ok", [AnswerRow, ...])"""

    @abstractmethod
    def store_status(self, code: str) -> Outcome:
        """("ok", version, students, present, answers, questions, revealed steps, seconds left)"""

    @abstractmethod
    def store_close(self, code: str) -> Outcome:
        """("ok",): the room is deleted and marked closed."""

    @abstractmethod
    def store_join(self, code: str, name: str, key: str, resume: str, fresh: str) -> Outcome:
        """("ok", seat, back) | ("full",) | ("name_in_use", name, seconds until the name's seat
        is no longer present) | ("name_taken", name) when resuming under another seat's name.
        ``resume``: a seat to come back to ("" for none); ``fresh``: the id a new seat gets, and
        a seat taken over by name. ``back``: 1 when an earlier seat was taken back, else 0. The
        seat is seen now."""

    @abstractmethod
    def store_leave(self, code: str, seat: str) -> Outcome:
        """("ok",) | ("no_seat",): the seat is no longer present."""

    @abstractmethod
    def store_poll(self, code: str, since: int) -> Outcome:
        """("same",) when the version is ``since`` | ("ok", version, params, revealed steps)"""

    @abstractmethod
    def store_seen(self, code: str, seat: str, since: int) -> Outcome:
        """`store_poll`'s outcomes, the seat seen now | ("no_seat",) when the seat is not the
        room's or has left (then nothing is recorded)."""

    @abstractmethod
    def store_submit(self, code: str, seat: str, step: str, answer: str, correct: bool | None) -> Outcome:
        """("ok",) | ("no_seat",) | ("rate", seconds to wait) | ("revealed",) | ("answers_full",)
        | ("questions_full",). Order: seat, tokens, revealed, limits. A seat that answers is
        seen."""

    @abstractmethod
    def store_my_answers(self, code: str, seat: str) -> Outcome:
        """("ok", {step: answer}) | ("no_seat",)"""
