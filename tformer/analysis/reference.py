r"""Scaled, masked attention in numpy, one step per function: the numpy reference.

.. math::
    \mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right) V

The same formula as the torch reference in ``tformer.model.attention`` (a test holds the two
equal): 2. score, 3. scale, 4. mask (−∞), 5. softmax (a query that may attend to nothing gets
all-zero weights, never NaN), 6. weight the values. The step-by-step walk-through shows these
functions one by one, the √d_k lesson recomputes its patterns with `apply_mask` and
`softmax_rows`, and FlashAttention's tiled loop is tested against `attention_np`. Every step
computes in its input's dtype: float32 captures stay float32, float64 inputs give a float64
reference. Arrays are [..., pos, d_head] and [..., query_pos, key_pos]; numpy only.
"""

from __future__ import annotations

import math
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

__all__ = ["apply_mask", "attention_np", "raw_scores", "scale_scores", "softmax_rows", "weighted_values"]

F = TypeVar("F", bound=np.floating[Any])


def raw_scores(q: npt.NDArray[F], k: npt.NDArray[F]) -> npt.NDArray[F]:
    r"""Every query against every key: the dot products q_i·k_j.

    .. math::
        s_{ij} = q_i \cdot k_j = \sum_d q_{id}\,k_{jd}
    """
    scores: npt.NDArray[F] = q @ k.swapaxes(-1, -2)  # [..., query_pos, key_pos]
    return scores


def scale_scores(scores: npt.NDArray[F], d_k: int) -> npt.NDArray[F]:
    r"""Divide by √d_k, so the scores' spread does not grow with d_k.

    .. math::
        \frac{QK^\top}{\sqrt{d_k}}
    """
    return (scores / math.sqrt(d_k)).astype(scores.dtype, copy=False)  # float32 stays float32


def apply_mask(scaled: npt.NDArray[F], attn_mask: npt.NDArray[np.bool_] | None) -> npt.NDArray[F]:
    r"""Masked positions get −∞, so the softmax gives them weight exactly 0.

    .. math::
        s_{ij} = -\infty \ \text{for every masked pair } (i, j)
    """
    if attn_mask is None:
        return scaled
    # attn_mask: bool, broadcastable to [..., query_pos, key_pos], True where a query may attend
    return np.where(attn_mask, scaled, -np.inf)


def softmax_rows(masked: npt.NDArray[F]) -> npt.NDArray[F]:
    r"""Softmax over each row (the keys): weights ≥ 0 that sum to 1; a fully masked row is 0.

    .. math::
        p_{ij} = \frac{e^{s_{ij}}}{\sum_{j'} e^{s_{ij'}}}
    """
    # Shift by the row's largest score so exp cannot overflow; a row of −∞ (every key masked)
    # is shifted by 0, gives e = 0 everywhere and total 0, and stays 0 rather than 0/0.
    top = np.max(masked, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(masked - top)
    total = e.sum(-1, keepdims=True)
    pattern: npt.NDArray[F] = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    return pattern


def weighted_values(pattern: npt.NDArray[F], v: npt.NDArray[F]) -> npt.NDArray[F]:
    r"""Each query's output: the values, weighted by its row of the pattern.

    .. math::
        z_i = \sum_j p_{ij}\, v_j
    """
    return pattern @ v  # [..., query_pos, d_head]


def attention_np(
    q: npt.NDArray[F],
    k: npt.NDArray[F],
    v: npt.NDArray[F],
    attn_mask: npt.NDArray[np.bool_] | None = None,
    *,
    scale: float | None = None,
) -> tuple[npt.NDArray[F], npt.NDArray[F]]:
    r"""One head's attention, the steps above in order; returns (z, pattern) like
    ``tformer.model.attention.scaled_dot_product_attention``.

    .. math::
        z = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V

    q, k, v: [..., pos, d_head]; attn_mask: bool, broadcastable to [..., query_pos, key_pos], True
    where a query may attend. ``scale`` multiplies the scores instead of the division by
    √d_head. A query whose every key is masked gets a zero row of the pattern and z = 0.
    """
    s = raw_scores(q, k)
    s = scale_scores(s, q.shape[-1]) if scale is None else (s * scale).astype(s.dtype, copy=False)
    pattern = softmax_rows(apply_mask(s, attn_mask))
    return weighted_values(pattern, v), pattern
