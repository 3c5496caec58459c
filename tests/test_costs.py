"""The sweeps of the costs page: lengths double, budgets stop a method with a message, the
progress reaches 1, memory is measured (and grows with n for explicit attention), exponents are
fitted; and the figure builder that draws them."""

from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest
import torch

from tformer.efficiency.costs import WallSettings, wall_sweep
from tformer.efficiency.measure import (
    MIB,
    Budget,
    Method,
    Note,
    doubling,
    exclusive,
    fit_exponent,
    fit_power,
    measure_curves,
    memory_budget,
    peak_memory,
)
from tformer.efficiency.rnn import RnnSettings, path_lengths, rnn_sweep
from tformer.efficiency.sparse_costs import SparseSettings, sparse_sweep, stride_for
from tformer.efficiency.tiled import explicit_attention
from tformer.figures.costs import Series, cost_lines

CPU = torch.device("cpu")
SMALL = Budget(call_s=0.5, total_s=20.0)


def english(template: str, /, **values: object) -> str:
    return template.format(**values)


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[float, Note]] = []

    def __call__(self, fraction: float, note: Note) -> None:
        self.calls.append((fraction, note))

    @property
    def fractions(self) -> list[float]:
        return [f for f, _ in self.calls]


@pytest.fixture(scope="module")
def wall():
    progress = Recorder()
    sweep = wall_sweep(WallSettings(n_heads=2, d_head=8, n_min=16, n_max=256, budget=SMALL), "cpu", progress)
    return sweep, progress


def test_the_wall_sweep_measures_every_method_at_doubling_lengths(wall):
    sweep, _ = wall
    methods = [c.method for c in sweep.curves]
    assert methods[0] == "explicit"
    assert methods[-1] == "tiled"
    assert "sdpa_math" in methods  # the math backend runs everywhere
    assert set(methods) | set(sweep.unavailable) == {"explicit", "tiled"} | {
        "sdpa_math",
        "sdpa_efficient",
        "sdpa_flash",
        "sdpa_cudnn",
    }
    for c in sweep.curves:
        n = c.n.tolist()
        assert len(n) >= 3, (c.method, c.stop)
        assert n == doubling(16, 256)[: len(n)]  # monotone: 16, 32, 64, ...
        assert (c.time_s > 0).all()
        assert c.time_exponent is not None
        assert np.isfinite(c.time_exponent)
        assert c.memory_exponent is not None
        assert np.isfinite(c.memory_exponent)
    assert sweep.memory_method == "profiler"
    assert sweep.device == "cpu"
    assert sweep.device_name
    assert sweep.seconds > 0


def test_the_progress_reaches_one_and_never_goes_back(wall):
    _, progress = wall
    fractions = progress.fractions
    assert fractions[-1] == 1.0
    assert all(0.0 <= f <= 1.0 for f in fractions)
    assert fractions == sorted(fractions)
    assert any("method" in dict(note.values) for _, note in progress.calls)


def test_explicit_memory_is_measured_and_grows_like_n_squared(wall):
    sweep, _ = wall
    c = sweep.curve("explicit")
    peaks = c.peak_bytes
    n = c.n
    assert np.all(np.diff(peaks) > 0)
    # it must hold at least the scores, heads × n² floats: a measurement, not a formula
    assert np.all(peaks >= 2 * n.astype(float) ** 2 * 4)
    big = n >= 64
    assert 1.7 <= fit_exponent(n[big], peaks[big], skip=0) <= 2.3
    flash = next(x for x in sweep.curves if x.method == "tiled")
    assert flash.peak_bytes[-1] < peaks[-1]  # the tiled loop never holds the n × n matrix


def test_peak_memory_is_a_real_measurement():
    assert 4_000_000 <= peak_memory(lambda: torch.empty(1_000_000), CPU) < 4_200_000

    def two_in_turn() -> torch.Tensor:
        a = torch.ones(1_000_000)
        del a  # freed before the second is made: the peak is one, not two
        return torch.ones(1_000_000)

    assert peak_memory(two_in_turn, CPU) < 4_200_000
    q = torch.randn(1, 2, 128, 8)
    assert peak_memory(lambda: explicit_attention(q, q, q), CPU) >= 2 * 128 * 128 * 4


def test_a_memory_budget_stops_a_method_with_a_message():
    budget = Budget(call_s=5.0, total_s=60.0, memory_bytes=200 * 1024)  # time never binds here
    sweep = wall_sweep(WallSettings(n_heads=2, d_head=8, n_min=32, n_max=512, block=16, budget=budget), "cpu")
    explicit = sweep.curve("explicit")
    assert explicit.n.tolist() == [32, 64]  # 128 would hold 2 × 2 × 128² floats: 256 KiB
    assert explicit.stop is not None
    assert "memory budget" in explicit.stop.template
    text = explicit.stop.render(english)
    assert "n = 128 skipped" in text
    assert "memory budget of 0.195 MiB" in text
    assert sweep.memory_budget == 200 * 1024
    assert sweep.curve("tiled").n.tolist()[-1] > 64  # the tiled loop needs little: it goes on


