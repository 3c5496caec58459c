"""Max-pooling of [query_pos, key_pos] matrices for long inputs and thumbnails.

A matrix is sent at full resolution up to ``MAX_SIDE`` positions a side and max-pooled in
square blocks above that (:func:`pool_plan`). Max, not mean: a one-cell-wide diagonal must stay
as bright as it is at full resolution.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

# A side above this is max-pooled, so one matrix stays a fraction of the per-rerun payload:
# 256 * 256 float32 cells are 256 KiB raw, and more in the JSON, because plotly's to_json (which
# Streamlit calls) writes base64 and escapes every "/" of it as "\u002f" (6 bytes).
MAX_SIDE = 256

FloatArray = npt.NDArray[np.floating]


def pool_plan(n: int, max_side: int | None) -> int:
    """Positions per block so that ``ceil(n / block) <= max_side`` (1 = full resolution)."""
    if max_side is None or n <= max_side:
        return 1
    return math.ceil(n / max_side)


def _max_pool_axis(a: FloatArray, block: int, axis: int) -> FloatArray:
    n = a.shape[axis]
    head: list[slice] = [slice(None)] * a.ndim
    head[axis] = slice(0, n, block)
    out: FloatArray = a[tuple(head)].copy()
    for j in range(1, block):
        head[axis] = slice(j, n, block)
        part = a[tuple(head)]
        dst: list[slice] = [slice(None)] * a.ndim
        dst[axis] = slice(0, part.shape[axis])
        np.fmax(out[tuple(dst)], part, out=out[tuple(dst)])
    return out


def max_pool_2d(a: FloatArray, block: int) -> FloatArray:
    """Max over ``block x block`` squares of the last two axes (the last block may be short).

    NaN is ignored unless a whole block is NaN. Computed as ``block`` strided maxima per axis,
    which is much faster than ``np.maximum.reduceat`` on a stack of heads.
    """
    if block == 1:
        return a
    return _max_pool_axis(_max_pool_axis(a, block, a.ndim - 2), block, a.ndim - 1)


def signed_absmax_pool_2d(a: FloatArray, block: int) -> FloatArray:
    """Per block, the entry of largest magnitude, sign kept; NaN (masked) only if all are NaN."""
    if block == 1:
        return a
    hi = max_pool_2d(a, block)
    lo = -max_pool_2d(-a, block)
    out = np.where(np.abs(lo) > np.abs(hi), lo, hi)  # NaN only where the whole block is NaN
    return out.astype(np.float32, copy=False)
