"""What only the Redis store has: TTLs on every key, a one-GET poll, a dead or wrong Redis, the
factory that picks the store, and two replicas' stores sharing a room."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tformer.rooms import (
    MemoryRoomStore,
    RedisRoomStore,
    RoomLimits,
    RoomsUnavailable,
    forget_room_stores,
    redact_url,
    room_store,
)

from .redis_server import RedisServer, free_port

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _fresh_factory() -> Iterator[None]:
    forget_room_stores()
    yield
    forget_room_stores()


def _prefix() -> str:
    return f"t{uuid.uuid4().hex[:10]}"


def test_every_key_of_a_room_expires(redis_server: RedisServer):
    """No key outlives an idle room, whichever operation made it (a key written after the TTLs
    were set, and never touched again, would stay forever)."""
    prefix = _prefix()
    store = RedisRoomStore(redis_server.url, RoomLimits(idle_s=30), prefix=prefix)
    t = store.open_room()
    a, b = store.join(t.code, "a"), store.join(t.code, "b")
    store.publish(t.code, t.token, {"page": "heads"})
    store.submit(t.code, a.seat_id, "q1", "x", correct=True)
    store.submit(t.code, b.seat_id, "q2", "y")
    store.submit(t.code, a.seat_id, "q1", "z")
    store.reveal(t.code, t.token, "q3")
    store.leave(t.code, b.seat_id)
    r = redis_server.client()
    keys = sorted(r.scan_iter(f"{prefix}:*"))
    room_keys = [k for k in keys if k != f"{prefix}:rooms"]
    assert {k.rsplit(":", 1)[-1] for k in room_keys} >= {
        "meta",
        "ver",
        "view",
        "seats",
        "names",
        "revealed",
        "steps",
    }
    assert any(k.endswith("tally:q1") for k in keys)
    assert any(k.endswith("tally:q2") for k in keys)
    for k in room_keys:
        assert 0 < r.pttl(k) <= 30_000, k
    store.close(t.code, t.token)
    left = sorted(r.scan_iter(f"{prefix}:*"))
    assert left == [f"{prefix}:closed:{t.code}"]
    assert 0 < r.pttl(left[0])


def test_an_unchanged_poll_is_one_get(redis_server: RedisServer):
    store = RedisRoomStore(redis_server.url, prefix=_prefix())
    t = store.open_room()
    version = store.publish(t.code, t.token, {"page": "heads", "text": "x" * 5000})
    r = redis_server.client()
    r.config_resetstat()
    for _ in range(20):
        assert store.poll(t.code, since=version) is None
    stats = r.info("commandstats")
    calls = {k.removeprefix("cmdstat_"): v["calls"] for k, v in stats.items()}
    calls.pop("info", None)
    calls.pop("config|resetstat", None)
    assert calls == {"get": 20}


def test_two_replicas_share_one_room(redis_server: RedisServer):
    """Two processes (as two app replicas would be) with the same TFORMER_REDIS_URL."""
    env = {**os.environ, "TFORMER_REDIS_URL": redis_server.url}
    teacher = (
        "from tformer.rooms import room_store\n"
        "s = room_store(); t = s.open_room()\n"
        "s.publish(t.code, t.token, {'page': 'heads', 'head': '3'})\n"
        "print(t.code, t.token)\n"
    )
    out = subprocess.run([sys.executable, "-c", teacher], env=env, capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    code, token = out.stdout.split()
    student = (
        "import sys\nfrom tformer.rooms import room_store\n"
        "s = room_store(); seat = s.join(sys.argv[1], 'Mei'); v = s.view(seat.code)\n"
        "s.submit(seat.code, seat.seat_id, 'q1', 'B', correct=True)\n"
        "print(v.version, v.params['page'], v.params['head'])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", student, code.lower()], env=env, capture_output=True, text=True, cwd=ROOT
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "heads", "3"]
    store = room_store({"TFORMER_REDIS_URL": redis_server.url})
    assert isinstance(store, RedisRoomStore)
    assert store.tally(code, token, "q1").counts == (("B", 1),)


def test_a_dead_redis_is_a_clear_message_without_the_password():
    port = free_port()  # nothing listens there
    url = f"redis://:hunter2-pw@127.0.0.1:{port}/0"
    t0 = time.monotonic()
    with pytest.raises(RoomsUnavailable) as err:
        room_store({"TFORMER_REDIS_URL": url})
    assert time.monotonic() - t0 < 5
    msg = str(err.value)
    assert f"127.0.0.1:{port}" in msg
    assert "cannot be reached" in msg
    assert "Everything else works" in msg
    assert "hunter2" not in msg
    assert "hunter2" not in repr(err.value.values)
    # remembered for a while: the app does not wait for a connection on every run
    t0 = time.monotonic()
    with pytest.raises(RoomsUnavailable) as again:
        room_store({"TFORMER_REDIS_URL": url})
    assert again.value is err.value
    assert time.monotonic() - t0 < 0.1


def test_redis_going_away_mid_lesson(tmp_path: Path):
    server = RedisServer(tmp_path / "r").start()
    try:
        store = RedisRoomStore(server.url, prefix=_prefix())
        t = store.open_room()
        seat = store.join(t.code, "Mei")
    finally:
        server.stop()
    with pytest.raises(RoomsUnavailable, match=f"127.0.0.1:{server.port}"):
        store.poll(seat.code, 0)
    with pytest.raises(RoomsUnavailable):
        store.submit(seat.code, seat.seat_id, "q1", "x")
    with pytest.raises(RoomsUnavailable):
        store.open_room()


def test_a_wrong_password_says_so_without_it(redis_server: RedisServer):
    url = f"redis://:not-the-pw-42@127.0.0.1:{redis_server.port}/0"
    with pytest.raises(RoomsUnavailable) as err:
        room_store({"TFORMER_REDIS_URL": url})
    assert "not-the-pw-42" not in str(err.value)
    assert f"127.0.0.1:{redis_server.port}" in str(err.value)


def test_the_factory_picks_the_store():
    mem = room_store({})
    assert isinstance(mem, MemoryRoomStore)
    assert room_store({}) is mem  # one per process
    assert room_store({"TFORMER_REDIS_URL": "  "}) is mem
    longer = room_store({"TFORMER_ROOM_IDLE_MINUTES": "90"})
    assert longer.limits.idle_s == 90 * 60
    assert longer is not mem
    for bad in ("0", "abc", "1e9", "nan", "-5"):
        with pytest.raises(RoomsUnavailable, match="TFORMER_ROOM_IDLE_MINUTES"):
            room_store({"TFORMER_ROOM_IDLE_MINUTES": bad})
    with pytest.raises(RoomsUnavailable, match="must start with redis://"):
        room_store({"TFORMER_REDIS_URL": "http://user:pw@example.invalid/"})


def test_urls_are_shown_without_secrets():
    assert redact_url("redis://:pw@10.0.0.5:6390/2") == "10.0.0.5:6390"
    assert redact_url("redis://user:pw@cache") == "cache:6379"
    assert redact_url("unix:///run/redis.sock") == "unix:/run/redis.sock"
    assert "pw" not in redact_url("redis://:pw@host:notaport")


def test_import_loads_neither_redis_nor_segno_nor_streamlit():
    code = (
        "import sys, tformer\n"
        "assert 'tformer.rooms' not in sys.modules\n"
        "import tformer.rooms\n"
        "print(sorted(m for m in ('redis', 'segno', 'streamlit', 'torch') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
