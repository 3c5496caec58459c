r"""Two ways to write the same multi-head self-attention.

* `SeparateQKV`, the classic layout: four Linear layers W_q, W_k, W_v, W_o. Each projection is
  its own matmul.
* `FusedQKV`, the fused layout: one Linear ``qkv_proj`` of shape d_model -> 3 d_model, whose
  output is cut into q, k, v with ``torch.chunk``, then ``out_proj``. This is the layout of
  `tformer.MultiHeadAttention` (``attn.qkv``, ``attn.out``).

They compute the same function. A Linear's output feature j is row j of its weight dotted with
the input, plus bias j. So a Linear whose weight is :math:`[W_Q; W_K; W_V]` (rows stacked) outputs
:math:`[XW_Q,\ XW_K,\ XW_V]` side by side: exactly the three separate projections, computed in
one matmul. `split_fused` cuts the rows apart and `compare_layouts` measures the difference,
which is float rounding only.

After the projections both layouts run the same attention (`tformer.model.attention`):

.. math::
    \mathrm{MultiHead}(X) = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)\, W_O,
    \quad \mathrm{head}_i = \mathrm{softmax}\!\left(\frac{Q_iK_i^\top}{\sqrt{d_k}}\right) V_i
"""

from __future__ import annotations

import torch
from torch import nn

from ..model.attention import MultiHeadAttention, dead_rows_of, scaled_dot_product_attention
from ..model.encoder import Encoder


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attn_mask: torch.Tensor | None) -> torch.Tensor:
    """Steps 2-6 on [batch, head_index, pos, d_head]; returns z [batch, head_index, query_pos, d_head].

    attn_mask: bool or 0/1, broadcastable to [batch, head_index, query_pos, key_pos]; nonzero = may attend.
    """
    if attn_mask is None:
        return scaled_dot_product_attention(q, k, v)[0]
    attn_mask = attn_mask != 0
    # A query that may attend to nothing has a row of -inf scores, and softmax of it is
    # exp(-inf) / sum(exp(-inf)) = 0/0 = NaN; such a query reads no value, so its output is 0.
    dead_rows = dead_rows_of(attn_mask)  # [batch, head_index, query_pos, 1]
    return scaled_dot_product_attention(q, k, v, attn_mask, dead_rows)[0]


class SeparateQKV(nn.Module):
    """Multi-head self-attention with one Linear per projection: W_q, W_k, W_v, W_o."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        B, T, D = x.shape  # [batch, pos, d_model]
        H, Dh = self.n_heads, self.d_head
        # 1. project: three matmuls, each output split into heads
        q = self.W_q(x).view(B, T, H, Dh).transpose(1, 2)  # [batch, head_index, pos, d_head]
        k = self.W_k(x).view(B, T, H, Dh).transpose(1, 2)  # [batch, head_index, pos, d_head]
        v = self.W_v(x).view(B, T, H, Dh).transpose(1, 2)  # [batch, head_index, pos, d_head]
        # 2.-6. score, scale, mask, softmax, weight the values
        z = attend(q, k, v, attn_mask)  # [batch, head_index, query_pos, d_head]
        # 7. concat heads, 8. output projection
        z = z.transpose(1, 2).reshape(B, T, D)  # [batch, pos, d_model]
        out: torch.Tensor = self.W_o(z)  # [batch, pos, d_model]
        return out


class FusedQKV(nn.Module):
    """Multi-head self-attention with W_q, W_k, W_v stacked in one Linear ``qkv_proj``."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.qkv_proj = nn.Linear(d_model, 3 * d_model)  # weight rows: W_q; W_k; W_v
        self.out_proj = nn.Linear(d_model, d_model)  # W_o

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        B, T, D = x.shape  # [batch, pos, d_model]
        H, Dh = self.n_heads, self.d_head
        # 1. project: one matmul, then cut its output into q, k, v
        qkv = self.qkv_proj(x)  # [batch, pos, 3 * d_model]
        q, k, v = torch.chunk(qkv, 3, dim=-1)  # each [batch, pos, d_model]
        q = q.view(B, T, H, Dh).transpose(1, 2)  # [batch, head_index, pos, d_head]
        k = k.view(B, T, H, Dh).transpose(1, 2)  # [batch, head_index, pos, d_head]
        v = v.view(B, T, H, Dh).transpose(1, 2)  # [batch, head_index, pos, d_head]
        # 2.-6. score, scale, mask, softmax, weight the values
        z = attend(q, k, v, attn_mask)  # [batch, head_index, query_pos, d_head]
        # 7. concat heads, 8. output projection
        z = z.transpose(1, 2).reshape(B, T, D)  # [batch, pos, d_model]
        out: torch.Tensor = self.out_proj(z)  # [batch, pos, d_model]
        return out


