r"""FlashAttention's forward pass (Dao et al. 2022) for one head, tile by tile, in numpy.

The explicit attention builds the whole score matrix :math:`S = QK^\top/\sqrt{d_k}`
[query_pos × key_pos], softmaxes each row, then multiplies by V. FlashAttention never builds S:
it cuts the queries into tiles of ``block_q`` rows and the keys and values into tiles of
``block_k`` rows, and for each query tile walks the key tiles in order, keeping per query row
only a running maximum m, a running sum ℓ and an unnormalised output. When a later tile brings
a larger score, what was summed so far is rescaled by :math:`e^{m_\text{old} - m_\text{new}}`
(the online softmax, Milakov & Gimelshein 2018). After the last key tile, dividing by ℓ gives
exactly softmax(S)V, up to float rounding.

`flash_steps` is the loop itself (it yields one `FlashStep` record per (query tile, key tile)
it visits, so a page can show each step); `flash_attention` runs it to the end and assembles the
output; `explicit_attention` is the n × n reference, the numpy reference
`tformer.analysis.reference.attention_np`; `Footprint` says how large the loop's largest array
is next to the n × n matrix. Numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..analysis.reference import attention_np

__all__ = [
    "TILE_SIDES",
    "Flash",
    "FlashStep",
    "Footprint",
    "auto_tile",
    "explicit_attention",
    "flash_attention",
    "flash_steps",
    "n_tiles",
    "skipped_tiles",
    "step_at",
    "tile_of",
]

Array = npt.NDArray[np.floating]
Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class FlashStep:
    """What one step of the loop saw and left behind: query tile i against key tile j.

    Rows are the query tile's tokens ``q0..q1-1``, columns the key tile's ``k0..k1-1``.
    Nothing here is NaN: a row that has seen no allowed key yet has ``m = −∞`` and ``ℓ = 0``.
    """

    index: int  # the step's number in the loop's order (query tile by query tile)
    i: int  # query tile
    j: int  # key tile
    q0: int
    q1: int
    k0: int
    k1: int
    scores: Array  # S_ij = Q_i K_jᵀ/√d_k [block_q, block_k], −∞ where masked
    m_old: Array  # running row maximum before this tile [block_q]
    m_new: Array  # ... and after it
    l_old: Array  # running sum of exp(s − m) before this tile [block_q]
    l_new: Array
    alpha: Array  # the rescaling factor exp(m_old − m_new) [block_q] (0 while nothing was seen)
    p: Array  # P̃_ij = exp(S_ij − m_new) [block_q, block_k]: the tile's weights before dividing by ℓ
    acc: Array  # the unnormalised output O_i after this tile [block_q, d_head]
    skipped: bool  # every cell of the tile is masked: a real kernel does not even load K_j, V_j
    last: bool  # the query tile's last key tile: `out` is final
    held: tuple[tuple[str, tuple[int, ...]], ...]  # the working arrays of this step and their shapes

    @property
    def rises(self) -> int:
        """How many rows this tile raised the running maximum of (their sums were rescaled)."""
        return int((self.m_new > self.m_old).sum())

    @property
    def out(self) -> Array:
        """O_i / ℓ_i: the softmax over the keys seen so far, times their values (0 where ℓ = 0)."""
        return np.divide(
            self.acc, self.l_new[:, None], out=np.zeros_like(self.acc), where=self.l_new[:, None] > 0
        )


def n_tiles(n: int, block: int) -> int:
    """How many tiles of ``block`` rows cover ``n`` rows (the last one may be shorter)."""
    if block < 1:
        raise ValueError(f"block={block} must be at least 1")
    return -(-n // block)


# Tile sides a page offers; a stepped loop starts from 4 x 4 tiles (2 x 2 ones teach nothing more).
TILE_SIDES = (2, 4, 8, 16, 32, 64, 128, 256, 512)
SMALLEST_AUTO_TILE = 4
MAX_AUTO_STEPS = 64


def auto_tile(n: int, max_steps: int = MAX_AUTO_STEPS) -> int:
    """The tile side that steps ``n`` tokens in at most ``max_steps`` steps with square tiles:
    the smallest of `TILE_SIDES` from 4 up with ``n_tiles(n, side) ** 2 <= max_steps`` (the
    largest side when none is enough). A class clicks through 16 tokens in 16 steps of 4 x 4
    tiles and 472 tokens in 64 steps of 64 x 64, never 13,924 steps of 4 x 4."""
    if n < 1 or max_steps < 1:
        raise ValueError(f"n={n} and max_steps={max_steps} must be at least 1")
    for side in (s for s in TILE_SIDES if s >= SMALLEST_AUTO_TILE):
        if n_tiles(n, side) ** 2 <= max_steps:
            return side
    return TILE_SIDES[-1]


def tile_of(step: int, n_q: int, n_k: int, block_q: int, block_k: int) -> tuple[int, int, int, int, int, int]:
    """Step ``step``'s query tile i, key tile j and their bounds ``(i, j, q0, q1, k0, k1)``."""
    t_r, t_c = n_tiles(n_q, block_q), n_tiles(n_k, block_k)
    if not 0 <= step < t_r * t_c:
        raise ValueError(f"step={step} is outside 0..{t_r * t_c - 1}")
    i, j = divmod(step, t_c)
    return i, j, i * block_q, min((i + 1) * block_q, n_q), j * block_k, min((j + 1) * block_k, n_k)


