"""Figures readable by a class: sizes for the app's columns, every label, honest colors.

Checked from the figure specs alone (no browser): the plot boxes that margins, height and the
designed width (``layout.meta["width"]``) leave, the tick labels on every token axis, the
colorbars' place and length, and the color ranges.
"""

from __future__ import annotations

import html
import itertools
import re

import numpy as np
import pytest

from tformer.figures import (
    ablation_effect_figure,
    attention_heatmap,
    head_metrics_figure,
    head_output_heatmap,
    head_similarity_heatmap,
    heads_side_by_side,
    qkv_figure,
)
from tformer.figures.colors import SEQUENTIAL, robust_symmetric
from tformer.figures.labels import EN_SPACE, LABEL_ALL, MAX_TICK_CHARS, TICK_FONT_PX, text_px
from tformer.figures.layout import DETAIL_WIDTH, FULL_WIDTH, HALF_WIDTH
from tformer.figures.positional import (
    attention_diff_figure,
    pe_matrix_heatmap,
    pe_offset_figure,
    pe_similarity_heatmap,
    pe_waves,
    shift_matrix_figure,
)

from ._reference import np_sinusoidal

WORDS = "the animal didn't cross the street because it was too tired and the dog sat on a mat".split()
ZH = list("小猫看见桌子上的鱼就悄悄地跳了上去注意力机制让每个字都能关注句子里的其他字")


def english(n: int) -> list[str]:
    """``n`` tokens like a BERT sentence: [CLS], words (repeats included), [SEP]."""
    body = [WORDS[i % len(WORDS)] for i in range(max(0, n - 2))]
    return (["[CLS]", *body, "[SEP]"])[:n]


def chinese(n: int) -> list[str]:
    body = [ZH[i % len(ZH)] for i in range(max(0, n - 2))]
    return (["[CLS]", *body, "[SEP]"])[:n]


def pattern(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    s = rng.normal(size=(n, n)) + 4.0 * np.eye(n)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)).astype(np.float32)


def shown(ticktext) -> list[str]:
    """What a tick label reads: without the <br> and en spaces that only move it."""
    return [html.unescape(str(t).replace("<br>", "")).strip(EN_SPACE) for t in ticktext]


def cut(token: str) -> str:
    return token if len(token) <= MAX_TICK_CHARS else token[: MAX_TICK_CHARS - 1] + "\u2026"


def plot_box(fig) -> tuple[float, float]:
    """(width, height) in px of the plot area at the width the figure was designed for."""
    m = fig.layout.margin
    return fig.layout.meta["width"] - m.l - m.r, fig.layout.height - m.t - m.b


def token_axes(fig):
    """Every axis of ``fig`` that carries token tick labels (category axes with ticktext)."""
    layout = fig.layout
    for name in dir(layout):
        if re.fullmatch(r"[xy]axis\d*", name):
            axis = getattr(layout, name)
            if axis is not None and axis.type == "category" and axis.ticktext:
                yield name, axis


def figures_at(n: int, tokens: list[str]):
    """One of every token-axis figure for ``n`` tokens."""
    p = pattern(n)
    rng = np.random.default_rng(1)
    q, k, v = (rng.normal(size=(n, 8)).astype(np.float32) for _ in range(3))
    yield "attention_heatmap", attention_heatmap(p, tokens, title="layer 0, head 0")
    yield "attention_heatmap scores", attention_heatmap(np.log(p), tokens, kind="attn_scores")
    yield "qkv_figure", qkv_figure(q, k, v, np.log(p), tokens)
    yield "heads_side_by_side", heads_side_by_side(np.stack([p, p.T, p]), ["a", "b", "c"], tokens)
    yield "attention_diff_figure", attention_diff_figure(p, p.T, tokens)
    yield "head_output_heatmap", head_output_heatmap(q, tokens)
    yield "ablation_effect_figure", ablation_effect_figure(np.abs(q[:, 0]), tokens, "zeroing L0H0")


