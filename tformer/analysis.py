"""Numbers that summarise what attention heads do (numpy only, no torch, no streamlit).

Inputs are captured arrays (float32 is fine); sums that can lose precision are done in
float64. Every function takes plain numpy arrays, so a page can cache its inputs with
``st.cache_data`` and a notebook can call it on anything shaped like an attention pattern.

Conventions: a pattern row is one query position's softmax weights over key positions, so it
sums to 1. A row that is all zero (a fully masked query) carries no information and is ignored
by every metric here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

__all__ = [
    "METRICS",
    "head_metrics",
    "metrics_table",
    "js_divergence_matrix",
    "output_change",
    "offset_similarity",
]

# One line per metric, in the order head_metrics returns them: usable as column help in a table.
METRICS: dict[str, str] = {
    "entropy": "mean over queries of H(p) = -sum_k p_k log2 p_k (bits); 0 = one key, "
    "log2 n = uniform over n",
    "entropy_norm": "entropy / log2(number of visible keys); 0 = one key, 1 = uniform",
    "mean_distance": "mean over queries of sum_k p_k |q - k| (positions)",
    "self": "mean weight on the query's own position, p[q, q]",
    "prev": "mean weight on the previous position, p[q, q-1], over q >= 1",
    "first": "mean weight on position 0, p[q, 0]",
    "cls": "mean weight on the [CLS] position (NaN when not given)",
    "sep": "mean total weight on the [SEP] positions (NaN when not given)",
    "special": "mean total weight on all special-token positions (NaN when not given)",
    "max": "mean over queries of the row maximum, max_k p_k",
}

_TINY32 = np.float32(np.finfo(np.float32).tiny)


def _positions(name: str, value: Any, n_pos: int) -> np.ndarray | None:
    """Normalise an int, an iterable of ints or a bool mask [key_pos] to sorted unique positions."""
    if value is None:
        return None
    arr = np.asarray(value)
    if arr.dtype == bool:
        if arr.shape != (n_pos,):
            raise ValueError(f"{name} mask has shape {arr.shape}, expected ({n_pos},) [key_pos]")
        return np.flatnonzero(arr)
    arr = np.atleast_1d(arr)
    if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"{name} must be an int, ints or a bool mask, got {value!r}")
    bad = arr[(arr < 0) | (arr >= n_pos)]
    if bad.size:
        raise ValueError(
            f"{name} position(s) {bad.tolist()} outside 0..{n_pos - 1} (key_pos={n_pos})"
        )
    return np.unique(arr.astype(np.int64))


def _check_patterns(patterns: Any) -> np.ndarray:
    p = np.asarray(patterns)
    if p.ndim != 4:
        raise ValueError(
            f"patterns must be [layer, head_index, query_pos, key_pos], got shape {p.shape}"
        )
    if p.shape[2] != p.shape[3]:
        raise ValueError(
            f"patterns must be self-attention (query_pos == key_pos), got shape {p.shape}"
        )
    if p.shape[2] == 0:
        raise ValueError(f"patterns has no positions, shape {p.shape}")
    return p


def _row_sum_and_plogp(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For rows [..., key_pos]: (sum_k p, sum_k p log2 p) in float64, with 0·log 0 = 0."""
    x = rows.astype(np.float64)
    return x.sum(-1), (x * np.log2(np.where(x > 0, x, 1.0))).sum(-1)


