"""The FFN's hidden layer before and after the nonlinearity: ffn_activations_figure."""

from __future__ import annotations

import numpy as np
import pytest

from tformer.figures.ffn import FFN_MAX_CELLS, ffn_activations_figure, ffn_pool_plan, signed_absmax_pool

from ._figures import CJK, SCRIPT, font_sizes


def ffn_arrays(n: int, d_ff: int, seed: int = 0):
    pre = np.random.default_rng(seed).normal(size=(n, d_ff)).astype(np.float32)
    return pre, np.maximum(pre, 0)


def test_ffn_figure_titles_give_the_shares_and_meta_the_numbers():
    pre, post = ffn_arrays(6, 4)
    labels = ["a", "b", "c", "d", "e", "f"]
    fig = ffn_activations_figure(pre, post, labels, highlight=2, activation="relu")
    zero = float((post == 0).mean())
    assert fig.layout.meta["zero_share"] == pytest.approx(zero)
    assert fig.layout.meta["inactive_share"] == pytest.approx(float((pre <= 0).mean()))
    titles = [a.text for a in fig.layout.annotations]
    assert any(f"{zero:.0%} zeros" in t and "ReLU" in t for t in titles)
    assert fig.layout.meta["block_rows"] == fig.layout.meta["block_cols"] == 1
    np.testing.assert_array_equal(fig.data[1].z, post)  # full resolution when small
    (hl0, hl1) = [s for s in fig.layout.shapes if s.name and s.name.startswith("highlight")]
    assert (hl0.y0, hl0.y1) == (1.5, 2.5)
    assert hl1.yref == "y2"
    # white at 0: the color axis is centred there
    assert fig.layout.coloraxis.cmid == 0
    assert fig.layout.coloraxis.cmin == -fig.layout.coloraxis.cmax


def test_ffn_figure_takes_shares_passed_in():
    pre, post = ffn_arrays(3, 8)
    fig = ffn_activations_figure(pre, post, ["x", "y", "z"], zero_share=0.25, near_zero_share=0.5, tol=0.1)
    assert any("25% zeros, 50% |a| < 0.1" in a.text for a in fig.layout.annotations)


def test_ffn_figure_one_token_and_tiny_d_ff():
    pre, post = ffn_arrays(1, 4)
    fig = ffn_activations_figure(pre, post, ["only"])
    assert fig.data[0].z.shape == (1, 4)
    assert fig.layout.meta["n_pos"] == 1


@pytest.mark.parametrize(
    ("before", "after", "labels", "match"),
    [
        (np.zeros((3, 4)), np.zeros((3, 5)), ["a"] * 3, "after has shape"),
        (np.zeros((3, 4)), np.zeros((3, 4)), ["a"] * 2, "2 tokens were given"),
        (np.zeros(4), np.zeros(4), ["a"], "2-D"),
        (np.zeros((0, 4)), np.zeros((0, 4)), [], "at least one token"),
    ],
)
def test_ffn_figure_validates_shapes(before, after, labels, match):
    with pytest.raises(ValueError, match=match):
        ffn_activations_figure(before, after, labels)


def test_ffn_figure_rejects_a_highlight_outside_the_text():
    pre, post = ffn_arrays(3, 4)
    with pytest.raises(ValueError, match="highlight=3"):
        ffn_activations_figure(pre, post, ["a", "b", "c"], highlight=3)


def test_ffn_figure_escapes_token_text_and_keeps_cjk():
    pre, post = ffn_arrays(len(CJK) + 1, 8)
    fig = ffn_activations_figure(pre, post, [*CJK, SCRIPT])
    text = fig.to_json()
    assert "<script>" not in text
    assert "&lt;script&gt;" in text
    assert "猫" in fig.layout.yaxis.ticktext


def test_ffn_figure_payload_stays_bounded_at_512_tokens_and_1536_units():
    pre, post = ffn_arrays(512, 1536)
    labels = [f"t{i}" for i in range(512)]
    fig = ffn_activations_figure(pre, post, labels, highlight=511)
    meta = fig.layout.meta
    assert (meta["block_rows"], meta["block_cols"]) == ffn_pool_plan(512, 1536) == (2, 6)
    for trace in fig.data:
        assert trace.z.size <= FFN_MAX_CELLS
        assert trace.z.dtype == np.float32
    assert len(fig.to_json()) < 2_000_000
    assert "6 per column" in fig.layout.xaxis.title.text
    assert meta["zero_share"] == pytest.approx(float((post == 0).mean()))  # full resolution
    assert min(font_sizes(fig.to_dict()["layout"])) >= 12


def test_signed_absmax_pool_keeps_the_largest_magnitude_and_zero_blocks():
    a = np.array([[1.0, -3.0, 0.0, 0.0, 2.0], [0.5, 2.0, 0.0, 0.0, -1.0]], np.float32)
    np.testing.assert_array_equal(signed_absmax_pool(a, 1, 2), [[-3.0, 0.0, 2.0], [2.0, 0.0, -1.0]])
    np.testing.assert_array_equal(signed_absmax_pool(a, 2, 2), [[-3.0, 0.0, 2.0]])
    np.testing.assert_array_equal(signed_absmax_pool(a, 1, 1), a)
