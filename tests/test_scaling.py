"""Why scale by √d_k: the recomputed pattern is the model's, the row statistics and the softmax
Jacobian are right, and the sweep over d_k measures what the theory says."""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
import pytest

from tformer import Encoder, capture_text, scratch_tokenizer
from tformer.analysis.scaling import (
    ScalingSweep,
    jacobian_norm,
    normalised_entropy,
    row_entropy,
    row_max,
    scaling_sweep,
    temperature_pattern,
)

from ._models import tiny

TEXT = "The animal didn't cross the street because it was too tired. 小猫跳了上去。"


def softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def random_rows(n_rows: int, n_keys: int, spread: float, seed: int = 0) -> np.ndarray:
    return softmax(np.random.default_rng(seed).normal(scale=spread, size=(n_rows, n_keys)))


# --------------------------------------------------------------------------------------------
# temperature_pattern
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("causal", [False, True])
def test_tau_1_and_scaled_is_the_models_own_pattern(causal):
    tok = scratch_tokenizer(max_len=64)
    model = Encoder(tiny(vocab_size=tok.vocab_size, causal=causal)).eval()
    cap = capture_text(model, tok, TEXT, ["q", "k", "pattern"])
    d_k = model.cfg.d_model // model.cfg.n_heads
    n = len(cap.encoded.ids)
    attn_mask = np.tril(np.ones((n, n), dtype=bool)) if causal else None
    for layer in range(model.cfg.n_layers):
        for head in range(model.cfg.n_heads):
            q = cap["q"][layer][:, head]  # [pos, d_head]
            k = cap["k"][layer][:, head]
            assert q.shape == (n, d_k)
            mine = temperature_pattern(q @ k.T, d_k, attn_mask=attn_mask)
            theirs = cap["pattern"][layer, head]
            assert mine.dtype == np.float32
            assert mine.shape == theirs.shape == (n, n)
            assert np.abs(mine - theirs).max() <= 1e-5, (layer, head)


def test_not_scaled_is_scaled_at_temperature_one_over_sqrt_dk():
    raw = np.random.default_rng(1).normal(scale=8.0, size=(6, 9))
    a = temperature_pattern(raw, 64, scaled=False)
    b = temperature_pattern(raw, 64, tau=1 / 8)
    np.testing.assert_allclose(a, b, atol=1e-6)
    np.testing.assert_allclose(a, softmax(raw), atol=1e-6)


def test_temperature_sharpens_below_one_and_flattens_above():
    raw = np.random.default_rng(2).normal(scale=3.0, size=(5, 12))
    cold, warm, hot = (temperature_pattern(raw, 4, tau=t) for t in (0.01, 1.0, 1000.0))
    np.testing.assert_array_equal(cold.argmax(-1), raw.argmax(-1))
    assert np.all(cold.max(-1) > 0.999)
    np.testing.assert_allclose(hot, 1 / 12, atol=1e-3)
    assert np.all(row_entropy(cold) < row_entropy(warm))
    assert np.all(row_entropy(warm) < row_entropy(hot))
    for p in (cold, warm, hot):
        np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-6)


def test_a_very_low_temperature_stays_finite():
    raw = np.array([[1e4, 1e4 - 1, -1e4]])
    p = temperature_pattern(raw, 1, tau=1e-3)
    assert np.isfinite(p).all()
    np.testing.assert_allclose(p, [[1.0, 0.0, 0.0]], atol=1e-7)


