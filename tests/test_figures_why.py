"""Figures of the Why-attention chapter: each builder's traces, its validation (a ValueError
naming the shape), user text escaped, the log axis of the gradients, the costs page's path
chart shared, and Chinese labels."""

from __future__ import annotations

import numpy as np
import pytest

from tformer.analysis.why import KINDS, LayerSpec, run_layer
from tformer.efficiency.rnn import path_lengths
from tformer.figures.layout import FULL_WIDTH, HALF_WIDTH
from tformer.figures.why import (
    KIND_COLORS,
    StripPanel,
    first_weight_figure,
    gradient_figure,
    look_back_figure,
    path_length_figure,
    recall_figure,
    state_strip_figure,
    time_figure,
)
from tformer.i18n import use_language

HOSTILE = "<b>x</b>"
CHINESE = list("小猫跳到了桌子上然后睡觉")


def states(n: int, d: int = 8, seed: int = 0) -> np.ndarray:
    return np.tanh(np.random.default_rng(seed).normal(size=(n, d)))


def runs(n: int = 12):
    x = np.random.default_rng(0).normal(size=(n, 16))
    return {k: run_layer(x, LayerSpec(kind=k, d_hidden=6)) for k in KINDS}


# --- the strip ----------------------------------------------------------------------------------


def test_the_strip_fills_a_recurrent_layer_up_to_its_step_and_attention_whole():
    n = 10
    toks = [f"t{i}" for i in range(n)]
    fig = state_strip_figure(
        [
            StripPanel("rnn", states(n), 4),
            StripPanel("gru", states(n, seed=1), 4),
            StripPanel("attention", states(n) * 3, n),
        ],
        toks,
    )
    assert [t.type for t in fig.data] == ["heatmap"] * 3
    rnn_z = np.asarray(fig.data[0].z, dtype=float)  # [d_hidden, pos]
    assert rnn_z.shape == (8, n)
    assert np.isfinite(rnn_z[:, :4]).all()
    assert np.isnan(rnn_z[:, 4:]).all()
    assert np.isfinite(np.asarray(fig.data[2].z, dtype=float)).all()
    titles = [a.text for a in fig.layout.annotations]
    assert titles == ["tanh RNN: step 4 of 10", "GRU: step 4 of 10", "attention: all 10 positions in 1 step"]
    assert fig.data[0].zmax == 1.0
    assert fig.data[0].zmin == -1.0
    assert fig.data[2].zmax == pytest.approx(np.abs(states(n) * 3).max(), rel=1e-6)
    step_lines = [s for s in fig.layout.shapes if s.type == "line"]
    assert [s.x0 for s in step_lines] == [3.5, 3.5]  # after the 4th position, recurrent panels only
    assert fig.layout.meta["filled"] == [4, 4, n]


def test_the_strip_validates_shapes_tokens_and_steps():
    with pytest.raises(ValueError, match="at least one panel"):
        state_strip_figure([], ["a"])
    with pytest.raises(ValueError, match=r"shape \(5, 8\) but 4 tokens"):
        state_strip_figure([StripPanel("rnn", states(5), 2)], list("abcd"))
    with pytest.raises(ValueError, match="filled"):
        state_strip_figure([StripPanel("rnn", states(5), 6)], list("abcde"))
    with pytest.raises(ValueError, match="kind"):
        state_strip_figure([StripPanel("lstm", states(5), 2)], list("abcde"))
    with pytest.raises(ValueError, match=r"\[pos, d_hidden\]"):
        state_strip_figure([StripPanel("rnn", np.zeros(5), 2)], list("abcde"))


def test_the_strip_escapes_tokens_and_handles_512_and_one_token():
    fig = state_strip_figure([StripPanel("rnn", states(3), 1)], [HOSTILE, "a", "$x$"])
    assert HOSTILE not in str(fig.to_plotly_json())
    assert "&lt;b&gt;x&lt;/b&gt;" in fig.data[0].customdata[0][0]
    big = state_strip_figure([StripPanel("gru", states(512, 16), 300)], [f"w{i}" for i in range(512)])
    assert len(big.layout.xaxis.tickvals) < 64  # thinned labels, every position hovers
    assert len(big.data[0].customdata[0]) == 512
    bars = look_back_figure(np.full(512, 1 / 512), [f"w{i}" for i in range(512)], head=0)
    assert len(bars.layout.xaxis.tickvals) < 64
    one = state_strip_figure([StripPanel("attention", states(1), 1)], ["x"])
    assert np.asarray(one.data[0].z).shape == (8, 1)