# --------------------------------------------------------------------------------------------
# sizes: fill the column, square plots square, colorbars beside and no taller
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [english, chinese], ids=["en", "zh"])
@pytest.mark.parametrize("n", [5, 16, 64, 512])
def test_detail_heatmap_fills_its_745px_column_with_a_550px_square(make, n):
    fig = attention_heatmap(pattern(n), make(n), title="layer 0, head 0")
    assert fig.layout.meta["width"] == DETAIL_WIDTH == 745
    w, h = plot_box(fig)
    assert w == h == fig.layout.meta["plot_px"] >= 550
    assert fig.layout.yaxis.scaleanchor == "x"
    assert fig.layout.width is None  # Streamlit stretches the chart to its column


def test_width_argument_sizes_every_builder():
    n, tokens = 16, english(16)
    p = pattern(n)
    small, big = attention_heatmap(p, tokens, width=600), attention_heatmap(p, tokens, width=940)
    assert small.layout.meta["width"] == 600
    assert big.layout.meta["width"] == 940
    assert plot_box(small)[0] < plot_box(big)[0]
    assert big.layout.height > small.layout.height
    pe = np_sinusoidal(40, 16)
    assert pe_similarity_heatmap(pe).layout.meta["width"] == HALF_WIDTH
    assert pe_similarity_heatmap(pe, width=FULL_WIDTH).layout.meta["plot_px"] > 600
    # the offset figure beside the similarity heatmap is as tall as it
    assert pe_offset_figure(np.arange(5), np.zeros(5), np.zeros(5)).layout.height == (
        pe_similarity_heatmap(pe).layout.height
    )


@pytest.mark.parametrize("n", [16, 512])
def test_square_plots_fill_their_width(n):
    tokens = english(n)
    pe = np_sinusoidal(64, 16)
    eye = np.eye(16, dtype=np.float32)
    figs = [
        attention_heatmap(pattern(n), tokens),
        head_similarity_heatmap(np.zeros((72, 72), np.float32), [f"L{i // 12}H{i % 12}" for i in range(72)]),
        pe_similarity_heatmap(pe),
        shift_matrix_figure(eye, k=1),
    ]
    for fig in figs:
        w, h = plot_box(fig)
        assert w == h, fig.layout.meta


def test_qkv_rows_are_readable_and_the_matrix_panel_is_large():
    for n in (16, 64):
        q = np.zeros((n, 32), np.float32)
        fig = qkv_figure(q, q, q, pattern(n), english(n), kind="pattern")
        _, h = plot_box(fig)
        assert h / n >= 12  # every token labelled, rows at least 12 px apart
        assert fig.layout.meta["plot_px"] >= 400  # the [query_pos, key_pos] panel in 940 px


def colorbar_checks(fig, bar, panel_domain_y=(0.0, 1.0)):
    """The bar is vertical, no taller than its panel and centred on it."""
    assert bar.lenmode == "fraction"
    assert bar.orientation in (None, "v")
    lo, hi = panel_domain_y
    assert bar.len <= hi - lo + 1e-9
    assert bar.y == pytest.approx((lo + hi) / 2)
    assert bar.yanchor == "middle"
    assert bar.xanchor == "left"


def test_colorbars_sit_beside_their_plot_and_are_no_taller():
    n, tokens = 16, english(16)
    p = pattern(n)
    fig = attention_heatmap(p, tokens)
    colorbar_checks(fig, fig.data[-1].colorbar)
    assert fig.data[-1].colorbar.x == 1.0  # the plot fills the paper: the bar is right beside it

    q = np.random.default_rng(0).normal(size=(n, 8)).astype(np.float32)
    fig = qkv_figure(q, q, q, np.log(p), tokens)
    bar = fig.layout.coloraxis.colorbar
    colorbar_checks(fig, bar)
    assert bar.x == pytest.approx(fig.layout.xaxis3.domain[1])  # right of the V panel
    assert bar.orientation in (None, "v")
    assert bar.yref in (None, "paper")
    colorbar_checks(fig, fig.layout.coloraxis2.colorbar)

    fig = heads_side_by_side(np.stack([p] * 4), list("abcd"), tokens)
    top_panel = fig.layout.yaxis.domain
    colorbar_checks(fig, fig.layout.coloraxis.colorbar, top_panel)

    fig = attention_diff_figure(p, p.T, tokens)
    colorbar_checks(fig, fig.layout.coloraxis.colorbar, fig.layout.yaxis2.domain)
    colorbar_checks(fig, fig.layout.coloraxis2.colorbar, fig.layout.yaxis3.domain)
    assert fig.layout.coloraxis.colorbar.x == pytest.approx(fig.layout.xaxis2.domain[1])
    assert fig.layout.coloraxis2.colorbar.x == pytest.approx(fig.layout.xaxis3.domain[1])

    pe = np_sinusoidal(40, 16)
    for fig in (pe_matrix_heatmap(pe), pe_similarity_heatmap(pe), shift_matrix_figure(np.eye(8))):
        colorbar_checks(fig, fig.data[0].colorbar)
    fig = head_similarity_heatmap(np.zeros((3, 3), np.float32), ["a", "b", "c"])
    colorbar_checks(fig, fig.data[0].colorbar)
    fig = head_metrics_figure({"entropy": np.ones((6, 12), np.float32)}, "entropy")
    colorbar_checks(fig, fig.data[0].colorbar)