def skipped_tiles(attn_mask: Mask | None, n_q: int, n_k: int, block_q: int, block_k: int) -> Mask:
    """bool [query tile, key tile]: True where every cell of the tile is masked."""
    t_r, t_c = n_tiles(n_q, block_q), n_tiles(n_k, block_k)
    if attn_mask is None:
        return np.zeros((t_r, t_c), dtype=bool)
    counts = np.add.reduceat(attn_mask.astype(np.int32), np.arange(0, n_q, block_q), axis=0)
    counts = np.add.reduceat(counts, np.arange(0, n_k, block_k), axis=1)
    return np.asarray(counts == 0)


def _check(q: Array, k: Array, v: Array, attn_mask: Mask | None, block_q: int, block_k: int) -> None:
    if q.ndim != 2 or k.ndim != 2 or v.ndim != 2:
        raise ValueError(f"q, k, v must be [pos, d_head]; got {q.shape}, {k.shape}, {v.shape}")
    if q.shape[1] != k.shape[1] or k.shape[0] != v.shape[0]:
        raise ValueError(f"q {q.shape}, k {k.shape} and v {v.shape} do not fit together")
    if attn_mask is not None and attn_mask.shape != (q.shape[0], k.shape[0]):
        raise ValueError(f"attn_mask has shape {attn_mask.shape}; expected {(q.shape[0], k.shape[0])}")
    if block_q < 1 or block_k < 1:
        raise ValueError(f"block_q={block_q} and block_k={block_k} must be at least 1")


