"""Figures of the √d_k experiment: validation, legend and colors, log axes, the current head's
mark, escaped token labels, 1 to 512 tokens."""

from __future__ import annotations

import itertools
import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

from tformer.analysis.scaling import row_entropy, row_max, scaling_sweep, temperature_pattern
from tformer.figures.labels import LABEL_ALL
from tformer.figures.layout import DETAIL_WIDTH, FULL_WIDTH, HALF_WIDTH
from tformer.figures.scaling import (
    BAR_COLOR,
    BAR_HIGHLIGHT,
    WITH_COLOR,
    WITHOUT_COLOR,
    row_stats_figure,
    sweep_figure,
)

HOSTILE = "<b>x</b>"
CHINESE = list("小猫跳到了桌子上然后睡觉")


@pytest.fixture(scope="module")
def sweep():
    return scaling_sweep()


def fake_sweep(n: int = 5, **changes) -> SimpleNamespace:
    """Any object with the right arrays will do (figures read a protocol, not the dataclass)."""
    d = 2.0 ** np.arange(2, 2 + n)
    fields = {
        "d_k": d,
        "var_raw": d.copy(),
        "var_scaled": np.ones(n),
        "max_raw": np.linspace(0.3, 0.95, n),
        "max_scaled": np.full(n, 0.16),
        "jac_raw": np.linspace(0.3, 0.05, n),
        "jac_scaled": np.full(n, 0.24),
        "n_keys": 32,
    }
    fields.update(changes)
    return SimpleNamespace(**fields)


def axes_of(fig, kind: str) -> dict:
    """``{"xaxis": ..., "xaxis2": ...}`` of ``kind`` ("xaxis" or "yaxis") that the figure uses."""
    layout = fig.layout.to_plotly_json()
    return {k: v for k, v in layout.items() if k.startswith(kind)}


def all_font_sizes(obj) -> list[float]:
    sizes = []
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key in ("font", "tickfont") and isinstance(value, dict) and "size" in value:
                sizes.append(value["size"])
            sizes += all_font_sizes(value)
    elif isinstance(obj, list):
        for value in obj:
            sizes += all_font_sizes(value)
    return sizes


# --------------------------------------------------------------------------------------------
# sweep_figure
# --------------------------------------------------------------------------------------------
def test_sweep_figure_draws_both_series_in_three_panels_with_one_legend(sweep):
    fig = sweep_figure(sweep)
    assert len(fig.data) == 6
    panels = sorted({(t.xaxis, t.yaxis) for t in fig.data})
    assert panels == [("x", "y"), ("x2", "y2"), ("x3", "y3")]
    shown = [t for t in fig.data if t.showlegend]
    assert [t.name for t in shown] == ["without 1/\u221ad<sub>k</sub>", "with 1/\u221ad<sub>k</sub>"]
    for t in fig.data:  # the same color for the same series in every panel
        color = WITHOUT_COLOR if t.name.startswith("without") else WITH_COLOR
        assert t.line.color == color
        assert t.marker.color == color
        assert t.legendgroup == ("raw" if t.name.startswith("without") else "scaled")
        np.testing.assert_array_equal(t.x, sweep.d_k)
    by_panel = {(t.yaxis, t.legendgroup): np.asarray(t.y) for t in fig.data}
    np.testing.assert_allclose(by_panel[("y", "raw")], sweep.var_raw, rtol=1e-6)
    np.testing.assert_allclose(by_panel[("y2", "scaled")], sweep.max_scaled, rtol=1e-6)
    np.testing.assert_allclose(by_panel[("y3", "raw")], sweep.jac_raw, rtol=1e-6)
    assert fig.layout.showlegend
    assert fig.layout.legend.orientation == "h"
    assert fig.layout.meta["width"] == FULL_WIDTH
    assert not fig.layout.meta["stacked"]


def test_sweep_figure_uses_log_axes_for_dk_and_the_variance(sweep):
    fig = sweep_figure(sweep)
    xs, ys = axes_of(fig, "xaxis"), axes_of(fig, "yaxis")
    assert sorted(xs) == ["xaxis", "xaxis2", "xaxis3"]
    for axis in xs.values():
        assert axis["type"] == "log"
        assert axis["tickvals"] == [4, 8, 16, 32, 64, 128, 256, 512, 1024]
        labelled = [v for v, t in zip(axis["tickvals"], axis["ticktext"], strict=True) if t]
        assert labelled[0] == 4
        assert labelled[-1] == 1024
        lo, hi = (10**r for r in axis["range"])
        assert lo < 4
        assert hi > 1024
    assert ys["yaxis"]["type"] == "log"
    assert ys["yaxis"]["tickvals"] == [1, 4, 16, 64, 256, 1024]  # the powers the x axis has
    lo, hi = (10**r for r in ys["yaxis"]["range"])
    assert lo < sweep.var_scaled.min()
    assert hi > sweep.var_raw.max()
    assert ys["yaxis2"]["range"] == [0.0, 1.04]
    assert "type" not in ys["yaxis2"]
    assert "type" not in ys["yaxis3"]
    assert ys["yaxis3"]["range"][1] > max(sweep.jac_raw.max(), sweep.jac_scaled.max())


