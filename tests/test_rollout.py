"""Attention rollout, head combination, the query/key projection and the top pairs (numpy only)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tformer.analysis.rollout import Projection, attention_rollout, combine_heads, project_2d, top_pairs


def random_pattern(shape: tuple[int, int, int, int], seed: int = 0) -> np.ndarray:
    """Softmax rows [layer, head_index, query_pos, key_pos] in float32, as a capture holds them."""
    s = np.random.default_rng(seed).normal(scale=2.0, size=shape)
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


def identity_pattern(n_layer: int, n_head: int, n_pos: int) -> np.ndarray:
    return np.broadcast_to(np.eye(n_pos, dtype=np.float32), (n_layer, n_head, n_pos, n_pos)).copy()


# --------------------------------------------------------------------------------------------
# combine_heads
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("how", ["mean", "max"])
def test_combine_heads_drops_the_head_axis(how):
    p = random_pattern((3, 4, 5, 5))
    out = combine_heads(p, how)
    assert out.shape == (3, 5, 5)
    assert out.dtype == np.float64
    expected = p.astype(np.float64).mean(1) if how == "mean" else p.astype(np.float64).max(1)
    np.testing.assert_allclose(out, expected)


def test_combine_heads_mean_keeps_rows_stochastic_and_max_exceeds_one():
    p = random_pattern((2, 6, 7, 7), seed=1)
    np.testing.assert_allclose(combine_heads(p, "mean").sum(-1), 1.0, atol=1e-6)
    sums = combine_heads(p, "max").sum(-1)
    assert (sums >= 1.0 - 1e-6).all()
    assert (sums <= 6.0 + 1e-6).all()


@pytest.mark.parametrize(
    ("pattern", "needle"),
    [
        (np.zeros((2, 3, 3)), "got shape (2, 3, 3)"),
        (np.zeros((1, 2, 3, 4)), "query_pos == key_pos"),
        (np.zeros((0, 2, 3, 3)), "at least one layer"),
    ],
)
def test_combine_heads_rejects_bad_shapes_naming_them(pattern, needle):
    with pytest.raises(ValueError, match=re.escape(needle)):
        combine_heads(pattern)


def test_combine_heads_rejects_an_unknown_method():
    with pytest.raises(ValueError, match="'median'"):
        combine_heads(random_pattern((1, 1, 2, 2)), "median")


# --------------------------------------------------------------------------------------------
# attention_rollout
# --------------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(
    n_layer=st.integers(1, 4),
    n_head=st.integers(1, 4),
    n_pos=st.integers(1, 9),
    residual=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**16),
    how=st.sampled_from(["mean", "max"]),
)
def test_rollout_rows_sum_to_one(n_layer, n_head, n_pos, residual, seed, how):
    p = random_pattern((n_layer, n_head, n_pos, n_pos), seed)
    r = attention_rollout(p, residual=residual, how=how)
    assert r.shape == (n_layer, n_pos, n_pos)
    assert (r >= 0).all()
    np.testing.assert_allclose(r.sum(-1), 1.0, atol=1e-9)


def test_one_layer_is_half_the_mean_plus_half_the_identity_renormalised():
    p = random_pattern((1, 3, 5, 5), seed=2)
    a = 0.5 * p[0].astype(np.float64).mean(0) + 0.5 * np.eye(5)
    expected = a / a.sum(-1, keepdims=True)
    np.testing.assert_allclose(attention_rollout(p, residual=0.5)[0], expected, atol=1e-12)


def test_max_heads_are_renormalised_before_the_residual_is_mixed_in():
    p = random_pattern((1, 4, 4, 4), seed=3)
    mx = p[0].astype(np.float64).max(0)
    a = 0.3 * np.eye(4) + 0.7 * mx
    np.testing.assert_allclose(
        attention_rollout(p, residual=0.3, how="max")[0], a / a.sum(-1, keepdims=True), atol=1e-12
    )


@pytest.mark.parametrize("residual", [0.0, 0.5, 1.0])
def test_identity_patterns_roll_out_to_the_identity(residual):
    r = attention_rollout(identity_pattern(4, 3, 6), residual=residual)
    np.testing.assert_array_equal(r, np.broadcast_to(np.eye(6), (4, 6, 6)))


def test_residual_one_ignores_attention_entirely():
    r = attention_rollout(random_pattern((3, 2, 5, 5), seed=4), residual=1.0)
    np.testing.assert_array_equal(r, np.broadcast_to(np.eye(5), (3, 5, 5)))


def test_two_layer_hand_example():
    # One head, two tokens, residual 0.5.
    # Layer 0: every query looks at token 1.  A0 = [[0, 1], [0, 1]]
    #   Â0 = 0.5 I + 0.5 A0 = [[0.5, 0.5], [0, 1]]          (rows already sum to 1)
    # Layer 1: every query looks at token 0.  A1 = [[1, 0], [1, 0]]
    #   Â1 = [[1, 0], [0.5, 0.5]]
    # R1 = Â1 Â0 = [[0.5, 0.5], [0.25, 0.75]]
    p = np.array([[[[0.0, 1.0], [0.0, 1.0]]], [[[1.0, 0.0], [1.0, 0.0]]]], dtype=np.float32)
    r = attention_rollout(p)
    np.testing.assert_allclose(r[0], [[0.5, 0.5], [0.0, 1.0]])
    np.testing.assert_allclose(r[1], [[0.5, 0.5], [0.25, 0.75]])


def test_rollout_multiplies_the_new_layer_on_the_left():
    p = random_pattern((3, 2, 4, 4), seed=5)
    a = [0.5 * np.eye(4) + 0.5 * p[i].astype(np.float64).mean(0) for i in range(3)]
    np.testing.assert_allclose(attention_rollout(p)[2], a[2] @ a[1] @ a[0], atol=1e-12)


def test_a_fully_masked_row_is_kept_by_the_residual_term():
    p = random_pattern((2, 2, 4, 4), seed=6).astype(np.float64)
    p[:, :, 2] = 0.0  # query 2 may attend to nothing, in every layer and head
    r = attention_rollout(p, residual=0.5)
    assert np.isfinite(r).all()
    np.testing.assert_allclose(r[:, 2], np.broadcast_to(np.eye(4)[2], (2, 4)))
    np.testing.assert_allclose(r.sum(-1), 1.0, atol=1e-12)


def test_without_a_residual_a_fully_masked_row_stays_zero_and_nan_reads_as_zero():
    p = random_pattern((1, 1, 3, 3), seed=7).astype(np.float64)
    p[0, 0, 1] = np.nan  # what a plain softmax gives a fully masked row
    r = attention_rollout(p, residual=0.0)
    assert np.isfinite(r).all()
    np.testing.assert_array_equal(r[0, 1], 0.0)
    np.testing.assert_allclose(r[0, [0, 2]].sum(-1), 1.0)


@pytest.mark.parametrize("residual", [-0.1, 1.5])
def test_rollout_rejects_a_residual_outside_zero_one(residual):
    with pytest.raises(ValueError, match="residual"):
        attention_rollout(random_pattern((1, 1, 2, 2)), residual=residual)


# --------------------------------------------------------------------------------------------
# project_2d
# --------------------------------------------------------------------------------------------
def planted_plane(
    n_pos: int = 20, d_head: int = 8, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Queries and keys that lie in a known 2-D plane of d_head dimensions: (q, k, basis [2, d])."""
    rng = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(rng.normal(size=(d_head, 2)))  # [d_head, 2], orthonormal columns
    coords = rng.normal(size=(2 * n_pos, 2)) * np.array([3.0, 1.0])  # PC1 clearly the wider
    x = coords @ basis.T + rng.normal(size=d_head)  # an offset, which the centring removes
    return x[:n_pos].astype(np.float32), x[n_pos:].astype(np.float32), basis.T