def test_a_time_budget_stops_a_method_once_a_call_is_too_slow():
    def slow(n: int):
        return lambda: time.sleep(n / 1000)  # 16 ms at n = 16, 32 ms at n = 32

    methods = [Method("sleepy", slow, lambda n: 0, exponent=1.0)]
    progress = Recorder()
    [curve], _ = measure_curves(methods, [4, 8, 16, 32, 64], Budget(call_s=0.02, total_s=30), CPU, progress)
    assert curve.n.tolist()[-1] in (8, 16)
    assert curve.stop is not None
    assert "budget" in curve.stop.render(english)
    assert "ms per call" in curve.stop.template
    assert progress.fractions[-1] == 1.0


def test_the_total_budget_is_shared_by_the_methods():
    def slow(n: int):
        return lambda: time.sleep(0.01)

    methods = [Method(f"m{i}", slow, lambda n: 0, exponent=0.0) for i in range(2)]
    start = time.perf_counter()
    curves, _ = measure_curves(
        methods, doubling(1, 2**20), Budget(call_s=1, total_s=1.0, repeats=3), CPU, Recorder()
    )
    assert time.perf_counter() - start < 3
    assert all(c.stop is not None and "would run out" in c.stop.template for c in curves)


def test_a_second_sweep_waits_for_the_first_and_says_so():
    started, release = threading.Event(), threading.Event()

    def first() -> None:
        with exclusive(Recorder()):
            started.set()
            release.wait(5)

    t = threading.Thread(target=first)
    t.start()
    started.wait(5)
    waiting = Recorder()
    threading.Timer(0.2, release.set).start()
    with exclusive(waiting):
        pass
    t.join()
    assert waiting.calls
    assert "Waiting" in waiting.calls[0][1].template


class FakeTimer:
    """``tformer.timing``'s clock, moved only by the fake calls: each call at length n lasts
    ``duration(n, k)`` seconds, k counting the calls."""

    def __init__(self, duration) -> None:
        self.t, self.k, self.duration = 0.0, 0, duration

    def __call__(self) -> float:
        return self.t

    def method(self, key: str = "fake") -> Method:
        def setup(n: int):
            def call() -> None:
                self.t += self.duration(n, self.k)
                self.k += 1

            return call

        return Method(key, setup, lambda n: 0)


def _sweep_with(monkeypatch, duration):
    import tformer.timing

    timer = FakeTimer(duration)
    monkeypatch.setattr(tformer.timing, "perf_counter", timer)
    [curve], _ = measure_curves(
        [timer.method()], [64, 128, 256, 512, 1024, 2048], Budget(call_s=1.0, total_s=30), CPU, Recorder()
    )
    return curve


def test_a_steady_n_squared_timer_gives_a_good_fit_and_settled_points(monkeypatch):
    curve = _sweep_with(monkeypatch, lambda n, k: 1e-9 * n * n)
    assert curve.time_fit is not None
    assert curve.time_fit.good
    assert curve.time_fit.exponent == pytest.approx(2.0)
    assert curve.time_fit.r2 == pytest.approx(1.0)
    assert all(p.settled and p.repeats == 5 for p in curve.points)  # Budget.repeats, then settled
    assert np.allclose(curve.q1_s, curve.time_s)
    assert np.allclose(curve.q3_s, curve.time_s)


