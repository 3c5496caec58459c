"""Rooms in Redis, so that one room spans every replica of the app behind a load balancer.

Chosen by setting ``TFORMER_REDIS_URL`` (``redis://[:password@]host:port/db``); a standalone
Redis (Debian's ``redis-server``), not a cluster: the scripts below build key names. Each write
is one Lua script, so the limits (students, answers, questions, rooms) hold when several
replicas write at once; the token compare stays in Python (`hmac.compare_digest`), and only
the token's SHA-256 is stored. Every key of a room carries the idle TTL, set again on each
activity, so Redis itself ends idle rooms; a sorted set of rooms by expiry time bounds their
number. A student's poll is one GET of the small version key while nothing changed; one poll
in four (`RoomStore.poll` decides) is instead one script that also records the seat as seen.

Keys, under ``{prefix}:room:{code}:``: ``meta`` (hash: token and teacher key digests, the key
tries' bucket, answers), ``ver``, ``view`` (JSON of the view), ``seats`` (hash: seat -> JSON of
name, left, token bucket and answers), ``names`` (hash: name key -> seat), ``seen`` (sorted
set: seat -> when last seen, ms; a seat that left is not in it), ``revealed``, ``steps``
(sets), ``tally:{step}`` (hash: ``a:{answer}`` -> count, ``c`` -> correct). Also
``{prefix}:rooms`` and ``{prefix}:closed:{code}``.

The ``redis`` package is imported when a store is made, so ``import tformer.rooms`` needs it not.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from . import errors as E
from .errors import RoomsUnavailable
from .limits import RoomLimits
from .rules import decode_view
from .store import AnswerRow, Outcome, RoomStore

if TYPE_CHECKING:  # pragma: no cover - typing only
    import redis

__all__ = ["RedisRoomStore", "redact_url"]

CONNECT_TIMEOUT_S = 2.0  # a dead Redis must not hold a script run for long

_PRELUDE = """
local base, idle_ms, rooms_key, code = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local FIXED = {'meta', 'ver', 'view', 'seats', 'names', 'seen', 'revealed', 'steps'}
local function touch(now)
  for _, k in ipairs(FIXED) do redis.call('PEXPIRE', base .. k, idle_ms) end
  for _, s in ipairs(redis.call('SMEMBERS', base .. 'steps')) do
    redis.call('PEXPIRE', base .. 'tally:' .. s, idle_ms)
  end
  redis.call('ZADD', rooms_key, now + idle_ms, code)
end
local function alive() return redis.call('EXISTS', base .. 'meta') == 1 end
local function present(now, within_ms)
  return redis.call('ZCOUNT', base .. 'seen', '(' .. (now - within_ms), '+inf')
end
local function view_since(since)
  local ver = tonumber(redis.call('GET', base .. 'ver'))
  if ver == since then return {'same'} end
  return {'ok', ver, redis.call('GET', base .. 'view'), redis.call('SMEMBERS', base .. 'revealed')}
end
"""

_SCRIPTS = {
    # ARGV[5] digest, [6] max rooms, [7] the closed-room key of this code, [8] the teacher key's
    # digest, [9] key tries
    "open": """
local now = now_ms()
redis.call('ZREMRANGEBYSCORE', rooms_key, '-inf', now)
if redis.call('ZCARD', rooms_key) >= tonumber(ARGV[6]) then return {'too_many_rooms'} end
if alive() or redis.call('EXISTS', ARGV[7]) == 1 then return {'taken'} end
redis.call('HSET', base .. 'meta', 'digest', ARGV[5], 'answers', 0, 'kdigest', ARGV[8],
           'ktries', ARGV[9], 'kts', now)
redis.call('SET', base .. 'ver', 0)
redis.call('SET', base .. 'view', '{}')
touch(now)
return {'ok'}
""",
    "touch": """
if not alive() then return {'no_room'} end
touch(now_ms())
return {'ok'}
""",
    # ARGV[5] key tries, [6] refill period (ms)
    "key_try": """
if not alive() then return {'no_room'} end
local meta, now = base .. 'meta', now_ms()
local k = redis.call('HMGET', meta, 'ktries', 'kts', 'kdigest')
local burst, refill = tonumber(ARGV[5]), tonumber(ARGV[6])
local tries = math.min(burst, tonumber(k[1]) + math.max(now - tonumber(k[2]), 0) / refill)
if tries < 1 then
  redis.call('HSET', meta, 'ktries', tostring(tries), 'kts', now)
  return {'rate', math.ceil((1 - tries) * refill)}
