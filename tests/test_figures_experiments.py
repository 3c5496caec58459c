"""Figures of the Train page's experiments: the overfitting grid's gaps with the seeds' range, the
loss curves of each precision, and the cost bars with a training update's titles."""

from __future__ import annotations

import numpy as np
import pytest

from tformer.figures.mixed_precision import PRECISION_COLORS, loss_curves_figure
from tformer.figures.overfit import overfit_figure
from tformer.figures.precision import cost_bars
from tformer.i18n import use_language

SIZES, HEAD_COUNTS = (64, 256, 1024), (1, 4, 16)


def _grid() -> dict[str, np.ndarray]:
    gap = np.array([[0.1, 0.0, 0.0], [0.5, 0.05, 0.0], [0.8, 0.2, np.nan]])  # 16 heads at 1024: not yet
    return {"gap": gap, "gap_low": gap - 0.02, "gap_high": gap + 0.03, "loss_gap": 4 * gap}


def test_the_overfit_figure_draws_each_head_count_with_its_seeds_range():
    g = _grid()
    fig = overfit_figure(SIZES, HEAD_COUNTS, g["gap"], g["gap_low"], g["gap_high"], g["loss_gap"], d_model=64)
    assert fig.layout.meta["cells"] == 8
    assert [t.name for t in fig.data[0::2]] == [
        "1 head, d<sub>head</sub> = 64",
        "4 heads, d<sub>head</sub> = 16",
        "16 heads, d<sub>head</sub> = 4",
    ]
    acc, loss = fig.data[2], fig.data[3]  # 4 heads: the accuracy gap, then the loss gap
    np.testing.assert_allclose(acc.y, [0.5, 0.05, 0.0], atol=1e-7)
    np.testing.assert_allclose(acc.error_y.array, [0.03] * 3, atol=1e-6)
    np.testing.assert_allclose(acc.error_y.arrayminus, [0.02] * 3, atol=1e-6)
    np.testing.assert_allclose(loss.y, [2.0, 0.2, 0.0], atol=1e-6)
    assert (loss.xaxis, loss.yaxis) == ("x2", "y2")
    np.testing.assert_array_equal(acc.customdata, SIZES)  # the hover's size, exact
    # the head counts are nudged apart along the size axis, in order, around each size
    xs = np.array([t.x for t in fig.data[0::2]])
    assert (np.diff(xs, axis=0) > 0).all()
    np.testing.assert_allclose(xs[1], SIZES)
    assert np.isnan(fig.data[4].y[2])  # a cell not trained yet draws nothing
    assert fig.layout.yaxis.range[1] >= 0.83  # the largest seed's gap is inside the axis
    assert fig.layout.xaxis.type == "log"
    assert list(fig.layout.xaxis.ticktext) == ["64", "256", "1024"]


def test_the_overfit_figure_speaks_chinese():
    g = _grid()
    with use_language("zh"):
        fig = overfit_figure(
            SIZES, HEAD_COUNTS, g["gap"], g["gap_low"], g["gap_high"], g["loss_gap"], d_model=64
        )
    assert fig.data[0].name == "1 个头，每个头 64 维"
    assert fig.layout.yaxis.title.text == "训练准确率 − 留出准确率"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"gap": np.zeros((2, 3))}, r"shape \(2, 3\), expected \(3, 3\)"),
        ({"gap_low": np.full((3, 3), 0.5)}, "gap_low <= gap <= gap_high"),
    ],
)
def test_the_overfit_figure_refuses_inconsistent_arrays(change, message):
    g = {**_grid(), **change}
    with pytest.raises(ValueError, match=message):
        overfit_figure(SIZES, HEAD_COUNTS, g["gap"], g["gap_low"], g["gap_high"], g["loss_gap"], d_model=64)


def test_the_overfit_figure_refuses_a_width_the_heads_do_not_divide_and_too_many_lines():
    g = _grid()
    with pytest.raises(ValueError, match="d_model=40"):
        overfit_figure(SIZES, HEAD_COUNTS, g["gap"], g["gap_low"], g["gap_high"], g["loss_gap"], d_model=40)
    many = tuple(range(1, 9))
    z = np.zeros((8, 3))
    with pytest.raises(ValueError, match="8 head counts"):
        overfit_figure(SIZES, many, z, z, z, z, d_model=840)


def test_loss_curves_draw_every_update_of_each_precision():
    fig = loss_curves_figure({"float32": [2.5, 1.0, 0.1], "bfloat16": [2.5, 1.1, 0.2, 0.05]})
    assert fig.layout.meta["updates"] == [3, 4]
    assert [t.name for t in fig.data] == ["float32", "bfloat16"]
    assert [t.line.color for t in fig.data] == [PRECISION_COLORS["float32"], PRECISION_COLORS["bfloat16"]]
    np.testing.assert_array_equal(fig.data[1].x, [1, 2, 3, 4])
    assert fig.layout.yaxis.type == "log"
    lo, hi = fig.layout.yaxis.range
    assert lo < np.log10(0.05)
    assert hi > np.log10(2.5)


@pytest.mark.parametrize(
    ("losses", "message"),
    [
        ({}, "at least one"),
        ({"float8": [1.0]}, "float8"),
        ({"float32": [1.0, 0.0]}, "finite and > 0"),
        ({"float32": [[1.0]]}, "one loss per update"),
    ],
)
def test_loss_curves_refuse_what_they_cannot_draw(losses, message):
    with pytest.raises(ValueError, match=message):
        loss_curves_figure(losses)


def test_cost_bars_take_a_training_updates_titles():
    fig = cost_bars(
        ["float32", "bfloat16"],
        [20.0, 300.0],
        [8.0, 5.0],
        titles=("ms per update", "peak memory of an update (MiB)"),
        title="Time and memory of one training update",
    )
    assert fig.layout.xaxis.title.text == "ms per update"
    assert fig.layout.xaxis2.title.text == "peak memory of an update (MiB)"
    assert fig.layout.title.text == "Time and memory of one training update"
    default = cost_bars(["float32"], [1.0], [2.0])
    assert default.layout.xaxis.title.text == "forward time (ms)"


def test_loss_curves_keep_float32_visible_under_a_16_bit_line():
    fig = loss_curves_figure({"float32": [2.5, 1.0, 0.01], "bfloat16": [2.5, 1.0, 0.01]})
    ref, half = fig.data
    assert ref.line.width > half.line.width
    assert (ref.line.dash, half.line.dash) == ("solid", "dash")
    assert fig.layout.yaxis.dtick == 1  # 2.5 .. 0.01: powers of ten only