def test_sweep_figure_panels_sit_side_by_side_without_overlap(sweep):
    xs = axes_of(sweep_figure(sweep), "xaxis")
    domains = sorted(axis["domain"] for axis in xs.values())
    for (a0, a1), (b0, b1) in itertools.pairwise(domains):
        assert a0 < a1 < b0 < b1


def test_mark_dk_draws_the_current_heads_line_in_every_panel(sweep):
    fig = sweep_figure(sweep, mark_dk=64)
    marks = [s for s in fig.layout.shapes if s.x0 == 64 and s.x1 == 64]
    assert sorted(s.xref for s in marks) == ["x", "x2", "x3"]
    assert all(s.yref.endswith("domain") and (s.y0, s.y1) == (0, 1) for s in marks)
    assert [s.name for s in marks if s.showlegend] == ["this head: d<sub>k</sub> = 64"]
    assert fig.layout.meta["mark_dk"] == 64
    assert not [s for s in sweep_figure(sweep).layout.shapes if s.x0 == s.x1]  # no mark without one


def test_a_mark_outside_the_swept_dks_widens_the_axis(sweep):
    fig = sweep_figure(sweep, mark_dk=2)
    assert 10 ** fig.layout.xaxis.range[0] < 2


@pytest.mark.parametrize("mark", [0, -4, 2.5, True])
def test_sweep_figure_rejects_a_bad_mark(sweep, mark):
    with pytest.raises(ValueError, match="mark_dk must be a whole number >= 1"):
        sweep_figure(sweep, mark_dk=mark)


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"var_raw": np.ones(4)}, r"shape of d_k \(5,\).*'var_raw': \(4,\)"),
        ({"jac_scaled": np.ones((5, 1))}, r"jac_scaled must be 1-D \[d_k\], got shape \(5, 1\)"),
        ({"d_k": np.array([4.0, 8, 8, 16, 32])}, "d_k must increase"),
        ({"var_scaled": np.zeros(5)}, "var_scaled must be > 0"),
        ({"d_k": np.zeros(0), **{f: np.zeros(0) for f in ("var_raw", "var_scaled")}}, "at least one d_k"),
    ],
)
def test_sweep_figure_rejects_bad_sweeps_naming_the_shape(changes, needle):
    with pytest.raises(ValueError, match=needle):
        sweep_figure(fake_sweep(**changes))


def test_sweep_figure_reads_any_object_with_the_arrays():
    fig = sweep_figure(fake_sweep(3), mark_dk=8, title="Why \u221ad<sub>k</sub>")
    assert fig.layout.xaxis.tickvals == (4, 8, 16)
    assert fig.layout.title.text == "Why \u221ad<sub>k</sub>"
    assert fig.layout.meta["n_keys"] == 32


def test_a_narrow_column_stacks_the_panels(sweep):
    fig = sweep_figure(sweep, width=HALF_WIDTH, mark_dk=32)
    assert fig.layout.meta["stacked"]
    ys = sorted(axis["domain"] for axis in axes_of(fig, "yaxis").values())
    for (a0, a1), (b0, b1) in itertools.pairwise(ys):
        assert a0 < a1 < b0 < b1
    for axis in axes_of(fig, "xaxis").values():
        assert axis["domain"] == [0.0, 1.0]


@pytest.mark.parametrize("width", [HALF_WIDTH, DETAIL_WIDTH, FULL_WIDTH])
def test_sweep_figure_text_is_big_enough_to_project(sweep, width):
    layout = sweep_figure(sweep, width=width, title="t").layout.to_plotly_json()
    sizes = all_font_sizes(layout)
    assert sizes
    assert min(sizes) >= 12
    assert all(a["font"]["size"] >= 15 for a in layout["annotations"] if a["yref"] == "paper")
    assert 15 <= layout["title"]["font"]["size"] <= 17


# --------------------------------------------------------------------------------------------
# row_stats_figure
# --------------------------------------------------------------------------------------------
def stats(n: int, seed: int = 0):
    raw = np.random.default_rng(seed).normal(scale=4.0, size=(n, n))
    p = temperature_pattern(raw, 16)
    return row_entropy(p), row_max(p)


def test_row_stats_figure_draws_two_bar_panels_over_one_token_axis():
    words = "[CLS] the cat sat on the mat [SEP]".split()
    h, m = stats(len(words))
    fig = row_stats_figure(h, m, words)
    assert [t.type for t in fig.data] == ["bar", "bar"]
    top, bottom = fig.data
    assert (top.xaxis, top.yaxis, bottom.xaxis, bottom.yaxis) == ("x", "y2", "x", "y")
    np.testing.assert_allclose(top.y, h, rtol=1e-6)
    np.testing.assert_allclose(bottom.y, m, rtol=1e-6)
    assert top.x == bottom.x
    assert len(set(top.x)) == len(words)  # "the" twice stays two bars
    assert fig.layout.yaxis2.domain[0] > fig.layout.yaxis.domain[1]  # entropy above
    assert list(fig.layout.xaxis.tickvals) == list(range(len(words)))
    assert fig.layout.yaxis.range == (0.0, 1.0)
    assert fig.layout.yaxis2.range[1] > math.log2(len(words))
    ref = [s for s in fig.layout.shapes if s.yref == "y2" and s.y0 == s.y1]
    assert [s.y0 for s in ref] == [pytest.approx(3.0)]
    assert fig.layout.meta["width"] == DETAIL_WIDTH
    assert fig.layout.meta["highlight"] is None


