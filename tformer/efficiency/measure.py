"""How `tformer.efficiency.costs` measures: time and peak memory of one call, the device and its free
memory, the budgets, and the loop that doubles the length until a budget says stop.

Time: `tformer.timing.measure` after a warm-up call, with the device synchronised around each
(CUDA runs asynchronously): the median of repeated calls, taken until their spread is small or
a bound is reached, kept with its quartiles. An exponent is fitted to each curve (`fit_power`)
and trusted (`Fit.good`) only when log time follows a straight line in log n (R² >= `R2_MIN`)
and the time does not fall as n grows. Peak memory is a measurement, never a formula: on CUDA the
allocator's peak (``torch.cuda.reset_peak_memory_stats`` then ``max_memory_allocated``) minus
what was allocated before the call; on the CPU the torch profiler's memory events
(``profile_memory=True``) of the measuring thread, added up in time order, the peak above the
start. Both count what the call allocates, its output included, not its inputs.
No Streamlit here: results are dataclasses and numpy; messages are `Note` templates that the
page translates.
"""

from __future__ import annotations

import os
import platform
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from .. import timing
from ..timing import Timing

__all__ = [
    "GIB",
    "MIB",
    "MONOTONIC_SLACK",
    "R2_MIN",
    "REL_SPREAD",
    "Budget",
    "Curve",
    "Fit",
    "Method",
    "Note",
    "Point",
    "Progress",
    "device_name",
    "doubling",
    "exclusive",
    "fit_exponent",
    "fit_power",
    "free_memory",
    "measure_curves",
    "memory_budget",
    "memory_method",
    "mib",
    "peak_memory",
    "time_call",
]

MIB = 2**20
GIB = 2**30
REL_SPREAD = 0.05  # a length's repeats stop once IQR / median is this small
MAX_REPEATS = 25  # ... or after this many timed calls
R2_MIN = 0.98  # an exponent is shown only when log time fits a line in log n this well
MONOTONIC_SLACK = 0.05  # ... and no length's time is more than 5 % below the one before


@dataclass(frozen=True)
class Note:
    """A message for the reader: an English template and its values, translated where shown.
    A value named ``method`` is a method's key; the page shows the method's name instead."""

    template: str
    values: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, template: str, **values: Any) -> Note:
        return cls(template, tuple(sorted(values.items())))

    def render(self, translate: Callable[..., str], names: dict[str, str] | None = None) -> str:
        """The template translated and filled in; a value that is itself a Note is rendered first."""
        values = {k: v.render(translate, names) if isinstance(v, Note) else v for k, v in self.values}
        if names is not None and "method" in values:
            values["method"] = names.get(values["method"], values["method"])
        return translate(self.template, **values)


# progress(fraction done in 0..1, what is being measured now)
Progress = Callable[[float, Note], None]


@dataclass(frozen=True)
class Budget:
    """When a sweep stops. ``call_s``: no length is started whose call is predicted to take
    longer (from the fastest call at the last length), and a method stops once a length's
    fastest call took longer; ``memory_bytes``: no length is started whose
    formula needs more (None: min(1 GiB, a quarter of the free memory)); ``total_s``: the whole
    sweep, shared equally by the methods still to run; ``repeats``: the fewest timed calls per
    length before the spread may stop them (`tformer.timing.measure`)."""

    call_s: float = 0.25
    memory_bytes: int | None = None
    total_s: float = 10.0
    repeats: int = 5

    def __post_init__(self) -> None:
        if not self.call_s > 0 or not self.total_s > 0 or self.repeats < 1:
            raise ValueError(
                f"call_s={self.call_s}, total_s={self.total_s} must be > 0 and repeats={self.repeats} >= 1"
            )
        if self.memory_bytes is not None and self.memory_bytes < 1:
            raise ValueError(f"memory_bytes={self.memory_bytes} must be positive or None")


