"""Head metrics, JS divergence, output change, PE offset similarity: inputs with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tformer.analysis.metrics import (
    METRICS,
    cluster_order,
    head_metrics,
    js_divergence_matrix,
    js_rows_budget,
    metrics_table,
    offset_similarity,
    output_change,
    sample_rows,
)

from ._reference import np_sinusoidal


def _stack(*heads: np.ndarray) -> np.ndarray:
    """Heads [query_pos, key_pos] -> pattern [layer=1, head_index, query_pos, key_pos], float32."""
    return np.stack(heads)[None].astype(np.float32)


def _random_pattern(rng: np.random.Generator, shape: tuple[int, ...], mask_p: float = 0.0) -> np.ndarray:
    """Softmax rows with some exact zeros (masked keys) and some all-zero rows (masked queries)."""
    logits = rng.normal(size=shape) * rng.uniform(0.1, 4.0)
    keep = rng.random(shape) > 0.2
    keep[..., 0] = True  # at least one visible key per row
    p = np.where(keep, np.exp(logits - logits.max(-1, keepdims=True)), 0.0)
    p /= p.sum(-1, keepdims=True)
    dead_rows = rng.random(shape[:-1]) < mask_p
    p[dead_rows] = 0.0
    return p.astype(np.float32)


def _slow_metrics(p: np.ndarray, cls_pos=None, sep_pos=None) -> dict[str, np.ndarray]:
    """Loop-per-row reference for head_metrics, straight from the formulas."""
    n_layer, n_head, n_q, n_k = p.shape
    skip = {"cls"} if cls_pos is None else set()
    skip |= {"sep"} if not sep_pos else set()
    out = {name: np.full((n_layer, n_head), np.nan) for name in METRICS if name not in skip}
    for layer in range(n_layer):
        for head in range(n_head):
            acc: dict[str, list[float]] = {name: [] for name in out}
            for q in range(n_q):
                row = p[layer, head, q].astype(np.float64)
                if row.sum() <= 0:
                    continue
                nz = row[row > 0]
                h = float(-(nz * np.log2(nz)).sum())
                acc["entropy"].append(h)
                acc["entropy_norm"].append(h / math.log2(nz.size) if nz.size > 1 else 0.0)
                acc["mean_distance"].append(sum(row[k] * abs(q - k) for k in range(n_k)))
                acc["self"].append(row[q])
                if q >= 1:
                    acc["previous"].append(row[q - 1])
                acc["first"].append(row[0])
                acc["max"].append(row.max())
                if cls_pos is not None:
                    acc["cls"].append(row[cls_pos])
                if sep_pos:
                    acc["sep"].append(sum(row[s] for s in sep_pos))
            for name, values in acc.items():
                if values:
                    out[name][layer, head] = np.mean(values)
    return out


# --- head_metrics: hand-built patterns ------------------------------------------------------


def test_identity_pattern_attends_to_self_only():
    n = 7
    m = head_metrics(_stack(np.eye(n)))
    assert m["self"][0, 0] == pytest.approx(1.0)
    assert m["mean_distance"][0, 0] == pytest.approx(0.0)
    assert m["entropy"][0, 0] == pytest.approx(0.0)
    assert m["entropy_norm"][0, 0] == pytest.approx(0.0)
    assert m["max"][0, 0] == pytest.approx(1.0)
    assert m["previous"][0, 0] == pytest.approx(0.0)
    assert m["first"][0, 0] == pytest.approx(1.0 / n)  # only row 0 puts weight on key 0


def test_uniform_pattern_has_maximal_entropy():
    n = 8
    m = head_metrics(_stack(np.full((n, n), 1.0 / n)))
    assert m["entropy"][0, 0] == pytest.approx(math.log2(n))
    assert m["entropy_norm"][0, 0] == pytest.approx(1.0)
    assert m["max"][0, 0] == pytest.approx(1.0 / n)
    assert m["self"][0, 0] == pytest.approx(1.0 / n)
    # mean |q - k| over all n*n pairs = (n^2 - 1) / (3n)
    assert m["mean_distance"][0, 0] == pytest.approx((n * n - 1) / (3 * n))


def test_shifted_identity_attends_to_previous_token():
    n = 6
    p = np.eye(n, k=-1)  # row q has its 1 at key q-1; row 0 is all zero (masked)
    m = head_metrics(_stack(p))
    assert m["previous"][0, 0] == pytest.approx(1.0)
    assert m["mean_distance"][0, 0] == pytest.approx(1.0)
    assert m["self"][0, 0] == pytest.approx(0.0)
    # query 1 is the only valid row with weight on key 0; 5 valid rows
    assert m["first"][0, 0] == pytest.approx(1.0 / (n - 1))


def test_causal_uniform_entropy_is_normalised_per_row():
    n = 5
    p = np.tril(np.ones((n, n)))
    p /= p.sum(-1, keepdims=True)  # row q uniform over keys 0..q
    m = head_metrics(_stack(p))
    assert m["entropy"][0, 0] == pytest.approx(np.mean([math.log2(q + 1) for q in range(n)]))
    # row 0 sees one key (defined as 0), every other row is uniform over what it sees (1)
    assert m["entropy_norm"][0, 0] == pytest.approx((n - 1) / n)


def test_masked_rows_are_ignored():
    rng = np.random.default_rng(0)
    p = _random_pattern(rng, (1, 1, 6, 6))
    masked = p.copy()
    masked[0, 0, [1, 4]] = 0.0
    m = head_metrics(masked)
    keep = [0, 2, 3, 5]
    row = p[0, 0, keep].astype(np.float64)
    assert m["max"][0, 0] == pytest.approx(row.max(-1).mean())
    assert m["self"][0, 0] == pytest.approx(np.mean([p[0, 0, q, q] for q in keep]))
    assert m["previous"][0, 0] == pytest.approx(np.mean([p[0, 0, q, q - 1] for q in keep if q >= 1]))


def test_fully_masked_head_gives_nan_not_zero():
    p = _stack(np.eye(4), np.zeros((4, 4)))
    m = head_metrics(p)
    for name in ("entropy", "self", "max", "mean_distance", "previous", "first"):
        assert np.isnan(m[name][0, 1]), name
        assert not np.isnan(m[name][0, 0]), name


def test_special_positions_cls_sep():
    n = 6
    p = np.zeros((n, n))
    p[:, 0] = 0.5  # [CLS]
    p[:, n - 1] = 0.3  # [SEP]
    p[:, 2] = 0.2
    pattern = _stack(p)
    m = head_metrics(pattern, cls_pos=0, sep_pos=n - 1)
    assert list(m) == list(METRICS)
    assert m["cls"][0, 0] == pytest.approx(0.5)
    assert m["sep"][0, 0] == pytest.approx(0.3)
    mask = np.zeros(n, dtype=bool)
    mask[[2, n - 1]] = True
    assert head_metrics(pattern, sep_pos=mask)["sep"][0, 0] == pytest.approx(0.5)


def test_metrics_without_positions_are_left_out():
    pattern = _stack(np.eye(4))
    plain = head_metrics(pattern)
    assert list(plain) == [name for name in METRICS if name not in ("cls", "sep")]
    # no [SEP] position at all (an empty list or an all-False mask) is the same as not given
    assert "sep" not in head_metrics(pattern, sep_pos=[])
    assert "sep" not in head_metrics(pattern, sep_pos=np.zeros(4, dtype=bool))
    only_cls = head_metrics(pattern, cls_pos=0)
    assert "cls" in only_cls
    assert "sep" not in only_cls


def test_metrics_are_placed_at_their_layer_and_head():
    n = 5
    heads = [np.eye(n), np.full((n, n), 1 / n), np.eye(n, k=-1)]
    p = np.stack([np.stack(heads), np.stack(heads[::-1])]).astype(np.float32)  # [2, 3, n, n]
    m = head_metrics(p)
    assert m["self"].shape == (2, 3)
    np.testing.assert_allclose(m["self"][0], [1.0, 1 / n, 0.0], atol=1e-7)
    np.testing.assert_allclose(m["self"][1], [0.0, 1 / n, 1.0], atol=1e-7)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_layer=st.integers(1, 2),
    n_head=st.integers(1, 3),
    n=st.integers(1, 7),
)
def test_head_metrics_matches_slow_reference(seed, n_layer, n_head, n):
    rng = np.random.default_rng(seed)
    p = _random_pattern(rng, (n_layer, n_head, n, n), mask_p=0.3)
    sep = sorted({int(rng.integers(n)), n - 1})
    fast = head_metrics(p, cls_pos=0, sep_pos=sep + sep)  # positions are a set: repeats ignored
    slow = _slow_metrics(p, cls_pos=0, sep_pos=sep)
    assert fast.keys() == slow.keys() == METRICS.keys()
    for name in METRICS:
        np.testing.assert_allclose(fast[name], slow[name], rtol=1e-9, atol=1e-9, err_msg=name)


@pytest.mark.parametrize(
    ("shape", "kwargs", "match"),
    [
        ((3, 4, 4), {}, r"\(3, 4, 4\)"),
        ((1, 2, 3, 4), {}, "query_pos == key_pos"),
        ((1, 1, 4, 4), {"cls_pos": 4}, "outside 0..3"),
        ((1, 1, 4, 4), {"sep_pos": [0, -1]}, "outside 0..3"),
        ((1, 1, 4, 4), {"sep_pos": np.ones(3, dtype=bool)}, r"\(4,\)"),
        ((1, 1, 4, 4), {"cls_pos": [0, 1]}, "one position"),
    ],
)
def test_head_metrics_rejects_bad_input(shape, kwargs, match):
    with pytest.raises(ValueError, match=match):
        head_metrics(np.zeros(shape, dtype=np.float32), **kwargs)


def test_metrics_table_rows():
    n = 4
    heads = np.stack([np.eye(n), np.full((n, n), 1 / 3)])
    p = np.stack([heads] * 3).astype(np.float32)  # [layer=3, head_index=2, n, n]
    metrics = head_metrics(p)
    rows = metrics_table(metrics)
    assert len(rows) == 6
    assert [(r["layer"], r["head"]) for r in rows] == [(layer, h) for layer in range(3) for h in range(2)]
    assert list(rows[0]) == ["layer", "head", *metrics]
    assert "cls" not in rows[0]  # a metric head_metrics left out has no column
    assert rows[0]["self"] == 1.0
    assert type(rows[0]["self"]) is float
    assert rows[1]["self"] == 0.3333  # rounded to 4 decimals
    # one position: "previous" is NaN for every head, which becomes an empty cell
    assert metrics_table(head_metrics(p[:, :, :1, :1]))[0]["previous"] is None
    with pytest.raises(ValueError, match="one shape"):
        metrics_table({"a": np.zeros((2, 2)), "b": np.zeros((2, 3))})


# --- js_divergence_matrix ---------------------------------------------------------------------


def _slow_jsd(p: np.ndarray) -> np.ndarray:
    def h(x):
        x = x[x > 0]
        return float(-(x * np.log2(x)).sum())

    n = p.shape[0]
    out = np.full((n, n), np.nan)
    for i in range(n):
        for j in range(n):
            vals = []
            for q in range(p.shape[1]):
                a, b = p[i, q].astype(np.float64), p[j, q].astype(np.float64)
                if a.sum() > 0 and b.sum() > 0:
                    vals.append(h((a + b) / 2) - (h(a) + h(b)) / 2)
            if vals:
                out[i, j] = np.mean(vals)
    return out


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 6), t=st.integers(1, 8))
def test_js_matches_slow_reference(seed, n, t):
    rng = np.random.default_rng(seed)
    p = _random_pattern(rng, (n, t, t), mask_p=0.2)
    fast = js_divergence_matrix(p)
    # a tiny chunk forces one head per block: the blocking must not change the answer
    chunked = js_divergence_matrix(p, max_chunk_elements=1)
    slow = _slow_jsd(p)
    np.testing.assert_allclose(fast, slow, atol=1e-6, equal_nan=True)
    np.testing.assert_allclose(chunked, fast, atol=1e-12, equal_nan=True)


def test_js_matrix_properties():
    rng = np.random.default_rng(1)
    p = _random_pattern(rng, (9, 12, 12))
    d = js_divergence_matrix(p)
    assert d.shape == (9, 9)
    np.testing.assert_array_equal(d, d.T)
    np.testing.assert_array_equal(np.diag(d), 0.0)
    assert (d >= 0).all()
    assert (d <= 1).all()
    assert (d[~np.eye(9, dtype=bool)] > 0).all()


def test_js_extremes_identical_and_disjoint():
    n = 4
    eye = np.eye(n, dtype=np.float32)
    other = np.roll(eye, 1, axis=1)  # every row on a different key: disjoint supports
    d = js_divergence_matrix(np.stack([eye, eye, other]))
    assert d[0, 1] == pytest.approx(0.0, abs=1e-7)
    assert d[0, 2] == pytest.approx(1.0, abs=1e-6)


def test_js_rejects_4d():
    with pytest.raises(ValueError, match=r"\[n, query_pos, key_pos\].*\(1, 2, 3, 3\)"):
        js_divergence_matrix(np.zeros((1, 2, 3, 3)))


# --- output_change ------------------------------------------------------------------------------


def test_output_change_values_and_zero_norms():
    base = np.array([[3.0, 4.0], [1.0, 0.0], [0.0, 0.0], [0.0, 0.0]], dtype=np.float32)
    ablated = np.array([[3.0, 4.0], [1.0, 1.0], [0.0, 0.0], [0.0, 2.0]], dtype=np.float32)
    change = output_change(base, ablated)
    assert change.shape == (4,)
    np.testing.assert_allclose(change[:3], [0.0, 1.0, 0.0])
    assert change[3] == np.inf
    batched = output_change(base[None].repeat(2, 0), ablated[None].repeat(2, 0))
    assert batched.shape == (2, 4)
    with pytest.raises(ValueError, match=r"\(4, 2\).*\(4, 3\)"):
        output_change(base, np.zeros((4, 3)))


# --- offset_similarity --------------------------------------------------------------------------


def test_sinusoidal_similarity_depends_on_offset_only():
    n_pos, d_model = 50, 16
    offsets, mean, std = offset_similarity(np_sinusoidal(n_pos, d_model))
    np.testing.assert_array_equal(offsets, np.arange(n_pos))
    assert std.max() < 1e-5
    omega = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    expected = np.cos(np.outer(offsets, omega)).sum(-1)  # sum_i cos(omega_i k)
    np.testing.assert_allclose(mean, expected, atol=1e-5)
    assert mean[0] == pytest.approx(d_model / 2, abs=1e-5)


def test_offset_similarity_matches_diagonals_for_random_pe():
    pe = np.random.default_rng(2).normal(size=(10, 4)).astype(np.float32)
    offsets, mean, std = offset_similarity(pe)
    gram = pe.astype(np.float64) @ pe.T.astype(np.float64)
    for k in offsets:
        diag = np.diagonal(gram, k)
        assert mean[k] == pytest.approx(diag.mean())
        assert std[k] == pytest.approx(diag.std(), abs=1e-9)
    assert std[1] > 0.1  # a random table is not translation invariant
    with pytest.raises(ValueError, match=r"\(3,\)"):
        offset_similarity(np.zeros(3))


# --- long texts and many heads: sampled rows, clustered order ---------------------------------


def test_js_divergence_over_sampled_rows_is_the_exact_one_on_those_rows():
    rng = np.random.default_rng(3)
    p = rng.random((5, 40, 40)).astype(np.float32)
    p /= p.sum(-1, keepdims=True)
    rows = sample_rows(40, 8)
    assert len(rows) == 8
    assert rows[0] == 0
    assert rows[-1] == 39
    assert np.allclose(js_divergence_matrix(p, max_rows=8), js_divergence_matrix(p[:, rows]), atol=1e-12)
    assert np.array_equal(js_divergence_matrix(p, max_rows=40), js_divergence_matrix(p))


def test_js_rows_budget_bounds_the_work_and_keeps_short_texts_exact():
    assert js_rows_budget(72, 16) == 16  # MiniLM, a sentence: every row
    rows = js_rows_budget(72, 512)
    assert 8 <= rows < 512
    assert 72 * 71 // 2 * rows * 512 <= 2e8
    assert js_rows_budget(384, 512) == 8  # never fewer than 8 rows


def test_cluster_order_puts_each_group_of_heads_in_one_block():
    rng = np.random.default_rng(0)
    group = rng.permutation(np.repeat(np.arange(4), 6))  # 24 heads in 4 groups, shuffled
    d = np.where(group[:, None] == group[None, :], 0.05, 0.9) + 0.01 * rng.random((24, 24))
    d = (d + d.T) / 2
    np.fill_diagonal(d, 0.0)
    order = cluster_order(d)
    assert sorted(order) == list(range(24))
    runs = [g for i, g in enumerate(group[order]) if i == 0 or g != group[order][i - 1]]
    assert len(runs) == 4  # each group is one contiguous block
    d[3, :] = d[:, 3] = np.nan  # a head with no valid rows goes somewhere, once
    assert sorted(cluster_order(d)) == list(range(24))
    assert cluster_order(np.zeros((0, 0))) == []
