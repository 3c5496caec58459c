"""What the room store refuses, and why, in words a student or teacher can act on.

Every refusal is a `RoomError` subclass whose message is made with `tformer.i18n.tr` from one
of the templates below, so the app can show it as it is (escaped: it may quote a display name)
in the session's language. `MESSAGES` lists every template, for the translation catalog.
"""

from __future__ import annotations

from ..i18n import tr

__all__ = [
    "MESSAGES",
    "AnswersClosed",
    "InvalidInput",
    "NameTaken",
    "NotInRoom",
    "NotTeacher",
    "RateLimited",
    "RoomClosed",
    "RoomError",
    "RoomFull",
    "RoomLimitReached",
    "RoomNotFound",
    "RoomsUnavailable",
    "TooManyRooms",
]

ROOM_NOT_FOUND = (
    "No open room has the code {code}: the code is wrong, or the room ended after "
    "{minutes} min without activity."
)
ROOM_CLOSED = "Room {code} was closed by its teacher."
NOT_TEACHER = "Only the teacher who opened room {code} can do that."
NOT_IN_ROOM = "You are not in room {code} (or you left it): join it again with its code."
ROOM_FULL = "Room {code} is full: it holds at most {n} students."
TOO_MANY_ROOMS = (
    "No room can be opened now: this server holds at most {n} open rooms. "
    "Close a room or wait until one expires."
)
NAME_TAKEN = "Someone in room {code} already uses the name “{name}”: pick another one."
NAME_IN_USE = (
    "Someone in room {code} is using the name “{name}” now: pick another one. If it is yours (from "
    "before a reload, or open in another tab: close that one), join again in {seconds} s: a name is "
    "free once its screen has been away for {away} s."
)
NAME_EMPTY = "Type a display name: it cannot be empty."
NAME_TOO_LONG = "The display name is too long: at most {n} characters."
ANSWER_EMPTY = "The answer is empty."
ANSWER_TOO_LONG = "The answer is too long: at most {n} characters."
BAD_CODE = "“{code}” is not a join code: a code has {n} letters and digits, like {example}."
BAD_STEP = "“{step}” is not a question id: 1 to {n} letters, digits and . _ : -"
BAD_SEAT = "That seat id is not valid."
BAD_KEY = "That is not a teacher key: a key has {n} letters and digits, like {example}."
WRONG_KEY = "That is not the teacher key of room {code}."
KEY_RATE_LIMITED = "Too many wrong teacher keys for room {code}: wait {seconds} s, then try again."
VIEW_TOO_MANY = "The view has {count} settings; a room shares at most {n}."
VIEW_BAD_KEY = "“{key}” is not a view setting name: 1 to {n} letters, digits and . _ -"
VIEW_NOT_TEXT = "The view setting “{key}” must be text."
VIEW_TOO_BIG = "The view takes {size} KiB; a room shares at most {n} KiB: shorten the text."
RATE_LIMITED = "Too many answers at once: wait {seconds} s, then send it again."
ANSWERS_CLOSED = "The answer to question {step} has been revealed: answers to it are closed."
ROOM_ANSWERS_FULL = "Room {code} holds {n} answers, its limit: no more answers are taken."
TOO_MANY_QUESTIONS = "Room {code} has answers to {n} questions, its limit: no new question is taken."
UNAVAILABLE = (
    "Rooms are unavailable: the room store at {where} cannot be reached ({reason}). "
    "Everything else works as usual."
)
BAD_CONFIG = "Rooms are unavailable: {reason}. Everything else works as usual."
LINK_TOO_LONG = "The join link has {n} characters; a QR code of it holds at most {max}."

MESSAGES: tuple[str, ...] = (
    ROOM_NOT_FOUND,
    ROOM_CLOSED,
    NOT_TEACHER,
    NOT_IN_ROOM,
    ROOM_FULL,
    TOO_MANY_ROOMS,
    NAME_TAKEN,
    NAME_IN_USE,
    NAME_EMPTY,
    NAME_TOO_LONG,
    ANSWER_EMPTY,
    ANSWER_TOO_LONG,
    BAD_CODE,
    BAD_STEP,
    BAD_SEAT,
    BAD_KEY,
    WRONG_KEY,
    KEY_RATE_LIMITED,
    VIEW_TOO_MANY,
    VIEW_BAD_KEY,
    VIEW_NOT_TEXT,
    VIEW_TOO_BIG,
    RATE_LIMITED,
    ANSWERS_CLOSED,
    ROOM_ANSWERS_FULL,
    TOO_MANY_QUESTIONS,
    UNAVAILABLE,
    BAD_CONFIG,
    LINK_TOO_LONG,
)


class RoomError(Exception):
    """A refusal of the room store. ``template`` and ``values`` are kept so a caller can say it
    again in another language: ``tr(err.template, **err.values)``."""

    def __init__(self, template: str, /, **values: object) -> None:
        self.template = template
        self.values = values
        super().__init__(tr(template, **values))


class RoomsUnavailable(RoomError):
    """The store cannot be used (Redis down, a bad setting): the app runs on without rooms."""


class RoomNotFound(RoomError):
    """No open room has that code: mistyped, expired, or never opened."""


class RoomClosed(RoomNotFound):
    """The room's teacher closed it (said for a while after, instead of "no such room")."""


class NotTeacher(RoomError):
    """A teacher's action without the room's teacher token (or a wrong teacher key)."""


class NotInRoom(RoomError):
    """A student's action with a seat that is not (or no longer) in the room."""


class RoomFull(RoomError):
    """The room holds its maximum number of students."""


class TooManyRooms(RoomError):
    """The store holds its maximum number of open rooms."""


class NameTaken(RoomError):
    """Another student of the room has that display name (compared case-insensitively) and is
    present, or it is another seat's name when coming back to one's own seat."""


class InvalidInput(RoomError, ValueError):
    """A name, answer, code, question id or view that breaks a bound or a format."""


class RateLimited(RoomError):
    """A student sent answers faster than their token bucket refills, or a room's teacher key
    was tried wrong too often."""

    def __init__(self, template: str, /, *, retry_after_s: float, **values: object) -> None:
        self.retry_after_s = retry_after_s
        super().__init__(template, **values)


class AnswersClosed(RoomError):
    """The question's answer was revealed: its answers are final."""


class RoomLimitReached(RoomError):
    """The room holds its maximum number of answers or questions."""
