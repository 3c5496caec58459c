"""The precision page's slow work, off the script run: one worker thread per server that times
the model variants (once per model, device and length band) and compares the variants a page
run did not compare itself (once per model, text, device and variant).

A text edit on the precision page then costs the comparisons that fit its run (the chosen
variant's always) and nothing else; the rest arrive while the page polls (`PrecisionJobs.get`).
Jobs are keyed: a key asked for twice runs once, the newest asks run first, and at most
`MAX_QUEUE` wait (each holds a text's float32 capture), the oldest dropped, to be asked again
by a page that still wants it. Results (a few KB each) are kept for the `MAX_RESULTS` newest
keys; a job that raised keeps its error as its result (`Failed`), so no page asks forever.

The object lives in `tformer.ui.singletons` (it holds a thread), not in a cache.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from ...singletons import shared

MAX_QUEUE = 12
MAX_RESULTS = 256


@dataclass(frozen=True)
class Failed:
    """A job that raised: its error, shortened, is its result."""

    message: str


class PrecisionJobs:
    """A keyed queue of jobs run one at a time by one daemon thread, newest first."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: deque[tuple[Hashable, Callable[[], Any]]] = deque()
        self._results: OrderedDict[Hashable, Any] = OrderedDict()
        self._running: Hashable | None = None
        self._stopped = False
        self._thread = threading.Thread(target=self._work, name="tformer-precision", daemon=True)
        self._thread.start()

    # --- asking -----------------------------------------------------------------------------------

    def get(self, key: Hashable) -> Any | None:
        """The result of ``key`` (a `Failed` for a job that raised), None while it is not done."""
        with self._cond:
            if key in self._results:
                self._results.move_to_end(key)
                return self._results[key]
            return None

    def forget(self, key: Hashable) -> None:
        """Drop the result of ``key``, so that asking for it again runs it again (what it made
        outside its result is gone); a key queued or running is left alone."""
        with self._cond:
            self._results.pop(key, None)

    def waiting(self, key: Hashable) -> bool:
        """``key`` is queued or running."""
        with self._cond:
            return key == self._running or any(k == key for k, _ in self._queue)

    def submit(self, jobs: Iterable[tuple[Hashable, Callable[[], Any]]]) -> None:
        """Queue ``jobs`` (key, function) ahead of every older one, in the order given; a key
        already done, queued or running is not queued again."""
        with self._cond:
            fresh = [
                (k, fn)
                for k, fn in jobs
                if k not in self._results and k != self._running and all(k != q for q, _ in self._queue)
            ]
            for job in reversed(fresh):
                self._queue.appendleft(job)
            while len(self._queue) > MAX_QUEUE:
                self._queue.pop()  # the oldest ask: a page that still wants it asks again
            self._cond.notify_all()

    def run_here(self, key: Hashable, fn: Callable[[], Any]) -> Any:
        """The result of ``key``, computed in the calling thread unless it is done (or running:
        then its result is waited for), and kept like a worker's."""
        with self._cond:
            while key == self._running:
                self._cond.wait(0.05)
            if key in self._results:
                return self._results[key]
            self._queue = deque((k, f) for k, f in self._queue if k != key)
        result = _call(fn)
        with self._cond:
            self._keep(key, result)
        return result

    def wait(self, keys: Iterable[Hashable], timeout: float) -> bool:
        """Block until every key has a result or ``timeout`` seconds passed; True when done."""
        wanted = list(keys)
        deadline = time.monotonic() + timeout
        with self._cond:
            while not all(k in self._results for k in wanted):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.1))
            return True

    def idle(self, timeout: float) -> bool:
        """Block until nothing is queued or running, or ``timeout`` seconds passed; True when idle."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._queue or self._running is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.1))
            return True

    def shutdown(self) -> None:
        """Stop the worker after its current job (tests: a fresh object each)."""
        with self._cond:
            self._stopped = True
            self._queue.clear()
            self._cond.notify_all()
        self._thread.join(30)

    # --- the worker -------------------------------------------------------------------------------

    def _keep(self, key: Hashable, result: Any) -> None:
        self._results[key] = result
        self._results.move_to_end(key)
        while len(self._results) > MAX_RESULTS:
            self._results.popitem(last=False)
        self._cond.notify_all()

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    return
                key, fn = self._queue.popleft()
                self._running = key
            result = _call(fn)
            with self._cond:
                self._running = None
                self._keep(key, result)


def _call(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as err:  # a job's failure is its result: the page shows it, nothing retries
        text = str(err).strip().splitlines()
        return Failed(f"{type(err).__name__}: {text[0] if text else ''}".strip())


def precision_jobs() -> PrecisionJobs:
    """The server's one `PrecisionJobs`."""
    return shared("precision.jobs", PrecisionJobs)
