"""The costs page under AppTest: each section offers its sweep, runs it with small settings
behind a progress bar, draws its charts and keeps the result for the next visit; the sparse
section shows the masks on the text, and says so when there is none."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("streamlit")

from ._i18n_check import english_words, visible_strings
from .test_app_pages import assert_clean, decode, open_app

PAGE = "pages/costs.py"
SMALL = {
    "costs.n_max": "256",
    "costs.call_ms": "100",
    "costs.n_heads": "2",
    "costs.d_head": "16",
    "costs.d_model": "64",
}


def chart(at, key: str) -> dict:
    found = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if key in (c.proto.id or "")]
    assert found, f"no chart {key!r}"
    return found[0]


def run_section(section: str, **params: str):
    at = open_app(PAGE, **{"costs.section": section, **SMALL, **params})
    assert_clean(at)
    assert not at.get("plotly_chart") or section == "sparse"  # nothing measured before asked
    assert params.get("lang") == "zh" or any("Not measured yet" in i.value for i in at.info)
    at.button(key=f"costs_run_{section}").click().run()
    assert_clean(at)
    return at


def assert_exponent_or_noisy_note(at, names: list[str]) -> None:
    """Each curve shows its exponent in the legend, or the note names it as too noisy for one:
    never both, never neither (every method here reaches three lengths)."""
    note = " ".join(i.value for i in at.info if "No time exponent" in i.value)
    for name in names:
        method = name.split(": ∝")[0]
        assert ("∝ n^" in name) != (method in note), (name, note)


def test_the_wall_runs_draws_time_and_memory_and_is_kept():
    at = run_section("wall")
    time_fig, memory_fig = chart(at, "costs_time"), chart(at, "costs_memory")
    names = [t["name"] for t in time_fig["data"]]
    assert_exponent_or_noisy_note(at, names)
    assert any(n.startswith("SDPA, math backend") for n in names)
    assert any(n.startswith("our tiled loop") for n in names)
    formula = [t for t in memory_fig["data"] if t["name"].startswith("formula")]
    assert formula
    assert formula[0]["line"]["dash"] == "dash"
    explicit = next(t for t in memory_fig["data"] if t["name"].startswith("explicit"))
    assert list(decode(explicit["x"])) == [64, 128, 256]
    peaks = decode(explicit["y"])
    assert all(peaks[1:] > peaks[:-1])  # grows with n
    captions = " ".join(c.value for c in at.caption)
    assert "torch profiler memory events" in captions
    assert "Device: the CPU" in captions
    assert any("Where each method stopped" in m.value for m in at.markdown)
    # the next run (or another visitor) sees the result without asking again
    at.run()
    assert_clean(at)
    assert not any("Not measured yet" in i.value for i in at.info)
    assert at.button(key="costs_again_wall")
    assert chart(at, "costs_time")


def test_the_rnn_section_times_a_gru_and_attention_and_shows_path_lengths():
    at = run_section("rnn")
    names = [t["name"] for t in chart(at, "costs_time")["data"]]
    assert_exponent_or_noisy_note(at, names)
    assert any(n.startswith("GRU") for n in names)
    assert any(n.startswith("one self-attention layer") for n in names)
    path = chart(at, "costs_path")
    gru = next(t for t in path["data"] if "n − 1" in t["name"])
    assert list(decode(gru["y"])) == [63, 127, 255]
    attention = next(t for t in path["data"] if t["name"].startswith("attention"))
    assert set(decode(attention["y"]).tolist()) == {1.0}


def test_the_sparse_section_shows_the_masks_on_the_text_and_times_them():
    at = run_section("sparse", text="The cat sat on the mat and looked at the dog.", **{"costs.window": "1"})
    patterns = chart(at, "sparse_patterns")
    local = decode(patterns["data"][1]["z"])
    n = local.shape[0]
    assert local[0, 3] == 0
    assert local[5, 9] == 0  # outside |i − j| <= 1: weight 0
    assert abs(local.sum(-1) - 1).max() < 1e-4
    titles = [a["text"] for a in patterns["layout"]["annotations"]]
    allowed = 3 * n - 2  # the band |i − j| <= 1
    assert titles[1] == f"local, w = 1: {allowed / n**2:.0%} of the cells"
    assert chart(at, "costs_time")
    assert at.dataframe  # the time table


def test_with_no_text_the_sparse_section_says_so_and_still_measures():
    at = run_section("sparse", text="")
    assert any("No text" in i.value for i in at.info)
    assert chart(at, "costs_time")


def test_settings_that_do_not_fit_are_explained():
    at = open_app(PAGE, **{"costs.section": "rnn", "costs.d_model": "64", "costs.n_heads": "5"})
    assert_clean(at)
    assert any("not divisible" in w.value for w in at.warning)


def test_the_measured_page_in_chinese_has_no_english_left(monkeypatch):
    monkeypatch.setenv("TFORMER_I18N_MAIN_ONLY", "1")  # the shared sidebar is another page's
    at = run_section("wall", lang="zh")
    from tformer.ui.registry import page_for

    heading = page_for(PAGE).heading
    left = english_words(s for s in visible_strings(at) if s != heading)
    assert not left, left


class NoisyMachine:
    """A machine where other work comes and goes, as ``tformer.timing`` sees it. Its clock adds
    a delay to every reading, far longer than the calls themselves: uneven from one call to the
    next (the spread), and at a level that changes from one measured length to the next (each
    length is one `measure`, which reads the CPU counters when it starts and ends), high and
    low in turn, so that no curve can follow a power of n. The counters say other programs took
    half the machine's CPU time."""

    LEVELS = (1.0, 0.25)  # any three lengths in a row rise and fall

    def __init__(self) -> None:
        import time

        self.real, self.extra, self.reads, self.length = time.perf_counter, 0.0, 0, 0
        self.cpu = 0.0

    def clock(self) -> float:
        self.reads += 1
        level = self.LEVELS[(self.length // 2) % len(self.LEVELS)]
        self.extra += 0.05 * level * (1.6 if self.reads % 2 else 1.0)
        return self.real() + self.extra

    def sampler(self):
        from tformer.timing import CpuSample

        self.length += 1  # two readings per length: when its measure starts and ends
        self.cpu += 1.0
        return CpuSample(busy=self.cpu, total=2 * self.cpu, own=0.0)


def run_noisy_busy_wall(monkeypatch, **params: str):
    """The wall section swept on a forced noisy, busy machine: a `NoisyMachine`'s clock and CPU
    counters and a training run in another thread of the server."""
    import threading

    import tformer.timing
    from tformer.timing import activity

    machine = NoisyMachine()
    monkeypatch.setattr(tformer.timing, "perf_counter", machine.clock)
    # the sweep's own window too: on its real clock a fast machine sweeps in under MIN_WATCH_S,
    # too short a window for any share of the CPU time
    monkeypatch.setattr(tformer.timing, "monotonic", machine.clock)
    monkeypatch.setattr(tformer.timing, "cpu_sample", machine.sampler)
    started, release = threading.Event(), threading.Event()

    def training() -> None:
        with activity("training run"):
            started.set()
            release.wait(120)

    th = threading.Thread(target=training, daemon=True)
    th.start()
    started.wait(5)
    try:  # a second per call: the delays must not stop a method by its time budget
        return run_section("wall", **{"costs.n_max": "1024", "costs.call_ms": "1000", **params})
    finally:
        release.set()
        th.join(5)


def test_a_noisy_busy_sweep_shows_its_spread_no_exponent_and_says_why(monkeypatch):
    """The page draws error bars (the quartiles), no exponent in the legend, the note that the
    measurement was noisy, and the note naming the other work."""
    at = run_noisy_busy_wall(monkeypatch)
    fig = chart(at, "costs_time")
    for trace in fig["data"]:
        assert "∝ n^" not in trace["name"], trace["name"]  # no exponent from a noisy fit
        assert len(decode(trace["x"])) == 5  # 64 .. 1024: every length measured
        bars = trace["error_y"]
        assert bars["type"] == "data"
        assert not bars["symmetric"]
        assert decode(bars["array"]).max() > 0  # the spread is drawn
    infos = " ".join(i.value for i in at.info)
    assert "No time exponent is shown for" in infos
    assert "The measurement was noisy" in infos
    assert "its time fell as n grew" in infos
    warnings = " ".join(w.value for w in at.warning)
    assert "Other work ran during this measurement: 1 training run" in warnings
    assert "other programs using 50% of the machine's CPU time" in warnings
    captions = " ".join(c.value for c in at.caption)
    assert "Busy check:" in captions
    assert "/proc/stat" in captions
    points = at.dataframe[-1].value
    assert {"quartiles (ms)", "timed calls", "R² of the fit"} <= set(points.columns)
    assert points["time exponent"].isna().all()
    assert (points["spread under 5%"] == "no").all()


def test_the_noisy_busy_sweep_in_chinese_has_no_english_left(monkeypatch):
    monkeypatch.setenv("TFORMER_I18N_MAIN_ONLY", "1")  # the shared sidebar is another page's
    at = run_noisy_busy_wall(monkeypatch, lang="zh")
    from tformer.ui.registry import page_for

    heading = page_for(PAGE).heading
    shown = [s for s in visible_strings(at) if s != heading]
    assert any("以下方法不显示时间指数" in s for s in shown)
    assert any("测量期间还有其他工作" in s for s in shown)
    left = english_words(shown)
    assert not left, left


def test_a_quiet_sweep_has_no_busy_note(monkeypatch):
    import tformer.timing

    monkeypatch.setattr(tformer.timing, "cpu_sample", lambda: None)  # no other programs seen
    at = run_section("rnn")
    assert not any("Other work ran" in w.value for w in at.warning)
    assert chart(at, "costs_time")["data"][0]["error_y"]["type"] == "data"


def _sweep_of(points, fit):
    from tformer.efficiency.costs import Sweep
    from tformer.efficiency.measure import Curve

    curve = Curve("explicit", tuple(points), None, fit.exponent, None, fit)
    return Sweep("wall", "cpu", "cpu", 2, "none", 0, None, (curve,), (), 1.0)


def test_the_legend_shows_an_exponent_only_from_a_good_fit():
    from tformer.efficiency.measure import Fit, Point
    from tformer.ui.views.costs.draw import cost_figures, cost_fit_note, cost_table

    points = [
        Point(n, 1e-9 * n * n, None, 5, 1e-9 * n * n, 0.9e-9 * n * n, 1.1e-9 * n * n) for n in (64, 128, 256)
    ]
    good = _sweep_of(points, Fit(2.0, 0.999, True, 3))
    [trace] = cost_figures(good)["time"].data
    assert trace.name == "explicit attention (the n × n scores): ∝ n^2.00"
    assert cost_fit_note(good) is None
    assert cost_table(good)[0]["time exponent"] == 2.0
    for fit, why in (
        (Fit(3.69, 0.91, True, 4), "R² = 0.910"),
        (Fit(0.71, 0.99, False, 4), "its time fell as n grew"),
        (Fit(2.0, 1.0, True, 2), "only 2 lengths past the two shortest"),
    ):
        bad = _sweep_of(points, fit)
        [trace] = cost_figures(bad)["time"].data
        assert "∝" not in trace.name
        assert why in cost_fit_note(bad)
        assert cost_table(bad)[0]["time exponent"] is None