def flash_steps(
    q: Array,
    k: Array,
    v: Array,
    *,
    block_q: int,
    block_k: int,
    attn_mask: Mask | None = None,
    query_tiles: Iterable[int] | None = None,
) -> Iterator[FlashStep]:
    r"""The tiled loop with the online softmax; yields one `FlashStep` per tile it visits.

    For each query tile :math:`Q_i` and each key tile :math:`K_j, V_j` in turn, per row of the tile:

    .. math::
        S_{ij} = Q_i K_j^\top / \sqrt{d_k}

        m_i^{(j)} = \max\big(m_i^{(j-1)},\ \mathrm{rowmax}(S_{ij})\big)

        \tilde P_{ij} = e^{S_{ij} - m_i^{(j)}}

        \ell_i^{(j)} = e^{m_i^{(j-1)} - m_i^{(j)}}\,\ell_i^{(j-1)} + \mathrm{rowsum}(\tilde P_{ij})

        O_i^{(j)} = e^{m_i^{(j-1)} - m_i^{(j)}}\,O_i^{(j-1)} + \tilde P_{ij} V_j

        \mathrm{out}_i = O_i^{(T_c)} / \ell_i^{(T_c)}

    starting from :math:`m^{(0)} = -\infty,\ \ell^{(0)} = 0,\ O^{(0)} = 0`. ``attn_mask``: bool
    [query_pos, key_pos], True where a query may attend (None: everywhere). ``query_tiles``:
    run only these query tiles (each one is independent of the others; on a GPU they run in
    parallel, one thread block each).
    """
    _check(q, k, v, attn_mask, block_q, block_k)
    (n_q, d), n_k, dt = q.shape, k.shape[0], q.dtype
    t_r, t_c = n_tiles(n_q, block_q), n_tiles(n_k, block_k)
    scale = 1.0 / math.sqrt(d)
    rows = range(t_r) if query_tiles is None else sorted(set(query_tiles))
    for i in rows:  # one query tile at a time
        q0, q1 = i * block_q, min((i + 1) * block_q, n_q)
        m = np.full(q1 - q0, -np.inf, dt)  # running row max
        ell = np.zeros(q1 - q0, dt)  # running row sum ℓ
        o = np.zeros((q1 - q0, d), dt)  # unnormalised output
        for j in range(t_c):  # the key tiles, in order
            k0, k1 = j * block_k, min((j + 1) * block_k, n_k)
            tile = (i, j, t_c, q0, q1, k0, k1)
            ok = None if attn_mask is None else attn_mask[q0:q1, k0:k1]
            if ok is not None and not ok.any():
                # every cell masked: a real kernel skips it
                yield _skipped(tile, m, ell, o)
                continue
            # 1. this tile's scores S_ij [block_q, block_k]
            s = q[q0:q1] @ k[k0:k1].T * scale
            if ok is not None:
                s = np.where(ok, s, -np.inf)  # masked: −∞
            # 2. the new running maximum
            m_new = np.maximum(m, s.max(axis=1))
            # no allowed key yet: exp(−∞ − 0) = 0, not NaN
            m_safe = np.where(m_new == -np.inf, 0, m_new)
            # 3. rescale what was summed under the old max
            alpha = np.exp(m - m_safe)
            # 4. P̃_ij (0 where masked)
            p = np.exp(s - m_safe[:, None])
            # 5. the running sum, 6. the running output
            ell_new = alpha * ell + p.sum(axis=1)
            o = alpha[:, None] * o + p @ v[k0:k1]
            held = (q[q0:q1], k[k0:k1], v[k0:k1], s, p, o)
            yield _record(tile, s, p, (m, m_new), (ell, ell_new), alpha, o, held)
            m, ell = m_new, ell_new


_HELD = ("Q_i", "K_j", "V_j", "S_ij", "P̃_ij", "O_i")
Tile = tuple[int, int, int, int, int, int, int]  # i, j, key tiles, q0, q1, k0, k1


def _record(
    tile: Tile,
    s: Array,
    p: Array,
    m: tuple[Array, Array],
    ell: tuple[Array, Array],
    alpha: Array,
    acc: Array,
    held: tuple[Array, ...],
    skipped: bool = False,
) -> FlashStep:
    """One step's record: ``m`` and ``ell`` are (before, after) this tile."""
    i, j, t_c, q0, q1, k0, k1 = tile
    return FlashStep(
        index=i * t_c + j,
        i=i,
        j=j,
        q0=q0,
        q1=q1,
        k0=k0,
        k1=k1,
        scores=s,
        p=p,
        m_old=m[0],
        m_new=m[1],
        l_old=ell[0],
        l_new=ell[1],
        alpha=alpha,
        acc=acc,
        skipped=skipped,
        last=j == t_c - 1,
        held=tuple((name, a.shape) for name, a in zip(_HELD, held, strict=False)),
    )


def _skipped(tile: Tile, m: Array, ell: Array, acc: Array) -> FlashStep:
    """A fully masked tile: scores all −∞, P̃ = 0, α = 1, nothing changes, nothing is held."""
    _, _, _, q0, q1, k0, k1 = tile
    s = np.full((q1 - q0, k1 - k0), -np.inf, acc.dtype)
    return _record(tile, s, np.zeros_like(s), (m, m), (ell, ell), np.ones_like(m), acc, (), True)


