"""Every bound of the room store, in one place.

A room is opened by a teacher and joined by strangers, so everything a student can send is
bounded before anything is stored: a lecture hall of a few hundred students, a lesson of a few
dozen questions, a view no larger than a share link. `RoomLimits` holds them with the reason
for each default; the stores take one (tests pass small ones) and every refusal names the
bound it hit.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields

__all__ = [
    "CODE_ALPHABET",
    "CODE_LENGTH",
    "IDLE_MINUTES_ENV",
    "JOIN_PARAM",
    "MAX_LINK_CHARS",
    "REDIS_URL_ENV",
    "SEAT_BYTES",
    "TEACHER_KEY_LENGTH",
    "TEACHER_TOKEN_BYTES",
    "RoomLimits",
    "limits_from_env",
]

# Join codes: no 0/O, 1/I/L or U (read aloud or off a projector, they are confused), so a code
# typed in any case with spaces or dashes still matches. 30 ** 8 ≈ 6.6e11 codes.
CODE_ALPHABET = "23456789ABCDEFGHJKMNPQRSTVWXYZ"
CODE_LENGTH = 8
TEACHER_TOKEN_BYTES = 24  # 192 random bits: a bearer secret, never shown to students
# The teacher key takes a room back after a reload: typed by hand, so drawn from the code's
# alphabet and shown in groups of four; 30 ** 12 ≈ 5.3e17 keys (59 bits), and wrong keys are
# rate-limited per room (RoomLimits.key_tries).
TEACHER_KEY_LENGTH = 12
SEAT_BYTES = 18  # a student's seat id is their secret too (it lets its holder answer as them)
JOIN_PARAM = "room"  # the join link's query parameter: https://host/?room=ABCD-2345
MAX_LINK_CHARS = 1024  # a longer join link would need a QR code too dense to read off a screen

REDIS_URL_ENV = "TFORMER_REDIS_URL"
IDLE_MINUTES_ENV = "TFORMER_ROOM_IDLE_MINUTES"


@dataclass(frozen=True)
class RoomLimits:
    """The bounds of one store. Defaults fit a lecture hall of 300 and a long lesson."""

    # A room nobody acted in for this long is gone: a lecture with a break, not a semester.
    idle_s: float = 3 * 3600.0
    # Rooms open at once in one store (one store serves every replica of a deployment).
    max_rooms: int = 200
    # Seats per room; a student who leaves keeps their seat (and answers) to come back to.
    max_students: int = 500
    # Present: a seat whose screen polled the room within this long. An open tab polls every
    # second; 12 s rides out a busy server's slow polls (p95 1.6 s with 100 students on one
    # replica) and still drops a closed tab or a sleeping phone within a breath of the lecture.
    present_s: float = 12.0
    # A poll records its seat's last-seen time at most this often (per seat), so three idle
    # polls in four stay a single read; at most half of present_s, so a polling seat never
    # looks absent between two records.
    seen_every_s: float = 4.0
    # Answers kept per room (one per student and question): 500 students x 40 questions.
    max_answers: int = 20_000
    # Distinct question ids with answers or a reveal, per room.
    max_questions: int = 64
    # Token bucket per student: a burst of this many answers, then one per refill period.
    answer_burst: int = 5
    answer_refill_s: float = 2.0
    # Tries of a room's teacher key: a burst of this many wrong keys, then one per refill
    # period (a right key spends none). Typos pass; guessing 59 bits does not.
    key_tries: int = 5
    key_refill_s: float = 10.0
    # Text a student types: a display name and a short answer (a choice, a number, a word).
    max_name_chars: int = 40
    max_answer_chars: int = 200
    max_step_chars: int = 64
    # The teacher's view: share-link parameters (98 exist today; three texts of 20,000 chars).
    max_view_params: int = 128
    max_view_key_chars: int = 64
    max_view_bytes: int = 256 * 1024
    # How long students of a closed room are told that it was closed (not "no such room").
    closed_notice_s: float = 3600.0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"RoomLimits.{f.name}={value!r} is not a number")
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"RoomLimits.{f.name}={value!r} must be a positive finite number")
        if self.answer_burst < 1:
            raise ValueError(f"RoomLimits.answer_burst={self.answer_burst} must allow one answer")
        if self.key_tries < 1:
            raise ValueError(f"RoomLimits.key_tries={self.key_tries} must allow one try")
        if self.seen_every_s > self.present_s / 2:
            raise ValueError(
                f"RoomLimits.seen_every_s={self.seen_every_s} is over half of present_s={self.present_s}: "
                "a seat polling all along would look absent between two records"
            )


def limits_from_env(env: Mapping[str, str] | None = None) -> RoomLimits:
    """The default limits, with the idle time from ``TFORMER_ROOM_IDLE_MINUTES`` when set.

    Raises ValueError naming the variable when its value is not a number of minutes in
    1..1440 (a day).
    """
    env = os.environ if env is None else env
    raw = env.get(IDLE_MINUTES_ENV, "").strip()
    if not raw:
        return RoomLimits()
    try:
        minutes = float(raw)
    except ValueError:
        minutes = math.nan
    if not (1 <= minutes <= 1440):
        raise ValueError(f"{IDLE_MINUTES_ENV}={raw[:20]!r} is not a number of minutes from 1 to 1440")
    return RoomLimits(idle_s=minutes * 60.0)
