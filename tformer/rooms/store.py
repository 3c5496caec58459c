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
an accepted answer. A student's `poll` and `my_answers` are reads and postpone nothing, so a
room left on a projector with nobody acting still ends.
"""

from __future__ import annotations

import math
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
    new_teacher_token,
    normalize_code,
    token_digest,
    token_matches,
)

__all__ = ["AnswerRow", "RoomStatus", "RoomStore", "RoomView", "Seat", "Tally", "TeacherTicket"]

# A storage outcome: a status word and its details, e.g. ("ok", 3) or ("rate", 1500).
Outcome = tuple[Any, ...]


@dataclass(frozen=True)
class TeacherTicket:
    """What opening a room gives the teacher. ``token`` is a secret: keep it in the teacher's
    session only; never put it in a link, a log or the page."""

    code: str  # normalized: ABCD2345 (show it with format_code: ABCD-2345)
    token: str = field(repr=False)


@dataclass(frozen=True)
class Seat:
    """A student's place in a room. ``seat_id`` lets its holder answer as this student: keep it
    in their session only (it also brings them back to this seat: `join(..., seat=seat_id)`)."""

    code: str
    seat_id: str = field(repr=False)
    name: str  # as cleaned and stored; escape it wherever it is shown


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
    present: int  # students in the room now (joined and not left)
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
    present: int
    answers: int
    questions: int  # questions with at least one answer
    revealed: frozenset[str]
    expires_in_s: float  # without activity, the room ends in this many seconds


def _sorted_counts(counts: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(((a, n) for a, n in counts.items() if n > 0), key=lambda an: (-an[1], an[0])))


class RoomStore(ABC):
    """Rooms of live classes. Thread-safe; every method may raise `RoomsUnavailable`.

    Codes may be given as typed (any case, with spaces or a dash); they come back normalized.
    """

    def __init__(self, limits: RoomLimits | None = None) -> None:
        self.limits = limits if limits is not None else RoomLimits()

    # --- the teacher ----------------------------------------------------------------------------

    def open_room(self) -> TeacherTicket:
        """A new room, empty, at version 0. Raises TooManyRooms.

        The join code is short enough to read off a projector and still not guessable in
        practice: 30**8 ≈ 6.6e11 codes for at most ``max_rooms`` open rooms, each guess a
        full script run, and a room lives only while used (the numbers: `tformer.rooms.rules`).
        The token (192 random bits) is what drives the room; the code only lets a student in.
        """
        for _ in range(16):  # a draw hits an open room's code with p <= 200 / 6.6e11
            code, token = new_code(), new_teacher_token()
            outcome = self.store_open(code, token_digest(token))
            if outcome[0] == "ok":
                return TeacherTicket(code=code, token=token)
            if outcome[0] == "too_many_rooms":
                raise TooManyRooms(E.TOO_MANY_ROOMS, n=self.limits.max_rooms)
        raise RuntimeError("16 join codes in a row were taken: the code generator is broken")

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
        )

    def close(self, code: str, token: str) -> None:
        """End the room: everything in it is deleted; its students are told it was closed."""
        c = self._teacher(code, token)
        self._raise_for(self.store_close(c), c)

    # --- the students ---------------------------------------------------------------------------

    def join(self, code: str, name: str, *, seat: str | None = None) -> Seat:
        """Take a seat in the room under a display name (unique in the room, ignoring case).

        With ``seat`` (from an earlier join of this room), come back to that seat and its
        answers, under ``name`` (which may change); an unknown seat gets a new one. Raises
        RoomNotFound, RoomFull, NameTaken, InvalidInput."""
        c = normalize_code(code)
        cleaned = clean_name(name, self.limits)
        resume = check_seat(seat) if seat is not None else ""
        outcome = self._raise_for(self.store_join(c, cleaned, name_key(cleaned), resume, new_seat()), c)
        return Seat(code=c, seat_id=str(outcome[1]), name=cleaned)

    def leave(self, code: str, seat: str) -> None:
        """Leave the room: no longer counted present; the seat and its answers stay."""
        c = normalize_code(code)
        self._raise_for(self.store_leave(c, check_seat(seat)), c)

    def poll(self, code: str, since: int = -1) -> RoomView | None:
        """The room's view when its version is not ``since``, else None. Meant to be called
        about once a second by every student: when nothing changed it reads one small value.
        Raises RoomNotFound (RoomClosed) once the room is gone."""
        c = normalize_code(code)
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
    def store_open(self, code: str, digest: str) -> Outcome:
        """("ok",) | ("taken",) when the code is in use | ("too_many_rooms",)"""

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
        """("ok", seat) | ("full",) | ("name_taken", name). ``resume``: a seat to come back to
        ("" for none); ``fresh``: the id a new seat gets."""

    @abstractmethod
    def store_leave(self, code: str, seat: str) -> Outcome:
        """("ok",) | ("no_seat",)"""

    @abstractmethod
    def store_poll(self, code: str, since: int) -> Outcome:
        """("same",) when the version is ``since`` | ("ok", version, params, revealed steps)"""

    @abstractmethod
    def store_submit(self, code: str, seat: str, step: str, answer: str, correct: bool | None) -> Outcome:
        """("ok",) | ("no_seat",) | ("rate", seconds to wait) | ("revealed",) | ("answers_full",)
        | ("questions_full",). Order: seat, tokens, revealed, limits."""

    @abstractmethod
    def store_my_answers(self, code: str, seat: str) -> Outcome:
        """("ok", {step: answer}) | ("no_seat",)"""
