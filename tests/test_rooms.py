"""Room logic, one suite run against both stores: in process and a real redis-server.

Time: the memory store's clock is moved by the test; the Redis store's TTLs and token buckets
run on Redis's clock, so its tests sleep (limits of a second or less keep that short).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace

import pytest

from tformer.rooms import (
    AnswersClosed,
    InvalidInput,
    MemoryRoomStore,
    NameTaken,
    NotInRoom,
    NotTeacher,
    RateLimited,
    RedisRoomStore,
    RoomClosed,
    RoomFull,
    RoomLimitReached,
    RoomLimits,
    RoomNotFound,
    RoomStore,
    TooManyRooms,
    format_code,
)
from tformer.rooms.limits import CODE_ALPHABET, CODE_LENGTH

from .redis_server import RedisServer

# Small enough to reach in a test, long enough that a loaded machine does not cross them
# between two calls that are meant to be on the same side.
IDLE_S = 2.0
REFILL_S = 1.0
LIMITS = RoomLimits(
    idle_s=IDLE_S,
    max_rooms=4,
    max_students=5,
    max_answers=8,
    max_questions=3,
    answer_burst=3,
    answer_refill_s=REFILL_S,
    max_name_chars=12,
    max_answer_chars=20,
    max_step_chars=16,
    max_view_params=6,
    max_view_key_chars=10,
    max_view_bytes=200,
    closed_notice_s=30,
)
# for tests about something else: no rate limit or idle expiry in the way
ROOMY = replace(LIMITS, idle_s=60, answer_burst=100, max_answers=100)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Rooms:
    """A store under test and a way to let time pass on its clock."""

    kind: str
    make: Callable[[RoomLimits], RoomStore]
    advance: Callable[[float], None]


@pytest.fixture(params=["memory", "redis"])
def rooms(request: pytest.FixtureRequest) -> Rooms:
    if request.param == "memory":
        clock = FakeClock()

        def advance(s: float) -> None:
            clock.now += s

        return Rooms("memory", lambda lim: MemoryRoomStore(lim, clock=clock), advance)
    server: RedisServer = request.getfixturevalue("redis_server")
    prefix = f"t{uuid.uuid4().hex[:10]}"  # each test its own key space in the one server
    return Rooms("redis", lambda lim: RedisRoomStore(server.url, lim, prefix=prefix), time.sleep)


@pytest.fixture
def store(rooms: Rooms) -> RoomStore:
    return rooms.make(LIMITS)


@pytest.fixture
def roomy(rooms: Rooms) -> RoomStore:
    return rooms.make(ROOMY)


# --- opening and joining ------------------------------------------------------------------------


def test_open_gives_a_short_code_and_a_long_secret(store: RoomStore):
    a, b = store.open_room(), store.open_room()
    assert a.code != b.code
    assert a.token != b.token
    assert len(a.code) == CODE_LENGTH
    assert set(a.code) <= set(CODE_ALPHABET)
    assert len(a.token) >= 32
    assert a.token not in repr(a)
    view = store.view(a.code)
    assert (view.version, view.params, view.revealed) == (0, {}, frozenset())
    assert format_code(a.code) == f"{a.code[:4]}-{a.code[4:]}"


def test_a_code_is_read_as_typed(store: RoomStore):
    t = store.open_room()
    typed = f"  {t.code[:4].lower()} - {t.code[4:]} "
    seat = store.join(typed, "Mei")
    assert seat.code == t.code
    assert seat.seat_id not in repr(seat)
    for bad in ("", "ABC", "ABCD-EFGO", "ABCD-EFG1", "<script>", "ABCD2345X"):
        with pytest.raises(InvalidInput, match="not a join code"):
            store.join(bad, "Mei")


def test_an_unknown_code_is_not_found(store: RoomStore):
    t = store.open_room()
    other = ("2" if t.code[0] != "2" else "3") + t.code[1:]
    with pytest.raises(RoomNotFound, match="No open room has the code"):
        store.join(other, "Mei")
    with pytest.raises(RoomNotFound):
        store.poll(other)


def test_display_names_are_cleaned_bounded_and_unique(store: RoomStore):
    t = store.open_room()
    # control characters, a right-to-left override, a zero-width space, runs of spaces: gone
    assert store.join(t.code, "  Li\x00\u202e \t\n Wei\u200b ").name == "Li Wei"
    # stored as given, not escaped: the views escape it when they show it
    assert store.join(t.code, "<b>x</b>&").name == "<b>x</b>&"
    assert store.join(t.code, "李雷 👩‍👩‍👧").name == "李雷 👩‍👩‍👧"  # ZWJ emoji kept whole
    assert store.join(t.code, "مريم").name == "مريم"
    for empty in ("", "   ", "\u202e\u200b", "\x07"):
        with pytest.raises(InvalidInput, match="cannot be empty"):
            store.join(t.code, empty)
    with pytest.raises(InvalidInput, match="at most 12 characters"):
        store.join(t.code, "x" * 13)
    with pytest.raises(InvalidInput, match="at most 12 characters"):
        store.join(t.code, "x" * 10_000_000)
    with pytest.raises(NameTaken, match="already uses the name “li wei”"):
        store.join(t.code, "li wei")
    with pytest.raises(NameTaken):
        store.join(t.code, "ＬＩ ＷＥＩ")  # full-width letters read the same


# --- following the teacher ----------------------------------------------------------------------


def test_students_follow_the_teachers_versions(store: RoomStore):
    t = store.open_room()
    seat = store.join(t.code, "Mei")
    assert store.poll(seat.code, since=0) is None  # nothing published yet
    v1 = store.publish(t.code, t.token, {"page": "attention", "text": "the cat <sat>", "layer": "2"})
    assert v1 == 1
    got = store.poll(seat.code, since=0)
    assert got is not None
    assert got.version == 1
    assert got.params == {"page": "attention", "text": "the cat <sat>", "layer": "2"}
    assert store.poll(seat.code, since=1) is None
    # the same view again (a page publishing on every run) is no new version
    assert store.publish(t.code, t.token, {"layer": "2", "text": "the cat <sat>", "page": "attention"}) == 1
    assert store.poll(seat.code, since=1) is None
    assert store.publish(t.code, t.token, {"page": "heads", "head": "5"}) == 2
    assert store.view(seat.code).params == {"page": "heads", "head": "5"}
    # a reveal is a change students see: a new version, the view kept
    assert store.reveal(t.code, t.token, "basics:1") == 3
    v = store.view(seat.code)
    assert (v.version, v.params, v.revealed) == (3, {"page": "heads", "head": "5"}, {"basics:1"})
    assert store.reveal(t.code, t.token, "basics:1") == 3


def test_the_view_is_bounded(store: RoomStore):
    t = store.open_room()
    with pytest.raises(InvalidInput, match="at most 6"):
        store.publish(t.code, t.token, {f"k{i}": "v" for i in range(7)})
    for key in ("", "has space", "x" * 11, "<script>", "ü"):
        with pytest.raises(InvalidInput, match="not a view setting name"):
            store.publish(t.code, t.token, {key: "v"})
    with pytest.raises(InvalidInput, match="must be text"):
        store.publish(t.code, t.token, {"layer": 2})  # type: ignore[dict-item]
    with pytest.raises(InvalidInput, match=r"at most 0 KiB|KiB"):
        store.publish(t.code, t.token, {"text": "字" * 100})  # 300 bytes of UTF-8 > 200
    with pytest.raises(InvalidInput, match="KiB"):
        store.publish(t.code, t.token, {"text": "x" * 10_000_000})
    assert store.view(t.code).version == 0  # nothing refused was published
    assert store.publish(t.code, t.token, {"text": "字" * 50}) == 1


def test_leave_and_return_to_the_same_seat(roomy: RoomStore):
    t = roomy.open_room()
    mei = roomy.join(t.code, "Mei")
    roomy.join(t.code, "Bo")
    roomy.submit(mei.code, mei.seat_id, "q1", "B")
    assert roomy.status(t.code, t.token).present == 2
    roomy.leave(mei.code, mei.seat_id)
    s = roomy.status(t.code, t.token)
    assert (s.students, s.present) == (2, 1)
    with pytest.raises(NotInRoom):
        roomy.submit(mei.code, mei.seat_id, "q1", "C")
    with pytest.raises(NameTaken):  # a seat that left keeps its name
        roomy.join(t.code, "mei")
    back = roomy.join(t.code, "Mei L.", seat=mei.seat_id)
    assert back.seat_id == mei.seat_id
    assert back.name == "Mei L."
    assert roomy.my_answers(back.code, back.seat_id) == {"q1": "B"}
    s = roomy.status(t.code, t.token)
    assert (s.students, s.present) == (2, 2)
    assert roomy.join(t.code, "Mei").name == "Mei"  # the old name is free again
    with pytest.raises(NameTaken):
        roomy.join(t.code, "bo", seat=mei.seat_id)
    # a seat from elsewhere is no way in to someone's answers: it gets a new seat
    other = roomy.join(t.code, "Ann", seat="A" * 24)
    assert other.seat_id != "A" * 24
    assert roomy.my_answers(t.code, other.seat_id) == {}
    with pytest.raises(InvalidInput):
        roomy.join(t.code, "Zed", seat="short")
    with pytest.raises(NotInRoom):
        roomy.leave(t.code, "B" * 24)


# --- the teacher's token ------------------------------------------------------------------------


def test_only_the_teacher_token_drives_the_room(store: RoomStore):
    t = store.open_room()
    other = store.open_room()
    seat = store.join(t.code, "Mei")
    store.submit(seat.code, seat.seat_id, "q1", "A")
    for wrong in ("", "x", seat.seat_id, other.token, t.token[:-1], t.token + "x", t.token.upper()):
        with pytest.raises(NotTeacher, match="Only the teacher"):
            store.publish(t.code, wrong, {"page": "heads"})
        with pytest.raises(NotTeacher):
            store.reveal(t.code, wrong, "q1")
        with pytest.raises(NotTeacher):
            store.tally(t.code, wrong, "q1")
        with pytest.raises(NotTeacher):
            store.answers(t.code, wrong)
        with pytest.raises(NotTeacher):
            store.status(t.code, wrong)
        with pytest.raises(NotTeacher):
            store.close(t.code, wrong)
        with pytest.raises(NotTeacher):
            store.check_teacher(t.code, wrong)
    with pytest.raises(NotTeacher):
        store.publish(t.code, None, {})  # type: ignore[arg-type]
    view = store.view(t.code)
    assert (view.version, view.revealed) == (0, frozenset())
    assert store.check_teacher(format_code(t.code).lower(), t.token) == t.code
    store.submit(seat.code, seat.seat_id, "q1", "B")  # not revealed: still open
    assert store.tally(t.code, t.token, "q1").counts == (("B", 1),)


def test_close_ends_the_room_for_everyone(store: RoomStore):
    t = store.open_room()
    seat = store.join(t.code, "Mei")
    store.close(t.code, t.token)
    for act in (
        lambda: store.poll(seat.code, 0),
        lambda: store.join(t.code, "Bo"),
        lambda: store.submit(seat.code, seat.seat_id, "q1", "A"),
        lambda: store.publish(t.code, t.token, {"page": "heads"}),
        lambda: store.close(t.code, t.token),
    ):
        with pytest.raises(RoomClosed, match="closed by its teacher"):
            act()


# --- idle expiry --------------------------------------------------------------------------------


def test_an_idle_room_expires_and_activity_postpones_it(rooms: Rooms):
    store = rooms.make(LIMITS)
    t = store.open_room()
    seat = store.join(t.code, "Mei")
    assert 0.5 * IDLE_S < store.status(t.code, t.token).expires_in_s <= IDLE_S
    rooms.advance(0.6 * IDLE_S)
    store.submit(seat.code, seat.seat_id, "q1", "A")  # activity
    rooms.advance(0.6 * IDLE_S)  # 1.2 idle periods since the open, 0.6 since the answer
    assert store.poll(seat.code, since=0) is None
    rooms.advance(0.6 * IDLE_S)  # polls are no activity: now 1.2 periods since the answer
    with pytest.raises(RoomNotFound, match="without activity") as err:
        store.poll(seat.code, since=0)
    assert not isinstance(err.value, RoomClosed)
    with pytest.raises(RoomNotFound):
        store.join(t.code, "Bo")
    with pytest.raises(RoomNotFound):
        store.status(t.code, t.token)


def test_the_teachers_screen_keeps_the_room_alive(rooms: Rooms):
    store = rooms.make(LIMITS)
    t = store.open_room()
    for _ in range(3):
        rooms.advance(0.6 * IDLE_S)
        store.tally(t.code, t.token, "q1")  # the projected tally polls this
    assert store.view(t.code).version == 0


# --- limits -------------------------------------------------------------------------------------


def test_a_room_holds_a_bounded_number_of_students(store: RoomStore):
    t = store.open_room()
    seats = [store.join(t.code, f"s{i}") for i in range(5)]
    store.leave(t.code, seats[0].seat_id)  # a seat that left still counts: it can come back
    with pytest.raises(RoomFull, match="at most 5 students"):
        store.join(t.code, "late")
    assert store.join(t.code, "s0 back", seat=seats[0].seat_id).seat_id == seats[0].seat_id


def test_a_store_holds_a_bounded_number_of_rooms(rooms: Rooms):
    store = rooms.make(LIMITS)
    tickets = [store.open_room() for _ in range(4)]
    with pytest.raises(TooManyRooms, match="at most 4 open rooms"):
        store.open_room()
    store.close(tickets[0].code, tickets[0].token)
    fresh = store.open_room()
    with pytest.raises(TooManyRooms):
        store.open_room()
    rooms.advance(0.6 * IDLE_S)
    for t in tickets[1:3]:
        store.check_teacher(t.code, t.token)  # activity in two rooms
    rooms.advance(0.6 * IDLE_S)  # the other two expired
    assert {store.open_room().code, store.open_room().code}.isdisjoint(
        {t.code for t in tickets} | {fresh.code}
    )
    with pytest.raises(TooManyRooms):
        store.open_room()


def test_a_room_holds_a_bounded_number_of_answers(rooms: Rooms):
    store = rooms.make(replace(LIMITS, answer_burst=100, max_answers=4, max_questions=10))
    t = store.open_room()
    a, b = store.join(t.code, "a"), store.join(t.code, "b")
    for step in ("q1", "q2"):
        store.submit(t.code, a.seat_id, step, "x")
        store.submit(t.code, b.seat_id, step, "x")
    with pytest.raises(RoomLimitReached, match="holds 4 answers"):
        store.submit(t.code, a.seat_id, "q3", "x")
    store.submit(t.code, a.seat_id, "q1", "y")  # replacing an answer adds none
    assert store.status(t.code, t.token).answers == 4
    assert store.tally(t.code, t.token, "q1").counts == (("x", 1), ("y", 1))


def test_a_room_holds_a_bounded_number_of_questions(roomy: RoomStore):
    t = roomy.open_room()
    s = roomy.join(t.code, "a")
    for step in ("q1", "q2", "q3"):
        roomy.submit(t.code, s.seat_id, step, "x")
    with pytest.raises(RoomLimitReached, match="answers to 3 questions"):
        roomy.submit(t.code, s.seat_id, "q4", "x")
    for step in ("q1", "q2", "q9"):
        roomy.reveal(t.code, t.token, step)
    with pytest.raises(RoomLimitReached):
        roomy.reveal(t.code, t.token, "q4")


def test_answers_and_question_ids_are_bounded(roomy: RoomStore):
    t = roomy.open_room()
    s = roomy.join(t.code, "a")
    for bad_step in ("", "has space", "q" * 17, "<q>", "q\n1"):
        with pytest.raises(InvalidInput, match="not a question id"):
            roomy.submit(t.code, s.seat_id, bad_step, "x")
    with pytest.raises(InvalidInput, match="at most 20 characters"):
        roomy.submit(t.code, s.seat_id, "q1", "x" * 21)
    with pytest.raises(InvalidInput, match="empty"):
        roomy.submit(t.code, s.seat_id, "q1", " \x00\u202e ")
    roomy.submit(t.code, s.seat_id, "q1", " =1+1\x00 ")
    assert roomy.my_answers(t.code, s.seat_id) == {"q1": "=1+1"}
    with pytest.raises(InvalidInput):
        roomy.tally(t.code, t.token, "bad step")


# --- answers ------------------------------------------------------------------------------------


def test_each_student_is_rate_limited(rooms: Rooms):
    store = rooms.make(replace(LIMITS, idle_s=60))
    t = store.open_room()
    a, b = store.join(t.code, "a"), store.join(t.code, "b")
    for answer in ("1", "2", "3"):  # the burst
        store.submit(t.code, a.seat_id, "q1", answer)
    with pytest.raises(RateLimited, match="Too many answers") as err:
        store.submit(t.code, a.seat_id, "q1", "4")
    assert 0 < err.value.retry_after_s <= REFILL_S
    store.submit(t.code, b.seat_id, "q1", "9")  # another student has their own tokens
    rooms.advance(1.1 * REFILL_S)
    store.submit(t.code, a.seat_id, "q1", "5")
    with pytest.raises(RateLimited):
        store.submit(t.code, a.seat_id, "q1", "6")
    assert store.my_answers(t.code, a.seat_id) == {"q1": "5"}
    assert store.tally(t.code, t.token, "q1").counts == (("5", 1), ("9", 1))


def test_one_answer_per_student_and_question_until_revealed(roomy: RoomStore):
    t = roomy.open_room()
    seats = [roomy.join(t.code, n) for n in ("Ann", "Bo", "Cy", "Di")]
    for seat, (answer, ok) in zip(seats, [("B", True), ("A", False), ("B", True), ("C", None)], strict=True):
        roomy.submit(t.code, seat.seat_id, "q1", answer, correct=ok)
    roomy.leave(t.code, seats[3].seat_id)
    tally = roomy.tally(t.code, t.token, "q1")
    assert (tally.present, tally.answered, tally.correct, tally.revealed) == (3, 4, 2, False)
    assert tally.counts == (("B", 2), ("A", 1), ("C", 1))
    assert "Ann" not in repr(tally)  # counts only: the projected screen shows no names
    roomy.submit(t.code, seats[0].seat_id, "q1", "A", correct=False)  # Ann changes her mind
    tally = roomy.tally(t.code, t.token, "q1")
    assert (tally.answered, tally.correct, tally.counts) == (4, 1, (("A", 2), ("B", 1), ("C", 1)))
    assert roomy.reveal(t.code, t.token, "q1") == 1
    with pytest.raises(AnswersClosed, match="revealed"):
        roomy.submit(t.code, seats[1].seat_id, "q1", "B", correct=True)
    assert roomy.tally(t.code, t.token, "q1").revealed
    roomy.submit(t.code, seats[1].seat_id, "q2", "yes")  # other questions stay open
    empty = roomy.tally(t.code, t.token, "q7")
    assert (empty.answered, empty.counts, empty.correct) == (0, (), 0)

    rows = roomy.answers(t.code, t.token)
    got = [(r.name, r.step, r.answer, r.correct) for r in rows]
    assert got == [
        ("Ann", "q1", "A", False),
        ("Bo", "q1", "A", False),
        ("Cy", "q1", "B", True),
        ("Di", "q1", "C", None),
        ("Bo", "q2", "yes", None),
    ]
    assert all(abs(r.at - rows[0].at) < 60 for r in rows)
    assert roomy.my_answers(t.code, seats[1].seat_id) == {"q1": "A", "q2": "yes"}


def test_concurrent_students_never_pass_the_limits(rooms: Rooms):
    """Threads joining and answering at once (for Redis, through two stores: two replicas)."""
    lim = replace(ROOMY, max_students=20, max_answers=30, max_name_chars=20)
    one = rooms.make(lim)
    stores = [one, one if rooms.kind == "memory" else rooms.make(lim)]
    t = stores[0].open_room()
    seats: list = []
    refused: list[str] = []
    lock = threading.Lock()

    def student(i: int) -> None:
        store = stores[i % 2]
        try:
            seat = store.join(t.code, f"student {i}")
        except RoomFull:
            with lock:
                refused.append("full")
            return
        with lock:
            seats.append(seat)
        for step in ("q1", "q2"):
            try:
                store.submit(t.code, seat.seat_id, step, str(i % 3), correct=i % 3 == 0)
            except RoomLimitReached:
                with lock:
                    refused.append("answers")

    threads = [threading.Thread(target=student, args=(i,)) for i in range(32)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
    assert len(seats) == 20
    assert refused.count("full") == 12
    status = stores[1].status(t.code, t.token)
    assert (status.students, status.present, status.answers) == (20, 20, 30)
    assert refused.count("answers") == 10
    tallies = [stores[0].tally(t.code, t.token, s) for s in ("q1", "q2")]
    assert sum(x.answered for x in tallies) == 30
    assert len(stores[0].answers(t.code, t.token)) == 30


def test_every_message_template_is_listed_for_translation():
    from tformer.rooms import MESSAGES, errors

    templates = {v for k, v in vars(errors).items() if k.isupper() and isinstance(v, str)}
    assert templates == set(MESSAGES)
    assert len(MESSAGES) == len(set(MESSAGES))
