r"""Layer normalisation with its two intermediate results exposed as hook points.

.. math::
    \mathrm{LayerNorm}(x) = \gamma \odot \frac{x - \mu}{\sigma} + \beta,\qquad
    \mu = \tfrac{1}{d}\textstyle\sum_i x_i,\quad
    \sigma = \sqrt{\tfrac{1}{d}\textstyle\sum_i (x_i - \mu)^2 + \varepsilon}
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .hooks import HookPoint


class LayerNorm(nn.Module):
    r"""Normalise each position over d_model, then scale by :math:`\gamma` and shift by :math:`\beta`.

    .. math::
        \mathrm{LayerNorm}(x) = \gamma \odot \frac{x - \mu}{\sigma} + \beta,\quad
        \sigma = \sqrt{\mathrm{Var}(x) + \varepsilon}

    Parameters are named ``weight`` (γ) and ``bias`` (β), as in ``nn.LayerNorm``, so state dicts
    load unchanged. It calls the fused ``F.layer_norm`` unless the run hooks σ (``hook_scale``)
    or (x − μ)/σ (``hook_normalized``); then it takes the explicit path so that they are seen.
    """

    def __init__(self, d_model: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.d_model, self.eps = d_model, eps
        self.weight = nn.Parameter(torch.ones(d_model))  # γ
        self.bias = nn.Parameter(torch.zeros(d_model))  # β
        self.hook_scale = HookPoint()  # [batch, pos, 1]
        self.hook_normalized = HookPoint()  # [batch, pos, d_model]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not (self.hook_scale.hooked or self.hook_normalized.hooked):
            return F.layer_norm(x, (self.d_model,), self.weight, self.bias, self.eps)
        centred = x - x.mean(dim=-1, keepdim=True)  # [batch, pos, d_model]
        # Biased variance, as nn.LayerNorm: divide by d_model, not d_model - 1.
        scale = self.hook_scale((centred.pow(2).mean(dim=-1, keepdim=True) + self.eps).sqrt())
        normalized = self.hook_normalized(centred / scale)  # [batch, pos, d_model]
        return normalized * self.weight + self.bias

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}"