@dataclass(frozen=True)
class Point:
    n: int  # sequence length
    time_s: float  # median of ``repeats`` calls
    peak_bytes: int | None  # None: this device has no memory measurement
    repeats: int
    fastest_s: float  # the fastest call: what the budgets go by (least disturbed by other work)
    q1_s: float = 0.0  # the quartiles of the timed calls: the spread shown
    q3_s: float = 0.0
    settled: bool = True  # the spread fell under REL_SPREAD before a bound stopped the repeats

    @classmethod
    def of(cls, n: int, t: Timing, peak_bytes: int | None) -> Point:
        return cls(n, t.median, peak_bytes, t.n, t.fastest, t.q1, t.q3, t.settled)


@dataclass(frozen=True)
class Fit:
    """The least-squares line of log y against log n: its slope (the exponent), how well the
    points fit it (R² on log-log) and whether y never falls (within MONOTONIC_SLACK) as n
    grows. ``good``: both hold and at least three points were fitted (two always fit)."""

    exponent: float
    r2: float
    monotonic: bool
    points: int

    @property
    def good(self) -> bool:
        return self.points >= 3 and self.r2 >= R2_MIN and self.monotonic


@dataclass(frozen=True)
class Method:
    """One line of a sweep. ``setup(n)`` makes the inputs for length n and returns the call to
    measure; ``need_bytes(n)`` is the formula for what inputs and call need (checked against the
    memory budget before anything is allocated); ``exponent`` is how time is expected to grow
    with n (2: doubling n quadruples it), used to predict the next length's time."""

    key: str
    setup: Callable[[int], Callable[[], Any]]
    need_bytes: Callable[[int], int]
    exponent: float = 2.0


@dataclass(frozen=True)
class Curve:
    method: str
    points: tuple[Point, ...]
    stop: Note | None  # why it stopped before the longest length; None: it reached it
    time_exponent: float | None  # fitted slope of log time against log n (shown only if time_fit.good)
    memory_exponent: float | None
    time_fit: Fit | None = None  # None: fewer than two points

    @property
    def q1_s(self) -> npt.NDArray[np.float64]:
        return np.array([p.q1_s for p in self.points], dtype=np.float64)

    @property
    def q3_s(self) -> npt.NDArray[np.float64]:
        return np.array([p.q3_s for p in self.points], dtype=np.float64)

    @property
    def n(self) -> npt.NDArray[np.int64]:
        return np.array([p.n for p in self.points], dtype=np.int64)

    @property
    def time_s(self) -> npt.NDArray[np.float64]:
        return np.array([p.time_s for p in self.points], dtype=np.float64)

    @property
    def peak_bytes(self) -> npt.NDArray[np.float64]:
        """Measured peaks (NaN where not measured)."""
        return np.array([np.nan if p.peak_bytes is None else p.peak_bytes for p in self.points])


def doubling(n_min: int, n_max: int) -> list[int]:
    """n_min, 2·n_min, 4·n_min, ... up to n_max."""
    if n_min < 1 or n_max < n_min:
        raise ValueError(f"lengths from n_min={n_min} to n_max={n_max}: need 1 <= n_min <= n_max")
    out = [n_min]
    while out[-1] * 2 <= n_max:
        out.append(out[-1] * 2)
    return out


def fit_power(n: npt.ArrayLike, y: npt.ArrayLike, skip: int = 2) -> Fit | None:
    """The `Fit` of log y against log n over the points above the ``skip`` smallest lengths
    (fixed costs dominate there), keeping at least two; None with fewer than two positive
    points."""
    n_, y_ = np.asarray(n, dtype=np.float64), np.asarray(y, dtype=np.float64)
    ok = np.isfinite(y_) & (y_ > 0) & (n_ > 0)
    n_, y_ = n_[ok], y_[ok]
    if len(n_) < 2:
        return None
    drop = min(skip, len(n_) - 2)
    x, v = np.log(n_[drop:]), np.log(y_[drop:])
    slope, intercept = np.polyfit(x, v, 1)
    residual = float(((v - (slope * x + intercept)) ** 2).sum())
    total = float(((v - v.mean()) ** 2).sum())
    r2 = 1.0 - residual / total if total > 0 else 1.0
    order = np.argsort(n_[drop:])
    ys = y_[drop:][order]
    monotonic = bool(np.all(ys[1:] >= ys[:-1] * (1 - MONOTONIC_SLACK)))
    return Fit(float(slope), float(r2), monotonic, len(x))


