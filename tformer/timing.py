r"""Honest timings: the median of repeated calls, taken until their spread is small or a bound
says stop, reported with that spread and with what else ran on the machine meanwhile.

One rule (`measure`) for every time the app shows (the costs sweeps, the precision table, the
Train page's time per update):

1. ``warmup`` calls first, not timed (first allocations, kernel choice, caches).
2. Then one timed call at a time, ``sync`` before and after (a GPU runs asynchronously).
3. Once ``min_repeats`` calls are in, stop as soon as the spread is small:
   :math:`\mathrm{IQR} / \mathrm{median} \le` ``rel_spread`` (the timing *settled*).
4. Stop anyway after ``max_repeats`` calls, or once ``max_seconds`` have passed since the
   first timed call (at least one call is timed): the timing says it did not settle.

A `Timing` keeps the median, the quartiles (the spread a page shows as error bars or a
column), the fastest and the slowest call, how many calls, whether it settled, and a `Load`.

Other work during a measurement (`watch`), two signals that pages name:

- work in this server process: training runs and sweeps register themselves with `activity`;
  a watch lists those that ran in another thread at any moment while it was open;
- other programs on the machine: the CPU time of every process (Linux ``/proc/stat``) minus
  this process's own (``os.times``), as a share of the CPU time the machine had (all cores).
  A window shorter than `MIN_WATCH_S` (the kernel counts in ticks of 10 ms) or a system without
  ``/proc/stat`` gives no share (None).

No torch and no Streamlit here: the clock, the sync and the CPU counters are arguments, so a
test drives the stopping rule with a fake clock.
"""

from __future__ import annotations

import os
import statistics
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from time import monotonic, perf_counter
from typing import Any

__all__ = [
    "BUSY_SHARE",
    "MIN_WATCH_S",
    "CpuSample",
    "Load",
    "Timing",
    "Watch",
    "activity",
    "cpu_sample",
    "measure",
    "open_watch",
    "timing_of",
    "watch",
]

BUSY_SHARE = 0.25  # other programs using a quarter of the machine's CPU time: a busy machine
MIN_WATCH_S = 0.2  # shorter windows: /proc/stat's 10 ms ticks cannot tell a share


# --- what else ran ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Load:
    """What else ran during a measurement. ``other_cpu``: other programs' share of the
    machine's CPU time (0..1; None: not measurable here or the window was too short);
    ``work``: the pieces of work that ran in other threads of this process, as (id, kind)
    pairs ("training run", "sweep", ...), sorted."""

    seconds: float = 0.0
    other_cpu: float | None = None
    work: tuple[tuple[int, str], ...] = ()

    @property
    def others(self) -> tuple[str, ...]:
        """The kinds of the other work, one entry per piece, sorted."""
        return tuple(sorted(kind for _, kind in self.work))

    @property
    def busy(self) -> bool:
        return bool(self.work) or (self.other_cpu is not None and self.other_cpu >= BUSY_SHARE)

    def merge(self, other: Load) -> Load:
        """Both windows as one: the shares weighted by their length, each piece of other work
        once (one training run seen by both windows is one run)."""
        shares = [(w.other_cpu, w.seconds) for w in (self, other) if w.other_cpu is not None]
        total = sum(s for _, s in shares)
        share = sum(c * s for c, s in shares) / total if total > 0 else (shares[0][0] if shares else None)
        return Load(self.seconds + other.seconds, share, tuple(sorted(set(self.work) | set(other.work))))


@dataclass(frozen=True)
class CpuSample:
    """CPU seconds since boot: every process on every core (``busy``), all the machine had
    (``total``: busy and idle), and this process's own (``own``)."""

    busy: float
    total: float
    own: float


