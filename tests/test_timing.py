"""The timing rule (`tformer.timing`): driven by a fake clock whose calls last what the test
says, so when the repeats stop, and what the median and the spread are, is exact."""

from __future__ import annotations

import threading

import pytest

from tformer.timing import BUSY_SHARE, CpuSample, Load, activity, measure, timing_of, watch


class FakeClock:
    """A clock that only moves when a timed call runs: each call of ``fn`` lasts the next of
    ``durations`` (cycled)."""

    def __init__(self, durations: list[float]) -> None:
        self.t = 0.0
        self.durations = durations
        self.calls = 0

    def __call__(self) -> float:
        return self.t

    def fn(self) -> None:
        self.t += self.durations[self.calls % len(self.durations)]
        self.calls += 1


def test_a_steady_call_settles_after_the_minimum():
    clock = FakeClock([0.010])
    t = measure(
        clock.fn, min_repeats=5, max_repeats=50, max_seconds=10, rel_spread=0.05, clock=clock, warmup=2
    )
    assert t.settled
    assert t.n == 5
    assert clock.calls == 7  # two warm-up calls, not timed
    assert t.median == pytest.approx(0.010)
    assert t.iqr == pytest.approx(0.0)


def test_a_noisy_call_runs_to_the_repeat_bound_and_reports_its_spread():
    clock = FakeClock([0.010, 0.030, 0.012, 0.050])  # a machine where other work comes and goes
    t = measure(
        clock.fn, min_repeats=5, max_repeats=12, max_seconds=10, rel_spread=0.05, clock=clock, warmup=0
    )
    assert not t.settled
    assert t.n == 12
    times = sorted([0.010, 0.030, 0.012, 0.050] * 3)
    assert t.fastest == pytest.approx(0.010)
    assert t.slowest == pytest.approx(0.050)
    assert t.median == pytest.approx((times[5] + times[6]) / 2)
    assert t.q1 < t.median < t.q3
    assert t.spread > 0.5


def test_the_time_bound_stops_before_the_minimum():
    clock = FakeClock([0.4])
    t = measure(
        clock.fn, min_repeats=5, max_repeats=50, max_seconds=1.0, rel_spread=0.05, clock=clock, warmup=0
    )
    assert t.n == 3
    assert not t.settled  # 0.4, 0.8, 1.2 s: the third call crossed the bound
    one = measure(clock.fn, min_repeats=5, max_seconds=0.0, clock=clock, warmup=0)
    assert one.n == 1
    assert one.q1 == one.median == one.q3  # at least one call, always


def test_the_spread_settles_once_the_outliers_are_outnumbered():
    # one slow call among steady ones: the IQR ignores it once enough steady calls are in
    clock = FakeClock([0.050] + [0.010] * 40)
    t = measure(
        clock.fn, min_repeats=3, max_repeats=40, max_seconds=10, rel_spread=0.05, clock=clock, warmup=0
    )
    assert t.settled
    assert t.median == pytest.approx(0.010)
    assert t.n == 5  # at 3 and 4 calls the slow one still widens the quartiles


def test_sync_runs_around_every_timed_call():
    clock = FakeClock([0.01])
    seen = []
    measure(lambda: seen.append("call"), min_repeats=2, max_repeats=2, clock=clock, sync=lambda: seen.append("sync"), warmup=1)  # fmt: skip
    assert seen == ["call", "sync"] + ["sync", "call", "sync"] * 2


def test_bad_bounds_are_refused():
    with pytest.raises(ValueError, match="min_repeats"):
        measure(lambda: None, min_repeats=0)
    with pytest.raises(ValueError, match="min_repeats"):
        measure(lambda: None, min_repeats=5, max_repeats=3)
    with pytest.raises(ValueError, match="at least one"):
        timing_of([])


def test_timing_of_measured_times():
    t = timing_of([0.010, 0.011, 0.010, 0.012, 0.010], rel_spread=0.15)
    assert t.median == pytest.approx(0.010)
    assert t.q1 == pytest.approx(0.010)
    assert t.q3 == pytest.approx(0.011)
    assert t.settled
    assert t.n == 5
    assert not timing_of([0.010, 0.020, 0.030, 0.040]).settled


# --- other work -------------------------------------------------------------------------------------


def test_other_programs_share_of_the_cpu_is_what_this_process_did_not_use():
    samples = iter([CpuSample(busy=10.0, total=100.0, own=1.0), CpuSample(busy=11.5, total=102.0, own=1.5)])
    clock = iter([0.0, 1.0])
    with watch(sampler=lambda: next(samples), clock=lambda: next(clock)) as w:
        pass
    # 1.5 CPU s used in all, 0.5 of it ours: others took 1.0 of the 2.0 the machine had
    assert w.load.other_cpu == pytest.approx(0.5)
    assert w.load.busy
    assert w.load.seconds == 1.0


def test_a_short_window_or_no_counters_gives_no_share():
    samples = iter([CpuSample(0, 0, 0), CpuSample(1, 1, 0)])
    clock = iter([0.0, 0.05])  # under MIN_WATCH_S
    with watch(sampler=lambda: next(samples), clock=lambda: next(clock)) as w:
        pass
    assert w.load.other_cpu is None
    assert not w.load.busy
    with watch(sampler=lambda: None) as w:
        pass
    assert w.load.other_cpu is None


def test_work_in_other_threads_is_listed_and_our_own_is_not():
    started, release = threading.Event(), threading.Event()

    def training() -> None:
        with activity("training run"):
            started.set()
            release.wait(5)

    with activity("sweep"), watch(sampler=lambda: None) as w:  # our own sweep: not "other work"
        th = threading.Thread(target=training)
        th.start()
        started.wait(5)
        release.set()
        th.join(5)
    assert w.load.others == ("training run",)
    assert w.load.busy
    with watch(sampler=lambda: None) as quiet:  # the run has ended: nothing else runs now
        pass
    assert quiet.load.others == ()
    assert not quiet.load.busy


def test_work_already_running_when_the_watch_opens_is_listed():
    started, release = threading.Event(), threading.Event()

    def sweep() -> None:
        with activity("sweep"):
            started.set()
            release.wait(5)

    th = threading.Thread(target=sweep)
    th.start()
    started.wait(5)
    clock = FakeClock([0.01])
    t = measure(clock.fn, min_repeats=2, clock=clock, sampler=lambda: None)
    release.set()
    th.join(5)
    assert t.load.others == ("sweep",)
    assert t.load.busy


def test_loads_merge_weighted_by_their_length():
    a = Load(1.0, 0.0, ((7, "sweep"), (9, "training run")))
    b = Load(3.0, 0.4, ((9, "training run"),))  # the same run, seen by both windows
    m = a.merge(b)
    assert m.seconds == 4.0
    assert m.other_cpu == pytest.approx(0.3)
    assert m.others == ("sweep", "training run")
    assert Load(1.0, None).merge(Load(1.0, None)).other_cpu is None
    assert not Load(1.0, BUSY_SHARE / 2).busy
    assert Load(1.0, BUSY_SHARE).busy


def test_the_real_counters_read_on_this_machine():
    from tformer.timing import cpu_sample

    s = cpu_sample()
    if s is None:
        pytest.skip("no /proc/stat here")
    assert 0 <= s.busy <= s.total
    assert s.own >= 0