def _like(module: nn.Module, like: nn.Linear) -> nn.Module:
    """``module`` on the device and dtype of ``like``, in eval mode."""
    return module.to(device=like.weight.device, dtype=like.weight.dtype).eval()


def split_fused(fused: FusedQKV) -> SeparateQKV:
    """A `SeparateQKV` computing the same function: W_q, W_k, W_v are the three row blocks of
    ``fused.qkv_proj`` (weights and biases copied), W_o is ``out_proj``."""
    d_model = fused.out_proj.in_features
    with torch.random.fork_rng(devices=[]):  # the new Linears' init draws nothing from the global RNG
        separate = SeparateQKV(d_model, fused.n_heads)
    w_q, w_k, w_v = fused.qkv_proj.weight.chunk(3, dim=0)  # each [d_model, d_model]
    b_q, b_k, b_v = fused.qkv_proj.bias.chunk(3, dim=0)  # each [d_model]
    state = {"W_q.weight": w_q, "W_q.bias": b_q, "W_k.weight": w_k, "W_k.bias": b_k}
    state |= {"W_v.weight": w_v, "W_v.bias": b_v}
    state |= {"W_o.weight": fused.out_proj.weight, "W_o.bias": fused.out_proj.bias}
    _like(separate, fused.out_proj).load_state_dict(state)  # copies: the two share no tensor
    return separate


def fused_from_model(attn: MultiHeadAttention) -> FusedQKV:
    """A `FusedQKV` holding copies of the weights of a tformer `MultiHeadAttention`."""
    with torch.random.fork_rng(devices=[]):
        fused = FusedQKV(attn.cfg.d_model, attn.cfg.n_heads)
    state = {f"qkv_proj.{n}": p for n, p in attn.qkv.state_dict().items()}
    state |= {f"out_proj.{n}": p for n, p in attn.out.state_dict().items()}
    _like(fused, attn.out).load_state_dict(state)
    return fused


def compare_layouts(
    model: Encoder, layer: int, x: torch.Tensor, attn_mask: torch.Tensor | None = None
) -> dict[str, float]:
    """Run layer ``layer``'s attention three ways on x [batch, pos, d_model] (that layer's attention
    input) and return the largest absolute differences between them.

    attn_mask: bool or 0/1, broadcastable to [batch, 1, query_pos, key_pos]; nonzero = may attend.
    Returns ``separate_vs_fused`` (`SeparateQKV` from `split_fused` vs `FusedQKV`),
    ``fused_vs_model`` (`FusedQKV` vs the model's own attention) and ``max_abs_output`` (the
    largest absolute value of the model's output, the scale the differences compare with).
    """
    if not 0 <= layer < len(model.blocks):
        raise ValueError(f"layer={layer} is out of range for a model with n_layers={len(model.blocks)}")
    attn = model.blocks[layer].attn
    if not isinstance(attn, MultiHeadAttention):
        raise TypeError(f"blocks[{layer}].attn is a {type(attn).__name__}, not a MultiHeadAttention")
    x = x.to(device=attn.out.weight.device, dtype=attn.out.weight.dtype)
    B, T, _ = x.shape  # [batch, pos, d_model]
    attn_mask4 = dead_rows = None
    if attn_mask is not None:
        attn_mask4 = (attn_mask.to(x.device) != 0).expand(B, 1, T, T)  # [batch, 1, query_pos, key_pos]
        dead = ~attn_mask4.any(dim=-1, keepdim=True)  # [batch, 1, query_pos, 1]
        dead_rows = dead if bool(dead.any()) else None  # as Encoder.layer_attn_mask passes it
    fused = fused_from_model(attn)
    separate = split_fused(fused)
    with torch.inference_mode():
        out_fused = fused(x, attn_mask4)  # [batch, pos, d_model]
        out_separate = separate(x, attn_mask4)  # [batch, pos, d_model]
        out_model = attn(x, attn_mask4, dead_rows)  # [batch, pos, d_model]
    return {
        "separate_vs_fused": (out_separate - out_fused).abs().max().item(),
        "fused_vs_model": (out_fused - out_model).abs().max().item(),
        "max_abs_output": out_model.abs().max().item(),
    }