@dataclass(frozen=True)
class Footprint:
    """The largest array the tiled loop held, against the n × n score matrix it never built."""

    name: str  # e.g. "S_ij" or "Q_i"
    shape: tuple[int, ...]
    elements: int
    bytes: int
    full_elements: int  # query_pos × key_pos: the explicit attention's score matrix
    full_bytes: int
    score_tile: tuple[int, ...]  # the largest S_ij the loop built ((): every tile was skipped)

    @property
    def ratio(self) -> float:
        """How many times smaller the largest tile array is than the n × n matrix."""
        return self.full_elements / max(self.elements, 1)


@dataclass(frozen=True)
class Flash:
    out: Array  # [query_pos, d_head]
    steps: list[FlashStep]  # every step (empty unless recorded)
    footprint: Footprint
    n_steps: int


def flash_attention(
    q: Array,
    k: Array,
    v: Array,
    *,
    block_q: int,
    block_k: int,
    attn_mask: Mask | None = None,
    record: bool = True,
) -> Flash:
    r"""Run `flash_steps` to the end: the attention output [query_pos, d_head], every step
    (``record=False`` keeps none: a long text with small tiles has tens of thousands), and the
    largest array the loop held. A row that may attend to nothing gets 0, not NaN.

    .. math::
        \mathrm{out} = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V
        \quad\text{without ever holding } QK^\top
    """
    q, k, v = (np.asarray(a, dtype=np.result_type(a.dtype, np.float32)) for a in (q, k, v))
    out = np.zeros((q.shape[0], v.shape[1]), q.dtype)
    steps: list[FlashStep] = []
    largest: tuple[int, str, tuple[int, ...]] = (0, "", ())
    score_tile: tuple[int, ...] = ()
    count = 0
    for step in flash_steps(q, k, v, block_q=block_q, block_k=block_k, attn_mask=attn_mask):
        count += 1
        for name, shape in step.held:
            size = math.prod(shape)
            if size > largest[0]:
                largest = (size, name, shape)
            if name == "S_ij" and size > math.prod(score_tile or (0,)):
                score_tile = shape
        if step.last:
            out[step.q0 : step.q1] = step.out
        if record:
            steps.append(step)
    n_q, n_k = q.shape[0], k.shape[0]
    item = q.dtype.itemsize
    size, name, shape = largest
    fp = Footprint(name, shape, size, size * item, n_q * n_k, n_q * n_k * item, score_tile)
    return Flash(out, steps, fp, count)


def step_at(
    q: Array,
    k: Array,
    v: Array,
    step: int,
    *,
    block_q: int,
    block_k: int,
    attn_mask: Mask | None = None,
) -> FlashStep:
    """Step ``step`` of the loop, computed by running its query tile only (the other query
    tiles never touch its m, ℓ and O)."""
    q, k, v = (np.asarray(a, dtype=np.result_type(a.dtype, np.float32)) for a in (q, k, v))
    i, j, *_ = tile_of(step, q.shape[0], k.shape[0], block_q, block_k)
    for record in flash_steps(
        q, k, v, block_q=block_q, block_k=block_k, attn_mask=attn_mask, query_tiles=(i,)
    ):
        if record.j == j:
            return record
    raise AssertionError("unreachable: the query tile visits every key tile")


def explicit_attention(q: Array, k: Array, v: Array, attn_mask: Mask | None = None) -> Array:
    r"""The reference: the whole n × n matrix, softmaxed row by row (fully masked rows give 0).

    .. math::
        \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V

    This is the numpy reference `tformer.analysis.reference.attention_np`, in the inputs'
    dtype: the loop above must equal it (float64 inputs make it the exact answer to compare a
    float32 loop against).
    """
    return attention_np(q, k, v, attn_mask)[0]  # [query_pos, d_head]
