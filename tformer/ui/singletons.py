"""Objects shared by every session of one server process whose identity matters: not caches.

A cache (``st.cache_data``, ``st.cache_resource``) may be emptied at any time and rebuilds what
it held on the next call; that is harmless for a model or a capture, which come back the same.
It is not for an object that holds running threads, locks or limits: the training
`RunManager` rebuilt empty would forget every run still training in its threads (they could no
longer be listed or stopped) and would start counting the limit on concurrent runs from zero.
Such objects live here, in a lock-protected dict of name -> object, each created once per
process by the first caller; nothing in the app drops them and no cache clear reaches them.

Process-level state that lives elsewhere and needs nothing from here: the costs page's
one-sweep-at-a-time lock (``tformer.efficiency.measure``) and kaleido's image server
(``tformer.figures.images``) are module globals of layers below the app, which cannot import it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

__all__ = ["names", "reset", "shared"]

T = TypeVar("T")

# Re-entrant: a factory may ask for another singleton. Factories run under it, so each object
# is made exactly once even when the first visitors arrive together; keep them quick.
_lock = threading.RLock()
_objects: dict[str, Any] = {}


def shared(name: str, make: Callable[[], T]) -> T:
    """The process's object called ``name``, made by ``make()`` on the first call."""
    with _lock:
        if name not in _objects:
            _objects[name] = make()
        return cast(T, _objects[name])


def names() -> list[str]:
    """The names made so far in this process, in the order they were made."""
    with _lock:
        return list(_objects)


def reset(*only: str) -> dict[str, Any]:
    """Forget every singleton (or those named), returning what was dropped so the caller can
    shut it down. For tests, which need a fresh manager each: the app never calls it."""
    with _lock:
        dropped = {k: v for k, v in _objects.items() if not only or k in only}
        for k in dropped:
            del _objects[k]
        return dropped
