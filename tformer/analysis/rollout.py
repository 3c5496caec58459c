r"""Attention across layers and inside one head's query/key space (numpy only, no torch).

Two views that go beyond a single [query_pos, key_pos] matrix:

- attention rollout (Abnar & Zuidema, 2020, "Quantifying Attention Flow in Transformers"):
  how much each output position draws on each *input* token once every layer is chained,
  counting the residual connection as attention to oneself;
- one head's queries and keys drawn in one 2-D plane (AttentionViz, Yeh et al., 2023): the
  weights come from dot products, so a query sits near the keys it attends to.

Inputs are captured arrays (float32 is fine); the arithmetic runs in float64 and the results
are float64. Parameters carry the model's hook short names (``pattern``, ``q``, ``k``). A
``pattern`` row is one query's softmax weights over the keys and sums to 1; a row that is all
zero is a fully masked query (NaN, what a plain softmax gives such a row, is read as 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = [
    "HOW",
    "Projection",
    "attention_rollout",
    "combine_heads",
    "project_2d",
    "top_pairs",
]

FloatArray = npt.NDArray[np.float64]
# How heads are combined (a plain str, so a widget's value can be passed straight in).
HOW: tuple[str, ...] = ("mean", "max")
# A principal component whose singular value is below this fraction of the largest one carries
# only rounding noise: its coordinates are set to exactly 0 (and its share of variance to 0).
_RANK_TOL = 1e-9


def _check_pattern(pattern: npt.ArrayLike) -> FloatArray:
    """``pattern`` [layer, head_index, query_pos, key_pos] as float64, NaN read as 0."""
    p = np.asarray(pattern)
    if p.ndim != 4:
        raise ValueError(f"pattern must be [layer, head_index, query_pos, key_pos], got shape {p.shape}")
    if p.shape[2] != p.shape[3]:
        raise ValueError(f"pattern must be self-attention (query_pos == key_pos), got shape {p.shape}")
    if 0 in p.shape:
        raise ValueError(f"pattern needs at least one layer, head and position, got shape {p.shape}")
    return np.nan_to_num(p.astype(np.float64), nan=0.0)


def combine_heads(pattern: npt.ArrayLike, how: str = "mean") -> FloatArray:
    r"""All heads of each layer in one [query_pos, key_pos] matrix.

    .. math::

        \bar A_l = \frac1H \sum_{h=1}^{H} A_{l,h} \quad (\text{mean})
        \qquad
        \bar A_l[q, k] = \max_h A_{l,h}[q, k] \quad (\text{max})

    ``pattern``: [layer, head_index, query_pos, key_pos]. Returns [layer, query_pos, key_pos]
    (float64). The mean of rows that sum to 1 sums to 1 again; the max does not (a row sums to
    between 1 and H), so renormalise it before reading it as weights (:func:`attention_rollout`
    does).
    """
    if how not in HOW:
        raise ValueError(f"how must be 'mean' or 'max', got {how!r}")
    p = _check_pattern(pattern)
    combined: FloatArray = p.mean(axis=1) if how == "mean" else p.max(axis=1)
    return combined  # [layer, query_pos, key_pos]


def _normalize_rows(a: FloatArray) -> FloatArray:
    """Rows [..., key_pos] divided by their sums; an all-zero row stays all zero."""
    total = a.sum(-1, keepdims=True)
    rows: FloatArray = np.divide(a, total, out=np.zeros_like(a), where=total > 0)
    return rows


def attention_rollout(pattern: npt.ArrayLike, *, residual: float = 0.5, how: str = "mean") -> FloatArray:
    r"""Attention rollout: how much each position draws on each input token, layer by layer.

    .. math::

        \hat A_l = \operatorname{rownorm}\!\big(r\,I + (1 - r)\,\bar A_l\big),
        \qquad \operatorname{rownorm}(M)_{qk} = \frac{M_{qk}}{\sum_{k'} M_{qk'}}

        R_0 = \hat A_0, \qquad R_l = \hat A_l\, R_{l-1}

    :math:`\bar A_l` is the heads' mean of layer l (:func:`combine_heads`; ``how="max"`` takes
    their maximum instead) and r = ``residual``: the share of each position that the residual
    connection carries through unchanged, counted as attention to itself (Abnar & Zuidema,
    2020, use r = 0.5). :math:`R_l[q, k]` is how much position q after layer l draws on input
    token k; with every :math:`\hat A_l` row-stochastic, so is every :math:`R_l` (rows sum to 1).

    ``pattern``: [layer, head_index, query_pos, key_pos]. Returns [layer, query_pos, key_pos]
    (float64): the rollout up to and including each layer, ``R[-1]`` over the whole stack.

    Fully masked queries (an all-zero row of :math:`\bar A_l`): with r > 0 the residual term
    keeps the row, which becomes :math:`e_q` after renormalising (the position keeps what it
    had, as the residual connection does). Rows are renormalised only where their sum is
    nonzero, so with r = 0 such a row stays all zero, and so do the rollout rows that go
    through it (their sums then fall below 1).
    """
    if not 0.0 <= residual <= 1.0:
        raise ValueError(f"residual={residual} must be in [0, 1]")
    mixed = combine_heads(pattern, how)  # [layer, query_pos, key_pos]
    n_layer, n_pos, _ = mixed.shape
    eye = np.eye(n_pos)
    # 1. add the residual connection, 2. renormalise each row
    a_hat = _normalize_rows(residual * eye + (1.0 - residual) * mixed)  # [layer, query_pos, key_pos]
    out = np.empty_like(a_hat)
    out[0] = a_hat[0]
    # 3. chain the layers: layer l reads positions that already mix the inputs by R_{l-1}
    for layer in range(1, n_layer):
        out[layer] = a_hat[layer] @ out[layer - 1]
    return out


@dataclass(frozen=True, eq=False)
class Projection:
    """One head's queries and keys in the plane of their first two principal components."""

    q2: FloatArray  # [pos, 2] the queries' coordinates (PC1, PC2)
    k2: FloatArray  # [pos, 2] the keys' coordinates, after the optional translation
    explained: FloatArray  # [2] share of the variance along PC1 and PC2 (0 for a missing one)
    components: FloatArray  # [2, d_head] the two unit directions (a zero row for a missing one)
    center: FloatArray  # [d_head] the joint mean of the queries and (translated) keys
    key_shift: FloatArray  # [d_head] what was added to every key (zeros without translate_keys)


