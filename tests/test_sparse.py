"""Sparse and local attention: the masks are what their formulas say, the counts match the
masks, and the implementations that compute only the allowed scores equal dense masked
attention."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tformer.analysis.masks import window_mask
from tformer.efficiency.sparse import (
    allowed_count,
    computed_count,
    local_attention,
    local_mask,
    strided_attention,
    strided_mask,
)
from tformer.efficiency.tiled import explicit_attention

TOL = 1e-5


def qkv(n: int, batch: int = 2, heads: int = 3, d: int = 8):
    gen = torch.Generator().manual_seed(n)
    return tuple(torch.randn(batch, heads, n, d, generator=gen) for _ in range(3))


def brute_strided(n: int, s: int, causal: bool) -> np.ndarray:
    out = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(n):
            out[i, j] = (abs(i - j) < s or (i - j) % s == 0) and (not causal or j <= i)
    return out


def test_the_local_mask_is_the_window():
    assert np.array_equal(local_mask(9, 2), window_mask(9, 2))
    m = local_mask(6, 1)
    assert m[3, 2]
    assert m[3, 4]
    assert not m[3, 5]
    assert not m[0, 2]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("n", "s"), [(1, 1), (7, 1), (10, 3), (16, 4), (17, 4), (5, 9)])
def test_the_strided_mask_is_the_band_plus_every_sth_key(n, s, causal):
    m = strided_mask(n, s, causal=causal)
    assert m.dtype == bool
    assert m.shape == (n, n)
    assert np.array_equal(m, brute_strided(n, s, causal))
    assert m.diagonal().all()  # every token may attend to itself: no dead rows
    if not causal:
        assert np.array_equal(m, m.T)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("n", "size"), [(1, 1), (8, 2), (13, 3), (64, 8), (100, 7), (5, 40)])
def test_counts_match_the_masks(n, size, causal):
    assert allowed_count("strided", n, size, causal=causal) == strided_mask(n, size, causal=causal).sum()
    if not causal:
        assert allowed_count("local", n, size) == local_mask(n, size).sum()
        assert computed_count("local", n, size) >= allowed_count("local", n, size)
        assert computed_count("strided", n, size) >= allowed_count("strided", n, size)


def test_the_shares_shrink_with_n():
    local = [allowed_count("local", n, 64) / n**2 for n in (256, 1024, 4096)]
    assert local[0] > local[1] > local[2]
    assert local[2] == pytest.approx(129 / 4096, rel=0.02)  # about (2w + 1) / n


@pytest.mark.parametrize(("n", "w"), [(1, 0), (1, 3), (9, 0), (9, 1), (16, 3), (17, 4), (23, 8), (5, 40)])
def test_local_attention_equals_dense_masked_attention(n, w):
    q, k, v = qkv(n)
    mask = torch.from_numpy(local_mask(n, w))
    ref = explicit_attention(q, k, v, mask)
    out = local_attention(q, k, v, w)
    assert out.shape == ref.shape
    assert float((out - ref).abs().max()) <= TOL
    assert float((F.scaled_dot_product_attention(q, k, v, attn_mask=mask) - ref).abs().max()) <= TOL


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("n", "s"), [(1, 1), (7, 1), (8, 2), (16, 4), (19, 4), (33, 5), (6, 16)])
def test_strided_attention_equals_dense_masked_attention(n, s, causal):
    q, k, v = qkv(n)
    mask = torch.from_numpy(strided_mask(n, s, causal=causal))
    ref = explicit_attention(q, k, v, mask)
    out = strided_attention(q, k, v, s, causal=causal)
    assert out.shape == ref.shape
    assert not torch.isnan(out).any()
    assert float((out - ref).abs().max()) <= TOL


def test_bad_arguments_are_refused():
    q, k, v = qkv(8)
    for call, message in (
        (lambda: local_attention(q, k, v, -1), "window w=-1 must be an integer >= 0"),
        (lambda: strided_attention(q, k, v, 0), "stride s=0 must be an integer >= 1"),
        (
            lambda: local_attention(q, k[:, :, :4], v, 2),
            r"k \(2, 3, 4, 8\).* self-attention tensors of one length",
        ),
        (lambda: strided_mask(0, 2), "n=0 must be an integer >= 1"),
        (lambda: allowed_count("diagonal", 8, 2), "kind='diagonal' must be 'local' or 'strided'"),
        (lambda: computed_count("local", 8, -2), "window w=-2 must be an integer >= 0"),
    ):
        with pytest.raises(ValueError, match=message):
            call()