def test_side_by_side_panels_shrink_to_fewer_columns_rather_than_drop_labels():
    p = pattern(16)
    four = heads_side_by_side(np.stack([pattern(8)] * 4), list("abcd"), english(8))
    assert four.layout.meta["cols"] == 4  # short input: one row of four
    fig = heads_side_by_side(np.stack([p] * 4), list("abcd"), english(16))
    assert fig.layout.meta["cols"] == 2  # 2 x 2, not 3 + 1
    assert fig.layout.meta["plot_px"] / 16 >= 12
    long_ = heads_side_by_side(np.stack([pattern(60)] * 4), list("abcd"), english(60))
    assert long_.layout.meta["cols"] == 1
    assert long_.layout.meta["plot_px"] / 60 >= 12


# --------------------------------------------------------------------------------------------
# labels: every token up to 64, evenly thinned beyond, upright CJK, legible sizes
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [english, chinese], ids=["en", "zh"])
@pytest.mark.parametrize("n", [3, 16, 40, LABEL_ALL])
def test_every_token_is_labelled_up_to_64(make, n):
    tokens = make(n)
    for name, fig in figures_at(n, tokens):
        axes = list(token_axes(fig))
        assert axes, name
        for axis_name, axis in axes:
            assert list(axis.tickvals) == list(range(n)), (name, axis_name)
            assert shown(axis.ticktext) == [cut(t) for t in tokens], (name, axis_name)


@pytest.mark.parametrize("make", [english, chinese], ids=["en", "zh"])
@pytest.mark.parametrize("n", [LABEL_ALL + 1, 200, 512])
def test_beyond_64_labels_thin_evenly_with_one_step_and_hover_names_every_position(make, n):
    tokens = make(n)
    for name, fig in figures_at(n, tokens):
        block = (fig.layout.meta or {}).get("block", 1)
        steps = set()
        for axis_name, axis in token_axes(fig):
            # tick values count cells of `block` positions, except on Q, K, V's rows
            unit = 1 if name == "qkv_figure" and axis_name.startswith("yaxis") else block
            pos = [v * unit for v in axis.tickvals]
            step = pos[1] - pos[0]
            assert step >= 2, (name, axis_name)
            assert pos == list(range(0, n, step)), (name, axis_name)
            assert shown(axis.ticktext) == [cut(tokens[p]) for p in pos], (name, axis_name)
            steps.add(step)
        assert len(steps) == 1, (name, steps)  # the same step on every token axis
        # the hover: category names cover every position, with index and token
        trace = fig.data[-1] if name != "qkv_figure" else fig.data[0]
        names = trace.y if trace.type == "heatmap" else trace.x
        covered = []
        for label in names:
            span = label.split(":")[0]
            a, _, b = span.partition("\u2013")
            covered += list(range(int(a), int(b or a) + 1))
        assert covered == list(range(n)), name


@pytest.mark.parametrize("n", [5, 16, 21, 40, LABEL_ALL, 512])
def test_chinese_labels_stay_upright(n):
    tokens = chinese(n)
    for name, fig in figures_at(n, tokens):
        for axis_name, axis in token_axes(fig):
            assert axis.tickangle in (0, None), (name, axis_name, n)