def test_masked_keys_get_zero_and_a_fully_masked_row_is_zero_not_nan():
    raw = np.random.default_rng(3).normal(size=(4, 4))
    attn_mask = np.tril(np.ones((4, 4), dtype=bool))
    attn_mask[2] = False  # query 2 may attend to nothing
    p = temperature_pattern(raw, 16, tau=0.5, attn_mask=attn_mask)
    assert np.isfinite(p).all()
    assert np.all(p[~attn_mask] == 0.0)
    np.testing.assert_array_equal(p[2], np.zeros(4, np.float32))
    np.testing.assert_allclose(p[[0, 1, 3]].sum(-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(p[3], softmax(raw[3] / 4 / 0.5), atol=1e-6)
    assert row_entropy(p)[2] == 0.0
    assert row_max(p)[2] == 0.0


def test_minus_infinity_scores_count_as_masked():
    raw = np.array([[0.0, -np.inf, 1.0], [-np.inf, -np.inf, -np.inf]])
    p = temperature_pattern(raw, 1)
    np.testing.assert_allclose(p[0], softmax(np.array([0.0, -np.inf, 1.0])), atol=1e-7)
    np.testing.assert_array_equal(p[1], np.zeros(3, np.float32))


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"raw": np.zeros(3), "d_k": 4}, r"2-D \[query_pos, key_pos\], got shape \(3,\)"),
        ({"raw": np.zeros((2, 2)), "d_k": 0}, "d_k must be a whole number >= 1, got 0"),
        ({"raw": np.zeros((2, 2)), "d_k": 2.5}, "d_k must be a whole number"),
        ({"raw": np.zeros((2, 2)), "d_k": 4, "tau": 0.0}, "tau must be a finite number > 0, got 0.0"),
        ({"raw": np.zeros((2, 2)), "d_k": 4, "tau": -1.0}, "tau must be"),
        ({"raw": np.zeros((2, 2)), "d_k": 4, "tau": float("nan")}, "tau must be"),
        ({"raw": np.zeros((2, 2)), "d_k": 4, "tau": float("inf")}, "tau must be"),
        (
            {"raw": np.zeros((2, 3)), "d_k": 4, "attn_mask": np.ones((3, 2), bool)},
            r"attn_mask has shape \(3, 2\)",
        ),
        ({"raw": np.array([[0.0, np.nan]]), "d_k": 4}, "1 NaN or \\+inf"),
        ({"raw": np.array([[0.0, np.inf]]), "d_k": 4}, "1 NaN or \\+inf"),
    ],
)
def test_temperature_pattern_rejects_bad_input_naming_it(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        temperature_pattern(**kwargs)


def test_a_nan_score_where_attention_is_masked_is_ignored():
    raw = np.array([[0.0, np.nan]])
    p = temperature_pattern(raw, 4, attn_mask=np.array([[True, False]]))
    np.testing.assert_array_equal(p, [[1.0, 0.0]])


# --------------------------------------------------------------------------------------------
# row_entropy, row_max
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 7, 32, 512])
def test_entropy_of_uniform_rows_is_log2_n_and_their_max_is_one_over_n(n):
    p = np.full((3, n), 1.0 / n)
    np.testing.assert_allclose(row_entropy(p), math.log2(n), atol=1e-12)
    np.testing.assert_allclose(row_max(p), 1.0 / n)


