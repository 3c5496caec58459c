"""FlashAttention's tiled loop (`tformer.efficiency.flash`) equals the explicit softmax(QKᵀ/√d_k)V: for every
block size, with no mask, causal, padded and custom masks, fully masked rows and one token; its
running m and ℓ are the rows' max and sum; it never holds an n × n array; and on a real head of
MiniLM and of a causal from-scratch encoder it gives the model's own z."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tformer.analysis.masks import causal_mask
from tformer.efficiency.flash import (
    explicit_attention,
    flash_attention,
    flash_steps,
    n_tiles,
    skipped_tiles,
    step_at,
    tile_of,
)

N = 16
BLOCKS = [(1, 1), (2, 2), (3, 3), (7, 7), (16, 16), (N, N), (40, 40), (2, 5), (7, 3), (1, 16), (16, 1)]


def qkv(n: int = N, d: int = 8, seed: int = 0, n_k: int | None = None, spread: float = 3.0):
    rng = np.random.default_rng(seed)
    n_k = n if n_k is None else n_k
    q = (spread * rng.standard_normal((n, d))).astype(np.float32)
    k = (spread * rng.standard_normal((n_k, d))).astype(np.float32)
    v = rng.standard_normal((n_k, d)).astype(np.float32)
    return q, k, v


def reference(q, k, v, attn_mask=None):
    return explicit_attention(*(a.astype(np.float64) for a in (q, k, v)), attn_mask)


def padding_mask(n_q: int, n_k: int, n_real: int) -> np.ndarray:
    """A batch-like padding mask: the last keys are [PAD] and nobody may attend to them."""
    attn_mask = np.zeros((n_q, n_k), dtype=bool)
    attn_mask[:, :n_real] = True
    return attn_mask


def assert_no_nan(flash) -> None:
    assert not np.isnan(flash.out).any()
    for s in flash.steps:
        for name in ("scores", "m_old", "m_new", "l_old", "l_new", "alpha", "acc", "out"):
            assert not np.isnan(getattr(s, name)).any(), (s.index, name)


MASKS = {
    "none": lambda n: None,
    "causal": causal_mask,
    "padding": lambda n: padding_mask(n, n, n - 5),
    "window": lambda n: np.abs(np.subtract.outer(np.arange(n), np.arange(n))) <= 2,
}


@pytest.mark.parametrize("mask", list(MASKS))
@pytest.mark.parametrize(("block_q", "block_k"), BLOCKS)
def test_last_step_equals_the_explicit_attention(mask, block_q, block_k):
    q, k, v = qkv()
    attn_mask = MASKS[mask](N)
    flash = flash_attention(q, k, v, block_q=block_q, block_k=block_k, attn_mask=attn_mask)
    assert np.abs(flash.out - reference(q, k, v, attn_mask)).max() <= 1e-5
    assert flash.n_steps == len(flash.steps) == n_tiles(N, block_q) * n_tiles(N, block_k)
    # each query tile's last step holds that tile's final output
    for s in flash.steps:
        if s.last:
            assert np.array_equal(s.out, flash.out[s.q0 : s.q1])
    assert_no_nan(flash)


@pytest.mark.parametrize(("block_q", "block_k"), [(1, 1), (2, 3), (4, 4), (16, 16), (64, 64)])
def test_fully_masked_rows_give_zero_and_never_nan(block_q, block_k):
    q, k, v = qkv()
    attn_mask = causal_mask(N)
    attn_mask[[0, 5, 6, 11]] = False  # four queries that may attend to nothing
    attn_mask[:, 9] = False  # and a key nobody may see
    flash = flash_attention(q, k, v, block_q=block_q, block_k=block_k, attn_mask=attn_mask)
    assert np.abs(flash.out - reference(q, k, v, attn_mask)).max() <= 1e-5
    assert np.all(flash.out[[0, 5, 6, 11]] == 0)
    assert_no_nan(flash)
    last = {s.i: s for s in flash.steps if s.last}
    for s in last.values():
        rows = np.arange(s.q0, s.q1)
        dead = ~attn_mask[rows].any(axis=1)
        assert np.all(np.isneginf(s.m_new[dead]))
        assert np.all(s.l_new[dead] == 0)


def test_everything_masked_gives_zero_and_skips_every_tile():
    q, k, v = qkv(n=5)
    attn_mask = np.zeros((5, 5), dtype=bool)
    flash = flash_attention(q, k, v, block_q=2, block_k=2, attn_mask=attn_mask)
    assert np.all(flash.out == 0)
    assert all(s.skipped for s in flash.steps)
    assert_no_nan(flash)
    assert flash.footprint.elements == 0
    assert flash.footprint.score_tile == ()


def test_causal_tiles_above_the_diagonal_are_skipped_and_unchanged():
    q, k, v = qkv()
    attn_mask = causal_mask(N)
    flash = flash_attention(q, k, v, block_q=4, block_k=4, attn_mask=attn_mask)
    skipped = {(s.i, s.j) for s in flash.steps if s.skipped}
    assert skipped == {(i, j) for i in range(4) for j in range(4) if j > i}
    assert np.array_equal(skipped_tiles(attn_mask, N, N, 4, 4), np.triu(np.ones((4, 4), bool), 1))
    for s in flash.steps:
        if s.skipped:
            assert np.all(np.isneginf(s.scores))
            assert np.all(s.alpha == 1)
            assert np.array_equal(s.m_new, s.m_old)
            assert np.array_equal(s.l_new, s.l_old)
            assert s.held == ()  # a real kernel loads nothing for it


@pytest.mark.parametrize(("block_q", "block_k"), [(1, 1), (4, 4), (3, 5), (8, 8)])
def test_unequal_query_and_key_lengths_with_padding(block_q, block_k):
    q, k, v = qkv(n=6, n_k=13)
    attn_mask = padding_mask(6, 13, 10)
    flash = flash_attention(q, k, v, block_q=block_q, block_k=block_k, attn_mask=attn_mask)
    assert flash.out.shape == (6, 8)
    assert np.abs(flash.out - reference(q, k, v, attn_mask)).max() <= 1e-5


@pytest.mark.parametrize("blocks", [(1, 1), (4, 4), (2, 9)])
def test_one_token(blocks):
    q, k, v = qkv(n=1)
    for attn_mask in (None, causal_mask(1)):
        flash = flash_attention(q, k, v, block_q=blocks[0], block_k=blocks[1], attn_mask=attn_mask)
        assert flash.n_steps == 1
        np.testing.assert_allclose(flash.out, v, atol=1e-6)  # softmax over one key is 1


def test_d_head_one():
    q, k, v = qkv(d=1)
    flash = flash_attention(q, k, v, block_q=4, block_k=4, attn_mask=causal_mask(N))
    assert np.abs(flash.out - reference(q, k, v, causal_mask(N))).max() <= 1e-5


@pytest.mark.parametrize("mask", list(MASKS))
@pytest.mark.parametrize(("block_q", "block_k"), [(1, 1), (3, 5), (4, 4), (N, N)])
def test_running_max_and_sum_after_the_last_tile_are_the_rows(mask, block_q, block_k):
    q, k, v = qkv()
    attn_mask = MASKS[mask](N)
    s = (q.astype(np.float64) @ k.T.astype(np.float64)) / math.sqrt(q.shape[1])
    if attn_mask is not None:
        s = np.where(attn_mask, s, -np.inf)
    row_max = s.max(axis=1)
    row_sum = np.exp(s - row_max[:, None]).sum(axis=1)
    flash = flash_attention(q, k, v, block_q=block_q, block_k=block_k, attn_mask=attn_mask)
    for step in flash.steps:
        if step.last:
            np.testing.assert_allclose(step.m_new, row_max[step.q0 : step.q1], rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(step.l_new, row_sum[step.q0 : step.q1], rtol=1e-5)


def test_each_step_follows_the_online_softmax_update():
    q, k, v = qkv()
    flash = flash_attention(q, k, v, block_q=4, block_k=3)
    for s in flash.steps:
        if s.j == 0:
            assert np.all(np.isneginf(s.m_old))
            assert np.all(s.l_old == 0)
            assert np.all(s.alpha == 0)
        np.testing.assert_allclose(s.m_new, np.maximum(s.m_old, s.scores.max(axis=1)))
        assert s.rises == int((s.alpha < 1).sum())  # a raised maximum is a rescaled row
        np.testing.assert_allclose(s.alpha, np.exp(s.m_old - s.m_new), rtol=1e-6)
        p = np.exp(s.scores - s.m_new[:, None])
        np.testing.assert_allclose(s.p, p, rtol=1e-6)  # P̃_ij, as the page shows it
        np.testing.assert_allclose(s.l_new, s.alpha * s.l_old + p.sum(axis=1), rtol=1e-5)
        assert np.all(s.alpha <= 1)
        assert np.all(s.m_new >= s.m_old)
        # the normalised partial output is the softmax over the keys seen so far
        seen = reference(q[s.q0 : s.q1], k[: s.k1], v[: s.k1])
        np.testing.assert_allclose(s.out, seen, atol=1e-5)
        np.testing.assert_allclose(s.acc, s.out * s.l_new[:, None], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(
            s.scores, (q[s.q0 : s.q1] @ k[s.k0 : s.k1].T) / math.sqrt(8), rtol=1e-5, atol=1e-6
        )


def test_steps_come_query_tile_by_query_tile():
    q, k, v = qkv(n=10)
    flash = flash_attention(q, k, v, block_q=4, block_k=3)
    order = [(s.i, s.j) for s in flash.steps]
    assert order == [(i, j) for i in range(3) for j in range(4)]
    assert [s.index for s in flash.steps] == list(range(12))
    for s in flash.steps:
        assert tile_of(s.index, 10, 10, 4, 3) == (s.i, s.j, s.q0, s.q1, s.k0, s.k1)
    assert (flash.steps[-1].q0, flash.steps[-1].q1, flash.steps[-1].k0, flash.steps[-1].k1) == (8, 10, 9, 10)
    with pytest.raises(ValueError, match="outside"):
        tile_of(12, 10, 10, 4, 3)


def test_step_at_runs_one_query_tile_and_gives_the_same_record():
    q, k, v = qkv()
    attn_mask = causal_mask(N)
    flash = flash_attention(q, k, v, block_q=3, block_k=5, attn_mask=attn_mask)
    for s in flash.steps:
        one = step_at(q, k, v, s.index, block_q=3, block_k=5, attn_mask=attn_mask)
        assert (one.i, one.j, one.skipped) == (s.i, s.j, s.skipped)
        np.testing.assert_array_equal(one.out, s.out)
        np.testing.assert_array_equal(one.m_new, s.m_new)
    only = list(flash_steps(q, k, v, block_q=3, block_k=5, attn_mask=attn_mask, query_tiles=[2]))
    assert [s.i for s in only] == [2] * n_tiles(N, 5)


@pytest.mark.parametrize(
    ("n", "d", "block_q", "block_k"), [(512, 32, 16, 16), (512, 8, 4, 8), (100, 64, 8, 8)]
)
def test_the_largest_array_is_tile_sized_not_n_by_n(n, d, block_q, block_k):
    q, k, v = qkv(n=n, d=d)
    flash = flash_attention(q, k, v, block_q=block_q, block_k=block_k, attn_mask=causal_mask(n), record=False)
    fp = flash.footprint
    assert flash.steps == []
    assert flash.n_steps == n_tiles(n, block_q) * n_tiles(n, block_k)
    assert fp.elements == max(block_q * block_k, block_q * d, block_k * d)
    assert fp.bytes == 4 * fp.elements
    assert fp.score_tile == (block_q, block_k)
    assert fp.full_elements == n * n
    assert fp.full_bytes == 4 * n * n
    assert fp.elements <= n * n / 16
    assert fp.ratio >= 16
    assert np.abs(flash.out - reference(q, k, v, causal_mask(n))).max() <= 1e-5


def test_the_footprint_is_the_largest_array_any_step_held():
    q, k, v = qkv(n=20, d=3)
    flash = flash_attention(q, k, v, block_q=6, block_k=7)
    sizes = [(math.prod(shape), name) for s in flash.steps for name, shape in s.held]
    assert flash.footprint.elements == max(size for size, _ in sizes) == 42
    assert flash.footprint.name == "S_ij"
    assert flash.footprint.shape == (6, 7)


def test_bad_shapes_and_blocks_are_refused():
    q, k, v = qkv()
    with pytest.raises(ValueError, match="block_q=0"):
        flash_attention(q, k, v, block_q=0, block_k=2)
    with pytest.raises(ValueError, match="attn_mask has shape"):
        flash_attention(q, k, v, block_q=2, block_k=2, attn_mask=np.ones((3, 3), bool))
    with pytest.raises(ValueError, match="do not fit"):
        flash_attention(q, k[:, :3], v, block_q=2, block_k=2)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 24),
    n_k=st.integers(1, 24),
    d=st.integers(1, 6),
    block_q=st.integers(1, 30),
    block_k=st.integers(1, 30),
    seed=st.integers(0, 2**16),
    spread=st.sampled_from([0.1, 1.0, 10.0, 40.0]),
)
def test_any_shape_and_mask_equals_the_explicit_attention(n, n_k, d, block_q, block_k, seed, spread):
    q, k, v = qkv(n=n, d=d, n_k=n_k, seed=seed, spread=spread)
    attn_mask = np.random.default_rng(seed + 1).random((n, n_k)) < 0.6
    flash = flash_attention(q, k, v, block_q=block_q, block_k=block_k, attn_mask=attn_mask)
    # 1e-5, or float32's own rounding of scores as large as these (|s| reaches ~10^3 at spread 40:
    # exp(s - m) then carries a relative error of ~|s|·eps in any float32 order of summation)
    s_max = float(np.abs(q.astype(np.float64) @ k.T.astype(np.float64)).max()) / np.sqrt(d)
    tol = max(1e-5, 8 * np.finfo(np.float32).eps * s_max * float(np.abs(v).max()))
    assert np.abs(flash.out - reference(q, k, v, attn_mask)).max() <= tol
    assert_no_nan(flash)


# --- the model's own numbers -------------------------------------------------------------------

TEXT = "The animal didn't cross the street because it was too tired. 小猫跳了上去。"


def check_head(cap, layer: int, head: int, attn_mask, blocks) -> None:
    q, k, v, z = (cap.at(name, layer)[:, head] for name in ("q", "k", "v", "z"))
    pattern = cap.at("pattern", layer)[head]
    scores = cap.at("attn_scores", layer)[head]
    for block_q, block_k in blocks:
        flash = flash_attention(q, k, v, block_q=block_q, block_k=block_k, attn_mask=attn_mask)
        assert np.abs(flash.out - z).max() <= 1e-5, (layer, head, block_q, block_k)
        for s in flash.steps:  # the page's tile scores are the model's scores
            mine, theirs = s.scores, scores[s.q0 : s.q1, s.k0 : s.k1]
            assert np.array_equal(np.isneginf(mine), np.isneginf(theirs))
            finite = np.isfinite(theirs)
            assert np.abs(mine[finite] - theirs[finite]).max(initial=0) <= 1e-4
            if s.last:  # ℓ and m rebuild the model's pattern row by row
                p = np.exp(theirs - np.where(np.isneginf(s.m_new), 0, s.m_new)[:, None])
                p = np.divide(p, s.l_new[:, None], out=np.zeros_like(p), where=s.l_new[:, None] > 0)
                np.testing.assert_allclose(p, pattern[s.q0 : s.q1, s.k0 : s.k1], atol=1e-5)


@pytest.mark.slow
def test_minilm_heads_give_the_models_own_z():
    from tformer import capture_text, load_pretrained

    model, tok = load_pretrained("minilm")
    cap = capture_text(model, tok, TEXT, ["q", "k", "v", "attn_scores", "pattern", "z"], layers=[0, 5])
    assert cap.n_pos > 16
    for layer in (0, 5):
        for head in (0, 7, 11):
            check_head(cap, layer, head, None, [(4, 4), (16, 8), (64, 64)])


def test_causal_from_scratch_head_gives_the_models_own_z():
    from tformer import Encoder, capture_text, scratch_tokenizer

    from ._models import tiny

    tok = scratch_tokenizer(max_len=64)
    model = Encoder(tiny(vocab_size=tok.vocab_size, causal=True)).eval()
    cap = capture_text(model, tok, TEXT, ["q", "k", "v", "attn_scores", "pattern", "z"])
    attn_mask = causal_mask(cap.n_pos)
    for layer in range(model.cfg.n_layers):
        for head in range(model.cfg.n_heads):
            check_head(cap, layer, head, attn_mask, [(1, 1), (4, 4), (3, 8)])


def test_auto_tiles_step_any_length_in_at_most_64_steps():
    from tformer.efficiency.flash import TILE_SIDES, auto_tile

    assert auto_tile(16) == 4
    assert auto_tile(3) == 4  # 16 steps of 4 x 4; one tile
    assert auto_tile(472) == 64
    assert n_tiles(472, 64) ** 2 == 64  # not 118 x 118 = 13,924
    for n in range(1, 4097):
        side = auto_tile(n)
        assert n_tiles(n, side) ** 2 <= 64
        smaller = [s for s in TILE_SIDES if 4 <= s < side]
        assert all(n_tiles(n, s) ** 2 > 64 for s in smaller), n  # the smallest that fits
    assert auto_tile(10_000) == TILE_SIDES[-1]  # beyond every side: the largest
    assert n_tiles(10_000, auto_tile(10_000, max_steps=2000)) ** 2 <= 2000