def test_english_words_rotate_only_when_they_would_collide():
    short = attention_heatmap(pattern(4), ["a", "b", "c", "d"])
    assert short.layout.xaxis.tickangle == 0
    assert "<br>" not in "".join(short.layout.xaxis.ticktext)
    dense = attention_heatmap(pattern(60), english(60))
    assert dense.layout.xaxis.tickangle == -90


def test_tick_labels_and_titles_are_large_enough_to_project():
    for n in (16, 512):
        for name, fig in figures_at(n, english(n)):
            for axis_name, axis in token_axes(fig):
                if axis.showticklabels is False:
                    continue
                assert axis.tickfont.size >= TICK_FONT_PX >= 12, (name, axis_name)
                if axis.title and axis.title.text:
                    assert axis.title.font.size > axis.tickfont.size, (name, axis_name)


def test_axis_titles_are_plain_words():
    n, tokens = 6, english(6)
    fig = attention_heatmap(pattern(n), tokens)
    assert (fig.layout.yaxis.title.text, fig.layout.xaxis.title.text) == (
        "query token (row)",
        "key token (column)",
    )
    q = np.zeros((n, 32), np.float32)
    fig = qkv_figure(q, q, q, pattern(n), tokens, kind="pattern")
    assert fig.layout.yaxis.title.text == "token"
    assert fig.layout.xaxis4.title.text == "key token (column)"
    assert "dimension of the head (d_head = 32)" in [a.text for a in fig.layout.annotations]
    assert head_output_heatmap(q, tokens).layout.xaxis.title.text == "dimension of the head (d_head = 32)"
    fig = head_metrics_figure({"entropy": np.ones((2, 3), np.float32)}, "entropy")
    assert (fig.layout.xaxis.title.text, fig.layout.yaxis.title.text) == ("head", "layer")
    fig = head_similarity_heatmap(np.zeros((2, 2), np.float32), ["a", "b"])
    assert fig.layout.xaxis.title.text == fig.layout.yaxis.title.text == "head"
    assert pe_matrix_heatmap(np_sinusoidal(8, 4)).layout.yaxis.title.text == "position"
    for fig in [
        attention_heatmap(pattern(600), english(600)),
        attention_diff_figure(pattern(n), pattern(n), tokens),
    ]:
        for _, axis in token_axes(fig):
            if axis.title and axis.title.text:
                assert "_pos" not in axis.title.text


def test_margins_hold_the_labels_so_plotly_lays_out_once():
    for n in (16, 64, 512):
        for make in (english, chinese):
            fig = attention_heatmap(pattern(n), make(n))
            y, x = fig.layout.yaxis, fig.layout.xaxis
            widest = max(text_px(t, y.tickfont.size) for t in shown(y.ticktext))
            assert fig.layout.margin.l >= widest + y.title.font.size
            if x.tickangle == 0:
                lines = 1 + max(str(t).count("<br>") for t in x.ticktext)
                assert fig.layout.margin.b >= lines * x.tickfont.size * 1.2 + x.title.font.size
            else:
                longest = max(text_px(t, x.tickfont.size) for t in shown(x.ticktext))
                assert fig.layout.margin.b >= longest + x.title.font.size


# --------------------------------------------------------------------------------------------
# honest color
# --------------------------------------------------------------------------------------------
def luminance(color: str) -> float:
    r, g, b = (
        (int(c) for c in re.findall(r"\d+", color)[:3])
        if color.startswith("rgb")
        else (int(color[i : i + 2], 16) for i in (1, 3, 5))
    )
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_weights_and_divergences_are_sequential_on_0_to_1():
    n, tokens = 8, english(8)
    p = pattern(n)
    assert (attention_heatmap(p, tokens).data[-1].zmin, attention_heatmap(p, tokens).data[-1].zmax) == (0, 1)
    side = heads_side_by_side(np.stack([p, p]), ["a", "b"], tokens)
    assert (side.layout.coloraxis.cmin, side.layout.coloraxis.cmax) == (0, 1)
    q = np.zeros((n, 4), np.float32)
    qkv = qkv_figure(q, q, q, p, tokens, kind="pattern")
    assert (qkv.layout.coloraxis2.cmin, qkv.layout.coloraxis2.cmax) == (0, 1)
    diff = attention_diff_figure(p, p.T, tokens)
    assert (diff.layout.coloraxis.cmin, diff.layout.coloraxis.cmax) == (0, 1)
    js = head_similarity_heatmap(np.full((3, 3), 0.02, np.float32), ["a", "b", "c"]).data[0]
    assert (js.zmin, js.zmax) == (0, 1)
    assert js.zmid is None  # small values stay dark
    scale = [c for _, c in js.colorscale]
    assert scale == [c for _, c in SEQUENTIAL]
    assert luminance(scale[0]) < luminance(scale[-1])  # dark end = 0 = identical