def test_entropy_by_hand_and_zero_for_one_hot_and_empty_rows():
    p = np.array([[0.5, 0.25, 0.25, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    h = row_entropy(p)
    np.testing.assert_allclose(h, [1.5, 0.0, 0.0])
    assert not np.signbit(h).any()  # no -0.0
    np.testing.assert_array_equal(row_max(p), [0.5, 1.0, 0.0])


def test_row_stats_keep_leading_axes():
    p = random_rows(12, 5, 1.0).reshape(3, 4, 5)  # [head_index, query_pos, key_pos]
    assert row_entropy(p).shape == (3, 4)
    assert row_max(p).shape == (3, 4)
    np.testing.assert_allclose(row_entropy(p)[1], row_entropy(p[1]))


@pytest.mark.parametrize(
    ("pattern", "needle"),
    [
        (np.ones(3) / 3, r"got shape \(3,\)"),
        (np.zeros((2, 0)), "at least one key"),
        (np.array([[np.nan, 1.0]]), "NaN for a masked row"),
        (np.array([[-0.5, 1.5]]), "finite weights >= 0"),
    ],
)
def test_row_stats_reject_bad_patterns(pattern, needle):
    for fn in (row_entropy, row_max, jacobian_norm):
        with pytest.raises(ValueError, match=needle):
            fn(pattern)


# --------------------------------------------------------------------------------------------
# normalised_entropy: the one H / log2(visible keys) of head_metrics and role_scores
# --------------------------------------------------------------------------------------------
def causal_pattern(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Causal softmax rows [..., query_pos, key_pos] in float32, as a causal encoder captures
    them: row i has keys 0..i, row 0 a single key."""
    n = shape[-1]
    logits = np.random.default_rng(seed).normal(scale=3.0, size=shape)
    logits = np.where(np.tril(np.ones((n, n), dtype=bool)), logits, -np.inf)
    return softmax(logits).astype(np.float32)


def test_normalised_entropy_by_hand_on_masked_and_one_key_rows():
    p = np.array(
        [
            [0.25, 0.25, 0.25, 0.25],  # uniform over 4 keys: 1
            [0.5, 0.5, 0.0, 0.0],  # causal row 1: uniform over its 2 visible keys: 1
            [0.5, 0.25, 0.25, 0.0],  # 1.5 bits of at most log2 3
            [1.0, 0.0, 0.0, 0.0],  # causal row 0: one visible key: 0, not 0/0
            [0.0, 0.0, 0.0, 0.0],  # fully masked row: 0
        ]
    )
    h = normalised_entropy(row_entropy(p), p)
    np.testing.assert_allclose(h, [1.0, 1.0, 1.5 / math.log2(3), 0.0, 0.0], atol=1e-15)
    assert h.dtype == np.float64
    assert not np.signbit(h).any()


def test_normalised_entropy_keeps_leading_axes_and_counts_keys_per_row():
    p = causal_pattern((2, 3, 6, 6))  # [layer, head_index, query_pos, key_pos]
    h = normalised_entropy(row_entropy(p), p)
    assert h.shape == (2, 3, 6)
    np.testing.assert_array_equal(h[..., 0], 0.0)  # the first query sees one key
    n = np.arange(2, 7)  # causal: query i >= 1 sees i + 1 keys
    np.testing.assert_allclose(h[..., 1:], row_entropy(p)[..., 1:] / np.log2(n), rtol=1e-12)
    assert ((h >= 0) & (h <= 1 + 1e-12)).all()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_head_metrics_and_role_scores_use_the_one_normalised_entropy(seed):
    from tformer.analysis.head_roles import role_scores
    from tformer.analysis.metrics import head_metrics

    p = causal_pattern((2, 4, 9, 9), seed)  # every row has a key, so every row counts
    per_row = normalised_entropy(row_entropy(p), p)  # [layer, head_index, query_pos]
    np.testing.assert_allclose(head_metrics(p)["entropy_norm"], per_row.mean(-1), rtol=1e-12)
    np.testing.assert_allclose(role_scores(p, np.arange(9))["broad"], per_row.mean(-1), rtol=1e-12)
    np.testing.assert_allclose(head_metrics(p)["entropy"], row_entropy(p).mean(-1), rtol=1e-12)


@pytest.mark.parametrize(
    ("entropy", "pattern"), [(np.zeros(3), np.ones((4, 2))), (np.zeros((2, 3)), np.ones(3))]
)
def test_normalised_entropy_rejects_shapes_that_do_not_fit_naming_them(entropy, pattern):
    with pytest.raises(ValueError, match=r"entropy has shape \(.*\) but pattern has shape \("):
        normalised_entropy(entropy, pattern)


# --------------------------------------------------------------------------------------------
# jacobian_norm
# --------------------------------------------------------------------------------------------
def test_jacobian_norm_is_the_frobenius_norm_of_diag_p_minus_p_pT():
    p = random_rows(20, 9, 2.0)
    explicit = [np.linalg.norm(np.diag(row) - np.outer(row, row)) for row in p]
    np.testing.assert_allclose(jacobian_norm(p), explicit, rtol=1e-12, atol=1e-15)


def test_diag_p_minus_p_pT_is_the_softmax_jacobian():
    """Central differences of the softmax itself, so the formula is checked, not assumed."""
    s = np.random.default_rng(4).normal(size=6)
    eps = 1e-6
    numeric = np.stack(
        [(softmax(s + eps * e) - softmax(s - eps * e)) / (2 * eps) for e in np.eye(6)], axis=1
    )  # [output i, logit j]
    np.testing.assert_allclose(jacobian_norm(softmax(s)[None])[0], np.linalg.norm(numeric), rtol=1e-7)


def test_jacobian_norm_of_uniform_and_one_hot_rows():
    n = 32
    np.testing.assert_allclose(jacobian_norm(np.full((1, n), 1 / n)), [math.sqrt(n - 1) / n])
    np.testing.assert_array_equal(jacobian_norm(np.eye(4)), np.zeros(4))
    np.testing.assert_array_equal(jacobian_norm(np.zeros((1, 4))), [0.0])


def test_a_saturated_rows_tiny_jacobian_norm_stays_accurate():
    """1 - p_top would round to 0 here: the sums over the other keys keep the norm exact."""
    n, gap = 8, 50.0
    e = math.exp(-gap)
    z = 1 + (n - 1) * e
    p = np.array([[1 / z] + [e / z] * (n - 1)])
    # leading order of ‖J‖²: (n-1)² e² from the top row and column, (n-1) e² from the others
    expected = e * math.sqrt((n - 1) ** 2 + 3 * (n - 1))
    assert 0 < jacobian_norm(p)[0]
    np.testing.assert_allclose(jacobian_norm(p), [expected], rtol=1e-9)


# --------------------------------------------------------------------------------------------
# scaling_sweep
# --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sweep() -> ScalingSweep:
    return scaling_sweep()


def test_sweep_has_one_value_per_dk_of_each_measure(sweep):
    np.testing.assert_array_equal(sweep.d_k, [4, 8, 16, 32, 64, 128, 256, 512, 1024])
    for f in dataclasses.fields(ScalingSweep):
        value = getattr(sweep, f.name)
        if isinstance(value, np.ndarray):
            assert value.shape == (9,), f.name
            assert np.isfinite(value).all(), f.name
    assert (sweep.n_keys, sweep.samples, sweep.seed) == (32, 256, 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sweep.seed = 1  # type: ignore[misc]


def test_raw_variance_grows_like_dk_and_scaled_variance_stays_near_one(sweep):
    np.testing.assert_allclose(sweep.var_raw / sweep.d_k, 1.0, rtol=0.15)
    np.testing.assert_allclose(sweep.var_scaled, 1.0, rtol=0.15)
    np.testing.assert_allclose(sweep.var_scaled, sweep.var_raw / sweep.d_k, rtol=1e-9)


def test_without_the_scale_the_softmax_saturates_and_its_gradient_vanishes(sweep):
    assert np.all(np.diff(sweep.max_raw) > 0)
    assert sweep.max_raw[-1] > 0.9 > 4 * sweep.max_scaled[-1]
    assert sweep.jac_raw[-1] < 0.5 * sweep.jac_scaled[-1]
    # with the scale nothing depends on d_k: the logits' distribution is the same at every d_k
    assert np.ptp(sweep.max_scaled) < 0.05
    assert np.ptp(sweep.jac_scaled) < 0.03
    # the two agree where √d_k is smallest and part furthest where it is largest
    gap = sweep.max_raw - sweep.max_scaled
    assert gap[-1] == gap.max()
    assert gap[0] == gap.min()
    assert np.all(sweep.max_raw >= 1 / 32)
    assert np.all(sweep.max_raw <= 1)


def test_sweep_is_deterministic_for_a_seed_and_changes_with_it(sweep):
    again = scaling_sweep()
    for f in dataclasses.fields(ScalingSweep):
        np.testing.assert_array_equal(getattr(again, f.name), getattr(sweep, f.name))
    other = scaling_sweep(seed=1)
    assert not np.array_equal(other.var_raw, sweep.var_raw)


def test_sweep_is_computed_from_the_random_vectors_it_draws():
    """The same draws, redone here, give the same variance: nothing is canned."""
    d_ks, n_keys, samples, seed = (4, 16), 8, 50, 7
    got = scaling_sweep(d_ks, n_keys=n_keys, samples=samples, seed=seed)
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((samples, 16, 1), dtype=np.float32)[..., 0].astype(np.float64)
    k = rng.standard_normal((samples, n_keys, 16), dtype=np.float32).astype(np.float64)
    for i, d in enumerate(d_ks):
        s = np.einsum("sd,skd->sk", q[:, :d], k[:, :, :d])
        np.testing.assert_allclose(got.var_raw[i], s.var(), rtol=1e-5)
        np.testing.assert_allclose(got.max_raw[i], softmax(s).max(-1).mean(), rtol=1e-5)
        np.testing.assert_allclose(got.max_scaled[i], softmax(s / math.sqrt(d)).max(-1).mean(), rtol=1e-5)
        jac = np.mean([np.linalg.norm(np.diag(p) - np.outer(p, p)) for p in softmax(s / math.sqrt(d))])
        np.testing.assert_allclose(got.jac_scaled[i], jac, rtol=1e-5)


def test_sweep_sorts_dks_drops_repeats_and_handles_odd_sizes():
    got = scaling_sweep((64, 2, 64, 1), n_keys=1, samples=37, seed=3)
    np.testing.assert_array_equal(got.d_k, [1, 2, 64])
    # one key: the softmax is 1 whatever the logit, and its Jacobian is 0
    np.testing.assert_array_equal(got.max_raw, [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(got.jac_scaled, [0.0, 0.0, 0.0])
    big = scaling_sweep((2048,), n_keys=40, samples=70)  # more than one chunk of draws
    np.testing.assert_allclose(big.var_raw / 2048, 1.0, rtol=0.2)


@pytest.mark.parametrize(
    ("args", "kwargs", "needle"),
    [
        (((),), {}, "d_ks is empty"),
        (((4, 0),), {}, "each d_k must be a whole number >= 1, got 0"),
        (((4, 8.5),), {}, "each d_k must be a whole number"),
        ((), {"n_keys": 0}, "n_keys must be"),
        ((), {"samples": 0}, "samples must be"),
    ],
)
def test_sweep_rejects_bad_arguments(args, kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        scaling_sweep(*args, **kwargs)


def test_default_sweep_is_fast_enough_for_a_page():
    """The budget is 0.3 s on 2 cores (measured ~0.1 s); the bound here is loose against a
    busy test machine and still catches a slower algorithm."""
    best = min(_timed(scaling_sweep) for _ in range(3))
    assert best < 1.0, best


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start
