"""Live class rooms: the teacher's screen drives, students follow and answer.

No Streamlit here: the app's teacher and student views call this API. Importing this package
loads neither redis nor segno (each is imported when first needed), and ``import tformer``
does not load this package.

    store = room_store()                       # memory, or Redis with TFORMER_REDIS_URL
    ticket = store.open_room()                 # ticket.code for the class, ticket.token secret
    store.publish(ticket.code, ticket.token, {"page": "attention", "layer": "2"})
    seat = store.join("abcd-2345", "Mei")      # a student
    view = store.poll(seat.code, since=0, seat=seat.seat_id)  # None while unchanged; seen
    again = store.reclaim(ticket.code, ticket.key)  # after a reload: a new token, same room
    store.submit(seat.code, seat.seat_id, "basics:3", "B", correct=True)
    store.tally(ticket.code, ticket.token, "basics:3").counts   # (("B", 1),)
"""

from __future__ import annotations

from .errors import (
    MESSAGES,
    AnswersClosed,
    InvalidInput,
    NameTaken,
    NotInRoom,
    NotTeacher,
    RateLimited,
    RoomClosed,
    RoomError,
    RoomFull,
    RoomLimitReached,
    RoomNotFound,
    RoomsUnavailable,
    TooManyRooms,
)
from .export import CSV_HEADER, answers_csv, csv_cell
from .factory import RETRY_S, forget_room_stores, room_store
from .limits import IDLE_MINUTES_ENV, JOIN_PARAM, REDIS_URL_ENV, RoomLimits, limits_from_env
from .memory import MemoryRoomStore
from .qr import join_link, join_qr, qr_matrix
from .redis_store import RedisRoomStore, redact_url
from .rules import format_code, format_key, normalize_code, normalize_key
from .store import AnswerRow, RoomStatus, RoomStore, RoomView, Seat, Tally, TeacherTicket

__all__ = [
    "CSV_HEADER",
    "IDLE_MINUTES_ENV",
    "JOIN_PARAM",
    "MESSAGES",
    "REDIS_URL_ENV",
    "RETRY_S",
    "AnswerRow",
    "AnswersClosed",
    "InvalidInput",
    "MemoryRoomStore",
    "NameTaken",
    "NotInRoom",
    "NotTeacher",
    "RateLimited",
    "RedisRoomStore",
    "RoomClosed",
    "RoomError",
    "RoomFull",
    "RoomLimitReached",
    "RoomLimits",
    "RoomNotFound",
    "RoomStatus",
    "RoomStore",
    "RoomView",
    "RoomsUnavailable",
    "Seat",
    "Tally",
    "TeacherTicket",
    "TooManyRooms",
    "answers_csv",
    "csv_cell",
    "forget_room_stores",
    "format_code",
    "format_key",
    "join_link",
    "join_qr",
    "limits_from_env",
    "normalize_code",
    "normalize_key",
    "qr_matrix",
    "redact_url",
    "room_store",
]