def test_js_divergence_figure_says_what_it_plots():
    fig = head_similarity_heatmap(np.zeros((2, 2), np.float32), ["a", "b"])
    assert fig.data[0].colorbar.title.text == "JS divergence, 0 = identical"
    assert "JS divergence" in fig.data[0].hovertemplate
    assert "similarity" not in fig.data[0].hovertemplate
    assert fig.layout.meta["dark_end"] == "0 = identical"
    assert fig.layout.meta["range"] == [0.0, 1.0]


def test_signed_values_diverge_around_zero():
    n, tokens = 8, english(8)
    rng = np.random.default_rng(3)
    q, k, v = (rng.normal(size=(n, 4)).astype(np.float32) for _ in range(3))
    s = rng.normal(size=(n, n)).astype(np.float32)
    heats = [
        attention_heatmap(s, tokens, kind="attn_scores").data[-1],
        head_output_heatmap(q, tokens).data[0],
        pe_matrix_heatmap(np_sinusoidal(20, 8)).data[0],
        pe_similarity_heatmap(np_sinusoidal(20, 8)).data[0],
        shift_matrix_figure(np.eye(8) * -0.5).data[0],
        head_metrics_figure({"m": s[:2, :3]}, "m").data[0],
    ]
    for h in heats:
        assert h.zmin == -h.zmax
        assert h.zmid == 0.0
    fig = qkv_figure(q, k, v, s, tokens)
    for axis in (fig.layout.coloraxis, fig.layout.coloraxis2):
        assert axis.cmin == -axis.cmax
        assert axis.cmid == 0.0
    diff = attention_diff_figure(pattern(n), pattern(n, seed=1), tokens).layout.coloraxis2
    assert diff.cmin == -diff.cmax


def test_outliers_get_a_robust_stated_limit():
    rng = np.random.default_rng(4)
    table = rng.normal(scale=0.05, size=(64, 32)).astype(np.float32)
    table[0, :4] = 3.0  # a learned table's first row: a few huge values
    fig = pe_matrix_heatmap(table)
    heat, color = fig.data[0], fig.layout.meta["color"]
    p99 = float(np.percentile(np.abs(table), 99))
    assert heat.zmax == pytest.approx(p99, rel=1e-5)
    assert heat.zmin == -heat.zmax
    assert heat.zmax < 0.5  # the bulk fills the scale; the outliers saturate
    assert color["clipped"] is True
    assert color["limit"] == pytest.approx(p99, rel=1e-5)
    assert "99th percentile" in color["rule"]
    ticks = list(heat.colorbar.ticktext)
    assert ticks[0].startswith("\u2264")
    assert ticks[-1].startswith("\u2265")
    assert heat.colorbar.tickvals[-1] == pytest.approx(p99, rel=1e-5)
    # without outliers the limit is the largest value: nothing is clipped
    sin = pe_matrix_heatmap(np_sinusoidal(40, 16))
    assert sin.layout.meta["color"]["clipped"] is False
    assert sin.data[0].zmax == pytest.approx(1.0, abs=1e-3)

    n, tokens = 32, english(32)
    q, k, v = (rng.normal(size=(n, 16)).astype(np.float32) for _ in range(3))
    q[:3, 3] = 40.0  # a massive activation in one dimension of a few tokens
    fig = qkv_figure(q, k, v, pattern(n), tokens, kind="pattern")
    qkv = fig.layout.coloraxis
    limit = robust_symmetric(np.concatenate([q.ravel(), k.ravel(), v.ravel()])).limit
    assert qkv.cmax == pytest.approx(limit)
    assert qkv.cmax < 10
    assert qkv.cmin == -qkv.cmax
    assert fig.layout.meta["qkv_color"]["clipped"] is True
    assert fig.layout.meta["qkv_color"]["limit"] == pytest.approx(limit)


