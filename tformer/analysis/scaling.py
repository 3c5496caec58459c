r"""Why attention divides by √d_k: what the scale does to the softmax, measured.

A score is a sum of d_k products. With query and key entries of unit variance the sum's
variance grows like d_k, so without the division the logits spread further apart as heads get
wider, the softmax puts nearly all of a row's weight on one key, and its gradient vanishes.
Dividing by √d_k keeps the variance at 1 whatever d_k is:

.. math::
    \mathrm{Var}(q \cdot k) = d_k,\qquad
    \mathrm{Var}\!\left(\frac{q \cdot k}{\sqrt{d_k}}\right) = 1

:func:`temperature_pattern` recomputes one head's pattern from its unscaled scores q·kᵀ with
or without the scale and at any softmax temperature τ; :func:`row_entropy` and
:func:`row_max` say how spread out each row is, :func:`normalised_entropy` as a share of the
most its keys allow; :func:`scaling_sweep` measures all of it on random vectors over a range
of d_k. numpy only; nothing here runs the model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .reference import apply_mask, scale_scores, softmax_rows

Float32Array = npt.NDArray[np.float32]
Float64Array = npt.NDArray[np.float64]

# The sweep draws its random vectors in chunks of this many numbers at most (float32: 4 MiB),
# so memory stays flat whatever d_k, n_keys and samples are.
_CHUNK_NUMBERS = 1 << 20


def _check_positive_int(name: str, value: int) -> int:
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
    return int(value)


def temperature_pattern(
    raw: npt.ArrayLike,
    d_k: int,
    *,
    tau: float = 1.0,
    scaled: bool = True,
    attn_mask: npt.NDArray[np.bool_] | None = None,
) -> Float32Array:
    r"""The attention pattern recomputed from one head's unscaled scores, with or without the
    division by √d_k and at softmax temperature τ.

    .. math::
        p_{ij} = \frac{\exp\!\big(s_{ij} / (c\,\tau)\big)}{\sum_{j'} \exp\!\big(s_{ij'} / (c\,\tau)\big)},
        \qquad s_{ij} = q_i \cdot k_j,\qquad
        c = \begin{cases} \sqrt{d_k} & \text{scaled} \\ 1 & \text{not scaled} \end{cases}

    ``raw``: q·kᵀ before any scaling, [query_pos, key_pos]. With ``tau=1`` and ``scaled=True``
    this is the model's own pattern. τ < 1 sharpens every row, τ > 1 flattens it.
    ``attn_mask`` [query_pos, key_pos] (True = may attend): the other keys get weight exactly 0,
    as do keys whose score is −∞; a row with no allowed key is all 0, never NaN. Computed in
    float64, returned as float32 (rows sum to 1).
    """
    s = np.asarray(raw, dtype=np.float64)
    if s.ndim != 2:
        raise ValueError(f"raw must be 2-D [query_pos, key_pos], got shape {tuple(s.shape)}")
    d_k = _check_positive_int("d_k", d_k)
    if not (math.isfinite(tau) and tau > 0):
        raise ValueError(f"tau must be a finite number > 0, got {tau!r}")
    keep = np.ones(s.shape, dtype=bool) if attn_mask is None else np.asarray(attn_mask, dtype=bool)
    if keep.shape != s.shape:
        raise ValueError(
            f"attn_mask has shape {tuple(keep.shape)} but raw has shape {tuple(s.shape)} [query_pos, key_pos]"
        )
    bad = keep & (np.isnan(s) | (s == np.inf))
    if bad.any():
        raise ValueError(f"raw has {int(bad.sum())} NaN or +inf entries where attention is allowed")
    # 1. scale (or not), 2. temperature, 3. mask, 4. softmax over the keys
    logits = apply_mask(s / ((math.sqrt(d_k) if scaled else 1.0) * tau), keep)
    # Shifted by each row's largest logit in float64 first, so float32 loses nothing that
    # matters at a low temperature (the weights that count have logits near the top).
    top = logits.max(-1, keepdims=True)
    shifted = (logits - np.where(np.isfinite(top), top, 0.0)).astype(np.float32)
    return softmax_rows(shifted)  # [query_pos, key_pos], the numpy reference's softmax


def _check_pattern(pattern: npt.ArrayLike) -> Float64Array:
    p = np.asarray(pattern, dtype=np.float64)
    if p.ndim < 2 or p.shape[-1] == 0:
        raise ValueError(f"pattern must be [query_pos, key_pos] with at least one key, got shape {p.shape}")
    if not np.isfinite(p).all() or (p < 0).any():
        raise ValueError("pattern must hold finite weights >= 0 (a plain softmax gives NaN for a masked row)")
    return p


def row_entropy(pattern: npt.ArrayLike) -> Float64Array:
    r"""How spread out each query's weights are, in bits: 0 when one key takes everything,
    log₂ n when n keys share equally; a fully masked row (all 0) has entropy 0.

    .. math::
        H_i = -\sum_j p_{ij} \log_2 p_{ij}\qquad (0 \log_2 0 = 0)

    ``pattern``: [query_pos, key_pos] (leading axes such as head_index are kept) ->
    [query_pos].
    """
    p = _check_pattern(pattern)
    logs = np.log2(p, out=np.zeros_like(p), where=p > 0)
    return np.asarray(-(p * logs).sum(-1) + 0.0)  # + 0.0 turns -0.0 into 0.0


def normalised_entropy(entropy: npt.ArrayLike, pattern: npt.ArrayLike) -> Float64Array:
    r"""Each row's entropy as a share of the most its keys allow: 0 when one key takes
    everything, 1 when every visible key gets the same weight, whatever the row's length.

    .. math::
        \tilde H_i = \frac{H_i}{\log_2 n_i},\qquad n_i = \left|\{j : p_{ij} > 0\}\right|

    ``entropy``: :func:`row_entropy` of ``pattern``, [query_pos]; ``pattern``:
    [query_pos, key_pos] (leading axes such as head_index are kept in both). The visible keys
    are counted from the pattern itself, so a masked key and a weight that underflowed to
    exactly 0 both leave the count; a row with one visible key (or none, n_i ≤ 1) has
    nothing to spread over and gets 0. Returns float64 [query_pos].
    """
    h = np.asarray(entropy, dtype=np.float64)
    p = np.asarray(pattern)
    if p.ndim < 1 or h.shape != p.shape[:-1]:
        raise ValueError(
            f"entropy has shape {h.shape} but pattern has shape {p.shape}: entropy must be the "
            "pattern's shape without its last axis (key_pos)"
        )
    log_n = np.log2(np.maximum((p > 0).sum(-1), 1))  # 0 for a row with at most one visible key
    share: Float64Array = np.divide(h, log_n, out=np.zeros_like(h), where=log_n > 0)
    return share


def row_max(pattern: npt.ArrayLike) -> Float64Array:
    r"""Each query's largest weight: 1 when one key takes everything, 1/n when n keys share.

    .. math::
        m_i = \max_j p_{ij}

    ``pattern``: [query_pos, key_pos] -> [query_pos].
    """
    return np.asarray(_check_pattern(pattern).max(-1))


def jacobian_norm(pattern: npt.ArrayLike) -> Float64Array:
    r"""The size of the softmax's gradient for each row: the Frobenius norm of its Jacobian
    with respect to the logits s. It vanishes as the row saturates (one weight near 1), so
    the scores that produced it get almost no gradient.

    .. math::
        J = \frac{\partial p}{\partial s} = \operatorname{diag}(p) - p\,p^\top,\qquad
        \lVert J \rVert_F^2 = \sum_i p_i^2\,(1 - p_i)^2 + \sum_{i \ne j} p_i^2\, p_j^2

    ``pattern``: [query_pos, key_pos] (rows are softmax outputs) -> [query_pos]. The sums
    over the other keys, 1 − p_i and Σ_{j≠i} p_j², are added up directly for a row's
    largest weight (subtracting from 1 would leave rounding error where the true value is
    1e-12), so a saturated row's tiny norm stays accurate.
    """
    p = _check_pattern(pattern)
    top = p.argmax(-1)[..., None]
    is_top = np.arange(p.shape[-1]) == top
    p2 = p * p
    others = p.sum(-1, keepdims=True) - p  # Σ_{j≠i} p_j = 1 - p_i
    others2 = p2.sum(-1, keepdims=True) - p2  # Σ_{j≠i} p_j²
    others = np.where(is_top, np.where(is_top, 0.0, p).sum(-1, keepdims=True), others)
    others2 = np.where(is_top, np.where(is_top, 0.0, p2).sum(-1, keepdims=True), others2)
    return np.asarray(np.sqrt((p2 * (others * others + others2)).sum(-1)))


@dataclass(frozen=True)
class ScalingSweep:
    """What the division by √d_k changes, measured on random q and k at each d_k.

    Every array is [d_k] (one entry per head width, increasing); ``raw`` is without the
    division, ``scaled`` with it.
    """

    d_k: npt.NDArray[np.int64]  # the head widths
    var_raw: Float64Array  # Var(q·k): grows like d_k
    var_scaled: Float64Array  # Var(q·k / √d_k): stays near 1
    max_raw: Float64Array  # mean over samples of the softmax's largest weight
    max_scaled: Float64Array
    jac_raw: Float64Array  # mean over samples of ‖diag(p) − p pᵀ‖_F
    jac_scaled: Float64Array
    n_keys: int  # keys in each softmax row
    samples: int  # rows (queries) per d_k
    seed: int


def scaling_sweep(
    d_ks: Sequence[int] = (4, 8, 16, 32, 64, 128, 256, 512, 1024),
    *,
    n_keys: int = 32,
    samples: int = 256,
    seed: int = 0,
) -> ScalingSweep:
    r"""Draw ``samples`` queries and ``n_keys`` keys per query with i.i.d. standard-normal
    entries and measure, at each d_k, the scores' variance and the softmax over the keys with
    and without the division by √d_k.

    For independent entries of mean 0 and variance 1 each product q_d k_d has variance 1, and
    the d_k products are uncorrelated, so

    .. math::
        \mathrm{Var}(q \cdot k) = \sum_{d=1}^{d_k} \mathrm{Var}(q_d k_d) = d_k,\qquad
        \mathrm{Var}\!\left(\frac{q \cdot k}{\sqrt{d_k}}\right) = 1

    Unscaled logits about √d_k apart make the softmax nearly one-hot: its largest weight
    approaches 1 and its Jacobian (see :func:`jacobian_norm`)

    .. math::
        J = \operatorname{diag}(p) - p\,p^\top \to 0

    Each d_k's vectors are the first d_k coordinates of one draw of the widest ones, so the
    curves change smoothly from one d_k to the next rather than jittering with independent
    draws. Deterministic for a ``seed``; ``d_ks`` are sorted and repeats dropped.
    """
    widths = sorted({_check_positive_int("each d_k", d) for d in d_ks})
    if not widths:
        raise ValueError("d_ks is empty: give at least one head width")
    n_keys = _check_positive_int("n_keys", n_keys)
    samples = _check_positive_int("samples", samples)
    widest = widths[-1]
    rng = np.random.default_rng(seed)
    logits = np.zeros((len(widths), samples, n_keys))  # [d_k, sample, key] q·k, unscaled
    chunk = max(1, _CHUNK_NUMBERS // (n_keys * widest))
    for start in range(0, samples, chunk):
        rows = slice(start, min(start + chunk, samples))
        c = rows.stop - rows.start
        q = rng.standard_normal((c, widest, 1), dtype=np.float32)  # [sample, d, 1]
        k = rng.standard_normal((c, n_keys, widest), dtype=np.float32)  # [sample, key, d]
        total = np.zeros((c, n_keys))
        lo = 0
        for i, hi in enumerate(widths):
            # q·k over the first hi coordinates: the previous sum plus the coordinates lo..hi
            total += (k[:, :, lo:hi] @ q[:, lo:hi])[..., 0]
            logits[i, rows] = total
            lo = hi
    var_raw, var_scaled, max_raw, max_scaled, jac_raw, jac_scaled = (np.zeros(len(widths)) for _ in range(6))
    for i, d in enumerate(widths):
        s = logits[i]  # [sample, key]
        var_raw[i] = s.var()
        var_scaled[i] = scale_scores(s, d).var()
        p_raw = temperature_pattern(s, d, scaled=False)
        p_scaled = temperature_pattern(s, d, scaled=True)
        max_raw[i], max_scaled[i] = row_max(p_raw).mean(), row_max(p_scaled).mean()
        jac_raw[i], jac_scaled[i] = jacobian_norm(p_raw).mean(), jacobian_norm(p_scaled).mean()
    return ScalingSweep(
        d_k=np.array(widths, dtype=np.int64),
        var_raw=var_raw,
        var_scaled=var_scaled,
        max_raw=max_raw,
        max_scaled=max_scaled,
        jac_raw=jac_raw,
        jac_scaled=jac_scaled,
        n_keys=n_keys,
        samples=samples,
        seed=int(seed),
    )