end
redis.call('HSET', meta, 'ktries', tostring(tries - 1), 'kts', now)
return {'ok', k[3]}
""",
    # ARGV[5] the new token's digest, [6] key tries
    "reclaim": """
if not alive() then return {'no_room'} end
local meta = base .. 'meta'
local tries = math.min(tonumber(ARGV[6]), tonumber(redis.call('HGET', meta, 'ktries')) + 1)
redis.call('HSET', meta, 'digest', ARGV[5], 'ktries', tostring(tries))
touch(now_ms())
return {'ok'}
""",
    # ARGV[5] the view's JSON
    "publish": """
if not alive() then return {'no_room'} end
local now = now_ms()
if redis.call('GET', base .. 'view') == ARGV[5] then
  touch(now)
  return {'same', tonumber(redis.call('GET', base .. 'ver'))}
end
redis.call('SET', base .. 'view', ARGV[5])
local ver = redis.call('INCR', base .. 'ver')
touch(now)
return {'ok', ver}
""",
    # ARGV[5] step, [6] max questions
    "reveal": """
if not alive() then return {'no_room'} end
local now = now_ms()
if redis.call('SISMEMBER', base .. 'revealed', ARGV[5]) == 1 then
  touch(now)
  return {'same', tonumber(redis.call('GET', base .. 'ver'))}
end
if redis.call('SCARD', base .. 'revealed') >= tonumber(ARGV[6]) then
  touch(now)
  return {'questions_full'}
end
redis.call('SADD', base .. 'revealed', ARGV[5])
local ver = redis.call('INCR', base .. 'ver')
touch(now)
return {'ok', ver}
""",
    # ARGV[5] step, [6] present (ms)
    "tally": """
if not alive() then return {'no_room'} end
local now = now_ms()
touch(now)
return {'ok', present(now, tonumber(ARGV[6])),
        redis.call('HGETALL', base .. 'tally:' .. ARGV[5]),
        redis.call('SISMEMBER', base .. 'revealed', ARGV[5])}
""",
    "rows": """
if not alive() then return {'no_room'} end
touch(now_ms())
return {'ok', redis.call('HVALS', base .. 'seats')}
""",
    # ARGV[5] present (ms)
    "status": """
if not alive() then return {'no_room'} end
local now = now_ms()
touch(now)
local meta = base .. 'meta'
return {'ok', tonumber(redis.call('GET', base .. 'ver')), redis.call('HLEN', base .. 'seats'),
        present(now, tonumber(ARGV[5])), tonumber(redis.call('HGET', meta, 'answers')),
        redis.call('SCARD', base .. 'steps'), redis.call('SMEMBERS', base .. 'revealed'),
        redis.call('PTTL', meta)}
""",
    # ARGV[5] the closed-room key, [6] how long it says so (ms)
    "close": """
if not alive() then return {'no_room'} end
for _, s in ipairs(redis.call('SMEMBERS', base .. 'steps')) do redis.call('DEL', base .. 'tally:' .. s) end
for _, k in ipairs(FIXED) do redis.call('DEL', base .. k) end
redis.call('ZREM', rooms_key, code)
redis.call('SET', ARGV[5], '1', 'PX', ARGV[6])
return {'ok'}
""",
    # ARGV[5] name, [6] name key, [7] seat to resume or '', [8] a new seat's id, [9] max
    # students, [10] a new seat's tokens, [11] present (ms)
    "join": """
if not alive() then return {'no_room'} end
local now = now_ms()
local seats, names, seen = base .. 'seats', base .. 'names', base .. 'seen'
local owner = redis.call('HGET', names, ARGV[6])
-- seat `old` (its answers and rate limit) is `new`'s now, under this name, seen now
local function seat_back(old, new)
  local s = cjson.decode(redis.call('HGET', seats, old))
  redis.call('HDEL', names, s.key)
  if old ~= new then
    redis.call('HDEL', seats, old)
    redis.call('ZREM', seen, old)
  end
  s.name, s.key, s.left = ARGV[5], ARGV[6], 0
  redis.call('HSET', seats, new, cjson.encode(s))
  redis.call('HSET', names, ARGV[6], new)
  redis.call('ZADD', seen, now, new)
  touch(now)
  return {'ok', new, 1}
