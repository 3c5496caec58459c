"""Per-layer encoder figures: FFN activations, sublayer norms, LayerNorm."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tformer.analysis.layer_stats import layernorm_stats, sublayer_norms
from tformer.figures.encoder import (
    FFN_MAX_CELLS,
    MAX_LN_TOKENS,
    ffn_activations_figure,
    ffn_pool_plan,
    layernorm_figure,
    signed_absmax_pool,
    sublayer_norms_figure,
)

SCRIPT = "<script>alert(1)</script>"
CJK = ["[CLS]", "小", "猫", "跳", "了", "。", "[SEP]"]


def font_sizes(obj, key: str = "") -> list[int]:
    """Every font size set anywhere in a figure dict."""
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "size" and key in ("font", "tickfont", "textfont") and isinstance(v, (int, float)):
                out.append(v)
            out += font_sizes(v, k)
    elif isinstance(obj, list):
        for v in obj:
            out += font_sizes(v, key)
    return out


# ---------------------------------------------------------------------------------------------
# ffn_activations_figure
# ---------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------
# sublayer_norms_figure
# ---------------------------------------------------------------------------------------------
def norms_of(n_layers: int, n: int, seed: int = 0, outlier: bool = False):
    rng = np.random.default_rng(seed)
    x, attn, mlp = (rng.normal(size=(n_layers, n, 8)).astype(np.float32) for _ in range(3))
    if outlier:
        mlp[1, 0] *= 50
    return sublayer_norms(x, attn, mlp)


def test_norms_figure_per_token_and_per_layer():
    norms = norms_of(3, 5)
    labels = ["a", "b", "c", "d", "e"]
    fig = sublayer_norms_figure(norms, labels, layer=1)
    bars = [t for t in fig.data if t.type == "bar"]
    assert len(bars) == 3
    np.testing.assert_allclose(bars[1].y, norms.attn_out[1])
    lines = [t for t in fig.data if t.xaxis == "x2"]
    np.testing.assert_allclose(lines[0].y, norms.attn_ratio_mean)
    np.testing.assert_allclose(lines[1].y, norms.mlp_ratio_mean)
    (band,) = [s for s in fig.layout.shapes if s.name == "layer"]
    assert band.x0 < 1 < band.x1
    assert fig.layout.meta["bars"]
    assert not fig.layout.meta["clipped"]
    assert {a.text for a in fig.layout.annotations if a.name and a.name.startswith("ratio.")} == {
        "attention",
        "FFN",
    }


def test_norms_figure_cuts_one_huge_bar_and_writes_its_value():
    norms = norms_of(2, 10, outlier=True)
    fig = sublayer_norms_figure(norms, list("abcdefghij"), layer=1)
    assert fig.layout.meta["clipped"]
    assert fig.layout.yaxis.range[1] < float(norms.mlp_out[1, 0])
    (cut,) = [a for a in fig.layout.annotations if a.name == "cut"]
    assert cut.text.startswith(f"{norms.mlp_out[1, 0]:.0f}") or cut.text.startswith(
        f"{norms.mlp_out[1, 0]:.3g}"
    )


def test_norms_figure_lines_beyond_64_tokens_and_one_token():
    fig = sublayer_norms_figure(norms_of(2, 100), [f"t{i}" for i in range(100)], layer=0)
    assert not fig.layout.meta["bars"]
    assert {t.type for t in fig.data} == {"scatter"}
    one = sublayer_norms_figure(norms_of(1, 1), ["only"], layer=0)
    assert one.layout.meta["n_pos"] == 1


def test_norms_figure_validates_layer_and_labels():
    norms = norms_of(2, 3)
    with pytest.raises(ValueError, match="layer=2"):
        sublayer_norms_figure(norms, ["a", "b", "c"], layer=2)
    with pytest.raises(ValueError, match="2 tokens were given"):
        sublayer_norms_figure(norms, ["a", "b"], layer=0)


def test_norms_figure_escapes_labels_and_keeps_cjk():
    norms = norms_of(2, len(CJK) + 1)
    fig = sublayer_norms_figure(norms, [*CJK, SCRIPT], layer=0)
    text = fig.to_json()
    assert "<script>" not in text
    assert "&lt;script&gt;" in text
    assert "猫" in fig.layout.xaxis.ticktext
    assert min(font_sizes(fig.to_dict()["layout"])) >= 12


# ---------------------------------------------------------------------------------------------
# layernorm_figure
# ---------------------------------------------------------------------------------------------
def ln_inputs(n: int, d: int = 16, seed: int = 0):
    x = np.random.default_rng(seed).normal(1.0, 2.0, size=(n, d)).astype(np.float32)
    s = layernorm_stats(x)
    after = (x - s.mean[:, None]) / s.sigma[:, None]
    return x, after, s


def test_layernorm_figure_bars_markers_and_boxes():
    x, after, s = ln_inputs(4)
    fig = layernorm_figure(x, after, s.mean, s.sigma[:, None], ["a", "b", "c", "d"], highlight=1)
    mu, sigma, before_box, after_box = fig.data
    np.testing.assert_allclose(mu.y, s.mean)
    np.testing.assert_allclose(sigma.y, s.sigma)
    np.testing.assert_allclose(before_box.median, np.median(x, axis=1), rtol=1e-6)
    np.testing.assert_allclose(after_box.q1, np.percentile(after, 25, axis=1), rtol=1e-5)
    assert before_box.y is None  # five numbers per box are sent, not every value
    assert len([sh for sh in fig.layout.shapes if sh.name and sh.name.startswith("highlight")]) == 2
    assert fig.layout.meta["highlight"] == 1


def test_layernorm_figure_one_token():
    x, after, s = ln_inputs(1)
    fig = layernorm_figure(x, after, s.mean, s.sigma, ["only"])
    assert fig.layout.meta["n_pos"] == 1


@pytest.mark.parametrize(
    ("n", "mean_shape", "match"),
    [(3, (2,), r"mean has shape \(2,\)"), (MAX_LN_TOKENS + 1, None, "at most 64 tokens")],
)
def test_layernorm_figure_validates(n, mean_shape, match):
    x, after, s = ln_inputs(n)
    mean = np.zeros(mean_shape) if mean_shape else s.mean
    with pytest.raises(ValueError, match=match):
        layernorm_figure(x, after, mean, s.sigma, [str(i) for i in range(n)])
    with pytest.raises(ValueError, match="after has shape"):
        layernorm_figure(x, after[:, :-1], s.mean, s.sigma, [str(i) for i in range(n)])


def test_layernorm_figure_escapes_labels_and_keeps_cjk():
    labels = [*CJK, SCRIPT]
    x, after, s = ln_inputs(len(labels))
    fig = layernorm_figure(x, after, s.mean, s.sigma, labels, title="LN1 of layer 0")
    text = fig.to_json()
    assert "<script>" not in text
    assert "&lt;script&gt;" in text
    assert "猫" in fig.layout.xaxis2.ticktext
    assert min(font_sizes(fig.to_dict()["layout"])) >= 12
    assert json.loads(text)["layout"]["title"]["font"]["size"] in (15, 16, 17)
