"""Numbers that summarise what attention heads do (numpy only, no torch, no streamlit).

Inputs are captured arrays (float32 is fine); sums that can lose precision are done in
float64. Every function takes plain numpy arrays, so a page can cache its inputs with
``st.cache_data`` and a notebook can call it on anything shaped like an attention pattern.
Parameters carry the model's hook short names (``pattern``: the softmax weights).

Conventions: a ``pattern`` row is one query position's softmax weights over key positions, so
it sums to 1. A row that is all zero (a fully masked query) carries no information and is
ignored by every metric here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from .scaling import normalised_entropy, row_entropy

__all__ = [
    "METRICS",
    "cluster_order",
    "head_metrics",
    "js_divergence_matrix",
    "js_rows_budget",
    "metrics_table",
    "offset_similarity",
    "output_change",
    "sample_rows",
]

FloatArray = npt.NDArray[np.float64]
Positions = int | Iterable[int] | npt.NDArray[np.integer] | npt.NDArray[np.bool_]

# One line per metric, in the order head_metrics returns them: usable as column help in a table.
# "cls" and "sep" are returned only when their positions are given. "first" is always position 0 and
# "cls" always ``cls_pos`` (the head_roles role "cls" measures the same key).
METRICS: dict[str, str] = {
    "entropy": "mean over queries of H(p) = -sum_k p_k log2 p_k (bits); 0 = one key, log2 n = uniform over n",
    "entropy_norm": "entropy / log2(number of visible keys); 0 = one key, 1 = uniform",
    "mean_distance": "mean over queries of sum_k p_k |q - k| (positions)",
    "self": "mean weight on the query's own position, p[q, q]",
    "previous": "mean weight on the previous position, p[q, q-1], over q >= 1",
    "first": "mean weight on position 0, p[q, 0], whatever token stands there",
    "cls": "mean weight on the tokenizer's leading special token (e.g. [CLS]), p[q, cls_pos]",
    "sep": "mean total weight on the positions of the trailing special token(s) (e.g. [SEP])",
    "max": "mean over queries of the row maximum, max_k p_k",
}

_TINY32 = np.float32(np.finfo(np.float32).tiny)


def _positions(name: str, value: Positions | None, n_pos: int) -> npt.NDArray[np.int64] | None:
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
        raise ValueError(f"{name} position(s) {bad.tolist()} outside 0..{n_pos - 1} (key_pos={n_pos})")
    return np.unique(arr.astype(np.int64))


def _check_pattern(pattern: npt.ArrayLike) -> npt.NDArray[Any]:
    p = np.asarray(pattern)
    if p.ndim != 4:
        raise ValueError(f"pattern must be [layer, head_index, query_pos, key_pos], got shape {p.shape}")
    if p.shape[2] != p.shape[3]:
        raise ValueError(f"pattern must be self-attention (query_pos == key_pos), got shape {p.shape}")
    if p.shape[2] == 0:
        raise ValueError(f"pattern has no positions, shape {p.shape}")
    return p


def _row_sum_and_plogp(rows: npt.NDArray[np.floating]) -> tuple[FloatArray, FloatArray]:
    """For rows [..., key_pos]: (sum_k p, sum_k p log2 p) in float64, with 0·log 0 = 0."""
    x = rows.astype(np.float64)
    return x.sum(-1), (x * np.log2(np.where(x > 0, x, 1.0))).sum(-1)


def _masked_mean(values: FloatArray, mask: npt.NDArray[np.bool_]) -> FloatArray:
    """Mean over the last axis of ``values`` where ``mask``; 0 where the mask is empty."""
    mean: FloatArray = np.where(mask, values, 0.0).sum(-1) / np.maximum(mask.sum(-1), 1)
    return mean


def head_metrics(
    pattern: npt.ArrayLike,
    *,
    cls_pos: int | None = None,
    sep_pos: Positions | None = None,
) -> dict[str, FloatArray]:
    r"""Per-head summary numbers of attention ``pattern``: entropy, mean distance, and more.

    .. math::

        H_q = -\sum_k p_{qk} \log_2 p_{qk} \qquad \bar d_q = \sum_k p_{qk}\,|q - k|

    ``pattern``: [layer, head_index, query_pos, key_pos], rows summing to 1; all-zero rows
    (fully masked queries) are ignored. ``cls_pos``: the position of the tokenizer's leading
    special token (e.g. [CLS]), one int: the key "cls" measures ("first" is always position 0,
    whatever token stands there). ``sep_pos``: the positions of its trailing special
    token(s) (e.g. [SEP]), an int, ints or a bool mask [key_pos]. Returns
    ``{name: array [layer, head_index]}`` (float64) with the keys of :data:`METRICS`, in that
    order, each a mean over the valid query rows q (NaN for a head with no valid row); "cls"
    and "sep" are left out when their positions are not given (None or none at all):

    - entropy:       :math:`H_q` above (bits, 0·log 0 = 0;
      :func:`tformer.analysis.scaling.row_entropy`)
    - entropy_norm:  :math:`H_q / \log_2 n_q`, :math:`n_q` = keys with :math:`p_{qk} > 0`
      (0 when :math:`n_q = 1`; :func:`tformer.analysis.scaling.normalised_entropy`). Keys are
      counted from the pattern: a weight that underflowed to exactly 0 in float32 counts as
      masked.
    - mean_distance: :math:`\bar d_q` above (positions)
    - self:          :math:`p_{qq}`
    - previous:      :math:`p_{q,q-1}`, over :math:`q \ge 1` only (NaN with one position)
    - first:         :math:`p_{q0}`
    - cls:           :math:`p_{q,c}`, c = ``cls_pos``
    - sep:           :math:`\sum_{s \in S} p_{qs}`, S = ``sep_pos``
    - max:           :math:`\max_k p_{qk}`
    """
    p = _check_pattern(pattern)
    n_layer, n_head, n_q, n_k = p.shape
    cls = _positions("cls_pos", cls_pos, n_k)
    if cls is not None and cls.size != 1:
        raise ValueError(f"cls_pos must be one position, got {cls_pos!r}")
    sep = _positions("sep_pos", sep_pos, n_k)
    given = {"cls": cls is not None, "sep": sep is not None and sep.size > 0}

    q_idx = np.arange(n_q)
    dist = np.abs(q_idx[:, None] - np.arange(n_k)[None, :]).astype(np.float64)  # |q - k|
    out = {name: np.full((n_layer, n_head), np.nan) for name in METRICS if given.get(name, True)}

    # One layer at a time bounds the float64 temporaries to [head_index, query_pos, key_pos].
    for layer in range(n_layer):
        pl = p[layer].astype(np.float64)  # [head_index, query_pos, key_pos]
        valid = pl.sum(-1) > 0  # [head_index, query_pos]
        has_rows = valid.any(-1)  # [head_index]

        entropy = row_entropy(pl)  # [head_index, query_pos]
        entropy_norm = normalised_entropy(entropy, pl)

        rows: dict[str, FloatArray] = {  # each [head_index, query_pos], averaged over valid rows
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
        for name, v in rows.items():
            out[name][layer] = np.where(has_rows, _masked_mean(v, valid), np.nan)
        if n_q > 1:
            previous_valid = valid[:, 1:]  # query 0 has no previous position
            previous = _masked_mean(pl[:, q_idx[1:], q_idx[1:] - 1], previous_valid)
            out["previous"][layer] = np.where(previous_valid.any(-1), previous, np.nan)
    return out


def metrics_table(metrics: Mapping[str, npt.ArrayLike], *, decimals: int = 4) -> list[dict[str, Any]]:
    """Rows ``{"layer", "head", <metric>: float}`` for a sortable table, one per head.

    ``metrics`` is :func:`head_metrics`'s output (every value [layer, head_index]); the columns
    are its keys, in its order, so a metric it left out has no column. Values become plain
    Python floats rounded to ``decimals``; NaN (a head with no valid row) becomes ``None`` so a
    table shows an empty cell rather than a number.
    """
    if not metrics:
        return []
    shapes = {name: np.shape(v) for name, v in metrics.items()}
    shape = next(iter(shapes.values()))
    if len(shape) != 2 or any(s != shape for s in shapes.values()):
        raise ValueError(f"every metric must be [layer, head_index] of one shape, got {shapes}")
    arrays = {name: np.asarray(v, dtype=np.float64) for name, v in metrics.items()}
    rows: list[dict[str, Any]] = []
    for layer in range(shape[0]):
        for head in range(shape[1]):
            row: dict[str, Any] = {"layer": layer, "head": head}
            for name, arr in arrays.items():
                x = float(arr[layer, head])
                row[name] = None if np.isnan(x) else round(x, decimals)
            rows.append(row)
    return rows


def js_divergence_matrix(
    pattern: npt.ArrayLike, *, max_rows: int | None = None, max_chunk_elements: int = 1 << 22
) -> FloatArray:
    r"""Mean Jensen-Shannon divergence between every pair of heads: [n, n], symmetric, 0 diagonal.

    For heads i, j and each query row q, with p and r the two heads' rows:

    .. math::

        \mathrm{JSD}(p\,\|\,r) = \tfrac12 \mathrm{KL}(p\,\|\,m) + \tfrac12 \mathrm{KL}(r\,\|\,m),
        \quad m = \tfrac12 (p + r)

        \mathrm{JSD}(p\,\|\,r) = H(m) - \tfrac12 (H(p) + H(r))
        = \tfrac12 \sum_k \big[p_k \log_2 p_k + r_k \log_2 r_k\big] - \sum_k m_k \log_2 m_k

    ``pattern``: n heads' patterns [n, query_pos, key_pos] (e.g.
    ``pattern.reshape(-1, query_pos, key_pos)`` of a [layer, head_index, query_pos, key_pos]
    capture: all heads of all layers, layer-major). JSD is in bits, so in [0, 1]; the result
    is the mean over rows valid (not all zero) in both heads (NaN if there is none). Cost is
    one pass over [query_pos, key_pos] per pair of heads. With ``max_rows`` (for long texts and
    many heads) the mean is taken over that many evenly spaced query rows (`sample_rows`), an
    estimate of the mean over all rows;
    ``max_chunk_elements`` bounds the float32 working buffers (two of that many elements).
    The elementwise log runs in float32 (faster than float64); per-row sums are combined in
    float64, which keeps the error near 1e-6.
    """
    p = np.asarray(pattern)
    if p.ndim != 3:
        raise ValueError(f"pattern must be [n, query_pos, key_pos], got shape {p.shape}")
    if max_rows is not None:
        p = p[:, sample_rows(p.shape[1], max_rows)]
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


def sample_rows(n: int, max_rows: int) -> npt.NDArray[np.intp]:
    """``min(n, max_rows)`` evenly spaced indices into ``range(n)``, first and last included."""
    if max_rows < 1:
        raise ValueError(f"max_rows={max_rows} must be >= 1")
    if n <= max_rows:
        return np.arange(n)
    return np.unique(np.round(np.linspace(0, n - 1, max_rows)).astype(np.intp))


def js_rows_budget(n_heads: int, n_pos: int, budget: float = 2e8) -> int:
    """How many query rows `js_divergence_matrix` can average over for ``n_heads`` heads of
    ``n_pos`` tokens while its elementwise work (pairs x rows x keys) stays within ``budget``."""
    pairs = max(n_heads * (n_heads - 1) // 2, 1)
    return int(min(n_pos, max(8, budget // (pairs * max(n_pos, 1)))))


def cluster_order(distance: npt.ArrayLike) -> list[int]:
    r"""An order of the items that puts similar ones next to each other: the leaf order of an
    average-linkage clustering of the symmetric ``distance`` matrix [n, n].

    Each step merges the two clusters with the smallest mean distance between their members
    (NaN counts as the largest distance); a merged cluster keeps its two parts side by side,
    so every cluster of the tree is a contiguous block of the returned order.
    """
    d = np.array(distance, dtype=np.float64)
    if d.ndim != 2 or d.shape[0] != d.shape[1]:
        raise ValueError(f"distance must be a square [n, n] matrix, got shape {d.shape}")
    n = d.shape[0]
    if n == 0:
        return []
    finite = d[np.isfinite(d)]
    d = np.where(np.isfinite(d), d, (finite.max() if finite.size else 0.0) + 1.0)
    d = (d + d.T) / 2  # [n, n], symmetric
    members: dict[int, list[int]] = {i: [i] for i in range(n)}
    size = np.ones(n)
    alive = np.ones(n, dtype=bool)
    np.fill_diagonal(d, np.inf)
    for _ in range(n - 1):
        masked = np.where(alive[:, None] & alive[None, :], d, np.inf)
        i, j = (int(x) for x in np.unravel_index(np.argmin(masked), masked.shape))
        a, b = min(i, j), max(i, j)
        # average linkage: the merged cluster's distance to c is the size-weighted mean
        merged = (size[a] * d[a] + size[b] * d[b]) / (size[a] + size[b])
        d[a], d[:, a] = merged, merged
        d[a, a] = np.inf
        size[a] += size[b]
        alive[b] = False
        members[a] = members[a] + members.pop(b)
    (order,) = members.values()
    return order


def output_change(base: npt.ArrayLike, ablated: npt.ArrayLike) -> FloatArray:
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


def offset_similarity(
    pe: npt.ArrayLike,
) -> tuple[npt.NDArray[np.int64], FloatArray, FloatArray]:
    r"""Dot products :math:`PE_i \cdot PE_{i+k}` grouped by offset k: (offsets, mean, std).

    .. math::

        \mu_k = \frac{1}{n - k} \sum_{i=0}^{n-1-k} PE_i \cdot PE_{i+k}

        PE_i \cdot PE_{i+k} = \sum_j \cos(\omega_j k),\quad \omega_j = 10000^{-2j/d_\text{model}}
        \quad (\text{sinusoidal})

    ``pe``: [pos, d_model], n = pos. Returns ``offsets = 0..pos-1`` (int64) and, per offset, the
    mean :math:`\mu_k` and the standard deviation (float64) of the ``pos - k`` products. For
    sinusoidal encodings the product depends on k alone (second line), so std is ~0 (float32
    rounding); a learned encoding generally shows a spread.
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