@pytest.mark.parametrize(
    ("args", "kwargs", "needle"),
    [
        (
            (np.zeros((2, 2)), np.zeros(2), ["a", "b"]),
            {},
            r"entropy must be 1-D \[query_pos\], got shape \(2, 2\)",
        ),
        ((np.zeros(3), np.zeros(2), ["a", "b", "c"]), {}, r"\(3,\) but max_weight has shape \(2,\)"),
        ((np.zeros(3), np.zeros(3), ["a", "b"]), {}, r"shape \(3,\) but 2 labels were given \(expected 3\)"),
        ((np.zeros(0), np.zeros(0), []), {}, "at least one query"),
        (
            (np.zeros(3), np.zeros(3), ["a", "b", "c"]),
            {"highlight": 3},
            r"highlight=3 is not a position in 0\.\.2",
        ),
    ],
)
def test_row_stats_figure_rejects_bad_shapes_naming_them(args, kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        row_stats_figure(*args, **kwargs)


def test_row_stats_figure_escapes_token_labels():
    labels = ["[CLS]", HOSTILE, "$x$", "a&b"]
    h, m = stats(4)
    for highlight in (None, 1):
        fig = row_stats_figure(h, m, labels, highlight=highlight)
        text = fig.to_json()
        assert HOSTILE not in text
        assert "<b>x" not in text
        assert "$x$" not in text
        assert "&lt;b&gt;x&lt;/b&gt;" in fig.layout.xaxis.ticktext[1]
        assert "1: &lt;b&gt;x&lt;/b&gt;" in fig.data[0].x


def test_highlight_is_amber_in_both_panels_with_a_bold_label():
    h, m = stats(10)
    fig = row_stats_figure(h, m, [f"t{i}" for i in range(10)], highlight=4)
    for t in fig.data:
        colors = list(t.marker.color)
        assert colors[4] == BAR_HIGHLIGHT
        assert colors.count(BAR_COLOR) == 9
    assert fig.layout.xaxis.ticktext[4] == "<b>t4</b>"
    assert fig.layout.meta["highlight"] == 4


def test_one_token():
    fig = row_stats_figure([0.0], [1.0], [HOSTILE], highlight=0)
    assert len(fig.data[0].x) == 1
    assert list(fig.layout.xaxis.ticktext) == ["<b>&lt;b&gt;x&lt;/b&gt;</b>"]
    assert not [s for s in fig.layout.shapes if s.y0 == s.y1]  # log2 1 = 0: no reference line
    assert fig.layout.yaxis2.range[1] >= 1.0


def test_chinese_labels_stay_upright():
    h, m = stats(len(CHINESE))
    fig = row_stats_figure(h, m, CHINESE)
    assert fig.layout.xaxis.tickangle == 0
    assert list(fig.layout.xaxis.ticktext) == CHINESE


def test_every_label_up_to_64_tokens_then_every_kth():
    h, m = stats(LABEL_ALL)
    fig = row_stats_figure(h, m, [f"w{i}" for i in range(LABEL_ALL)])
    assert list(fig.layout.xaxis.tickvals) == list(range(LABEL_ALL))
    h, m = stats(512)
    fig = row_stats_figure(h, m, [f"w{i}" for i in range(512)], highlight=101)
    step = fig.layout.meta["tick_step"]
    assert step > 1
    vals = list(fig.layout.xaxis.tickvals)
    assert 101 in vals
    assert fig.layout.xaxis.ticktext[vals.index(101)].endswith("<b>w101</b>")
    assert all(v % step == 0 for v in vals if v != 101)
    assert len(fig.data[0].x) == 512  # the hover still names every query
    # bars 1 px wide: a band behind the highlighted one in both panels
    bands = [s for s in fig.layout.shapes if s.type == "rect"]
    assert sorted(s.yref for s in bands) == ["y domain", "y2 domain"]


def test_512_tokens_payload_stays_small():
    h, m = stats(512)
    fig = row_stats_figure(h, m, [f"token{i}" for i in range(512)], highlight=7)
    payload = fig.to_json()
    assert len(payload) < 500_000, len(payload)
    spec = json.loads(payload)
    assert spec["layout"]["meta"]["n"] == 512


@pytest.mark.parametrize("n", [1, 16, 512])
def test_row_stats_text_is_big_enough_to_project(n):
    h, m = stats(n)
    layout = row_stats_figure(h, m, [f"w{i}" for i in range(n)], title="t").layout.to_plotly_json()
    sizes = all_font_sizes(layout)
    assert sizes
    assert min(sizes) >= 12
    assert 15 <= layout["title"]["font"]["size"] <= 17
