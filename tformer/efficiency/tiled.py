r"""Attention without the n × n matrix: a tiled loop with the online softmax (FlashAttention's
algorithm, Dao et al. 2022, in plain torch), beside the explicit attention it must equal.

`explicit_attention` builds the whole score matrix [query_pos, key_pos] for every head, as the
textbook formula reads. `tiled_attention` takes ``block_q`` queries at a time and walks the keys
``block_k`` at a time, keeping per query row only a running maximum m, a running sum ℓ and an
unnormalised output; the largest array it holds is one [block_q, block_k] tile of scores per
head. Both take [batch, head_index, pos, d_head] tensors and an optional bool mask
broadcastable to [batch, head_index, query_pos, key_pos] (True: may attend); a query that may
attend to nothing gets the output 0, not NaN, like ``F.scaled_dot_product_attention``.
"""

from __future__ import annotations

import math

import torch

from ..model.attention import dead_rows_of, scaled_dot_product_attention

__all__ = ["explicit_attention", "tile_bytes", "tiled_attention"]


def _check(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attn_mask: torch.Tensor | None) -> None:
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError(
            f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)} must all be "
            "[batch, head_index, pos, d_head]"
        )
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2] or q.shape[:2] != k.shape[:2]:
        raise ValueError(
            f"q {tuple(q.shape)}, k {tuple(k.shape)} and v {tuple(v.shape)} do not fit: q and k need "
            "the same batch, heads and d_head, k and v the same key positions"
        )
    if attn_mask is not None:
        if attn_mask.dtype != torch.bool:
            raise ValueError(f"attn_mask must be bool (True: may attend), got {attn_mask.dtype}")
        full = (q.shape[0], q.shape[1], q.shape[2], k.shape[2])
        try:
            torch.broadcast_shapes(attn_mask.shape, full)
        except RuntimeError:
            raise ValueError(
                f"attn_mask {tuple(attn_mask.shape)} does not broadcast to [batch, head_index, "
                f"query_pos, key_pos] = {full}"
            ) from None


def explicit_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    *,
    scale: float | None = None,
) -> torch.Tensor:
    r"""Attention with the whole score matrix materialised: [batch, head_index, query_pos, d_head].

    .. math::
        S = \frac{QK^\top}{\sqrt{d_k}} \in \mathbb{R}^{n \times n},\qquad
        O = \mathrm{softmax}(S)\,V

    Holds S and softmax(S), two [batch, head_index, n, n] arrays: the n² wall. A masked score
    is −∞; a row with every key masked gets weight 0 everywhere, so its output is 0. This is
    `tformer.model.attention.scaled_dot_product_attention`, the model's attention while it is
    watched.
    """
    _check(q, k, v, attn_mask)
    # The model's own attention (one formula for both): a masked row of −∞ is 0/0 in the
    # softmax, so a query that may attend to nothing gets weight 0 and output 0.
    dead = None if attn_mask is None else dead_rows_of(attn_mask)
    return scaled_dot_product_attention(q, k, v, attn_mask, dead, scale=scale)[0]


def tiled_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    block_q: int = 64,
    block_k: int = 64,
    attn_mask: torch.Tensor | None = None,
    scale: float | None = None,
) -> torch.Tensor:
    r"""Attention tile by tile with the online softmax; never holds more than one
    [block_q, block_k] tile of scores per head. Returns [batch, head_index, query_pos, d_head].

    .. math::
        S_{ij} = \frac{Q_i K_j^\top}{\sqrt{d_k}},\quad
        m^{\text{new}} = \max\!\big(m, \operatorname{rowmax} S_{ij}\big),\quad
        \alpha = e^{\,m - m^{\text{new}}}

        \ell \leftarrow \alpha\,\ell + \operatorname{rowsum} e^{S_{ij} - m^{\text{new}}},\qquad
        O_i \leftarrow \alpha\,O_i + e^{S_{ij} - m^{\text{new}}} V_j,\qquad
        \text{finally } O_i \leftarrow O_i / \ell

    For each query tile i the key tiles j are visited in order. When a tile brings a larger
    score, what was summed so far was exponentiated against too small a maximum: multiplying
    by α rescales it, so after the last tile O_i / ℓ is exactly softmax(S)V (up to rounding).
    Float16 and bfloat16 inputs are accumulated in float32.
    """
    _check(q, k, v, attn_mask)
    for name, size in (("block_q", block_q), ("block_k", block_k)):
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"{name}={size!r} must be a positive integer")
    batch, heads, n_q, d_head = q.shape
    n_k = k.shape[-2]
    scale = 1.0 / math.sqrt(d_head) if scale is None else scale
    acc = torch.float32 if q.dtype in (torch.float16, torch.bfloat16) else q.dtype
    attn_mask4 = None if attn_mask is None else attn_mask.expand(batch, heads, n_q, n_k)  # a view, no copy
    out = q.new_zeros(batch, heads, n_q, v.shape[-1])
    neg_inf = torch.tensor(float("-inf"), dtype=acc, device=q.device)
    for q0 in range(0, n_q, block_q):
        q1 = min(q0 + block_q, n_q)
        qi = q[:, :, q0:q1].to(acc) * scale  # [batch, head_index, block_q, d_head]
        m = torch.full((batch, heads, q1 - q0), float("-inf"), dtype=acc, device=q.device)
        ell = torch.zeros_like(m)  # running sum of exp(score - m)
        o = torch.zeros(batch, heads, q1 - q0, v.shape[-1], dtype=acc, device=q.device)
        for k0 in range(0, n_k, block_k):
            k1 = min(k0 + block_k, n_k)
            s = torch.matmul(qi, k[:, :, k0:k1].to(acc).transpose(-2, -1))  # [batch, head, block_q, block_k]
            if attn_mask4 is not None:
                s = torch.where(attn_mask4[:, :, q0:q1, k0:k1], s, neg_inf)
            m_new = torch.maximum(m, s.amax(dim=-1))
            # a row that has seen no allowed key yet keeps m = −∞: shift by 0 there, so that
            # exp(−∞ − shift) is 0 and never exp(−∞ + ∞) = NaN
            shift = torch.where(torch.isneginf(m_new), 0.0, m_new)
            p = torch.exp(s - shift.unsqueeze(-1))  # [batch, head_index, block_q, block_k]
            alpha = torch.exp(m - shift)  # rescales what was summed against the old maximum
            ell = alpha * ell + p.sum(dim=-1)
            o = alpha.unsqueeze(-1) * o + torch.matmul(p, v[:, :, k0:k1].to(acc))
            m = m_new
        # ℓ = 0: the query may attend to nothing, and its output is 0 (as in SDPA)
        done = torch.where(ell.unsqueeze(-1) > 0, o / ell.clamp_min(1e-30).unsqueeze(-1), 0.0)
        out[:, :, q0:q1] = done.to(out.dtype)
    return out


def tile_bytes(heads: int, block_q: int, block_k: int, d_head: int, itemsize: int = 4) -> int:
    """What the tiled loop holds at once per batch item, besides its inputs and output: one score
    tile and its exponentials ([heads, block_q, block_k] each) and the running m, ℓ and O."""
    return itemsize * heads * (2 * block_q * block_k + block_q * (2 + 2 * d_head))