end
if ARGV[7] ~= '' and redis.call('HEXISTS', seats, ARGV[7]) == 1 then
  if owner and owner ~= ARGV[7] then return {'name_taken', ARGV[5]} end
  return seat_back(ARGV[7], ARGV[7])
end
if owner then
  local at = redis.call('ZSCORE', seen, owner)
  local wait = at and tonumber(ARGV[11]) - (now - tonumber(at)) or 0
  if wait > 0 then return {'name_in_use', ARGV[5], wait} end
  return seat_back(owner, ARGV[8])
end
if redis.call('HLEN', seats) >= tonumber(ARGV[9]) then return {'full'} end
local s = {name = ARGV[5], key = ARGV[6], left = 0, tokens = tonumber(ARGV[10]), ts = now,
           answers = {}}
redis.call('HSET', seats, ARGV[8], cjson.encode(s))
redis.call('HSET', names, ARGV[6], ARGV[8])
redis.call('ZADD', seen, now, ARGV[8])
touch(now)
return {'ok', ARGV[8], 0}
""",
    # ARGV[5] seat
    "leave": """
if not alive() then return {'no_room'} end
local raw = redis.call('HGET', base .. 'seats', ARGV[5])
if not raw then return {'no_seat'} end
local s = cjson.decode(raw)
s.left = 1
redis.call('HSET', base .. 'seats', ARGV[5], cjson.encode(s))
redis.call('ZREM', base .. 'seen', ARGV[5])
touch(now_ms())
return {'ok'}
""",
    # ARGV[5] seat, [6] since: a poll that records the seat (the room's expiry is not moved:
    # `seen` keeps the TTL the room's keys have)
    "seen": """
if not alive() then return {'no_room'} end
local seen = base .. 'seen'
if not redis.call('ZSCORE', seen, ARGV[5]) then return {'no_seat'} end
redis.call('ZADD', seen, now_ms(), ARGV[5])
return view_since(tonumber(ARGV[6]))
""",
    # ARGV[5] seat, [6] step, [7] answer, [8] correct ('y', 'n' or ''), [9] burst, [10] refill
    # period (ms), [11] max answers, [12] max questions
    "submit": """
if not alive() then return {'no_room'} end
local seats, meta = base .. 'seats', base .. 'meta'
local raw = redis.call('HGET', seats, ARGV[5])
if not raw then return {'no_seat'} end
local s = cjson.decode(raw)
if s.left == 1 then return {'no_seat'} end
local now = now_ms()
redis.call('ZADD', base .. 'seen', now, ARGV[5])
local burst, refill = tonumber(ARGV[9]), tonumber(ARGV[10])
local tokens = math.min(burst, s.tokens + math.max(now - s.ts, 0) / refill)
s.ts = now
local function save() redis.call('HSET', seats, ARGV[5], cjson.encode(s)) end
if tokens < 1 then
  s.tokens = tokens
  save()
  return {'rate', math.ceil((1 - tokens) * refill)}
end
s.tokens = tokens - 1
local step, answer = ARGV[6], ARGV[7]
if redis.call('SISMEMBER', base .. 'revealed', step) == 1 then save() return {'revealed'} end
local prev = s.answers[step]
local tk = base .. 'tally:' .. step
if not prev then
  if tonumber(redis.call('HGET', meta, 'answers')) >= tonumber(ARGV[11]) then save() return {'answers_full'} end
  if redis.call('SISMEMBER', base .. 'steps', step) == 0
     and redis.call('SCARD', base .. 'steps') >= tonumber(ARGV[12]) then save() return {'questions_full'} end
  redis.call('HINCRBY', meta, 'answers', 1)
else
  if redis.call('HINCRBY', tk, 'a:' .. prev[1], -1) <= 0 then redis.call('HDEL', tk, 'a:' .. prev[1]) end
  if prev[2] == 'y' then redis.call('HINCRBY', tk, 'c', -1) end
