r"""The FFN's activation functions, one name each, as `EncoderConfig.activation` spells them.

.. math::
    \mathrm{ReLU}(x) = \max(0, x)

    \mathrm{GELU}(x) = x\,\Phi(x) = \tfrac{x}{2}\left(1 + \mathrm{erf}(x/\sqrt{2})\right)

    \mathrm{GELU}_{\tanh}(x) = \tfrac{x}{2}\left(1 + \tanh\!\left(\sqrt{2/\pi}\,(x + 0.044715\,x^3)\right)\right)

The paper's FFN uses ReLU; BERT, RoBERTa, ELECTRA and DistilBERT use the exact (erf) GELU;
GPT-2 uses the tanh approximation (transformers calls it ``gelu_new``, and ``gelu_pytorch_tanh``
for the same formula computed by PyTorch's kernel).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

__all__ = ["ACTIVATION_FUNCTIONS", "activation_fn", "gelu_tanh"]


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    r""":math:`\tfrac{x}{2}(1 + \tanh(\sqrt{2/\pi}(x + 0.044715x^3)))`, GPT-2's GELU."""
    return F.gelu(x, approximate="tanh")


ACTIVATION_FUNCTIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": F.relu,
    "gelu": F.gelu,  # exact (erf) GELU, as BERT
    "gelu_tanh": gelu_tanh,
}


def activation_fn(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """The function `EncoderConfig.activation` names (the config has validated the name)."""
    return ACTIVATION_FUNCTIONS[name]