def test_projection_recovers_a_planted_plane():
    q, k, basis = planted_plane()
    proj = project_2d(q, k)
    assert isinstance(proj, Projection)
    assert proj.q2.shape == proj.k2.shape == (20, 2)
    # all the variance is in the plane, and the found directions span it
    np.testing.assert_allclose(proj.explained.sum(), 1.0, atol=1e-6)
    assert proj.explained[0] > proj.explained[1] > 0
    np.testing.assert_allclose(proj.components @ proj.components.T, np.eye(2), atol=1e-6)
    inside = proj.components @ basis.T @ basis  # the components projected onto the plane
    np.testing.assert_allclose(inside, proj.components, atol=1e-5)
    # distances between points survive the projection (it is a rotation within the plane)
    x = np.concatenate([q, k]).astype(np.float64)
    x2 = np.concatenate([proj.q2, proj.k2])
    d_full = np.linalg.norm(x[:, None] - x[None], axis=-1)
    d_2d = np.linalg.norm(x2[:, None] - x2[None], axis=-1)
    np.testing.assert_allclose(d_2d, d_full, atol=1e-4)


def test_projection_is_centred_on_the_joint_mean():
    q, k, _ = planted_plane(seed=1)
    proj = project_2d(q, k)
    np.testing.assert_allclose(np.concatenate([proj.q2, proj.k2]).mean(0), 0.0, atol=1e-9)
    np.testing.assert_allclose(proj.center, np.concatenate([q, k]).astype(np.float64).mean(0), atol=1e-6)
    np.testing.assert_array_equal(proj.key_shift, 0.0)


def test_translate_keys_moves_the_key_mean_onto_the_query_mean():
    rng = np.random.default_rng(2)
    q = rng.normal(size=(15, 6)) + 5.0  # the two clouds far apart
    k = rng.normal(size=(15, 6)) - 5.0
    plain = project_2d(q, k)
    moved = project_2d(q, k, translate_keys=True)
    np.testing.assert_allclose(moved.k2.mean(0), moved.q2.mean(0), atol=1e-9)
    np.testing.assert_allclose(moved.key_shift, q.mean(0) - k.mean(0))
    assert np.linalg.norm(plain.k2.mean(0) - plain.q2.mean(0)) > 10  # the gap PC1 spent itself on
    # translating the keys changes no softmax: each query's scores shift by one number
    scores = q @ k.T
    shifted = q @ (k + moved.key_shift).T
    diff = shifted - scores
    np.testing.assert_allclose(diff, diff[:, :1].repeat(15, axis=1), atol=1e-9)