def fit_exponent(n: npt.ArrayLike, y: npt.ArrayLike, skip: int = 2) -> float | None:
    """The slope of `fit_power` (None where it has none), however well the points fit."""
    fit = fit_power(n, y, skip)
    return None if fit is None else fit.exponent


def mib(nbytes: float) -> str:
    """Bytes as MiB for a sentence: 0.195, 12.5, 2,410."""
    v = nbytes / MIB
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


# --- the device ---------------------------------------------------------------------------------


def device_name(device: torch.device) -> str:
    """What the page calls the device: the GPU's name, or the CPU's model."""
    if device.type == "cuda":
        return str(torch.cuda.get_device_name(device))
    if device.type == "mps":
        return "Apple GPU (MPS)"
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    return model or platform.processor() or platform.machine() or "CPU"


def free_memory(device: torch.device) -> int | None:
    """Bytes free on the device now (the GPU's free memory, or the system's available RAM)."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def memory_budget(budget: Budget, device: torch.device) -> int:
    """The budget's bytes, or min(1 GiB, a quarter of the free memory) (256 MiB if unknown)."""
    if budget.memory_bytes is not None:
        return budget.memory_bytes
    free = free_memory(device)
    return min(GIB, free // 4) if free is not None else 256 * MIB


def memory_method(device: torch.device) -> str:
    """How peak memory is measured here: "cuda", "profiler" (CPU) or "none"."""
    return {"cuda": "cuda", "cpu": "profiler"}.get(device.type, "none")


# --- one call -----------------------------------------------------------------------------------


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_call(call: Callable[[], Any], device: torch.device) -> float:
    """Seconds for one call, the device synchronised before and after."""
    _sync(device)
    t0 = time.perf_counter()
    out = call()
    _sync(device)
    dt = time.perf_counter() - t0
    del out
    return dt


_PROFILER_LOCK = threading.Lock()


def peak_memory(call: Callable[[], Any], device: torch.device) -> int | None:
    """The most memory the call held at once, above what was allocated when it began (its
    output included); None on a device without a measurement (MPS)."""
    if device.type == "cuda":
        _sync(device)
        base = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        out = call()
        _sync(device)
        peak = torch.cuda.max_memory_allocated(device) - base
        del out
        return max(int(peak), 0)
    if device.type != "cpu":
        return None
    from torch.profiler import ProfilerActivity, profile

    # one profiler at a time in this process: two threads profiling at once crash it (segfault)
    with _PROFILER_LOCK, profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        out = call()
        del out  # freed inside the window: its free event is recorded too
    # "[memory]" events carry the bytes allocated (+) or freed (−), in this thread only
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    events.sort(key=lambda e: e.start_ns())
    held = peak = 0
    for e in events:
        held += e.nbytes()
        peak = max(peak, held)
    return int(peak)


# --- the sweep loop -------------------------------------------------------------------------------

_LOCK = threading.Lock()


@contextmanager
def exclusive(progress: Progress) -> Iterator[None]:
    """One sweep at a time in this process: two at once would slow each other and both timings
    would be wrong. A second sweep waits (and says so) until the first is done. The sweep is
    a `tformer.timing.activity`: measurements elsewhere in the process list it as other work."""
    if not _LOCK.acquire(blocking=False):
        progress(0.0, Note.of("Waiting for another sweep on this machine to finish..."))
        _LOCK.acquire()
    try:
        with timing.activity("sweep"), torch.inference_mode():
            yield
    finally:
        _LOCK.release()


def _time_length(
    call: Callable[[], Any], first_s: float, budget: Budget, deadline: float, device: torch.device
) -> Timing:
    """The timing of one length (`tformer.timing.measure`): one call past the per-call budget;
    else at least ``budget.repeats`` calls and at most MAX_REPEATS, until IQR / median <=
    REL_SPREAD, within about 0.1 s or ``2 x repeats`` calls' time (whichever is longer) and
    what is left of the method's share of the sweep."""
    if first_s > budget.call_s:
        return timing.measure(call, min_repeats=1, max_repeats=1, warmup=0, sync=lambda: _sync(device))
    left = max(deadline - time.perf_counter(), first_s * budget.repeats)
    return timing.measure(
        call,
        min_repeats=budget.repeats,
        max_repeats=max(MAX_REPEATS, budget.repeats),
        max_seconds=min(max(0.1, 2 * budget.repeats * first_s), left),
        rel_spread=REL_SPREAD,
        warmup=0,
        sync=lambda: _sync(device),
    )


def _one_curve(
    m: Method,
    lengths: list[int],
    budget: Budget,
    mem_budget: int,
    deadline: float,
    device: torch.device,
    report: Callable[[int, int], None],
) -> Curve:
    points: list[Point] = []
    stop: Note | None = None
    for index, n in enumerate(lengths):
        report(index, n)
        need = m.need_bytes(n)
        if need > mem_budget:
            stop = Note.of(
                "n = {n} skipped: by the formula it needs about {need} MiB, over the memory budget "
                "of {budget} MiB",
                n=n,
                need=mib(need),
                budget=mib(mem_budget),
            )
            break
        if points:
            last = points[-1]
            guess = last.fastest_s * (n / last.n) ** m.exponent
            if guess > budget.call_s:
                stop = Note.of(
                    "n = {n} not run: one call would take about {guess:.0f} ms (n^{exponent:g} growth "
                    "from n = {last}), over the budget of {call:.0f} ms per call",
                    n=n,
                    guess=guess * 1e3,
                    exponent=m.exponent,
                    last=last.n,
                    call=budget.call_s * 1e3,
                )
                break
            if time.perf_counter() + guess * (budget.repeats + 2) > deadline:
                stop = Note.of(
                    "n = {n} not run: this method's share of the sweep's {total:.0f} s would run out",
                    n=n,
                    total=budget.total_s,
                )
                break
        try:
            call = m.setup(n)
            first = time_call(call, device)  # warm-up: first allocations, kernel choice
            peak = peak_memory(call, device)
            measured = _time_length(call, first, budget, deadline, device)
        except (RuntimeError, MemoryError) as err:  # out of memory, or a kernel refusing a size
            stop = Note.of("n = {n} failed: {error}", n=n, error=str(err).splitlines()[0][:160])
            break
        finally:
            call = None  # type: ignore[assignment]  # drop the inputs before the next length
        points.append(Point.of(n, measured, peak))
        if points[-1].fastest_s > budget.call_s:
            stop = Note.of(
                "stopped after n = {n}: even its fastest call took {took:.0f} ms, over the budget of "
                "{call:.0f} ms per call",
                n=n,
                took=points[-1].fastest_s * 1e3,
                call=budget.call_s * 1e3,
            )
            break
    time_fit = fit_power([p.n for p in points], [p.time_s for p in points])
    mem_exp = fit_exponent(
        [p.n for p in points], [np.nan if p.peak_bytes is None else p.peak_bytes for p in points]
    )
    return Curve(
        m.key, tuple(points), stop, None if time_fit is None else time_fit.exponent, mem_exp, time_fit
    )


def measure_curves(
    methods: list[Method],
    lengths: list[int],
    budget: Budget,
    device: torch.device,
    progress: Progress,
) -> tuple[list[Curve], int]:
    """Each method at each length in turn until a budget stops it: (curves, the memory budget
    used in bytes). The progress reaches 1.0 at the end. Call inside `exclusive`."""
    mem_budget = memory_budget(budget, device)
    # the profiler's first start takes a second or more: pay it before the clock starts
    peak_memory(lambda: torch.zeros(1, device=device), device)
    start = time.perf_counter()
    curves = []
    for i, m in enumerate(methods):
        # what is left of the sweep's time, shared equally by the methods still to run
        left = budget.total_s - (time.perf_counter() - start)
        deadline = time.perf_counter() + max(left, 0.0) / (len(methods) - i)

        def report(index: int, n: int, i: int = i, key: str = m.key) -> None:
            done = (i + index / max(len(lengths), 1)) / len(methods)
            progress(min(done, 1.0), Note.of("Measuring {method} at n = {n}", method=key, n=n))

        curves.append(_one_curve(m, lengths, budget, mem_budget, deadline, device, report))
    progress(1.0, Note.of("Done in {seconds:.1f} s", seconds=time.perf_counter() - start))
    return curves, mem_budget