def cpu_sample() -> CpuSample | None:
    """The machine's and this process's CPU counters now; None without ``/proc/stat``."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = f.readline().split()
        tick = float(os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, AttributeError):
        return None
    if len(fields) < 5 or fields[0] != "cpu":
        return None
    # user nice system idle iowait irq softirq steal (guest time is counted in user already)
    ticks = [float(v) for v in fields[1:9]]
    idle = sum(ticks[3:5])
    busy = sum(ticks) - idle
    t = os.times()
    return CpuSample(busy / tick, (busy + idle) / tick, t.user + t.system)


def _other_share(a: CpuSample | None, b: CpuSample | None, seconds: float) -> float | None:
    if a is None or b is None or seconds < MIN_WATCH_S:
        return None
    total = b.total - a.total
    if total <= 0:
        return None
    return min(1.0, max(0.0, (b.busy - a.busy) - (b.own - a.own)) / total)


_LOCK = threading.Lock()
_ACTIVE: dict[int, tuple[str, int]] = {}  # token -> (kind, thread id)
_STARTED: deque[tuple[int, str, int]] = deque(maxlen=512)  # the latest starts: (token, kind, thread)
_LAST = [0]  # the last token handed out


@contextmanager
def activity(kind: str) -> Iterator[None]:
    """Mark a piece of work (a training run, a sweep) as running in this thread, so that
    measurements taken meanwhile in other threads can say it ran."""
    me = threading.get_ident()
    with _LOCK:
        _LAST[0] += 1
        token = _LAST[0]
        _ACTIVE[token] = (kind, me)
        _STARTED.append((token, kind, me))
    try:
        yield
    finally:
        with _LOCK:
            _ACTIVE.pop(token, None)


@dataclass
class Watch:
    """An open window; ``load`` is set when it closes (`watch`)."""

    sampler: Callable[[], CpuSample | None] | None
    clock: Callable[[], float]
    start: float = 0.0
    first_token: int = 0
    thread: int = 0
    before: CpuSample | None = None
    present: list[tuple[int, str]] = field(default_factory=list)
    load: Load = field(default_factory=Load)

    def open(self) -> None:
        self.thread = threading.get_ident()
        with _LOCK:
            self.first_token = _LAST[0]
            self.present = [(tok, kind) for tok, (kind, th) in _ACTIVE.items() if th != self.thread]
        self.before = self.sampler() if self.sampler is not None else None
        self.start = self.clock()

    def so_far(self) -> Load:
        """The load from the opening until now (the window stays open)."""
        seconds = max(0.0, self.clock() - self.start)
        after = self.sampler() if self.sampler is not None else None
        with _LOCK:
            started = [(tok, k) for tok, k, th in _STARTED if tok > self.first_token and th != self.thread]
        work = tuple(sorted(set(self.present) | set(started)))
        return Load(seconds, _other_share(self.before, after, seconds), work)

    def close(self) -> Load:
        self.load = self.so_far()
        return self.load


def open_watch() -> Watch:
    """A `watch` window opened now, for code that cannot wrap its work in ``with``: read
    `Watch.so_far`, or `Watch.close` it, when the work is done."""
    w = Watch(cpu_sample, monotonic)
    w.open()
    return w


@contextmanager
def watch(
    *, sampler: Callable[[], CpuSample | None] | None = None, clock: Callable[[], float] | None = None
) -> Iterator[Watch]:
    """A window over which `Load` is measured: ``with watch() as w: ...``, then ``w.load``.
    ``sampler`` and ``clock`` default to `cpu_sample` and ``time.monotonic``."""
    w = Watch(cpu_sample if sampler is None else sampler, monotonic if clock is None else clock)
    w.open()
    try:
        yield w
    finally:
        w.close()


# --- timings ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    """Seconds per call: the median of ``n`` timed calls, their quartiles, the fastest and
    the slowest; ``settled``: the spread fell under the asked ``rel_spread`` before a bound
    stopped the repeats."""

    median: float
    q1: float
    q3: float
    fastest: float
    slowest: float
    n: int
    settled: bool
    load: Load = field(default_factory=Load)

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def spread(self) -> float:
        """IQR / median (inf for a median of 0)."""
        return self.iqr / self.median if self.median > 0 else float("inf")


def _quartiles(times: list[float]) -> tuple[float, float, float]:
    if len(times) == 1:
        return times[0], times[0], times[0]
    q1, q2, q3 = statistics.quantiles(times, n=4, method="inclusive")  # numpy's "linear"
    return q1, q2, q3


def timing_of(times: list[float], *, rel_spread: float = 0.05, load: Load | None = None) -> Timing:
    """The `Timing` of seconds already measured (the updates of a training run, say):
    ``settled`` when their IQR / median is within ``rel_spread``."""
    if not times:
        raise ValueError("timing_of needs at least one time")
    q1, med, q3 = _quartiles(list(times))
    settled = med > 0 and (q3 - q1) / med <= rel_spread
    return Timing(med, q1, q3, min(times), max(times), len(times), settled, load or Load())


def measure(
    fn: Callable[[], Any],
    *,
    min_repeats: int = 5,
    max_repeats: int = 50,
    max_seconds: float = 1.0,
    rel_spread: float = 0.05,
    warmup: int = 1,
    sync: Callable[[], None] | None = None,
    clock: Callable[[], float] | None = None,
    sampler: Callable[[], CpuSample | None] | None = None,
) -> Timing:
    """Time ``fn()`` by the module's rule: ``warmup`` untimed calls, then timed calls until
    ``min_repeats`` are in and IQR / median <= ``rel_spread``, or until ``max_repeats`` calls
    or ``max_seconds`` (at least one timed call). ``clock`` defaults to ``time.perf_counter``,
    ``sampler`` (the CPU counters for the `Load`) to `cpu_sample`."""
    if not 1 <= min_repeats <= max_repeats or max_seconds < 0 or rel_spread < 0 or warmup < 0:
        raise ValueError(
            f"need 1 <= min_repeats={min_repeats} <= max_repeats={max_repeats}, max_seconds={max_seconds} "
            f">= 0, rel_spread={rel_spread} >= 0 and warmup={warmup} >= 0"
        )
    now = perf_counter if clock is None else clock
    wait = sync if sync is not None else (lambda: None)
    for _ in range(warmup):
        fn()
        wait()
    times: list[float] = []
    settled = False
    with watch(sampler=sampler, clock=now) as w:
        start = now()
        while True:
            wait()
            t0 = now()
            out = fn()
            wait()
            times.append(now() - t0)
            del out
            if len(times) >= min_repeats:
                q1, med, q3 = _quartiles(times)
                if med > 0 and (q3 - q1) / med <= rel_spread:
                    settled = True
                    break
            if len(times) >= max_repeats or now() - start >= max_seconds:
                break
    q1, med, q3 = _quartiles(times)
    return Timing(med, q1, q3, min(times), max(times), len(times), settled, w.load)
