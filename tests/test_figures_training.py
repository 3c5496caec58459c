"""Figures of the training page: validation that names what is wrong, a bounded payload for long
runs, the clip / target / warm-up lines only when asked, empty runs that still draw, projector
fonts, legend names."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tformer.figures.layout import FULL_WIDTH, HALF_WIDTH
from tformer.figures.training import (
    MAX_POINTS,
    RUNNING,
    WAITING_EVAL,
    WAITING_STEP,
    WAITING_TIME,
    heads_race_figure,
    schedule_figure,
    training_curves,
)
from tformer.training.recipe import Recipe, noam_lr, schedule_curve


def fake_run(n: int = 600, *, every: int = 25, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """A run shaped like a real one: loss 2.8 -> 0.01, noam lr (100 warm-up), spiky grad norm,
    accuracy rising to 1 (and a ``seconds`` key, as ``Progress`` records it)."""
    rng = np.random.default_rng(seed)
    t = np.arange(1, n + 1)
    loss = 2.8 * (0.01 / 2.8) ** (t / n) * np.exp(rng.normal(0, 0.1, n))
    grad = np.clip(np.exp(rng.normal(0, 0.6, n)), 0.5, 5.0)
    steps = [
        {
            "step": int(s),
            "loss": float(lo),
            "lr": noam_lr(int(s), peak=3e-3, warmup=100),
            "grad_norm": float(g),
            "seconds": 0.01,
        }
        for s, lo, g in zip(t, loss, grad, strict=True)
    ]
    ev = np.arange(every, n + 1, every)
    evals = [{"step": int(s), "accuracy": float(1 / (1 + np.exp(-(s - n / 3) / 40)))} for s in ev]
    return steps, evals


def race() -> tuple[dict, dict]:
    evals = {h: [(s, min(1.0, s / (100 * h + 100))) for s in range(25, 401, 25)] for h in (1, 2, 4)}
    evals[8] = [(25, 0.05)]  # still going
    evals[16] = []  # not evaluated yet
    seconds = {1: 0.011, 2: 0.013, 4: 0.016, 8: None}
    return evals, seconds


def layout_of(fig) -> dict:
    return fig.layout.to_plotly_json()


def axes_of(fig, kind: str) -> dict:
    return {k: v for k, v in sorted(layout_of(fig).items()) if k.startswith(kind)}


def texts(fig) -> list[str]:
    return [a["text"] for a in layout_of(fig).get("annotations", [])]


def shape_names(fig) -> list[str]:
    return [s.get("name") for s in layout_of(fig).get("shapes", [])]


def all_font_sizes(obj) -> list[float]:
    sizes = []
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key in ("font", "tickfont", "textfont") and isinstance(value, dict) and "size" in value:
                sizes.append(value["size"])
            sizes += all_font_sizes(value)
    elif isinstance(obj, list):
        for value in obj:
            sizes += all_font_sizes(value)
    return sizes


def n_points(trace) -> int:
    return len(np.asarray(trace.x))


# --------------------------------------------------------------------------------------------
# training_curves: layout
# --------------------------------------------------------------------------------------------
def test_training_curves_draws_four_panels_in_a_grid_over_one_step_axis():
    steps, evals = fake_run()
    fig = training_curves(steps, evals, clip=1.0, target=0.99)
    assert [(t.xaxis, t.yaxis) for t in fig.data] == [("x", "y"), ("x2", "y2"), ("x3", "y3"), ("x4", "y4")]
    assert [t.name for t in fig.data] == [
        "training loss",
        "held-out token accuracy",
        "learning rate",
        "gradient norm",
    ]
    xs = axes_of(fig, "xaxis")
    assert len({tuple(a["range"]) for a in xs.values()}) == 1  # one shared step range
    assert all(a.get("matches") == "x" for k, a in xs.items() if k != "xaxis")
    assert [k for k, a in xs.items() if "title" in a] == ["xaxis3", "xaxis4"]  # bottom row only
    assert xs["xaxis"]["range"][1] >= 600
    # 2 x 2: two distinct column domains and two distinct row domains
    assert len({tuple(a["domain"]) for a in xs.values()}) == 2
    assert len({tuple(a["domain"]) for a in axes_of(fig, "yaxis").values()}) == 2
    ys = axes_of(fig, "yaxis")
    assert ys["yaxis"]["type"] == "log"
    assert ys["yaxis4"]["type"] == "log"
    assert ys["yaxis2"]["ticktext"][-1] == "100 %"
    assert "learning rate (\u00d710\u207b\u00b3)" in texts(fig)  # peak 3e-3: ticks in units of 10^-3
    assert ys["yaxis3"]["ticktext"][:4] == ["0", "1", "2", "3"]
    assert fig.layout.meta["stacked"] is False
    assert fig.layout.meta["width"] == FULL_WIDTH


def test_log_axes_cover_the_data_and_the_clip_line():
    steps, evals = fake_run()
    fig = training_curves(steps, evals, clip=8.0)
    ys = axes_of(fig, "yaxis")
    losses = [s["loss"] for s in steps]
    lo, hi = ys["yaxis"]["range"]
    assert 10**lo < min(losses)
    assert 10**hi > max(losses)
    assert 10 ** ys["yaxis4"]["range"][1] > 8.0  # the clip line is inside the panel
    for name in ("yaxis", "yaxis4"):
        vals = ys[name]["tickvals"]
        assert len(vals) >= 2
        assert all(10 ** ys[name]["range"][0] < v < 10 ** ys[name]["range"][1] for v in vals)


def test_half_width_stacks_the_panels():
    steps, evals = fake_run()
    fig = training_curves(steps, evals, width=HALF_WIDTH)
    assert fig.layout.meta["stacked"] is True
    xs = axes_of(fig, "xaxis")
    assert len({tuple(a["domain"]) for a in xs.values()}) == 1
    assert [k for k, a in xs.items() if "title" in a] == ["xaxis4"]
    assert fig.layout.height > training_curves(steps, evals).layout.height


def test_extra_keys_are_ignored_and_numpy_numbers_are_accepted():
    steps = [
        {
            "step": np.int64(1),
            "loss": np.float32(2.5),
            "lr": 1e-4,
            "grad_norm": 1,
            "seconds": 0.2,
            "note": "x",
        }
    ]
    fig = training_curves(steps, [{"step": 0, "accuracy": np.float64(0.1), "loss": 3.0}])
    assert fig.layout.meta["n_steps"] == 1
    assert fig.layout.meta["n_evals"] == 1


def test_non_finite_values_leave_a_gap_instead_of_failing():
    steps, evals = fake_run(50)
    steps[-2]["loss"] = float("inf")
    steps[-1]["loss"] = float("nan")
    steps[-1]["grad_norm"] = float("inf")
    fig = training_curves(steps, evals)
    loss = np.asarray(fig.data[0].y)
    assert np.isnan(loss[-2:]).all()
    assert np.isfinite(loss[:-2]).all()
    assert np.isnan(np.asarray(fig.data[3].y)[-1])
    assert all(math.isfinite(v) for v in axes_of(fig, "yaxis")["yaxis"]["range"])
    json.loads(fig.to_json())


# --------------------------------------------------------------------------------------------
# training_curves: payload
# --------------------------------------------------------------------------------------------
def test_long_runs_are_thinned_to_every_kth_step_plus_the_last():
    steps, evals = fake_run(10_000, every=2)
    steps = steps[:-1]  # 9,999 updates: the last is not a multiple of k
    fig = training_curves(steps, evals, clip=1.0, target=0.99)
    meta = fig.layout.meta
    assert meta["n_steps"] == 9_999
    assert meta["n_evals"] == 5_000
    assert meta["downsampled"] is True
    assert meta["every"] == math.ceil(9_999 / MAX_POINTS)
    for trace in fig.data:
        assert n_points(trace) <= MAX_POINTS + 1
    x = np.asarray(fig.data[0].x)
    assert x[0] == 1
    assert x[-1] == 9_999  # the last update is always drawn
    assert np.all(np.diff(x)[:-1] == meta["every"])
    assert np.asarray(fig.data[1].x)[-1] == evals[-1]["step"]
    assert fig.data[0].y[-1] == pytest.approx(steps[-1]["loss"], rel=1e-6)


def test_ten_thousand_steps_stay_under_300_kb_of_json():
    steps, evals = fake_run(10_000)
    fig = training_curves(steps, evals, clip=1.0, target=0.99)
    assert len(fig.to_json()) < 300_000
    assert np.asarray(fig.data[0].y).dtype == np.float32  # sent as base64, not as decimal text


def test_short_runs_are_drawn_in_full():
    steps, evals = fake_run(MAX_POINTS)
    fig = training_curves(steps, evals)
    assert fig.layout.meta["downsampled"] is False
    assert fig.layout.meta["every"] == 1
    assert n_points(fig.data[0]) == MAX_POINTS


# --------------------------------------------------------------------------------------------
# training_curves: reference lines
# --------------------------------------------------------------------------------------------
def test_clip_and_target_lines_only_when_given():
    steps, evals = fake_run(100)
    bare = training_curves(steps, evals)
    assert shape_names(bare) == []
    assert not any(t.startswith(("clip =", "target")) for t in texts(bare))

    fig = training_curves(steps, evals, clip=1.0, target=0.99)
    shapes = {s["name"]: s for s in layout_of(fig)["shapes"]}
    assert set(shapes) == {"clip", "target"}
    assert shapes["clip"]["yref"] == "y4"
    assert shapes["clip"]["y0"] == 1.0
    assert shapes["target"]["yref"] == "y2"
    assert shapes["target"]["y0"] == 0.99
    assert shapes["clip"]["line"]["dash"] == shapes["target"]["line"]["dash"] == "dash"
    notes = {a["text"]: a for a in layout_of(fig)["annotations"]}
    assert "clip = 1" in notes
    assert "target 99 %" in notes
    assert notes["clip = 1"]["y"] == 0.0  # log axis: annotations take log10(1)
    assert fig.layout.meta["clip"] == 1.0
    assert fig.layout.meta["target"] == 0.99


def test_clip_zero_means_no_clipping_and_no_line():
    steps, evals = fake_run(100)
    fig = training_curves(steps, evals, clip=0.0, target=0.995)
    assert shape_names(fig) == ["target"]
    assert "target 99.5 %" in texts(fig)
    assert fig.layout.meta["clip"] is None


# --------------------------------------------------------------------------------------------
# training_curves: empty and tiny runs
# --------------------------------------------------------------------------------------------
def test_an_empty_run_draws_empty_panels_with_a_note():
    fig = training_curves([], [], clip=1.0, target=0.99)
    assert len(fig.data) == 4
    assert all(n_points(t) == 0 for t in fig.data)
    assert texts(fig).count(WAITING_STEP) == 4
    assert fig.layout.meta["n_steps"] == 0
    assert fig.layout.meta["last_step"] is None
    assert set(shape_names(fig)) == {"clip", "target"}
    json.loads(fig.to_json())


def test_one_step_draws_markers_and_waits_for_the_first_evaluation():
    steps, _ = fake_run(1)
    fig = training_curves(steps, [])
    assert [n_points(t) for t in fig.data] == [1, 0, 1, 1]
    assert all("markers" in t.mode for i, t in enumerate(fig.data) if i != 1)
    assert texts(fig).count(WAITING_EVAL) == 1
    assert WAITING_STEP not in texts(fig)
    lo, hi = axes_of(fig, "yaxis")["yaxis"]["range"]
    assert hi > lo
    assert 10**lo < steps[0]["loss"] < 10**hi
    assert fig.layout.meta["last_step"] == 1


def test_a_single_evaluation_at_step_zero():
    fig = training_curves([], [{"step": 0, "accuracy": 0.0}])
    assert n_points(fig.data[1]) == 1
    assert texts(fig).count(WAITING_STEP) == 3


# --------------------------------------------------------------------------------------------
# training_curves: validation
# --------------------------------------------------------------------------------------------
GOOD = {"step": 1, "loss": 2.0, "lr": 1e-3, "grad_norm": 1.0}


@pytest.mark.parametrize(
    ("steps", "evals", "message"),
    [
        ({"step": 1}, [], "steps must be a list of dicts with keys step, loss, lr, grad_norm, got dict"),
        ("abc", [], "steps must be a list of dicts"),
        (
            [GOOD, [2, 1.0, 1e-3, 1.0]],
            [],
            r"steps\[1\] must be a dict with keys step, loss, lr, grad_norm, got list",
        ),
        ([GOOD, {"step": 2, "loss": 1.0, "lr": 1e-3}], [], r"steps\[1\] has no grad_norm"),
        (
            [{"step": 1, "loss": "high", "lr": 1e-3, "grad_norm": 1.0}],
            [],
            r"steps\[0\]\['loss'\] must be a number, got 'high'",
        ),
        ([{**GOOD, "lr": None}], [], r"steps\[0\]\['lr'\] must be a number, got None"),
        ([{**GOOD, "step": True}], [], r"steps\[0\]\['step'\] must be a number"),
        ([{**GOOD, "step": 1.5}], [], r"steps\[0\]\['step'\] must be a whole number >= 0, got 1.5"),
        ([{**GOOD, "step": -1}], [], r"whole number >= 0, got -1"),
        (
            [GOOD, {**GOOD, "step": 3}, {**GOOD, "step": 2}],
            [],
            r"increasing step order: steps\[2\] has step 2 after step 3",
        ),
        ([GOOD, GOOD], [], r"steps\[1\] has step 1 after step 1"),
        ([], [{"step": 5}], r"evals\[0\] has no accuracy"),
        (
            [],
            [{"step": 5, "accuracy": 87.5}],
            r"evals\[0\] accuracy must be in 0..1, got 87.5: pass a fraction",
        ),
        ([], [{"step": 5, "accuracy": float("nan")}], r"evals\[0\] accuracy must be in 0..1"),
        ([], [{"step": 5, "accuracy": 0.5}, {"step": 5, "accuracy": 0.6}], r"evals\[1\] has step 5"),
    ],
)
def test_training_curves_names_what_is_wrong(steps, evals, message):
    with pytest.raises(ValueError, match=message):
        training_curves(steps, evals)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"clip": -1.0}, "clip must be a gradient norm >= 0"),
        ({"clip": float("inf")}, "clip must be a gradient norm >= 0"),
        ({"clip": "1"}, "clip must be a gradient norm >= 0"),
        ({"target": 99}, r"target must be an accuracy in \(0, 1\]"),
        ({"target": 0.0}, "target must be an accuracy"),
    ],
)
def test_training_curves_rejects_bad_lines(kwargs, message):
    with pytest.raises(ValueError, match=message):
        training_curves([GOOD], [], **kwargs)


# --------------------------------------------------------------------------------------------
# schedule_figure
# --------------------------------------------------------------------------------------------
def test_schedule_figure_draws_the_recipe_schedule_with_a_dotted_warmup_line():
    recipe = Recipe()
    steps, lrs = schedule_curve(recipe)
    fig = schedule_figure(steps, lrs, warmup=recipe.warmup)
    assert fig.layout.height == pytest.approx(260, abs=20)
    assert fig.layout.meta["width"] == HALF_WIDTH
    assert fig.layout.meta["warmup"] == recipe.warmup
    assert fig.layout.meta["peak"] == pytest.approx(recipe.lr, rel=1e-6)
    (line,) = layout_of(fig)["shapes"]
    assert line["x0"] == line["x1"] == recipe.warmup
    assert line["line"]["dash"] == "dot"
    assert f"warm-up: {recipe.warmup} steps" in texts(fig)
    assert "learning rate (\u00d710\u207b\u00b3)" in texts(fig)
    assert n_points(fig.data[0]) <= MAX_POINTS + 1
    assert np.asarray(fig.data[0].x)[-1] == recipe.steps


def test_schedule_figure_without_warmup_draws_no_line():
    steps = np.arange(1, 11)
    fig = schedule_figure(steps, np.full(10, 0.05))
    assert layout_of(fig).get("shapes", []) == []
    assert fig.layout.meta["warmup"] is None
    assert "learning rate" in texts(fig)  # 0.05: plain tick labels, no unit
    assert schedule_figure(steps, np.full(10, 0.05), warmup=0).layout.meta["warmup"] is None


def test_a_late_warmup_is_labelled_on_the_left_of_its_line():
    steps = np.arange(1, 101)
    fig = schedule_figure(steps, [noam_lr(int(s), peak=1e-3, warmup=90) for s in steps], warmup=90)
    label = next(a for a in layout_of(fig)["annotations"] if a["text"].startswith("warm-up"))
    assert label["xanchor"] == "right"


@pytest.mark.parametrize(
    ("steps", "lrs", "kwargs", "message"),
    [
        ([1, 2, 3], [0.1, 0.2], {}, r"steps has shape \(3,\) but lrs has shape \(2,\)"),
        ([[1, 2]], [[0.1, 0.2]], {}, r"steps must be 1-D \[step\], got shape \(1, 2\)"),
        ([], [], {}, "the schedule needs at least one step"),
        ([1, 2], [0.1, -0.1], {}, r"lrs must be finite and >= 0, got lrs\[1\] = -0.1"),
        ([1, 2], [0.1, float("nan")], {}, r"lrs\[1\]"),
        ([2, 1], [0.1, 0.1], {}, "increasing step order"),
        ([1, 2], [0.1, 0.1], {"warmup": -5}, "warmup must be a whole number of steps >= 0, got -5"),
        ([1, 2], [0.1, 0.1], {"warmup": 2.5}, "warmup must be a whole number"),
    ],
)
def test_schedule_figure_names_what_is_wrong(steps, lrs, kwargs, message):
    with pytest.raises(ValueError, match=message):
        schedule_figure(steps, lrs, **kwargs)


# --------------------------------------------------------------------------------------------
# heads_race_figure
# --------------------------------------------------------------------------------------------
def test_heads_race_draws_one_line_and_one_bar_per_head_count():
    evals, seconds = race()
    fig = heads_race_figure(evals, seconds)
    lines = [t for t in fig.data if t.type == "scatter"]
    (bars,) = [t for t in fig.data if t.type == "bar"]
    assert [t.name for t in lines] == ["1 head", "2 heads", "4 heads", "8 heads", "16 heads"]
    assert all(t.showlegend for t in lines)
    assert not bars.showlegend
    # the 16-head run has no evaluation yet but keeps its legend entry (a lone NaN point)
    assert np.isnan(np.asarray(lines[-1].y)).all()
    assert list(bars.x) == [0, 1, 2, 3, 4]
    assert axes_of(fig, "xaxis")["xaxis2"]["ticktext"] == ["1", "2", "4", "8", "16"]
    assert list(bars.y[:3]) == pytest.approx([11.0, 13.0, 16.0])  # ms
    assert list(bars.marker.color) == [t.line.color for t in lines]  # a bar matches its line
    labels = texts(fig)
    assert {"11 ms", "13 ms", "16 ms"} <= set(labels)
    assert labels.count(RUNNING) == 2
    assert fig.layout.meta["heads"] == [1, 2, 4, 8, 16]
    assert fig.layout.meta["n_evals"] == [16, 16, 16, 1, 0]
    assert fig.layout.meta["seconds"] == [0.011, 0.013, 0.016, None, None]
    json.loads(fig.to_json())


def test_heads_race_draws_each_times_quartiles_as_error_bars():
    evals, seconds = race()
    spread = {1: (0.010, 0.0125), 2: (0.012, 0.014), 4: (0.015, 0.020)}
    fig = heads_race_figure(evals, seconds, spread_by_heads=spread)
    (bars,) = [t for t in fig.data if t.type == "bar"]
    err = bars.error_y
    assert err.type == "data"
    assert not err.symmetric
    assert list(err.arrayminus[:3]) == pytest.approx([1.0, 1.0, 1.0])  # ms below the median
    assert list(err.array[:3]) == pytest.approx([1.5, 1.0, 4.0])  # ms above it
    assert "quartiles 10–12.5 ms" in bars.customdata[0]
    assert fig.layout.meta["spread"][:3] == [(0.010, 0.0125), (0.012, 0.014), (0.015, 0.020)]
    top = max(fig.layout.yaxis2.range)
    assert top >= 20.0  # the axis leaves room for the highest quartile
    with pytest.raises(ValueError, match="must hold its median"):
        heads_race_figure(evals, seconds, spread_by_heads={1: (0.012, 0.013)})


def test_heads_race_names_d_head_in_the_legend():
    evals, seconds = race()
    fig = heads_race_figure(evals, seconds, d_head_by_heads={1: 64, 2: 32, 4: 16, 8: 8, 16: 4, 32: 2})
    names = [t.name for t in fig.data if t.type == "scatter"]
    assert names[0] == "1 head, d<sub>head</sub> = 64"
    assert names[2] == "4 heads, d<sub>head</sub> = 16"
    assert len(names) == 5  # a d_head for a head count without a run adds nothing


def test_heads_race_target_line_only_when_given():
    evals, seconds = race()
    assert shape_names(heads_race_figure(evals, seconds)) == []
    fig = heads_race_figure(evals, seconds, target=0.99)
    assert shape_names(fig) == ["target"]
    assert "target 99 %" in texts(fig)


def test_heads_race_with_nothing_yet_still_draws_both_panels():
    fig = heads_race_figure({}, {})
    assert WAITING_EVAL in texts(fig)
    assert WAITING_TIME in texts(fig)
    assert {t.xaxis for t in fig.data} == {"x", "x2"}  # both panels have axes to draw on
    assert fig.layout.meta["heads"] == []
    json.loads(fig.to_json())


def test_heads_race_with_times_but_no_evaluations():
    fig = heads_race_figure({2: []}, {2: 0.02})
    assert WAITING_EVAL in texts(fig)
    assert WAITING_TIME not in texts(fig)
    assert [t.name for t in fig.data if t.type == "scatter"] == ["2 heads"]


def test_heads_race_stacks_at_half_width():
    evals, seconds = race()
    assert heads_race_figure(evals, seconds).layout.meta["stacked"] is False
    fig = heads_race_figure(evals, seconds, width=HALF_WIDTH)
    assert fig.layout.meta["stacked"] is True
    xs = axes_of(fig, "xaxis")
    assert xs["xaxis"]["domain"] == xs["xaxis2"]["domain"]


@pytest.mark.parametrize(
    ("evals", "seconds", "kwargs", "message"),
    [
        (
            [(1, 0.5)],
            {},
            {},
            r"evals_by_heads must be a dict \{n_heads: list of \(step, accuracy\)\}, got list",
        ),
        ({}, [0.1], {}, r"seconds_by_heads must be a dict \{n_heads: mean seconds per update\}"),
        ({"two": []}, {}, {}, "evals_by_heads keys must be head counts .* got 'two'"),
        ({0: []}, {}, {}, "evals_by_heads keys must be head counts"),
        ({}, {1.5: 0.1}, {}, "seconds_by_heads keys must be head counts"),
        (
            {2: [(1, 0.5, 3)]},
            {},
            {},
            r"evals_by_heads\[2\]\[0\] must be a \(step, accuracy\) pair of numbers, got \(1, 0.5, 3\)",
        ),
        ({2: [(1, "x")]}, {}, {}, r"evals_by_heads\[2\]\[0\] must be a \(step, accuracy\) pair"),
        ({2: "abc"}, {}, {}, r"evals_by_heads\[2\] must be a list of \(step, accuracy\) pairs, got str"),
        (
            {2: [(1, 50.0)]},
            {},
            {},
            r"evals_by_heads\[2\]\[0\] accuracy must be in 0..1, got 50: pass a fraction",
        ),
        ({2: [(5, 0.5), (4, 0.6)]}, {}, {}, r"evals_by_heads\[2\] must be in increasing step order"),
        ({}, {2: -0.1}, {}, r"seconds_by_heads\[2\] must be seconds > 0 \(or None while unknown\), got -0.1"),
        ({}, {2: "fast"}, {}, r"seconds_by_heads\[2\] must be seconds > 0"),
        ({}, {}, {"d_head_by_heads": {2: 0}}, r"d_head_by_heads\[2\] must be a whole number >= 1, got 0"),
        ({}, {}, {"target": 2}, "target must be an accuracy"),
    ],
)
def test_heads_race_names_what_is_wrong(evals, seconds, kwargs, message):
    with pytest.raises(ValueError, match=message):
        heads_race_figure(evals, seconds, **kwargs)


def test_nan_seconds_count_as_not_measured_yet():
    fig = heads_race_figure({1: [(10, 0.5)]}, {1: float("nan")})
    assert fig.layout.meta["seconds"] == [None]
    assert RUNNING in texts(fig)


# --------------------------------------------------------------------------------------------
# Every figure: projector fonts, titles, deterministic output
# --------------------------------------------------------------------------------------------
def every_figure(width: int) -> list:
    steps, evals = fake_run(300)
    r_evals, r_seconds = race()
    t = np.arange(1, 301)
    return [
        training_curves(steps, evals, clip=1.0, target=0.99, title="copy task", width=width),
        training_curves([], [], clip=1.0, target=0.99, width=width),
        schedule_figure(t, [noam_lr(int(s), peak=3e-3, warmup=100) for s in t], warmup=100, width=width),
        heads_race_figure(r_evals, r_seconds, d_head_by_heads={1: 64}, target=0.99, width=width),
        heads_race_figure({}, {}, width=width),
    ]


@pytest.mark.parametrize("width", [FULL_WIDTH, HALF_WIDTH])
def test_every_font_is_readable_from_the_back_of_the_room(width):
    for fig in every_figure(width):
        layout = layout_of(fig)
        sizes = all_font_sizes(layout) + all_font_sizes([t.to_plotly_json() for t in fig.data])
        assert sizes, sizes
        assert min(sizes) >= 12, sizes
        for name, axis in layout.items():
            if name.startswith(("xaxis", "yaxis")):
                assert axis["tickfont"]["size"] >= 12, name
                if "title" in axis:
                    assert 15 <= axis["title"]["font"]["size"] <= 17, name
        for note in layout["annotations"]:
            assert note["font"]["size"] >= 12, note["text"]
        panel_titles = [
            a for a in layout["annotations"] if a.get("yanchor") == "bottom" and a.get("xanchor") == "center"
        ]
        assert panel_titles
        assert all(15 <= a["font"]["size"] <= 17 for a in panel_titles)
        if "title" in layout:
            assert 15 <= layout["title"]["font"]["size"] <= 17
        if layout.get("showlegend"):
            assert layout["legend"]["font"]["size"] >= 12
        assert fig.layout.meta["width"] == width
        assert "width" not in layout  # Streamlit stretches the chart to its column


def test_figures_are_deterministic():
    first = [f.to_json() for f in every_figure(FULL_WIDTH)]
    assert first == [f.to_json() for f in every_figure(FULL_WIDTH)]
