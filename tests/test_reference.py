"""The numpy reference of scaled, masked attention (`tformer.analysis.reference`) is the torch one
(`tformer.model.attention`): same scores, pattern and z in float64, with causal and padding
masks and a query that may attend to nothing; it keeps its inputs' dtype; and the numpy code
that teaches a trick (the walk-through, the √d_k lesson, FlashAttention's reference) computes
with it."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tformer.analysis.reference import apply_mask, attention_np, raw_scores, scale_scores, softmax_rows
from tformer.model.attention import (
    attention_pattern,
    attention_scores,
    dead_rows_of,
    scaled_dot_product_attention,
)

B, H, N, D = 2, 3, 7, 5  # batch, head_index, pos, d_head


def qkv(seed: int, spread: float = 2.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return tuple(spread * rng.standard_normal((B, H, N, D)) for _ in range(3))  # float64


def masks() -> dict[str, np.ndarray | None]:
    """bool [batch, 1, query_pos, key_pos], True where a query may attend."""
    causal = np.tril(np.ones((N, N), dtype=bool))
    lengths = np.array([N, N - 3])  # the second text is padded: its last 3 keys are [PAD]
    padding = (np.arange(N)[None, :] < lengths[:, None])[:, None, None, :]  # [batch, 1, 1, key_pos]
    dead = np.broadcast_to(causal, (B, 1, N, N)).copy()
    dead[1, 0, 4] = False  # query 4 of the second text may attend to nothing
    return {
        "none": None,
        "causal": np.broadcast_to(causal, (B, 1, N, N)),
        "padding": np.broadcast_to(padding, (B, 1, N, N)),
        "causal and padding": causal & padding,
        "a dead row": dead,
    }


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", list(masks()))
def test_numpy_reference_equals_the_torch_reference_in_float64(name, seed):
    mask = masks()[name]
    q, k, v = qkv(seed)
    z, pattern = attention_np(q, k, v, mask)
    tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
    tmask = None if mask is None else torch.from_numpy(np.ascontiguousarray(mask))
    dead = None if tmask is None else dead_rows_of(tmask)
    tz, tpattern = scaled_dot_product_attention(tq, tk, tv, tmask, dead)
    assert z.dtype == pattern.dtype == np.float64
    np.testing.assert_allclose(pattern, tpattern.numpy(), rtol=0, atol=1e-13)
    np.testing.assert_allclose(z, tz.numpy(), rtol=0, atol=1e-13)
    # the scores the softmax receives, -inf at the same places
    scores = apply_mask(scale_scores(raw_scores(q, k), D), mask)
    tscores = attention_scores(tq, tk, tmask).numpy()
    np.testing.assert_array_equal(np.isneginf(scores), np.isneginf(tscores))
    finite = np.isfinite(tscores)
    np.testing.assert_allclose(scores[finite], tscores[finite], rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(
        softmax_rows(scores), attention_pattern(torch.from_numpy(scores), dead).numpy(), atol=1e-15
    )


def test_a_query_that_may_attend_to_nothing_gets_zero_weights_and_zero_output():
    q, k, v = qkv(2)
    mask = masks()["a dead row"]
    z, pattern = attention_np(q, k, v, mask)
    assert not np.isnan(pattern).any()
    np.testing.assert_array_equal(pattern[1, :, 4], 0.0)
    np.testing.assert_array_equal(z[1, :, 4], 0.0)
    alive = mask.any(-1) & np.ones((B, H, N), dtype=bool)
    np.testing.assert_allclose(pattern.sum(-1)[alive], 1.0, atol=1e-12)
    np.testing.assert_array_equal(pattern[~np.broadcast_to(mask, pattern.shape)], 0.0)


def test_scale_replaces_the_division_by_sqrt_dk():
    q, k, v = qkv(3)
    z, pattern = attention_np(q, k, v, scale=0.1)
    tz, tpattern = scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)), scale=0.1)
    np.testing.assert_allclose(pattern, tpattern.numpy(), atol=1e-13)
    np.testing.assert_allclose(z, tz.numpy(), atol=1e-13)
    default = attention_np(q, k, v)[1]
    np.testing.assert_allclose(attention_np(q, k, v, scale=D**-0.5)[1], default, atol=1e-14)


def test_each_step_keeps_its_inputs_dtype():
    q, k, v = (a.astype(np.float32) for a in qkv(4))
    mask = masks()["causal"]
    s = raw_scores(q, k)
    assert s.dtype == scale_scores(s, D).dtype == apply_mask(s, mask).dtype == np.float32
    z, pattern = attention_np(q, k, v, mask)
    assert z.dtype == pattern.dtype == np.float32
    z64, pattern64 = attention_np(*(a.astype(np.float64) for a in (q, k, v)), mask)
    np.testing.assert_allclose(pattern, pattern64, atol=1e-6)
    np.testing.assert_allclose(z, z64, atol=1e-5)


def test_the_numpy_lessons_compute_with_the_reference():
    from tformer.analysis import walkthrough
    from tformer.analysis.scaling import temperature_pattern
    from tformer.efficiency.flash import explicit_attention

    # the walk-through's attention steps are the reference's functions (the page shows them)
    for fn in (raw_scores, scale_scores, apply_mask, softmax_rows):
        assert getattr(walkthrough, fn.__name__) is fn
    q, k, v = (a[0, 0] for a in qkv(5))  # one head: [pos, d_head]
    attn_mask = masks()["a dead row"][1, 0]
    np.testing.assert_array_equal(explicit_attention(q, k, v, attn_mask), attention_np(q, k, v, attn_mask)[0])
    p = temperature_pattern(q @ k.T, D, attn_mask=attn_mask)
    np.testing.assert_allclose(p, attention_np(q, k, v, attn_mask)[1], atol=1e-6)