def test_the_strip_speaks_chinese():
    with use_language("zh"):
        fig = state_strip_figure([StripPanel("rnn", states(len(CHINESE)), 3)], CHINESE)
    assert fig.layout.annotations[0].text == f"tanh RNN：第 3 步（共 {len(CHINESE)} 步）"
    assert fig.layout.xaxis.title.text == "位置（词元）"


# --- steps and time ---------------------------------------------------------------------------------


def test_the_path_length_chart_is_the_costs_pages():
    n = np.array([16, 32, 64])
    fig = path_length_figure(n, path_lengths(n))
    names = [t.name for t in fig.data]
    assert names[0] == "GRU: path from the first to the last token (n − 1)"
    assert list(fig.data[0].y) == [15, 31, 63]
    assert list(fig.data[1].y) == [16, 32, 64]
    assert set(fig.data[2].y) == {1.0}
    assert fig.layout.xaxis.type == "log"
    assert fig.layout.yaxis.type == "log"
    with pytest.raises(ValueError, match="path_lengths"):
        path_length_figure(n, {"gru": {"path": n}})
    with pytest.raises(ValueError, match="shape"):
        path_length_figure(n, path_lengths(np.array([16, 32])))


def test_the_time_chart_draws_medians_with_their_quartiles():
    n = np.array([16, 32, 64])
    med = np.array([1e-3, 2e-3, 4e-3])
    fig = time_figure({"gru": (n, med, med * 0.9, med * 1.2), "attention": (n, med / 4, med / 5, med / 3)})
    assert [t.name for t in fig.data] == ["GRU", "attention"]
    np.testing.assert_allclose(fig.data[0].y, med * 1e3, rtol=1e-6)
    np.testing.assert_allclose(fig.data[0].error_y.array, med * 0.2e3, rtol=1e-5)
    np.testing.assert_allclose(fig.data[0].error_y.arrayminus, med * 0.1e3, rtol=1e-5)
    assert fig.data[0].line.color == KIND_COLORS["gru"]
    assert "quartile" in fig.layout.title.text
    with pytest.raises(ValueError, match="between its quartiles"):
        time_figure({"gru": (n, med, med * 1.1, med * 1.2)})
    with pytest.raises(ValueError, match="one length"):
        time_figure({"gru": (n, med[:2], med, med)})
    with pytest.raises(ValueError, match="kind"):
        time_figure({"lstm": (n, med, med, med)})


# --- gradients --------------------------------------------------------------------------------------


def test_the_gradient_chart_draws_every_profile_on_a_log_axis_with_the_bounds():
    x = np.random.default_rng(0).normal(size=(40, 16))
    profiles = [run_layer(x, LayerSpec(kind=k, scale=s)).profile for k in ("rnn", "gru") for s in (0.5, 2.0)]
    profiles.append(run_layer(x, LayerSpec(kind="attention")).profile)
    fig = gradient_figure(profiles)
    lines = [t for t in fig.data if not t.name.startswith("bound")]
    bounds = [t for t in fig.data if t.name.startswith("bound")]
    assert len(lines) == 5
    assert len(bounds) == 2  # one bound per tanh RNN
    assert lines[0].name.startswith("tanh RNN, s = 0.5 (×")
    assert lines[-1].name.startswith("attention (×")
    assert [t.line.dash for t in lines] == ["solid", "dash", "solid", "dash", "solid"]  # one dash per scale
    assert lines[2].line.color == KIND_COLORS["gru"]
    np.testing.assert_allclose(lines[0].y, profiles[0].log10_norm, rtol=1e-5)  # log10 values...
    ticks = fig.layout.yaxis
    assert all(t == "1" or t.startswith("10") for t in ticks.ticktext)  # ...labelled as powers of ten
    assert ticks.range[0] < profiles[0].log10_norm.min()
    assert ticks.range[1] > profiles[1].log10_bound.max()
    assert fig.layout.meta["scales"] == [0.5, 2.0]
    assert len(gradient_figure(profiles, bounds=False).data) == 5


def test_the_gradient_chart_shows_norms_below_float64_and_leaves_out_exact_zeros():
    x = np.random.default_rng(0).normal(size=(400, 8))
    p = run_layer(x, LayerSpec(kind="rnn", scale=0.1)).profile
    fig = gradient_figure([p], bounds=False)
    assert min(fig.data[0].y) < -300
    assert "10<sup>\u2212" in "".join(fig.layout.yaxis.ticktext)

    class Zero:
        kind, scale, log10_bound, factor_per_step = "gru", 1.0, None, None
        distance = np.arange(4)
        log10_norm = np.array([0.0, -1.0, -np.inf, -np.inf])

    fig = gradient_figure([Zero()])
    assert list(fig.data[0].x) == [0, 1]


