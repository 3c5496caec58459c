r"""Sparse and local attention: masks that let each query see few keys, and implementations that
compute only those scores.

Two patterns, as bool [query_pos, key_pos] masks (True: may attend):

- the local window: :math:`|i - j| \le w` (each token sees the w tokens on each side);
- the strided pattern of Child et al. 2019 ("Generating long sequences with sparse
  transformers"): :math:`|i - j| < s` or :math:`j \equiv i \pmod s`, a local band of width s
  plus every s-th key, so any token reaches any other in two steps. The paper's version is
  causal (a decoder); ours is bidirectional by default, like the encoder this app shows, and
  causal with ``causal=True`` (then also :math:`j \le i`).

A dense implementation computes all n² scores and then masks most of them away.
`local_attention` cuts the queries into blocks of w and computes each block against the 3w keys
around it (about 3w scores per query instead of n); `strided_attention` cuts the sequence into
blocks of s and computes the three neighbouring blocks plus one key per block: about 3s + n/s
scores per query (with s ≈ √n, n√n in all). Blocks make a few large matrix products where
gathering each query's own 2w + 1 keys would make n tiny ones.
Both equal dense attention under the same mask (tests/test_sparse.py).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F

from ..analysis.masks import window_mask
from ..model.attention import attention_pattern, attention_scores

__all__ = [
    "allowed_count",
    "computed_count",
    "local_attention",
    "local_mask",
    "strided_attention",
    "strided_mask",
]


def _positive(name: str, value: int, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name}={value!r} must be an integer >= {low}")
    return int(value)


def local_mask(n: int, w: int) -> npt.NDArray[np.bool_]:
    """The local window: query i may attend to keys j with |i − j| <= w. bool [n, n]."""
    return window_mask(n, w)


def strided_mask(n: int, s: int, *, causal: bool = False) -> npt.NDArray[np.bool_]:
    """The strided pattern (Child et al. 2019): |i − j| < s or j ≡ i (mod s); with ``causal``
    also j <= i. bool [n, n]."""
    n, s = _positive("n", n, 1), _positive("stride s", s, 1)
    pos = np.arange(n)
    diff = pos[:, None] - pos[None, :]  # [query_pos, key_pos]: i − j
    attn_mask: npt.NDArray[np.bool_] = (np.abs(diff) < s) | (diff % s == 0)
    return attn_mask & (diff >= 0) if causal else attn_mask


def allowed_count(kind: str, n: int, size: int, *, causal: bool = False) -> int:
    """How many cells of the n × n mask allow attention, counted row by row (no n × n array):
    ``kind`` "local" (size = w) or "strided" (size = s)."""
    n = _positive("n", n, 1)
    i = np.arange(n, dtype=np.int64)
    if kind == "local":
        w = _positive("window w", size, 0)
        return int((np.minimum(i, w) + np.minimum(n - 1 - i, w) + 1).sum())
    if kind == "strided":
        s = _positive("stride s", size, 1)
        if causal:
            # i − j in 0..s−1 (the band), then j = i − s, i − 2s, ... >= 0: i // s keys
            return int((np.minimum(i, s - 1) + 1 + i // s).sum())
        near = np.minimum(i, s - 1) + np.minimum(n - 1 - i, s - 1) + 1
        same = (n - 1 - i % s) // s + 1  # keys j ≡ i (mod s) in 0..n−1
        return int((near + same - 1).sum())  # j = i is counted in both
    raise ValueError(f"kind={kind!r} must be 'local' or 'strided'")


def computed_count(kind: str, n: int, size: int) -> int:
    """How many scores our implementation computes, masked ones inside its blocks included:
    local, ⌈n/B⌉·B · (B + 2w) with B = max(w, 1); strided, ⌈n/s⌉·s · (3s + ⌈n/s⌉)."""
    n = _positive("n", n, 1)
    if kind == "local":
        w = _positive("window w", size, 0)
        b = max(w, 1)
        return math.ceil(n / b) * b * (b + 2 * w)
    if kind == "strided":
        s = _positive("stride s", size, 1)
        blocks = math.ceil(n / s)
        return blocks * s * (3 * s + blocks)
    raise ValueError(f"kind={kind!r} must be 'local' or 'strided'")


def _check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    if q.dim() != 4 or q.shape != k.shape or k.shape[:-1] != v.shape[:-1]:
        raise ValueError(
            f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)} must be "
            "[batch, head_index, pos, d_head] self-attention tensors of one length"
        )


def local_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, w: int, *, scale: float | None = None
) -> torch.Tensor:
    """Attention under the local window |i − j| <= w, by blocks of B = max(w, 1) queries: each
    block meets only the B + 2w keys around it ([block, B, B + 2w] scores, about 3w per query
    instead of n). q, k, v: [batch, head_index, pos, d_head]; returns [batch, head_index, pos, d_head]."""
    _check_qkv(q, k, v)
    w = _positive("window w", w, 0)
    batch, heads, n, d_head = q.shape
    d_v = v.shape[-1]
    scale = 1.0 / math.sqrt(d_head) if scale is None else scale
    size = max(w, 1)  # B: queries per block
    nb = math.ceil(n / size)
    pad = nb * size - n
    width = size + 2 * w  # keys per block: w before it, its own B, w after it
    qb = F.pad(q, (0, 0, 0, pad)).view(batch, heads, nb, size, d_head)  # [b, h, block, B, d]
    # w padded key rows before, w + pad after: window t of the padded keys starts at key t·B − w
    kn = F.pad(k, (0, 0, w, w + pad)).unfold(2, width, size).transpose(-1, -2)  # [b, h, block, B+2w, d]
    vn = F.pad(v, (0, 0, w, w + pad)).unfold(2, width, size).transpose(-1, -2)  # [b, h, block, B+2w, d_v]
    i = torch.arange(nb * size, device=q.device).view(nb, size, 1)  # query position
    j = torch.arange(nb, device=q.device).view(nb, 1, 1) * size - w + torch.arange(width, device=q.device)
    ok = (j >= 0) & (j < n) & ((i - j).abs() <= w)  # [block, B, B+2w]
    # the model's score, scale, mask and softmax, on each block's [B, B+2w] scores
    weights = attention_pattern(attention_scores(qb, kn, ok, scale=scale))
    out = torch.matmul(weights, vn)  # [b, h, block, B, d_v]
    return out.reshape(batch, heads, nb * size, d_v)[:, :, :n]


def strided_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    s: int,
    *,
    causal: bool = False,
    scale: float | None = None,
) -> torch.Tensor:
    """Attention under the strided mask (|i − j| < s or j ≡ i mod s; ``causal``: also j <= i),
    by blocks of s positions: each query block meets its own and the two neighbouring key
    blocks (the band), and its residue class's one key per block (the stride). About
    3s + n/s scores per query. q, k, v: [batch, head_index, pos, d_head]."""
    _check_qkv(q, k, v)
    s = _positive("stride s", s, 1)
    batch, heads, n, d_head = q.shape
    d_v = v.shape[-1]
    scale = 1.0 / math.sqrt(d_head) if scale is None else scale
    nb = math.ceil(n / s)  # blocks
    pad = nb * s - n
    dev = q.device
    qb = F.pad(q, (0, 0, 0, pad)).view(batch, heads, nb, s, d_head)  # [b, h, block, s, d]
    # 1. the band: keys of blocks b−1, b, b+1 (one block of zeros padded before and after)
    kp = F.pad(k, (0, 0, s, s + pad))  # [b, h, (nb+2)·s, d]
    vp = F.pad(v, (0, 0, s, s + pad))
    kn = kp.unfold(2, 3 * s, s).transpose(-1, -2)  # [b, h, block, 3s, d]
    vn = vp.unfold(2, 3 * s, s).transpose(-1, -2)  # [b, h, block, 3s, d_v]
    i = torch.arange(nb * s, device=dev).view(nb, s, 1)  # query position
    j = (torch.arange(nb, device=dev).view(nb, 1, 1) - 1) * s + torch.arange(3 * s, device=dev)  # key
    ok_near = (j >= 0) & (j < n) & ((i - j).abs() < s)  # [block, s, 3s]
    # 2. the stride: for residue r = i mod s, key r of every block c; c = b is in the band already
    kr = F.pad(k, (0, 0, 0, pad)).view(batch, heads, nb, s, d_head).transpose(2, 3)  # [b, h, s, block, d]
    vr = F.pad(v, (0, 0, 0, pad)).view(batch, heads, nb, s, d_v).transpose(2, 3)  # [b, h, s, block, d_v]
    b_ = torch.arange(nb, device=dev)
    key_far = b_.view(1, 1, nb) * s + torch.arange(s, device=dev).view(s, 1, 1)  # [s, 1, block c]
    ok_far = (b_.view(1, nb, 1) != b_.view(1, 1, nb)) & (key_far < n)  # [s, block b, block c]
    if causal:
        ok_near &= j <= i
        ok_far &= b_.view(1, 1, nb) < b_.view(1, nb, 1)
    # the model's score, scale and mask on each part, then 3. one softmax over both parts of
    # each row, and each part weights its own values
    near = attention_scores(qb, kn, ok_near, scale=scale)  # [b, h, block, s, 3s]
    far = attention_scores(qb.transpose(2, 3), kr, ok_far, scale=scale)  # [b, h, s(r), block b, block c]
    far = far.transpose(2, 3)  # [b, h, block, s, block c]
    weights = attention_pattern(torch.cat([near, far], dim=-1))
    out = torch.matmul(weights[..., : 3 * s], vn)  # [b, h, block, s, d_v]
    w_far = weights[..., 3 * s :].transpose(2, 3)  # [b, h, s(r), block b, block c]
    out = out + torch.matmul(w_far, vr).transpose(2, 3)  # [b, h, block, s, d_v]
    return out.reshape(batch, heads, nb * s, d_v)[:, :, :n]