end
redis.call('HINCRBY', tk, 'a:' .. answer, 1)
if ARGV[8] == 'y' then redis.call('HINCRBY', tk, 'c', 1) end
redis.call('SADD', base .. 'steps', step)
s.answers[step] = {answer, ARGV[8], now}
save()
touch(now)
return {'ok'}
""",
}

_VERDICT = {True: "y", False: "n", None: ""}
_FROM_VERDICT: dict[str, bool | None] = {"y": True, "n": False, "": None}


def redact_url(url: str) -> str:
    """Where a Redis URL points, for messages: ``host:port`` (or the socket path), no password."""
    try:
        parts = urlsplit(url)
        if parts.scheme == "unix":
            return f"unix:{parts.path}"
        host = parts.hostname or "localhost"
        return f"{host}:{parts.port or 6379}"
    except ValueError:
        return "(an unreadable URL)"


class RedisRoomStore(RoomStore):
    """`RoomStore` in a Redis server. ``url``: ``redis://[:password@]host:port/db``.

    Every method raises `RoomsUnavailable` (with the host and the reason, never the password)
    when Redis cannot be reached or refuses. ``client`` replaces the connection (tests).
    """

    def __init__(
        self,
        url: str,
        limits: RoomLimits | None = None,
        *,
        prefix: str = "tformer",
        client: redis.Redis | None = None,
    ) -> None:
        super().__init__(limits)
        self.url_shown = redact_url(url)
        self._password = (urlsplit(url).password or "") if "://" in url else ""
        self._prefix = prefix
        self._idle_ms = str(max(1, int(self.limits.idle_s * 1000)))
        self._present_ms = max(1, int(self.limits.present_s * 1000))
        import redis as redis_lib  # here, so that tformer.rooms loads without redis

        self._errors: tuple[type[BaseException], ...] = (redis_lib.RedisError, OSError)
        if client is None:
            if urlsplit(url).scheme not in ("redis", "rediss", "unix"):
                raise RoomsUnavailable(
                    E.BAD_CONFIG,
                    reason=f"TFORMER_REDIS_URL must start with redis://, not {url.split(':')[0][:20]!r}",
                )
            from redis.backoff import NoBackoff
            from redis.retry import Retry

            with self._guard():
                client = redis_lib.Redis.from_url(
                    url,
                    decode_responses=True,
                    socket_connect_timeout=CONNECT_TIMEOUT_S,
                    socket_timeout=CONNECT_TIMEOUT_S,
                    # one retry: a pooled connection is stale once after Redis restarted
                    retry=Retry(NoBackoff(), 1),
                    health_check_interval=30,
                )
        self._r = client
        self._scripts = {name: client.register_script(_PRELUDE + body) for name, body in _SCRIPTS.items()}

    # --- plumbing -------------------------------------------------------------------------------

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except RoomsUnavailable:
            raise
        except self._errors as err:
            reason = f"{type(err).__name__}: {err}"[:300]
            if self._password:
                reason = reason.replace(self._password, "***")
            raise RoomsUnavailable(E.UNAVAILABLE, where=self.url_shown, reason=reason) from None

    def _base(self, code: str) -> str:
        return f"{self._prefix}:room:{code}:"

    def _closed_key(self, code: str) -> str:
        return f"{self._prefix}:closed:{code}"

    def _run(self, name: str, code: str, *args: str | int) -> list[Any]:
        argv = [self._base(code), self._idle_ms, f"{self._prefix}:rooms", code, *args]
        with self._guard():
            return list(self._scripts[name](keys=[], args=argv))

    def ping(self) -> None:
        """Raises RoomsUnavailable when Redis does not answer."""
        with self._guard():
            self._r.ping()

    # --- the teacher ----------------------------------------------------------------------------

    def store_open(self, code: str, digest: str, key_digest: str) -> Outcome:
        lim = self.limits
        return tuple(
            self._run("open", code, digest, lim.max_rooms, self._closed_key(code), key_digest, lim.key_tries)
        )

    def store_key_try(self, code: str) -> Outcome:
        refill_ms = max(1, int(self.limits.key_refill_s * 1000))
        out = self._run("key_try", code, self.limits.key_tries, refill_ms)
        if out[0] == "rate":
            return ("rate", int(out[1]) / 1000)
        return tuple(out)

    def store_reclaim(self, code: str, digest: str) -> Outcome:
        return tuple(self._run("reclaim", code, digest, self.limits.key_tries))

    def store_was_closed(self, code: str) -> bool:
        with self._guard():
            return bool(self._r.exists(self._closed_key(code)))

    def store_digest(self, code: str) -> Outcome:
        with self._guard():
            digest = self._r.hget(self._base(code) + "meta", "digest")
        return ("no_room",) if digest is None else ("ok", digest)

    def store_touch(self, code: str) -> Outcome:
        return tuple(self._run("touch", code))

    def store_publish(self, code: str, view_json: str) -> Outcome:
        return tuple(self._run("publish", code, view_json))

    def store_reveal(self, code: str, step: str) -> Outcome:
        return tuple(self._run("reveal", code, step, self.limits.max_questions))

    def store_tally(self, code: str, step: str) -> Outcome:
        out = self._run("tally", code, step, self._present_ms)
        if out[0] != "ok":
            return tuple(out)
        flat = out[2]
        fields = dict(zip(flat[0::2], flat[1::2], strict=True))
        counts = {k[2:]: int(v) for k, v in fields.items() if k.startswith("a:")}
        return ("ok", out[1], counts, int(fields.get("c", 0)), bool(out[3]))

    def store_rows(self, code: str) -> Outcome:
        out = self._run("rows", code)
        if out[0] != "ok":
            return tuple(out)
        rows = []
        for raw in out[1]:
            seat = json.loads(raw)
            answers = seat.get("answers") or {}
            for step, (answer, verdict, at_ms) in answers.items():
                rows.append(
                    AnswerRow(
                        name=seat["name"],
                        step=step,
                        answer=answer,
                        correct=_FROM_VERDICT[verdict],
                        at=at_ms / 1000,
                    )
                )
        return ("ok", rows)

    def store_status(self, code: str) -> Outcome:
        out = self._run("status", code, self._present_ms)
        if out[0] != "ok":
            return tuple(out)
        _, version, students, present, answers, questions, revealed, pttl = out
        return ("ok", version, students, present, answers, questions, set(revealed), max(pttl, 0) / 1000)

    def store_close(self, code: str) -> Outcome:
        notice_ms = max(1, int(self.limits.closed_notice_s * 1000))
        return tuple(self._run("close", code, self._closed_key(code), notice_ms))

    # --- the students ---------------------------------------------------------------------------

    def store_join(self, code: str, name: str, key: str, resume: str, fresh: str) -> Outcome:
        lim = self.limits
        out = self._run(
            "join", code, name, key, resume, fresh, lim.max_students, lim.answer_burst, self._present_ms
        )
        if out[0] == "name_in_use":
            return ("name_in_use", out[1], int(out[2]) / 1000)
        return tuple(out)

    def store_leave(self, code: str, seat: str) -> Outcome:
        return tuple(self._run("leave", code, seat))

    def store_poll(self, code: str, since: int) -> Outcome:
        base = self._base(code)
        with self._guard():
            version = self._r.get(base + "ver")  # the one read while nothing changes
            if version is None:
                return ("no_room",)
            if int(version) == since:
                return ("same",)
            pipe = self._r.pipeline(transaction=True)
            pipe.get(base + "ver")
            pipe.get(base + "view")
            pipe.smembers(base + "revealed")
            version, view, revealed = pipe.execute()
        if version is None or view is None:
            return ("no_room",)
        return ("ok", int(version), decode_view(view), set(revealed))

    def store_seen(self, code: str, seat: str, since: int) -> Outcome:
        out = self._run("seen", code, seat, since)
        if out[0] != "ok":
            return tuple(out)
        return ("ok", int(out[1]), decode_view(out[2]), set(out[3]))

    def store_submit(self, code: str, seat: str, step: str, answer: str, correct: bool | None) -> Outcome:
        lim = self.limits
        refill_ms = max(1, int(lim.answer_refill_s * 1000))
        out = self._run(
            "submit",
            code,
            seat,
            step,
            answer,
            _VERDICT[correct],
            lim.answer_burst,
            refill_ms,
            lim.max_answers,
            lim.max_questions,
        )
        if out[0] == "rate":
            return ("rate", int(out[1]) / 1000)
        return tuple(out)

    def store_my_answers(self, code: str, seat: str) -> Outcome:
        base = self._base(code)
        with self._guard():
            pipe = self._r.pipeline(transaction=True)
            pipe.exists(base + "meta")
            pipe.hget(base + "seats", seat)
            alive, raw = pipe.execute()
        if not alive:
            return ("no_room",)
        if raw is None:
            return ("no_seat",)
        answers = json.loads(raw).get("answers") or {}
        return ("ok", {step: a[0] for step, a in answers.items()})