# --------------------------------------------------------------------------------------------
# head similarity order, head metric values
# --------------------------------------------------------------------------------------------
def test_similarity_heatmap_follows_the_order():
    rng = np.random.default_rng(5)
    a = rng.random((4, 4)).astype(np.float32)
    sim = (a + a.T) / 2
    np.fill_diagonal(sim, 0)
    labels = ["L0H0", "L0H1", "L1H0", "L1H1"]
    order = [2, 0, 3, 1]
    fig = head_similarity_heatmap(sim, labels, order=order)
    np.testing.assert_array_equal(fig.data[0].z, sim[np.ix_(order, order)])
    assert shown(fig.layout.xaxis.ticktext) == shown(fig.layout.yaxis.ticktext) == [labels[i] for i in order]
    assert list(fig.data[0].x) == [labels[i] for i in order]
    assert fig.layout.meta["order"] == order
    assert fig.data[0].z[0, 1] == sim[2, 0]  # the hover names the heads at that cell
    plain = head_similarity_heatmap(sim, labels)
    np.testing.assert_array_equal(plain.data[0].z, sim)
    for bad in ([0, 1, 2], [0, 0, 1, 2], [1, 2, 3, 4]):
        with pytest.raises(ValueError, match=r"permutation of 0\.\.3"):
            head_similarity_heatmap(sim, labels, order=bad)


def test_all_72_heads_are_labelled():
    labels = [f"L{i // 12}H{i % 12}" for i in range(72)]
    fig = head_similarity_heatmap(np.zeros((72, 72), np.float32), labels)
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        assert list(axis.tickvals) == list(range(72))
        assert shown(axis.ticktext) == labels
        assert axis.tickfont.size >= 12


def test_head_metric_values_are_printed_only_where_they_fit():
    rng = np.random.default_rng(6)
    metrics = {
        "entropy": rng.random((6, 12)).astype(np.float32) * 5,
        "mean_distance": rng.random((6, 12)) * 300,
    }
    narrow = head_metrics_figure(metrics, "entropy")  # the page's ~370 px column
    assert narrow.layout.meta["width"] == 370
    assert narrow.data[0].texttemplate is None
    assert narrow.layout.meta["values_shown"] is False
    for metric in metrics:
        wide = head_metrics_figure(metrics, metric, width=940)
        heat = wide.data[0]
        assert heat.texttemplate == "%{text}"
        assert wide.layout.meta["values_shown"] is True
        cell = plot_box(wide)[0] / 12
        assert heat.textfont.size >= 12
        assert all(text_px(t, heat.textfont.size) < cell for row in heat.text for t in row)
        # 2 significant digits (3 from 100 on)
        assert all(
            len(t.lstrip("\u2212").replace(".", "").lstrip("0")) <= 3 for row in heat.text for t in row
        )
        assert "%{z:.4g}" in heat.hovertemplate  # the hover always has the value


def test_pe_waves_gives_each_dimension_its_own_row():
    fig = pe_waves(np_sinusoidal(128, 64), [0, 1, 6, 7, 62])
    domains = sorted(
        (fig.layout[f"yaxis{'' if i == 0 else i + 1}"].domain for i in range(5)), key=lambda d: d[0]
    )
    for (_a0, a1), (b0, _) in itertools.pairwise(domains):
        assert a1 < b0  # rows do not overlap
    assert all(t.mode == "lines" for t in fig.data)
    assert all(t.mode == "lines+markers" for t in pe_waves(np_sinusoidal(40, 16), [0, 3]).data)
    assert fig.layout.showlegend is False  # each row is labelled beside it instead


def test_tight_chinese_labels_stagger_instead_of_rotating():
    fig = attention_heatmap(pattern(64), chinese(64))
    x, y = fig.layout.xaxis, fig.layout.yaxis
    assert x.tickangle == 0
    assert any("<br>" in t for t in x.ticktext)  # flat, in staggered rows
    # rows 9 px apart: every other character one column further out, all still upright
    assert y.tickangle == 0
    assert all(not t.endswith(EN_SPACE) for t in y.ticktext[0::2])
    assert all(t.endswith(EN_SPACE) for t in y.ticktext[1::2])
    assert fig.layout.meta["plot_px"] >= 550