def project_2d(q: npt.ArrayLike, k: npt.ArrayLike, *, translate_keys: bool = False) -> Projection:
    r"""One head's queries ``q`` and keys ``k`` [pos, d_head] projected to 2-D by PCA.

    .. math::

        X = \begin{bmatrix} Q \\ K + \mathbf 1 c^\top \end{bmatrix},\quad
        \mu = \operatorname{mean}_\text{rows}(X),\quad
        X - \mathbf 1 \mu^\top = U \Sigma V^\top,\quad
        \text{coordinates} = (X - \mathbf 1 \mu^\top)\, V_{:, :2}

        c = \bar q - \bar k \ (\text{translate\_keys}),\ \text{else}\ 0;
        \qquad \text{explained}_i = \frac{\sigma_i^2}{\sum_j \sigma_j^2}

    Queries and keys are stacked (2·pos points) and centred on their joint mean, so both live
    in one plane. Moving every key by the same c changes no weight: each query's scores
    :math:`q \cdot (k + c) = q \cdot k + q \cdot c` all shift by one number, which the softmax
    over keys ignores. ``translate_keys=True`` picks c so the keys' mean lands on the queries'
    mean (as AttentionViz does): otherwise the two clouds often sit apart and the plane spends
    its first axis on that gap.

    The sign of each component is fixed (its loading of largest magnitude is positive, the
    first one on a tie), so the same input always gives the same picture. With d_head = 1, or
    when the points span fewer than two directions (e.g. pos = 1), the missing coordinate is 0
    and so is its share of the variance; points that all coincide give all zeros.
    """
    qa, ka = np.asarray(q), np.asarray(k)
    if qa.ndim != 2 or ka.ndim != 2 or qa.shape != ka.shape:
        raise ValueError(f"q and k must be [pos, d_head] of one shape, got {qa.shape} and {ka.shape}")
    n_pos, d_head = qa.shape
    if n_pos == 0 or d_head == 0:
        raise ValueError(f"q and k need at least one position and one dimension, got shape {qa.shape}")
    qf, kf = qa.astype(np.float64), ka.astype(np.float64)
    shift = qf.mean(0) - kf.mean(0) if translate_keys else np.zeros(d_head)
    x = np.concatenate([qf, kf + shift])  # [2 * pos, d_head]
    center = x.mean(0)
    xc = x - center
    # 1. principal directions: the rows of vt, largest singular value first
    _, s, vt = np.linalg.svd(xc, full_matrices=False)  # s [r], vt [r, d_head], r = min(2 pos, d_head)
    # 2. deterministic signs: the largest |loading| of each direction is positive
    lead = vt[np.arange(len(vt)), np.argmax(np.abs(vt), axis=1)]
    vt = vt * np.where(lead < 0, -1.0, 1.0)[:, None]
    # 3. keep two directions; a missing or noise-only one becomes a zero row
    keep = s > _RANK_TOL * (s[0] if s.size else 0.0)
    components = np.zeros((2, d_head))
    n_keep = min(2, len(s))
    components[:n_keep] = np.where(keep[:n_keep, None], vt[:n_keep], 0.0)
    total = float(np.sum(s**2))
    explained = np.zeros(2)
    if total > 0:
        explained[:n_keep] = np.where(keep[:n_keep], s[:n_keep] ** 2 / total, 0.0)
    coords = xc @ components.T  # [2 * pos, 2]
    return Projection(
        q2=coords[:n_pos],
        k2=coords[n_pos:],
        explained=explained,
        components=components,
        center=center,
        key_shift=shift,
    )


def top_pairs(pattern: npt.ArrayLike, n: int = 10) -> list[tuple[int, int, float]]:
    r"""The ``n`` largest weights of one head's ``pattern`` [query_pos, key_pos].

    Returns ``(query_pos, key_pos, weight)`` tuples, largest weight first; equal weights keep
    row-major order (lower query first, then lower key). Nothing is left out (the diagonal and
    special tokens count like any other cell); fewer than ``n`` cells give them all. NaN
    ranks below every number.
    """
    p = np.asarray(pattern)
    if p.ndim != 2:
        raise ValueError(f"pattern must be one head's [query_pos, key_pos], got shape {p.shape}")
    if n < 0:
        raise ValueError(f"n={n} must be >= 0")
    flat = p.astype(np.float64).ravel()
    take = min(int(n), flat.size)
    if take == 0:
        return []
    rank = np.where(np.isnan(flat), -np.inf, flat)
    # Only cells at least as large as the take-th largest can be chosen: sort those alone.
    kth = np.partition(rank, flat.size - take)[flat.size - take]
    cand = np.flatnonzero(rank >= kth)  # row-major order, so a stable sort keeps ties in it
    order = cand[np.argsort(-rank[cand], kind="stable")][:take]
    n_key = p.shape[1]
    return [(int(i // n_key), int(i % n_key), float(flat[i])) for i in order]