def _masked_mean(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean over the last axis of ``values`` where ``mask``; 0 where the mask is empty."""
    return np.where(mask, values, 0.0).sum(-1) / np.maximum(mask.sum(-1), 1)


def head_metrics(
    patterns: np.ndarray,
    *,
    special: Iterable[int] | np.ndarray | None = None,
    cls_pos: int | None = None,
    sep_pos: int | Iterable[int] | np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    r"""Per-head summary numbers of attention patterns.

    ``patterns``: [layer, head_index, query_pos, key_pos], rows summing to 1; all-zero rows
    (fully masked queries) are ignored. ``special``, ``sep_pos``: positions as ints or a bool
    mask [key_pos]; ``cls_pos``: one position. Returns ``{name: array [layer, head_index]}``
    (float64) with the keys of :data:`METRICS`, each a mean over the valid query rows q
    (NaN for a head with no valid row):

    - entropy:       :math:`H_q = -\sum_k p_{qk} \log_2 p_{qk}` (bits, 0·log 0 = 0)
    - entropy_norm:  :math:`H_q / \log_2 n_q`, :math:`n_q` = keys with :math:`p_{qk} > 0`
      (0 when :math:`n_q = 1`). Keys are counted from the pattern: a weight that underflowed
      to exactly 0 in float32 counts as masked.
    - mean_distance: :math:`\sum_k p_{qk}\,|q - k|`
    - self:          :math:`p_{qq}`
    - prev:          :math:`p_{q,q-1}`, over :math:`q \ge 1` only
    - first:         :math:`p_{q0}`
    - cls:           :math:`p_{q,c}`, c = ``cls_pos`` (NaN if None)
    - sep:           :math:`\sum_{s \in S} p_{qs}`, S = ``sep_pos`` (NaN if None or empty)
    - special:       :math:`\sum_{s \in S} p_{qs}`, S = ``special`` (NaN if None or empty)
    - max:           :math:`\max_k p_{qk}`
    """
    p = _check_patterns(patterns)
    n_layer, n_head, n_q, n_k = p.shape
    cls = _positions("cls_pos", cls_pos, n_k)
    if cls is not None and cls.size != 1:
        raise ValueError(f"cls_pos must be one position, got {cls_pos!r}")
    sep = _positions("sep_pos", sep_pos, n_k)
    spec = _positions("special", special, n_k)

    q_idx = np.arange(n_q)
    dist = np.abs(q_idx[:, None] - np.arange(n_k)[None, :]).astype(np.float64)  # |q - k|
    out = {name: np.full((n_layer, n_head), np.nan) for name in METRICS}

    # One layer at a time bounds the float64 temporaries to [head_index, query_pos, key_pos].
    for layer in range(n_layer):
        pl = p[layer].astype(np.float64)  # [head_index, query_pos, key_pos]
        valid = pl.sum(-1) > 0  # [head_index, query_pos]
        has_rows = valid.any(-1)  # [head_index]

        positive = pl > 0
        entropy = -(pl * np.log2(np.where(positive, pl, 1.0))).sum(-1)  # [head_index, query_pos]
        log_n = np.log2(np.maximum(positive.sum(-1), 1))
        entropy_norm = np.divide(entropy, log_n, out=np.zeros_like(entropy), where=log_n > 0)

        rows = {  # each [head_index, query_pos], averaged over valid rows below
            "entropy": entropy,
            "entropy_norm": entropy_norm,
            "mean_distance": (pl * dist).sum(-1),
            "self": pl[:, q_idx, q_idx],
            "first": pl[:, :, 0],
            "max": pl.max(-1),
        }
        if cls is not None:
            rows["cls"] = pl[:, :, cls[0]]
        if sep is not None and sep.size:
            rows["sep"] = pl[:, :, sep].sum(-1)
        if spec is not None and spec.size:
            rows["special"] = pl[:, :, spec].sum(-1)
        for name, v in rows.items():
            out[name][layer] = np.where(has_rows, _masked_mean(v, valid), np.nan)
        if n_q > 1:
            prev_valid = valid[:, 1:]  # query 0 has no previous position
            prev = _masked_mean(pl[:, q_idx[1:], q_idx[1:] - 1], prev_valid)
            out["prev"][layer] = np.where(prev_valid.any(-1), prev, np.nan)
    return out


def metrics_table(metrics: Mapping[str, np.ndarray], *, decimals: int = 4) -> list[dict[str, Any]]:
    """Rows ``{"layer", "head", <metric>: float}`` for a sortable table, one per head.

    ``metrics`` is :func:`head_metrics`'s output (every value [layer, head_index]). Values become
    plain Python floats rounded to ``decimals``; NaN (not applicable) becomes ``None`` so a
    table shows an empty cell rather than a number.
    """
    if not metrics:
        return []
    shapes = {name: np.shape(v) for name, v in metrics.items()}
    shape = next(iter(shapes.values()))
    if len(shape) != 2 or any(s != shape for s in shapes.values()):
        raise ValueError(f"every metric must be [layer, head_index] of one shape, got {shapes}")
    arrays = {name: np.asarray(v, dtype=np.float64) for name, v in metrics.items()}
    rows = []
    for layer in range(shape[0]):
        for head in range(shape[1]):
            row: dict[str, Any] = {"layer": layer, "head": head}
            for name, arr in arrays.items():
                x = float(arr[layer, head])
                row[name] = None if np.isnan(x) else round(x, decimals)
            rows.append(row)
    return rows


def js_divergence_matrix(
    patterns_flat: np.ndarray, *, max_chunk_elements: int = 1 << 22
) -> np.ndarray:
    r"""Mean Jensen-Shannon divergence between every pair of heads: [n, n], symmetric, 0 diagonal.

    ``patterns_flat``: [n, query_pos, key_pos] (e.g. ``patterns.reshape(-1, q, k)`` for all
    heads of all layers). For heads i, j and each query row q, with :math:`m = (p + r)/2`:

    .. math:: \mathrm{JSD}(p \| r) = H(m) - \tfrac12 (H(p) + H(r))
              = \tfrac12 \sum_k \big[p_k \log_2 p_k + r_k \log_2 r_k\big] - \sum_k m_k \log_2 m_k

    in bits, so in [0, 1]; the result is the mean over rows valid (not all zero) in both heads
    (NaN if there is none). Cost is one pass over [query_pos, key_pos] per pair of heads;
    ``max_chunk_elements`` bounds the float32 working buffers (two of that many elements).
    The elementwise log runs in float32 (twice as fast as float64); per-row sums are combined
    in float64, which keeps the error near 1e-6.
    """
    p = np.asarray(patterns_flat)
    if p.ndim != 3:
        raise ValueError(f"patterns_flat must be [n, query_pos, key_pos], got shape {p.shape}")
    n, n_q, n_k = p.shape
    p = np.ascontiguousarray(p, dtype=np.float32)
    row_sum = np.empty((n, n_q))  # [n, query_pos]
    neg_h = np.empty((n, n_q))  # [n, query_pos], sum_k p log2 p = -H(p)
    for i in range(n):  # one head at a time: no float64 copy of the whole stack
        row_sum[i], neg_h[i] = _row_sum_and_plogp(p[i])
    valid = row_sum > 0  # [n, query_pos]

    out = np.zeros((n, n), dtype=np.float64)
    row_elems = max(n_q * n_k, 1)
    chunk = max(1, max_chunk_elements // row_elems)
    buf = np.empty((min(chunk, max(n - 1, 1)), n_q, n_k), dtype=np.float32)
    tmp = np.empty_like(buf)
    for i in range(n - 1):
        for j0 in range(i + 1, n, chunk):
            j1 = min(j0 + chunk, n)
            c = j1 - j0
            s, t = buf[:c], tmp[:c]
            # s = p_i + p_j = 2m;  sum_k m log2 m = (sum_k s log2 s)/2 - (sum_k s)/2
            np.add(p[i][None], p[j0:j1], out=s)
            np.maximum(s, _TINY32, out=t)  # log of 0 -> finite; multiplied by s = 0 below
            np.log2(t, out=t)
            s_log_s = np.einsum("cqk,cqk->cq", t, s).astype(np.float64)  # [c, query_pos]
            m_log_m = 0.5 * s_log_s - 0.5 * (row_sum[i][None] + row_sum[j0:j1])
            jsd = 0.5 * (neg_h[i][None] + neg_h[j0:j1]) - m_log_m  # [c, query_pos]
            both = valid[i][None] & valid[j0:j1]
            count = both.sum(-1)
            mean = np.where(both, jsd, 0.0).sum(-1) / np.maximum(count, 1)
            mean = np.where(count > 0, np.clip(mean, 0.0, 1.0), np.nan)
            out[i, j0:j1] = mean
            out[j0:j1, i] = mean
    # A head with no valid row has an undefined divergence even from itself.
    out[np.arange(n), np.arange(n)] = np.where(valid.any(-1), 0.0, np.nan)
    return out


def output_change(base: np.ndarray, ablated: np.ndarray) -> np.ndarray:
    r"""Relative change of each position's hidden state: :math:`\|a - b\|_2 / \|b\|_2`.

    ``base`` (b) and ``ablated`` (a): [..., pos, d_model] of the same shape, usually
    [pos, d_model]. Returns [..., pos] in float64. Where :math:`\|b\| = 0` the change is 0 if a
    equals b and ``inf`` otherwise (any change of a zero vector is infinitely large relative to it).
    """
    b = np.asarray(base, dtype=np.float64)
    a = np.asarray(ablated, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"base has shape {b.shape} but ablated has shape {a.shape}")
    if b.ndim < 2:
        raise ValueError(f"expected [..., pos, d_model], got shape {b.shape}")
    diff = np.linalg.norm(a - b, axis=-1)
    norm = np.linalg.norm(b, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = diff / norm
    rel = np.where(norm > 0, rel, np.where(diff > 0, np.inf, 0.0))
    return rel


def offset_similarity(pe: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Dot products :math:`PE_i \cdot PE_{i+k}` grouped by offset k: (offsets, mean, std).

    ``pe``: [pos, d_model]. Returns ``offsets = 0..pos-1`` (int64) and, per offset, the mean and
    the standard deviation (float64) of the ``pos - k`` products. For sinusoidal encodings
    :math:`PE_i \cdot PE_{i+k} = \sum_j \cos(\omega_j k)` depends on k alone, so std is ~0
    (float32 rounding); a learned encoding generally shows a spread.
    """
    x = np.asarray(pe, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] == 0:
        raise ValueError(f"pe must be [pos, d_model] with pos >= 1, got shape {x.shape}")
    n = x.shape[0]
    gram = x @ x.T  # [pos, pos]
    i, j = np.triu_indices(n)  # j >= i
    k = j - i
    vals = gram[i, j]
    counts = np.bincount(k, minlength=n)  # pos - k, never 0
    mean = np.bincount(k, weights=vals, minlength=n) / counts
    # Two passes (mean, then squared deviations) avoid E[x^2] - E[x]^2 cancellation.
    var = np.bincount(k, weights=(vals - mean[k]) ** 2, minlength=n) / counts
    return np.arange(n, dtype=np.int64), mean, np.sqrt(var)