def test_projection_signs_are_deterministic():
    q, k, _ = planted_plane(seed=3)
    a = project_2d(q, k)
    b = project_2d(q, k)
    np.testing.assert_array_equal(a.q2, b.q2)
    for row in a.components:
        assert row[np.argmax(np.abs(row))] > 0
    # the same points given with flipped coordinates give the same picture up to those flips
    c = project_2d(-q, -k)
    np.testing.assert_allclose(np.abs(c.q2), np.abs(a.q2), atol=1e-6)


def test_d_head_one_gives_a_zero_second_coordinate():
    q = np.array([[1.0], [2.0], [3.0]])
    k = np.array([[-1.0], [0.0], [4.0]])
    proj = project_2d(q, k)
    np.testing.assert_array_equal(proj.q2[:, 1], 0.0)
    np.testing.assert_array_equal(proj.k2[:, 1], 0.0)
    np.testing.assert_allclose(proj.explained, [1.0, 0.0])
    mean = np.concatenate([q, k]).mean()
    np.testing.assert_allclose(proj.q2[:, 0], q[:, 0] - mean)
    np.testing.assert_allclose(proj.k2[:, 0], k[:, 0] - mean)


def test_one_position_works_with_and_without_translation():
    q = np.array([[1.0, 2.0, 3.0]])
    k = np.array([[3.0, 2.0, 1.0]])
    proj = project_2d(q, k)
    assert proj.q2.shape == proj.k2.shape == (1, 2)
    np.testing.assert_allclose(proj.explained, [1.0, 0.0])
    np.testing.assert_allclose(proj.q2[0, 1], 0.0)
    np.testing.assert_allclose(np.linalg.norm(proj.q2 - proj.k2), np.linalg.norm(q - k))
    moved = project_2d(q, k, translate_keys=True)  # query and key now coincide: nothing to see
    np.testing.assert_array_equal(moved.q2, 0.0)
    np.testing.assert_array_equal(moved.k2, 0.0)
    np.testing.assert_array_equal(moved.explained, 0.0)


@pytest.mark.parametrize(
    ("q", "k", "needle"),
    [
        (np.zeros((3, 4)), np.zeros((3, 5)), "(3, 4) and (3, 5)"),
        (np.zeros(4), np.zeros(4), "(4,) and (4,)"),
        (np.zeros((0, 4)), np.zeros((0, 4)), "shape (0, 4)"),
    ],
)
def test_project_2d_rejects_bad_shapes_naming_them(q, k, needle):
    with pytest.raises(ValueError, match=re.escape(needle)):
        project_2d(q, k)


# --------------------------------------------------------------------------------------------
# top_pairs
# --------------------------------------------------------------------------------------------
def test_top_pairs_returns_the_largest_weights_in_order():
    p = np.array([[0.1, 0.7, 0.2], [0.5, 0.0, 0.5], [0.05, 0.05, 0.9]], dtype=np.float32)
    got = top_pairs(p, 4)
    assert [(q, k) for q, k, _ in got] == [(2, 2), (0, 1), (1, 0), (1, 2)]  # 0.5 tie: key 0 first
    np.testing.assert_allclose([w for _, _, w in got], [0.9, 0.7, 0.5, 0.5], rtol=1e-6)
    assert all(isinstance(q, int) and isinstance(k, int) and isinstance(w, float) for q, k, w in got)


def test_top_pairs_breaks_ties_in_row_major_order_and_excludes_nothing():
    p = np.full((3, 3), 1 / 3)
    assert [(q, k) for q, k, _ in top_pairs(p, 9)] == [(i, j) for i in range(3) for j in range(3)]
    assert [(q, k) for q, k, _ in top_pairs(p, 2)] == [(0, 0), (0, 1)]


def test_top_pairs_matches_a_full_sort_on_random_patterns():
    p = random_pattern((1, 1, 40, 40), seed=8)[0, 0]
    got = top_pairs(p, 25)
    flat = p.ravel().astype(np.float64)
    expected = sorted(range(flat.size), key=lambda i: (-flat[i], i))[:25]
    assert [q * 40 + k for q, k, _ in got] == expected


def test_top_pairs_edge_cases():
    p = np.array([[0.6, 0.4], [np.nan, 1.0]])
    assert top_pairs(p, 0) == []
    got = top_pairs(p, 10)  # more than there are cells: all of them, NaN last
    assert [(q, k) for q, k, _ in got] == [(1, 1), (0, 0), (0, 1), (1, 0)]
    assert np.isnan(got[-1][2])
    with pytest.raises(ValueError, match="n=-1"):
        top_pairs(p, -1)
    with pytest.raises(ValueError, match=r"got shape \(2, 2, 2\)"):
        top_pairs(np.zeros((2, 2, 2)))
