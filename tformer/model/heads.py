r"""The language-model head: the seeds' last "Linear" before "Softmax -> Output", over the vocabulary.

.. math::
    \text{tied (GPT-2)}:\quad \mathrm{logits} = h\,W_E^\top

    \text{mlm (BERT)}:\quad \mathrm{logits} = \mathrm{LayerNorm}\big(\mathrm{act}(hW_t + b_t)\big)\,W_E^\top + b

:math:`W_E` [vocab, d_model] is the token embedding matrix: the output layer reads a hidden state
as a query against every token's embedding, so it holds no copy of it (both models tie them).
The task head of a from-scratch encoder is `Encoder.head`, a plain Linear; this one is apart
from it so that ``forward`` keeps returning hidden states, which every capture reads.
"""

from __future__ import annotations

import torch
from torch import nn

from .activations import activation_fn
from .config import EncoderConfig
from .layernorm import LayerNorm

__all__ = ["LMHead"]


class LMHead(nn.Module):
    """Scores over the vocabulary from the last hidden state, with the embedding matrix as W."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.kind = cfg.lm_head
        if cfg.lm_head == "mlm":
            d = cfg.d_model
            self.dense = nn.Linear(d, d)  # W_t, b_t
            self.act = activation_fn(cfg.activation)
            self.ln = LayerNorm(d, eps=cfg.layer_norm_eps)
            self.bias = nn.Parameter(torch.zeros(cfg.vocab_size))  # b [vocab]

    def forward(self, hidden: torch.Tensor, embed_weight: torch.Tensor) -> torch.Tensor:
        """hidden [batch, pos, d_model], embed_weight W_E [vocab, d_model] -> logits [batch, pos, vocab]."""
        if self.kind == "mlm":
            h = self.ln(self.act(self.dense(hidden)))  # [batch, pos, d_model]
            return torch.matmul(h, embed_weight.t()) + self.bias
        return torch.matmul(hidden, embed_weight.t())  # [batch, pos, vocab]

    def extra_repr(self) -> str:
        return self.kind
