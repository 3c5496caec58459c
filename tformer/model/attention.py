r"""Scaled dot-product attention and multi-head self-attention, step by step.

.. math::
    \mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right) V

    \mathrm{MultiHead}(X) = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)\, W_O,
    \quad \mathrm{head}_i = \mathrm{Attention}(X W_i^Q, X W_i^K, X W_i^V)
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from .config import EncoderConfig
from .hooks import HookPoint, capturing


def attention_scores(
    q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor | None = None, *, scale: float | None = None
) -> torch.Tensor:
    r"""Scaled, masked scores :math:`QK^\top/\sqrt{d_k}`: exactly what the softmax receives.

    q, k: [..., pos, d_head] (the model's [batch, head_index, pos, d_head]); mask: bool,
    broadcastable to [..., query_pos, key_pos], True where a query may attend. Returns
    [..., query_pos, key_pos], -inf where masked. ``scale`` replaces 1/sqrt(d_head).
    """
    # 2. score, 3. scale: scaling q (pos x d_head) before the product equals dividing the
    # scores (query_pos x key_pos) by sqrt(d_k), with one pass less over the larger tensor.
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = torch.matmul(q * scale, k.transpose(-1, -2))
    if mask is not None:
        # 4. mask: exp(-inf) = 0 weight; in place, as the product is a fresh tensor (its
        # gradient needs q and k, not it), so no second [query_pos, key_pos] array is made
        scores.masked_fill_(~mask, float("-inf"))
    return scores


def dead_rows_of(mask: torch.Tensor) -> torch.Tensor:
    """The queries of bool ``mask`` [..., query_pos, key_pos] that may attend to nothing:
    bool [..., query_pos, 1], for `attention_pattern`."""
    return ~mask.any(dim=-1, keepdim=True)


def attention_pattern(scores: torch.Tensor, dead_rows: torch.Tensor | None = None) -> torch.Tensor:
    r"""Softmax over key_pos. A query that may attend to nothing gets all-zero weights, not NaN.

    dead_rows: bool, broadcastable to [..., query_pos, 1], True for fully masked queries (softmax
    of a row of -inf is 0/0; `dead_rows_of` finds them).
    """
    pattern = torch.softmax(scores, dim=-1)
    if dead_rows is not None:
        pattern = pattern.masked_fill(dead_rows, 0.0)
    return pattern


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    dead_rows: torch.Tensor | None = None,
    *,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""One head's attention on [batch, head_index, pos, d_head]; returns (z, pattern).

    The torch reference of scaled, masked attention (score, scale, mask, softmax, dead rows
    zeroed): the tiled and sparse implementations are tested against it, through
    `tformer.efficiency.tiled.explicit_attention`.

    .. math::
        \mathrm{Attention}(Q,K,V)=\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V,
        \qquad \text{masked scores} = -\infty

    Row i of the output is :math:`z_i = \sum_j p_{ij} V_j`: the values, weighted by row i of the
    pattern.
    """
    pattern = attention_pattern(attention_scores(q, k, mask, scale=scale), dead_rows)
    return torch.matmul(pattern, v), pattern


class MultiHeadAttention(nn.Module):
    """Multi-head self-attention. W_Q, W_K, W_V live in one Linear (rows Q;K;V) so the three
    projections are one matmul; head i owns rows i*d_head:(i+1)*d_head of each."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.d_model)  # W_O
        self.hook_q = HookPoint()  # [batch, pos, head_index, d_head]
        self.hook_k = HookPoint()  # [batch, pos, head_index, d_head]
        self.hook_v = HookPoint()  # [batch, pos, head_index, d_head]
        self.hook_attn_scores = HookPoint()  # [batch, head_index, query_pos, key_pos]
        self.hook_pattern = HookPoint()  # [batch, head_index, query_pos, key_pos]
        self.hook_z = HookPoint()  # [batch, pos, head_index, d_head]

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        dead_rows: torch.Tensor | None = None,
    ) -> torch.Tensor:
        r"""Multi-head self-attention of x [batch, pos, d_model]; returns [batch, pos, d_model].

        .. math::
            Q = XW_Q,\quad K = XW_K,\quad V = XW_V

            \mathrm{head}_i = \mathrm{softmax}\!\left(\frac{Q_iK_i^\top}{\sqrt{d_k}}\right)V_i,\qquad
            \mathrm{MultiHead}(X) = \mathrm{Concat}(\mathrm{head}_1,\dots,\mathrm{head}_h)\,W_O

        mask: bool [batch, 1, query_pos, key_pos], True where a query may attend; dead_rows:
        bool [batch, 1, query_pos, 1] for queries with nothing to attend to.
        """
        B, T, _ = x.shape  # [batch, pos, d_model]
        H, Dh = self.cfg.n_heads, self.cfg.d_head
        scale = None if self.cfg.scaled else 1.0  # None: 1/√d_head; 1.0: the raw q·k (cfg.scaled)

        # 1. project: Q = XW_Q, K = XW_K, V = XW_V, each split into heads
        q, k, v = self.qkv(x).view(B, T, 3, H, Dh).unbind(dim=2)  # [batch, pos, head_index, d_head]
        q, k, v = self.hook_q(q), self.hook_k(k), self.hook_v(v)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # [batch, head_index, pos, d_head]

        if capturing():
            # 2. score, 3. scale, 4. mask
            scores = self.hook_attn_scores(attention_scores(q, k, mask, scale=scale))
            # 5. softmax (captured before dropout, so rows sum to 1)
            pattern = self.hook_pattern(attention_pattern(scores, dead_rows))
            if self.training and self.cfg.dropout > 0:
                pattern = F.dropout(pattern, self.cfg.dropout)
            # 6. weight the values
            z = torch.matmul(pattern, v)  # [batch, head_index, query_pos, d_head]
        else:
            # Nothing is watched: the fused kernel computes the same numbers (tests check it).
            z = F.scaled_dot_product_attention(
                q, k, v, attn_mask=mask, dropout_p=self.cfg.dropout if self.training else 0.0, scale=scale
            )
            if dead_rows is not None:
                z = z.masked_fill(dead_rows, 0.0)

        z = self.hook_z(z.transpose(1, 2))  # [batch, pos, head_index, d_head]
        # 7. concat heads, 8. output projection W_O
        out: torch.Tensor = self.out(z.reshape(B, T, H * Dh))  # [batch, pos, d_model]
        return out