def test_a_noisy_timer_gives_no_trusted_exponent_and_reports_its_spread(monkeypatch):
    """A busy machine: how long a call takes depends on what else runs, not only on n. The
    fitted slope is a number, but not a fact about attention: the fit says so."""
    bursts = [1.0, 6.0, 1.5, 9.0, 1.2, 4.0, 0.8]  # other work coming and going

    def noisy(n: int, k: int) -> float:
        return 1e-6 * n * bursts[(k // 7) % len(bursts)] * (1 + (k % 3))

    curve = _sweep_with(monkeypatch, noisy)
    fit = curve.time_fit
    assert fit is not None
    assert not fit.good
    assert fit.r2 < 0.98 or not fit.monotonic
    assert any(not p.settled for p in curve.points)
    assert all(p.q1_s <= p.time_s <= p.q3_s for p in curve.points)
    assert any(p.q3_s - p.q1_s > 0.2 * p.time_s for p in curve.points)  # the spread is reported


def test_fit_power_judges_the_fit():
    n = np.array([64, 128, 256, 512, 1024], dtype=float)
    good = fit_power(n, 3e-9 * n**2, skip=0)
    assert good.good
    assert good.exponent == pytest.approx(2.0)
    assert good.points == 5
    dip = fit_power(n, np.array([1.0, 4.0, 16.0, 10.0, 64.0]), skip=0)  # falls at 512
    assert not dip.monotonic
    assert not dip.good
    scattered = fit_power(n, np.array([1.0, 9.0, 3.0, 27.0, 30.0]), skip=0)
    assert scattered.r2 < 0.98
    assert not scattered.good
    two = fit_power([64, 128], [1.0, 4.0])
    assert two.r2 == 1.0
    assert not two.good  # two points always fit a line: nothing is checked
    assert fit_power([16], [1.0]) is None


def test_fit_exponent():
    n = np.array([16, 32, 64, 128, 256])
    assert fit_exponent(n, 3.0 * n**2) == pytest.approx(2.0)
    assert fit_exponent(n, np.r_[[1.0, 1.0], 5.0 * n[2:] ** 1.5]) == pytest.approx(1.5)  # smallest skipped
    assert fit_exponent([16], [1.0]) is None
    assert fit_exponent([16, 32], [1.0, np.nan]) is None
    assert fit_exponent([16, 32], [1.0, 4.0]) == pytest.approx(2.0)


def test_budgets_and_settings_are_checked():
    with pytest.raises(ValueError, match=r"call_s=0, total_s=10\.0 must be > 0"):
        Budget(call_s=0)
    with pytest.raises(ValueError, match="memory_bytes=0 must be positive"):
        Budget(memory_bytes=0)
    with pytest.raises(ValueError, match="dtype='int8' must be one of"):
        WallSettings(dtype="int8")
    with pytest.raises(ValueError, match="not divisible"):
        RnnSettings(d_model=100, n_heads=12)
    with pytest.raises(ValueError, match="from n_min=64 to n_max=32: need 1 <= n_min <= n_max"):
        doubling(64, 32)
    assert doubling(64, 300) == [64, 128, 256]
    auto = memory_budget(Budget(), CPU)
    assert 0 < auto <= 2**30


def test_the_rnn_sweep_and_the_path_lengths():
    settings = RnnSettings(d_model=32, n_heads=4, n_min=16, n_max=128, budget=SMALL)
    sweep = rnn_sweep(settings, "cpu", Recorder())
    assert [c.method for c in sweep.curves] == ["gru", "attention"]
    for c in sweep.curves:
        assert len(c.points) >= 2
        assert c.time_exponent is not None
    paths = sweep.extra["paths"]
    assert paths["gru"]["path"].tolist() == [15, 31, 63, 127]
    assert paths["gru"]["sequential"].tolist() == [16, 32, 64, 128]
    assert paths["attention"]["path"].tolist() == [1, 1, 1, 1]
    assert path_lengths(np.array([2]))["gru"]["path"].tolist() == [1]


def test_the_sparse_sweep():
    settings = SparseSettings(n_heads=2, d_head=8, window=4, n_min=32, n_max=256, budget=SMALL)
    sweep = sparse_sweep(settings, "cpu", Recorder())
    assert [c.method for c in sweep.curves] == ["dense_local", "local", "dense_strided", "strided"]
    assert all(len(c.points) >= 3 for c in sweep.curves)
    shares = sweep.extra["shares"]
    assert np.all(np.diff(shares["local"]) < 0)
    assert np.all(shares["local_computed"] >= shares["local"])
    assert np.all(shares["strided_computed"] >= shares["strided"])
    assert sweep.extra["strides"].tolist() == [stride_for(n) for n in (32, 64, 128, 256)]
    assert stride_for(1024) == 32
    assert stride_for(100, 7) == 7


# --- the figure -----------------------------------------------------------------------------------


def test_cost_lines_draws_log_log_lines_and_leaves_out_what_a_log_axis_cannot_show():
    fig = cost_lines(
        [
            Series("explicit: ∝ n^2.00", [64, 128, 256], [1.0, 4.0, 16.0], key="explicit"),
            Series("memory <b>", [64, 128, 256], [0.0, np.nan, 2.0], key="tiled"),
            Series("formula", [64, 128, 256], [1, 4, 16], key="formula", dash="dash"),
        ],
        title="time",
        x_title="n",
        y_title="ms",
        y_unit="ms",
    )
    spec = json.loads(fig.to_json())
    assert spec["layout"]["xaxis"]["type"] == "log"
    assert spec["layout"]["yaxis"]["type"] == "log"
    names = [t["name"] for t in spec["data"]]
    assert names[0] == "explicit: ∝ n^2.00"
    assert names[1] == "memory &lt;b&gt;"
    second = fig.data[1]
    assert list(second.x) == [256.0]
    assert list(second.y) == [2.0]
    assert fig.data[2].line.dash == "dash"
    assert fig.data[2].mode == "lines"
    assert spec["layout"]["xaxis"]["ticktext"] == ["64", "128", "256"]


def test_cost_lines_refuses_bad_input():
    with pytest.raises(ValueError, match="at least one"):
        cost_lines([], title="", x_title="", y_title="")
    with pytest.raises(ValueError, match="3 values but y has 2"):
        cost_lines([Series("a", [1, 2, 3], [1, 2])], title="", x_title="", y_title="")
    with pytest.raises(ValueError, match="dash"):
        cost_lines([Series("a", [1], [1], dash="wavy")], title="", x_title="", y_title="")


def test_a_single_flat_line_gets_room():
    fig = cost_lines([Series("attention", [64, 128], [1, 1])], title="", x_title="", y_title="")
    assert fig.layout.yaxis.range == (-0.5, 0.5)
    assert MIB == 2**20
