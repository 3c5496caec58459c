"""Layer statistics: hand-computed cases, and the model's own numbers from a real capture."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tformer import Encoder, capture_text, scratch_tokenizer
from tformer.analysis.layer_stats import ffn_sparsity, layernorm_stats, sublayer_norms
from tformer.analysis.walkthrough import layer_norm
from tformer.formulas import latex_of
from tformer.model.capture import available_names

from ._models import tiny

TEXT = "The animal didn't cross the street because it was too tired. 小猫跳了上去。"


# ---------------------------------------------------------------------------------------------
# By hand
# ---------------------------------------------------------------------------------------------
PRE = np.array([[-1.0, 0.0, 2.0, 0.005], [3.0, -2.0, -0.5, 1.0]], np.float32)  # [pos, d_mlp]


def test_ffn_sparsity_by_hand_for_one_layer():
    s = ffn_sparsity(PRE, np.maximum(PRE, 0), tol=0.01)
    # post = [[0, 0, 2, 0.005], [3, 0, 0, 1]]
    assert s.zero == 4 / 8
    assert s.near_zero == 5 / 8  # the two rows' zeros and 0.005
    assert s.inactive == 4 / 8  # -1, 0, -2, -0.5
    np.testing.assert_array_equal(s.zero_per_token, [0.5, 0.5])
    np.testing.assert_array_equal(s.near_zero_per_token, [0.75, 0.5])
    np.testing.assert_array_equal(s.inactive_per_token, [0.5, 0.5])
    assert s.zero_per_layer is None
    assert s.near_zero_per_layer is None
    assert s.d_mlp == 4
    assert s.tol == 0.01


def test_ffn_sparsity_per_layer():
    second = np.array([[1.0, 1.0, 1.0, 1.0], [-1.0, 1.0, 1.0, 1.0]], np.float32)
    pre = np.stack([PRE, second])  # [layer, pos, d_mlp]
    s = ffn_sparsity(pre, np.maximum(pre, 0))
    np.testing.assert_allclose(s.zero_per_layer, [0.5, 1 / 8])
    np.testing.assert_allclose(s.zero_per_token, [[0.5, 0.5], [0.0, 0.25]])
    assert s.zero == pytest.approx(5 / 16)
    assert s.zero_per_token.shape == (2, 2)
    assert s.zero_per_token.dtype == np.float32


def test_ffn_sparsity_near_zero_counts_gelu_like_small_values():
    post = np.array([[-0.004, 0.2, 0.0, 1e-3]], np.float32)
    s = ffn_sparsity(post, post, tol=0.01)
    assert s.zero == 0.25
    assert s.near_zero == 0.75


@pytest.mark.parametrize(
    ("pre", "post", "match"),
    [
        (np.zeros((2, 3)), np.zeros((2, 4)), "mlp_pre has shape"),
        (np.zeros(3), np.zeros(3), "must be"),
        (np.zeros((0, 3)), np.zeros((0, 3)), "at least one position"),
    ],
)
def test_ffn_sparsity_rejects_bad_shapes(pre, post, match):
    with pytest.raises(ValueError, match=match):
        ffn_sparsity(pre, post)


def test_ffn_sparsity_rejects_a_non_positive_tol():
    with pytest.raises(ValueError, match="tol"):
        ffn_sparsity(PRE, PRE, tol=0)


def test_sublayer_norms_by_hand():
    resid = np.array([[[3.0, 4.0], [0.0, 0.0]]], np.float32)  # [layer=1, pos=2, d_model=2]
    attn = np.array([[[0.0, 5.0], [1.0, 0.0]]], np.float32)
    mlp = np.array([[[6.0, 8.0], [0.0, 2.0]]], np.float32)
    s = sublayer_norms(resid, attn, mlp)
    np.testing.assert_allclose(s.resid_pre, [[5.0, 0.0]])
    np.testing.assert_allclose(s.attn_out, [[5.0, 1.0]])
    np.testing.assert_allclose(s.mlp_out, [[10.0, 2.0]])
    np.testing.assert_allclose(s.attn_ratio[0, 0], 1.0)
    np.testing.assert_allclose(s.mlp_ratio[0, 0], 2.0)
    assert np.isnan(s.attn_ratio[0, 1])
    assert np.isnan(s.mlp_ratio[0, 1])  # ||x|| = 0
    # per-layer means skip the undefined ratio, and average the norms over both tokens
    np.testing.assert_allclose(s.attn_ratio_mean, [1.0])
    np.testing.assert_allclose(s.mlp_ratio_mean, [2.0])
    np.testing.assert_allclose(s.resid_pre_mean, [2.5])
    np.testing.assert_allclose(s.mlp_out_mean, [6.0])
    assert (s.n_layers, s.n_pos) == (1, 2)


def test_sublayer_norms_rejects_mismatched_or_2d_inputs():
    a = np.ones((2, 3, 4))
    with pytest.raises(ValueError, match="share one shape"):
        sublayer_norms(a, a, np.ones((2, 3, 5)))
    with pytest.raises(ValueError, match=r"\[layer, pos, d_model\]"):
        sublayer_norms(a[0], a[0], a[0])


def test_layernorm_stats_by_hand():
    s = layernorm_stats(np.array([[1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 2.0, 2.0]]), eps=1e-5)
    np.testing.assert_allclose(s.mean, [2.5, 2.0])
    np.testing.assert_allclose(s.var, [1.25, 0.0])
    np.testing.assert_allclose(s.sigma, [math.sqrt(1.25 + 1e-5), math.sqrt(1e-5)], rtol=1e-6)
    assert s.eps == 1e-5


def test_layernorm_stats_agrees_with_the_walkthrough_layer_norm():
    x = np.random.default_rng(0).normal(2.0, 3.0, size=(7, 16)).astype(np.float32)
    s = layernorm_stats(x, eps=1e-5)
    ref = layer_norm(x, np.ones(16, np.float32), np.zeros(16, np.float32), 1e-5)
    np.testing.assert_allclose(s.mean, ref.mean[:, 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s.sigma, ref.scale[:, 0], rtol=1e-5)


def test_layernorm_stats_keeps_leading_axes_and_rejects_empty_rows():
    assert layernorm_stats(np.ones((3, 5, 8))).sigma.shape == (3, 5)
    with pytest.raises(ValueError, match="d_model"):
        layernorm_stats(np.ones((3, 0)))


@pytest.mark.parametrize("fn", [ffn_sparsity, sublayer_norms, layernorm_stats])
def test_every_function_shows_its_formula(fn):
    assert latex_of(fn)


# ---------------------------------------------------------------------------------------------
# Against a real capture of a from-scratch model
# ---------------------------------------------------------------------------------------------
def captured(**overrides):
    tok = scratch_tokenizer(max_len=64)
    model = Encoder(tiny(vocab_size=tok.vocab_size, **overrides)).eval()
    return model, capture_text(model, tok, TEXT, available_names(model.cfg))


def test_norms_are_the_norms_of_the_captured_vectors():
    _, cap = captured()
    s = sublayer_norms(cap["resid_pre"], cap["attn_out"], cap["mlp_out"])
    for field in ("resid_pre", "attn_out", "mlp_out"):
        np.testing.assert_allclose(getattr(s, field), np.linalg.norm(cap[field], axis=-1), rtol=1e-5)
    np.testing.assert_allclose(
        s.attn_ratio,
        np.linalg.norm(cap["attn_out"], axis=-1) / np.linalg.norm(cap["resid_pre"], axis=-1),
        rtol=1e-5,
    )
    np.testing.assert_allclose(s.mlp_ratio_mean, s.mlp_ratio.mean(axis=1), rtol=1e-6)
    assert s.resid_pre.shape == (cap.n_layers, cap.n_pos)


def test_relu_zeros_are_exactly_the_non_positive_pre_activations():
    _model, cap = captured(activation="relu")
    s = ffn_sparsity(cap["mlp_pre"], cap["mlp_post"])
    assert s.zero == pytest.approx(float((cap["mlp_pre"] <= 0).mean()))
    assert s.zero == s.inactive
    np.testing.assert_allclose(s.zero_per_layer, (cap["mlp_pre"] <= 0).mean(axis=(1, 2)))
    one = ffn_sparsity(cap["mlp_pre"][1], cap["mlp_post"][1])
    np.testing.assert_allclose(one.zero_per_token, s.zero_per_token[1])
    assert 0.2 < s.zero < 0.8  # a random ReLU layer switches off about half its units


def test_gelu_is_rarely_exactly_zero_but_often_near_it():
    _, cap = captured(activation="gelu")
    s = ffn_sparsity(cap["mlp_pre"], cap["mlp_post"], tol=0.05)
    assert s.zero < 0.01
    assert s.near_zero > s.zero


def test_layernorm_stats_reproduce_the_models_ln_scale_post_norm():
    model, cap = captured(norm="post")
    eps = model.cfg.layer_norm_eps
    # post-norm: LN1 reads x + attention, LN2 reads resid_mid + FFN
    ln1 = layernorm_stats(cap["resid_pre"] + cap["attn_out"], eps=eps)
    np.testing.assert_allclose(ln1.sigma, cap["ln1_scale"][..., 0], rtol=1e-5)
    ln2 = layernorm_stats(cap["resid_mid"] + cap["mlp_out"], eps=eps)
    np.testing.assert_allclose(ln2.sigma, cap["ln2_scale"][..., 0], rtol=1e-5)
    # and (x - mu) / sigma is the model's ln1_normalized
    x = cap["resid_pre"] + cap["attn_out"]
    normalized = (x - ln1.mean[..., None]) / ln1.sigma[..., None]
    np.testing.assert_allclose(normalized, cap["ln1_normalized"], atol=1e-4)


def test_layernorm_stats_reproduce_the_models_ln_scale_pre_norm():
    model, cap = captured(norm="pre")
    eps = model.cfg.layer_norm_eps
    # pre-norm: LN1 reads the block's input, LN2 reads resid_mid
    np.testing.assert_allclose(
        layernorm_stats(cap["resid_pre"], eps=eps).sigma, cap["ln1_scale"][..., 0], rtol=1e-5
    )
    np.testing.assert_allclose(
        layernorm_stats(cap["resid_mid"], eps=eps).sigma, cap["ln2_scale"][..., 0], rtol=1e-5
    )
