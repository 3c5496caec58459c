"""Figure builders of the step-by-step page: shapes, masks, highlight, numbers, pooling, labels."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from tformer.figures.colors import pattern_colorscale
from tformer.figures.labels import LABEL_ALL
from tformer.figures.walkthrough import (
    BAR_HIGHLIGHT,
    MASKED_CELL,
    MASKED_TEXT,
    cell_text,
    neuron_figure,
    row_bars,
    step_heatmap,
)

HOSTILE = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "$x$", "a&b", "<b>B</b>"]
WORDS = "[CLS] the cat sat on the mat because it was tired [SEP]".split()
ROWS = [f"{i} · {t}" for i, t in enumerate(WORDS)]
CHINESE = [f"{i} · {t}" for i, t in enumerate("小猫跳到了桌子上然后睡觉")]


def dims(n: int) -> list[str]:
    return [f"d{i}" for i in range(n)]


def causal_scores(n: int, seed: int = 0) -> np.ndarray:
    s = np.random.default_rng(seed).normal(size=(n, n)).astype(np.float32)
    s[np.triu_indices(n, 1)] = -np.inf
    return s


def softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


def heat_of(fig):
    """The value heatmap (the last trace; a mask layer, when present, comes first)."""
    return fig.data[-1]


def bold_ticks(axis) -> list[int]:
    return [v for v, t in zip(axis.tickvals, axis.ticktext, strict=True) if "<b>" in t]


def assert_no_markup(fig) -> None:
    text = fig.to_json()
    for bad in ("<script", "<img", "$x$", "<b>B"):
        assert bad not in text


# --------------------------------------------------------------------------------------------
# step_heatmap: validation
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "rows", "cols", "needle"),
    [
        (np.zeros(4), ROWS[:4], [], "got shape (4,)"),
        (np.zeros((2, 2, 2)), ROWS[:2], dims(2), "got shape (2, 2, 2)"),
        (np.zeros((0, 3)), [], dims(3), "got shape (0, 3)"),
        (np.zeros((3, 4)), ROWS[:2], dims(4), "(3, 4) but 2 row labels"),
        (np.zeros((3, 4)), ROWS[:3], dims(5), "(3, 4) but 5 column labels"),
    ],
)
def test_step_heatmap_rejects_bad_shapes_naming_them(value, rows, cols, needle):
    with pytest.raises(ValueError, match=re.escape(needle)):
        step_heatmap(value, rows, cols)


@pytest.mark.parametrize("highlight", [-1, 3])
def test_step_heatmap_rejects_a_highlight_outside_the_rows(highlight):
    with pytest.raises(ValueError, match=r"highlight=.* 0\.\.2"):
        step_heatmap(np.zeros((3, 2)), ROWS[:3], dims(2), highlight=highlight)


# --------------------------------------------------------------------------------------------
# step_heatmap: values and scales
# --------------------------------------------------------------------------------------------
def test_values_are_sent_exactly_as_float32_on_a_symmetric_diverging_scale():
    v = np.random.default_rng(0).normal(size=(12, 64))  # float64 in
    fig = step_heatmap(v, ROWS, dims(64), title="Q = XW<sub>Q</sub>")
    heat = heat_of(fig)
    assert len(fig.data) == 1  # nothing masked: no mask layer
    assert heat.z.dtype == np.float32
    np.testing.assert_array_equal(heat.z, v.astype(np.float32))
    assert heat.zmid == 0.0
    assert heat.zmin == -heat.zmax
    meta = fig.layout.meta
    assert {k: meta[k] for k in ("rows", "cols", "highlight", "numbers", "weights")} == {
        "rows": 12,
        "cols": 64,
        "highlight": None,
        "numbers": False,
        "weights": False,
    }
    assert (meta["row_block"], meta["col_block"]) == (1, 1)
    assert set(meta["color"]) == {"limit", "clipped", "rule"}
    assert meta["color"]["limit"] == heat.zmax
    assert fig.layout.title.text == "Q = XW<sub>Q</sub>"
    assert 15 <= fig.layout.title.font.size <= 17


def test_weights_use_the_fixed_pattern_scale():
    p = softmax(np.random.default_rng(1).normal(size=(12, 12)))
    fig = step_heatmap(p, ROWS, ROWS, weights=True)
    heat = heat_of(fig)
    assert (heat.zmin, heat.zmax) == (0.0, 1.0)
    assert [list(s) for s in heat.colorscale] == [list(s) for s in pattern_colorscale()]
    assert heat.colorbar.title.text == "weight"
    assert fig.layout.meta["weights"] is True
    assert "color" not in fig.layout.meta


def test_an_outlier_clips_the_scale_and_meta_says_so():
    v = np.random.default_rng(2).normal(size=(40, 40)).astype(np.float32)
    v[3, 4] = 80.0
    meta = step_heatmap(v, dims(40), dims(40)).layout.meta["color"]
    assert meta["clipped"] is True
    assert meta["limit"] < 80
    assert "percentile" in meta["rule"]


# --------------------------------------------------------------------------------------------
# step_heatmap: masked (-inf) entries
# --------------------------------------------------------------------------------------------
def test_minus_inf_cells_are_gaps_over_a_gray_mask_layer():
    s = causal_scores(12)
    fig = step_heatmap(s, ROWS, ROWS, value_title="score")
    assert len(fig.data) == 2
    mask, heat = fig.data
    upper = np.triu(np.ones((12, 12), bool), 1)
    assert np.array_equal(np.isnan(heat.z), upper)
    np.testing.assert_array_equal(heat.z[~upper], s[~upper])
    assert heat.hoverongaps is False
    assert mask.z.dtype == np.uint8
    np.testing.assert_array_equal(mask.z, upper.astype(np.uint8))
    assert MASKED_TEXT in mask.hovertemplate
    assert "\u2212\u221e" in MASKED_TEXT
    assert mask.showscale is False
    # the color limit comes from the finite values only
    assert heat.zmax == pytest.approx(float(np.abs(s[~upper]).max()))
    assert fig.layout.meta["masked"] == int(upper.sum())


def test_a_fully_masked_row_is_drawn_masked():
    s = causal_scores(6)
    s[0, :] = -np.inf
    fig = step_heatmap(s, ROWS[:6], ROWS[:6], numbers=True)
    mask, heat = fig.data
    assert mask.z[0].tolist() == [1] * 6
    assert np.isnan(heat.z[0]).all()
    assert list(mask.text[0]) == [MASKED_CELL] * 6
    assert list(heat.text[0]) == [""] * 6


def test_everything_masked_does_not_crash():
    s = np.full((4, 4), -np.inf, dtype=np.float32)
    fig = step_heatmap(s, ROWS[:4], ROWS[:4], highlight=2)
    assert fig.layout.meta["color"]["limit"] == 1.0
    assert fig.data[0].z.min() == 1
    json.loads(fig.to_json())  # serialises


# --------------------------------------------------------------------------------------------
# step_heatmap: highlight
# --------------------------------------------------------------------------------------------
def test_highlight_frames_the_whole_row_and_marks_its_label():
    fig = step_heatmap(causal_scores(12), ROWS, ROWS, highlight=3)
    assert fig.layout.meta["highlight"] == 3
    shapes = fig.layout.shapes
    assert len(shapes) >= 1
    for shape in shapes:
        assert shape.type == "rect"
        assert shape.yref == "y"
        assert shape.xref == "x domain"
        assert 2.3 <= shape.y0 <= 2.5
        assert 3.5 <= shape.y1 <= 3.7  # just outside row 3
        assert shape.x0 <= 0
        assert shape.x1 >= 1  # across every column
    assert max(s.line.width for s in shapes) >= 4
    assert {s.line.color for s in shapes} >= {"#000000", "#ffffff"}  # reads on both scales
    ya = fig.layout.yaxis
    assert bold_ticks(ya) == [3]
    assert "\u25b6" in ya.ticktext[3]
    assert "3 · sat" in ya.ticktext[3]


def test_no_highlight_no_shape():
    fig = step_heatmap(causal_scores(5), ROWS[:5], ROWS[:5])
    assert not fig.layout.shapes
    assert bold_ticks(fig.layout.yaxis) == []


def test_highlight_in_a_pooled_thinned_axis_gets_its_own_label():
    n = 512
    rows = [f"{i} · w{i}" for i in range(n)]
    fig = step_heatmap(np.random.default_rng(3).normal(size=(n, 8)), rows, dims(8), highlight=101)
    meta = fig.layout.meta
    assert meta["row_block"] == 2
    assert meta["row_tick_step"] > 2
    cell = 101 // 2
    ya = fig.layout.yaxis
    assert bold_ticks(ya) == [cell]
    assert "101 · w101" in ya.ticktext[list(ya.tickvals).index(cell)]
    others = [v for v in ya.tickvals if v != cell]
    assert min(abs(v - cell) for v in others) >= meta["row_tick_step"] // 2  # nothing crowds it
    shape = fig.layout.shapes[0]
    assert shape.y0 < cell < shape.y1


# --------------------------------------------------------------------------------------------
# step_heatmap: numbers
# --------------------------------------------------------------------------------------------
def test_numbers_only_when_asked():
    s = causal_scores(12)
    plain = step_heatmap(s, ROWS, ROWS).to_dict()
    for trace in plain["data"]:
        assert "text" not in trace
        assert "texttemplate" not in trace
    fig = step_heatmap(s, ROWS, ROWS, numbers=True)
    mask, heat = fig.data
    assert heat.texttemplate == "%{text}"
    assert heat.textfont.size >= 12
    assert heat.textfont.color is None  # plotly picks dark or light text per cell
    assert heat.text[4][2] == cell_text(float(s[4, 2]))
    assert heat.text[0][5] == ""
    assert mask.text[0][5] == MASKED_CELL
    assert mask.text[4][2] == ""
    assert fig.layout.meta["numbers"] is True


def test_numbers_never_pool():
    v = np.random.default_rng(4).normal(size=(300, 3))
    fig = step_heatmap(v, dims(300), dims(3), numbers=True)
    assert (fig.layout.meta["row_block"], fig.layout.meta["col_block"]) == (1, 1)
    assert heat_of(fig).z.shape == (300, 3)


@pytest.mark.parametrize(
    ("v", "text"),
    [
        (0.0, "0"),
        (0.123, "0.12"),
        (-0.123, "\u22120.12"),
        (1.234, "1.23"),
        (-12.34, "\u221212.3"),
        (123.4, "123"),
        (1234.0, "1.2k"),
        (-np.inf, "\u2212\u221e"),
        (np.nan, ""),
    ],
)
def test_cell_text(v, text):
    assert cell_text(v) == text
    assert len(cell_text(v)) <= 5


# --------------------------------------------------------------------------------------------
# step_heatmap: large inputs
# --------------------------------------------------------------------------------------------
def test_512_by_384_is_pooled_keeping_signed_extremes():
    v = np.random.default_rng(5).normal(size=(512, 384)).astype(np.float32)
    v[10, 20] = -50.0
    rows = [f"{i} · w{i}" for i in range(512)]
    fig = step_heatmap(v, rows, dims(384), highlight=7)
    meta = fig.layout.meta
    assert (meta["row_block"], meta["col_block"]) == (2, 2)
    heat = heat_of(fig)
    assert heat.z.shape == (256, 192)
    assert heat.z.dtype == np.float32
    assert heat.z[5, 10] == -50.0  # the block's largest magnitude, sign kept
    assert "each cell covers 2" in fig.layout.xaxis.title.text
    assert "each cell covers 2" in fig.layout.yaxis.title.text
    assert "largest |value|" in heat.hovertemplate
    assert heat.y[0] == "0\u20131: 0 · w0 \u2026 1 · w1"
    spec = fig.to_json()
    assert len(spec) < 1_000_000
    assert '"dtype":"f4"' in spec  # binary float32, not a list of numbers
    assert meta["plot_px"][1] <= 700


def test_wide_ffn_layer_pools_columns_only():
    v = np.random.default_rng(6).random(size=(16, 1536)).astype(np.float32)
    fig = step_heatmap(v, ROWS + ROWS[:4], dims(1536), col_title="hidden unit")
    meta = fig.layout.meta
    assert meta["row_block"] == 1
    assert meta["col_block"] == 6
    assert heat_of(fig).z.shape == (16, 256)
    assert fig.layout.xaxis.title.text.startswith("hidden unit")
    assert meta["plot_px"][1] >= 16 * 16  # rows stay readable


def test_pooled_weights_keep_the_block_maximum():
    p = np.zeros((300, 300), dtype=np.float32)
    p[np.arange(300), np.arange(300)] = 1.0
    fig = step_heatmap(p, dims(300), dims(300), weights=True)
    z = heat_of(fig).z
    assert fig.layout.meta["row_block"] == 2
    assert np.all(np.diag(z) == 1.0)
    assert "max weight" in heat_of(fig).hovertemplate


def test_height_keeps_rows_readable_and_capped():
    short = step_heatmap(np.ones((12, 384)), ROWS, dims(384)).layout.meta["plot_px"][1]
    assert short >= 12 * 14
    tall = step_heatmap(np.ones((LABEL_ALL, 8)), dims(LABEL_ALL), dims(8)).layout.meta["plot_px"][1]
    assert tall <= 700


# --------------------------------------------------------------------------------------------
# step_heatmap: labels
# --------------------------------------------------------------------------------------------
def test_hostile_labels_are_escaped_everywhere():
    labels = [*HOSTILE, "ok"]
    n = len(labels)
    fig = step_heatmap(np.eye(n), labels, labels, highlight=0, numbers=True)
    assert_no_markup(fig)
    assert heat_of(fig).y[0] == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert fig.layout.xaxis.ticktext[2] == "&#36;x&#36;"


def test_repeated_labels_stay_separate_categories():
    labels = ["the", "cat", "the"]
    heat = heat_of(step_heatmap(np.eye(3), labels, labels))
    assert len(set(heat.x)) == 3
    assert heat.x[2] == "2: the"


def test_chinese_labels_render_upright_and_readable():
    fig = step_heatmap(np.eye(12), CHINESE, CHINESE, highlight=5)
    xa, ya = fig.layout.xaxis, fig.layout.yaxis
    assert xa.tickangle == 0  # CJK stays upright
    assert "小" in ya.ticktext[0]
    assert "桌" in ya.ticktext[5]
    assert xa.tickfont.size >= 12
    assert ya.tickfont.size >= 12
    assert heat_of(fig).colorbar.tickfont.size >= 12


def test_same_input_same_json():
    s = causal_scores(9)
    a = step_heatmap(s, ROWS[:9], ROWS[:9], highlight=2, numbers=True).to_json()
    assert a == step_heatmap(s, ROWS[:9], ROWS[:9], highlight=2, numbers=True).to_json()


# --------------------------------------------------------------------------------------------
# row_bars
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("values", "labels", "needle"),
    [
        (np.zeros((2, 2)), ROWS[:2], "got shape (2, 2)"),
        (np.zeros(0), [], "shape (0,)"),
        (np.zeros(3), ROWS[:4], "(3,) but 4 key labels"),
    ],
)
def test_row_bars_rejects_bad_shapes(values, labels, needle):
    with pytest.raises(ValueError, match=re.escape(needle)):
        row_bars(values, labels)


def test_row_bars_rejects_a_highlight_outside_the_keys():
    with pytest.raises(ValueError, match="highlight=5"):
        row_bars(np.zeros(3), ROWS[:3], highlight=5)


def test_row_bars_masked_keys_get_a_marker_at_zero():
    s = causal_scores(12)
    fig = row_bars(s[4], ROWS, numbers=True)
    bars, marks = fig.data
    assert np.isnan(bars.y[5:]).all()
    assert bars.y[:5].tolist() == s[4, :5].tolist()
    assert list(marks.x) == [bars.x[i] for i in range(5, 12)]
    assert np.all(np.asarray(marks.y) == 0)
    assert marks.showlegend is False
    assert "masked" in marks.hovertemplate
    assert MASKED_CELL in marks.hovertemplate
    assert list(marks.text) == [MASKED_CELL] * 7
    assert "masked" in fig.layout.xaxis.title.text
    assert fig.layout.meta["masked"] == 7


def test_row_bars_all_masked_row():
    fig = row_bars(np.full(12, -np.inf), ROWS)
    assert len(fig.data[1].x) == 12
    assert list(fig.layout.yaxis.range) == [-1.0, 1.0]
    json.loads(fig.to_json())


def test_row_bars_highlight_and_numbers():
    v = np.linspace(-1, 1, 12).astype(np.float32)
    fig = row_bars(v, ROWS, highlight=2, numbers=True, title="row of query 3")
    bars = fig.data[0]
    colors = list(bars.marker.color)
    assert colors[2] == BAR_HIGHLIGHT
    assert colors.count(BAR_HIGHLIGHT) == 1
    assert bold_ticks(fig.layout.xaxis) == [2]
    band = fig.layout.shapes[0]
    assert band.x0 < 2 < band.x1
    assert list(bars.text) == [cell_text(float(x)) for x in v]
    assert bars.textfont.size >= 12
    assert fig.layout.meta["highlight"] == 2
    assert fig.layout.meta["numbers"] is True
    plain = row_bars(v, ROWS).to_dict()["data"][0]
    assert "text" not in plain
    assert not row_bars(v, ROWS).layout.shapes


def test_row_bars_weights_on_zero_to_one():
    p = softmax(np.random.default_rng(7).normal(size=12))
    fig = row_bars(p, ROWS, weights=True, value_title="weight")
    assert list(fig.layout.yaxis.range) == [0.0, 1.0]
    assert fig.layout.yaxis.title.text == "weight"
    assert len(set(fig.data[0].marker.color)) == 1


def test_row_bars_label_every_key_up_to_64_then_thin_out():
    few = row_bars(np.ones(LABEL_ALL), dims(LABEL_ALL))
    assert list(few.layout.xaxis.tickvals) == list(range(LABEL_ALL))
    many = row_bars(np.ones(512), dims(512), highlight=101)
    ticks = list(many.layout.xaxis.tickvals)
    assert len(ticks) < 100
    assert 101 in ticks
    assert len(many.data[0].x) == 512
    assert many.layout.xaxis.tickfont.size >= 12


def test_row_bars_escape_labels():
    fig = row_bars(np.arange(6.0), [*HOSTILE, "ok"], highlight=0, numbers=True)
    assert_no_markup(fig)
    assert fig.data[0].x[2] == "&#36;x&#36;"


# --------------------------------------------------------------------------------------------
# neuron_figure
# --------------------------------------------------------------------------------------------
def test_neuron_figure_panels_sum_and_meta():
    rng = np.random.default_rng(8)
    q, k = rng.normal(size=16).astype(np.float32), rng.normal(size=16).astype(np.float32)
    fig = neuron_figure(q, k, q * k, labels=("3 · sat", "2 · cat"), title="one score")
    assert [t.type for t in fig.data] == ["bar"] * 3
    assert [t.yaxis for t in fig.data] == ["y3", "y2", "y"]
    assert {t.xaxis for t in fig.data} == {"x"}
    np.testing.assert_array_equal(fig.data[2].y, q * k)
    colors = list(fig.data[2].marker.color)
    assert len(set(colors)) == 2
    assert colors[int(np.argmax(q * k))] != colors[int(np.argmin(q * k))]
    total = float(np.sum(q * k, dtype=np.float64))
    assert fig.layout.meta["d_head"] == 16
    assert fig.layout.meta["sum"] == pytest.approx(total)
    texts = [a.text for a in fig.layout.annotations]
    assert any("\u03a3" in t and f"{abs(total):.4g}" in t for t in texts)
    assert any("3 · sat" in t for t in texts)
    assert any("2 · cat" in t for t in texts)
    # the three panels are stacked, top to bottom: q, k, products
    tops = [fig.layout[f"yaxis{s}"].domain[1] for s in ("3", "2", "")]
    assert tops == sorted(tops, reverse=True)


def test_neuron_figure_one_dimension():
    fig = neuron_figure([2.0], [-0.5], [-1.0])
    assert fig.layout.meta == {"d_head": 1, "sum": -1.0, "width": fig.layout.meta["width"]}
    assert list(fig.layout.xaxis.range) == [-0.5, 0.5]
    assert list(fig.layout.xaxis.tickvals) == [0]


def test_neuron_figure_256_dimensions_thin_the_ticks():
    v = np.ones(256, dtype=np.float32)
    fig = neuron_figure(v, v, v)
    ticks = list(fig.layout.xaxis.tickvals)
    assert ticks[0] == 0
    assert 1 < len(ticks) < 64
    assert fig.layout.xaxis.tickfont.size >= 12


@pytest.mark.parametrize(
    ("q", "k", "p", "needle"),
    [
        (np.zeros(4), np.zeros(3), np.zeros(4), "(4,), (3,), (4,)"),
        (np.zeros(4), np.zeros(4), np.zeros(5), "(4,), (4,), (5,)"),
        (np.zeros((2, 2)), np.zeros(4), np.zeros(4), "got shape (2, 2)"),
        (np.zeros(0), np.zeros(0), np.zeros(0), "at least one dimension"),
    ],
)
def test_neuron_figure_rejects_mismatched_shapes(q, k, p, needle):
    with pytest.raises(ValueError, match=re.escape(needle)):
        neuron_figure(q, k, p)


def test_neuron_figure_escapes_labels():
    fig = neuron_figure(np.ones(3), np.ones(3), np.ones(3), labels=(HOSTILE[0], HOSTILE[2]))
    assert_no_markup(fig)
    with pytest.raises(ValueError, match="query label, key label"):
        neuron_figure(np.ones(3), np.ones(3), np.ones(3), labels=("a",))
