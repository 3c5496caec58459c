"""The attention weights' color scales (0 to 1, log, per row): the values drawn, the colorbar
that says which scale a chart uses, pooling, and every figure that offers the choice."""

from __future__ import annotations

import numpy as np
import pytest

from tformer.figures import attention_heatmap, heads_side_by_side
from tformer.figures.attention import weight_values
from tformer.figures.colors import LOG_FLOOR, WEIGHT_SCALES, log_weights, row_normalized
from tformer.figures.walkthrough import step_heatmap

from .test_figures_attention import softmax_pattern


def diffuse(n: int, seed: int = 0) -> np.ndarray:
    """A head that spreads each row over every key (weights near 1/n), one key slightly ahead."""
    rng = np.random.default_rng(seed)
    s = 0.3 * rng.normal(size=(n, n)) + 1.5 * np.eye(n, k=-1)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)).astype(np.float32)


def z_of(fig) -> np.ndarray:
    return np.asarray(fig.data[-1].z, dtype=np.float64)


def test_on_the_0_to_1_scale_a_diffuse_head_is_one_dark_color_and_the_other_scales_show_its_lean():
    p = diffuse(470)
    linear = z_of(attention_heatmap(p, [f"t{i}" for i in range(470)], max_side=None))
    assert linear.max() < 0.05  # every cell within the darkest twentieth of the 0..1 scale
    logged = z_of(attention_heatmap(p, [f"t{i}" for i in range(470)], max_side=None, weight_scale="log"))
    lo, hi = np.log10(LOG_FLOOR), 0.0
    assert ((logged - lo) / (hi - lo)).std() > 5 * linear.std()  # the colors spread out
    per_row = z_of(attention_heatmap(p, [f"t{i}" for i in range(470)], max_side=None, weight_scale="row"))
    assert np.allclose(per_row.max(axis=1), 1.0)  # each query's favourite key is bright
    assert (per_row.argmax(axis=1)[1:] == np.arange(469)).mean() > 0.9  # the lean: the previous token


@pytest.mark.parametrize("scale", WEIGHT_SCALES)
def test_the_colorbar_says_which_scale_and_reads_true_weights(scale):
    p = softmax_pattern((12, 12))
    fig = attention_heatmap(p, [f"t{i}" for i in range(12)], weight_scale=scale)
    bar = fig.data[-1].colorbar
    title = {"linear": "weight", "log": "weight (log scale)", "row": "weight ÷ row's largest"}[scale]
    assert bar.title.text == title
    assert fig.layout.meta["weight_scale"] == scale
    if scale == "log":
        assert list(bar.ticktext) == ["≤0.0001", "0.001", "0.01", "0.1", "1"]
        assert (fig.data[-1].zmin, fig.data[-1].zmax) == (-4.0, 0.0)
        assert np.allclose(z_of(fig), np.log10(np.clip(p, LOG_FLOOR, 1)), atol=1e-6)
    else:
        assert (fig.data[-1].zmin, fig.data[-1].zmax) == (0.0, 1.0)


def test_scores_ignore_the_weight_scale():
    s = np.random.default_rng(1).normal(size=(6, 6)).astype(np.float32)
    fig = attention_heatmap(s, list("abcdef"), kind="attn_scores", weight_scale="log")
    assert np.allclose(z_of(fig), s)
    assert "weight_scale" not in fig.layout.meta


def test_pooled_cells_normalize_rows_before_pooling():
    p = softmax_pattern((600, 600))
    for scale in WEIGHT_SCALES:
        z = weight_values(p, scale, 4)
        assert z.shape == (150, 150)
    # per row: the block maximum of rows each divided by their own largest weight
    row = weight_values(p, "row", 4)
    assert np.allclose(row, row_normalized(p).reshape(150, 4, 150, 4).max(axis=(1, 3)))
    assert np.allclose(weight_values(p, "log", 4), log_weights(p.reshape(150, 4, 150, 4).max(axis=(1, 3))))
    zeros = row_normalized(np.zeros((3, 3), np.float32))  # a fully masked row stays 0
    assert not np.isnan(zeros).any()
    assert (zeros == 0).all()
    with pytest.raises(ValueError, match="weight scale"):
        attention_heatmap(p[:5, :5], list("abcde"), weight_scale="sqrt")


def test_heads_side_by_side_share_the_chosen_scale():
    p = np.stack([softmax_pattern((10, 10), seed=s) for s in range(3)])
    fig = heads_side_by_side(p, ["a", "b", "c"], [f"t{i}" for i in range(10)], weight_scale="log")
    axis = fig.layout.coloraxis
    assert (axis.cmin, axis.cmax) == (-4.0, 0.0)
    assert axis.colorbar.title.text == "weight (log scale)"
    assert np.allclose(np.asarray(fig.data[1].z), np.log10(np.clip(p[1], LOG_FLOOR, 1)), atol=1e-6)
    assert fig.layout.meta["weight_scale"] == "log"


def test_a_window_of_keys_is_divided_by_its_whole_row():
    p = softmax_pattern((40, 40))
    window = p[8:24, 8:24]
    fig = step_heatmap(
        window, [str(i) for i in range(16)], [str(i) for i in range(16)], weights=True,
        weight_scale="row", row_max=p[8:24].max(axis=-1),
    )  # fmt: skip
    assert np.allclose(z_of(fig), window / p[8:24].max(axis=-1, keepdims=True))
    assert fig.data[-1].colorbar.title.text == "weight ÷ row's largest"
    numbered = step_heatmap(window, [str(i) for i in range(16)], [str(i) for i in range(16)], weights=True,
                            weight_scale="log", numbers=True)  # fmt: skip
    assert numbered.data[-1].text[0][0] == f"{window[0, 0]:.2f}"  # numbers stay true weights
    with pytest.raises(ValueError, match="row_max"):
        step_heatmap(window, list("abcdefghijklmnop"), list("abcdefghijklmnop"), weights=True,
                     weight_scale="row", row_max=np.ones(3))  # fmt: skip