def test_the_gradient_chart_validates_its_profiles():
    r = runs()
    with pytest.raises(ValueError, match="at least one"):
        gradient_figure([])
    short = run_layer(np.ones((5, 16)) + np.arange(16), LayerSpec()).profile
    with pytest.raises(ValueError, match="lengths differ"):
        gradient_figure([r["rnn"].profile, short])

    class Bad:
        kind, scale, log10_bound, factor_per_step = "rnn", 1.0, None, None
        distance = np.arange(3)
        log10_norm = np.array([0.0, np.nan, 1.0])

    with pytest.raises(ValueError, match="finite"):
        gradient_figure([Bad()])


# --- the trained models -------------------------------------------------------------------------------


def test_the_recall_chart_draws_each_model_and_chance():
    d = [4, 8, 16, 32, 64, 128]
    fig = recall_figure(d, {"gru": [1, 1, 0.4, 0.1, 0.1, 0.1], "attention": [1] * 6}, chance=1 / 8)
    assert [t.name for t in fig.data] == ["GRU", "attention", "chance (1 in 8)"]
    assert list(fig.data[2].y) == [0.125, 0.125]
    assert fig.layout.xaxis.type == "log"
    assert list(fig.layout.xaxis.tickvals) == d
    assert fig.layout.yaxis.ticktext[-1] == "100%"
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        recall_figure(d, {"gru": [1, 1]}, chance=0.125)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        recall_figure(d, {"gru": [2] * 6}, chance=0.125)
    with pytest.raises(ValueError, match="increase"):
        recall_figure([8, 4], {"gru": [1, 1]}, chance=0.125)
    with pytest.raises(ValueError, match="chance"):
        recall_figure(d, {"gru": [1] * 6}, chance=0)
    with use_language("zh"):
        zh = recall_figure(d, {"rnn": [1] * 6}, chance=1 / 8)
    assert zh.data[1].name == "随机猜测（8 选 1）"
    assert zh.layout.yaxis.title.text == "留出集准确率"


def test_the_look_back_chart_highlights_the_first_token():
    w = np.array([0.7, 0.05, 0.05, 0.1, 0.1])
    fig = look_back_figure(w, ["c", "a", HOSTILE, "b", "_"], head=2)
    bar = fig.data[0]
    assert bar.type == "bar"
    assert len(bar.y) == 5
    assert bar.marker.color[0] != bar.marker.color[1]
    assert fig.layout.annotations[0].text == "the first token: 70%"
    assert fig.layout.yaxis.title.text == "weight (head 2)"
    assert HOSTILE not in str(fig.to_plotly_json())
    assert fig.layout.meta["weight_on_answer"] == pytest.approx(0.7)
    with pytest.raises(ValueError, match=r"shape \(5,\) but 4 tokens"):
        look_back_figure(w, list("abcd"), head=0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        look_back_figure(w * 3, list("abcde"), head=0)
    with pytest.raises(ValueError, match="head"):
        look_back_figure(w, list("abcde"), head=-1)


def test_the_first_token_weight_chart_draws_one_line_per_head():
    d = [4, 8, 16]
    w = np.array([[0.9, 0.1], [0.95, 0.05], [0.99, 0.0]])
    fig = first_weight_figure(d, w, width=HALF_WIDTH)
    assert [t.name for t in fig.data] == ["head 0", "head 1"]
    np.testing.assert_allclose(fig.data[0].y, w[:, 0], rtol=1e-6)
    assert fig.layout.meta == {"width": HALF_WIDTH, "heads": 2}
    with pytest.raises(ValueError, match="3 distances"):
        first_weight_figure(d, w[:2])
    with use_language("zh"):
        assert first_weight_figure(d, w).data[0].name == "头 0"


@pytest.mark.parametrize("width", [FULL_WIDTH, HALF_WIDTH])
def test_figures_keep_their_width(width):
    r = runs()
    toks = [str(i) for i in range(12)]
    for fig in (
        state_strip_figure([StripPanel("rnn", r["rnn"].states, 5)], toks, width=width),
        gradient_figure([r["rnn"].profile], width=width),
        recall_figure([4, 8], {"gru": [1, 0.5]}, chance=0.25, width=width),
        look_back_figure(np.full(12, 1 / 12), toks, head=0, width=width),
    ):
        assert fig.layout.meta["width"] == width
        assert fig.layout.height > 150
