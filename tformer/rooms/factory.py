"""Which room store this process uses: Redis when ``TFORMER_REDIS_URL`` is set, else memory."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping

from . import errors as E
from .errors import RoomsUnavailable
from .limits import REDIS_URL_ENV, RoomLimits, limits_from_env
from .memory import MemoryRoomStore
from .store import RoomStore

__all__ = ["RETRY_S", "forget_room_stores", "room_store"]

# After Redis failed, calls within this many seconds fail at once with the same message, so a
# dead Redis costs the app one connection timeout per RETRY_S, not one per script run.
RETRY_S = 10.0

_lock = threading.Lock()
_stores: dict[tuple[str, RoomLimits], RoomStore] = {}
_failures: dict[tuple[str, RoomLimits], tuple[float, RoomsUnavailable]] = {}


def room_store(env: Mapping[str, str] | None = None) -> RoomStore:
    """The room store of this process for the settings in ``env`` (default: os.environ).

    Every call with the same settings returns the same store, so all browser sessions of one
    process share its rooms (in memory) or its Redis connection pool. Raises RoomsUnavailable
    when the settings are wrong or Redis does not answer: show the message and go on without
    rooms; a later call tries again (after `RETRY_S`).
    """
    env = os.environ if env is None else env
    url = env.get(REDIS_URL_ENV, "").strip()
    try:
        limits = limits_from_env(env)
    except ValueError as err:
        raise RoomsUnavailable(E.BAD_CONFIG, reason=str(err)) from None
    key = (url, limits)
    with _lock:
        store = _stores.get(key)
        if store is not None:
            return store
        failed = _failures.get(key)
        if failed is not None and time.monotonic() - failed[0] < RETRY_S:
            raise failed[1]
        try:
            store = _make(url, limits)
        except RoomsUnavailable as err:
            _failures[key] = (time.monotonic(), err)
            raise
        _failures.pop(key, None)
        _stores[key] = store
        return store


def _make(url: str, limits: RoomLimits) -> RoomStore:
    if not url:
        return MemoryRoomStore(limits)
    try:
        from .redis_store import RedisRoomStore
    except ImportError as err:  # pragma: no cover - redis is a dependency
        raise RoomsUnavailable(E.BAD_CONFIG, reason=f"the redis package is not installed ({err})") from None
    store = RedisRoomStore(url, limits)
    store.ping()
    return store


def forget_room_stores() -> None:
    """Drop the stores and remembered failures: the next call connects anew (tests, a retry)."""
    with _lock:
        _stores.clear()
        _failures.clear()
