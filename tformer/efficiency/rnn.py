"""Attention against an RNN, measured: a GRU (or a plain tanh RNN) must step through the n
positions one after another, one self-attention layer of the same d_model sees them all at once.
The path from the first to the last token is n − 1 steps in the GRU and 1 in attention. Measured
as `tformer.efficiency.costs` measures every sweep."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .costs import Sweep, run_sweep, sdpa_backends, seeded_randn
from .measure import Budget, Method, Progress, doubling

__all__ = ["RECURRENT", "RnnSettings", "SelfAttentionLayer", "path_lengths", "rnn_sweep"]

RECURRENT = ("rnn", "gru")  # torch's nn.RNN (tanh) and nn.GRU


@dataclass(frozen=True)
class RnnSettings:
    d_model: int = 384  # MiniLM's width
    n_heads: int = 12
    n_min: int = 64
    n_max: int = 16384
    budget: Budget = Budget(total_s=6.0)
    recurrent: tuple[str, ...] = ("gru",)  # which recurrent layers to time, from RECURRENT

    def __post_init__(self) -> None:
        if self.n_heads < 1 or self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        if not self.recurrent or any(r not in RECURRENT for r in self.recurrent):
            raise ValueError(f"recurrent={self.recurrent!r} must name some of {RECURRENT}")
        doubling(self.n_min, self.n_max)


class SelfAttentionLayer(nn.Module):
    """One self-attention layer: project to Q, K, V, attend over every position at once
    (``F.scaled_dot_product_attention``), project back with W_O."""

    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape  # [batch, pos, d_model]
        qkv = self.qkv(x).view(b, n, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        z = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2])  # [batch, head_index, pos, d_head]
        out: torch.Tensor = self.out(z.transpose(1, 2).reshape(b, n, d))  # [batch, pos, d_model]
        return out


def path_lengths(n: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
    """For each length n: the steps a signal takes from the first token to the last, and the
    steps that must run one after another. GRU: n − 1 and n; attention: 1 and 1."""
    n = np.asarray(n, dtype=np.int64)
    one = np.ones_like(n)
    return {"gru": {"path": n - 1, "sequential": n}, "attention": {"path": one, "sequential": one}}


def rnn_sweep(
    settings: RnnSettings | None = None, device: str = "cpu", progress: Progress | None = None
) -> Sweep:
    """Time against n of each recurrent layer of ``settings.recurrent`` (a GRU by default; batch
    1, d_model in and out) and of one self-attention layer of the same d_model."""
    s = settings or RnnSettings()
    dev, d = torch.device(device), s.d_model
    with torch.random.fork_rng(devices=[]):  # the layers' random init leaves the global seed alone
        torch.manual_seed(0)
        gru = nn.GRU(d, d, batch_first=True).to(dev).eval()
        attn = SelfAttentionLayer(d, s.n_heads).to(dev).eval()
        rnn = nn.RNN(d, d, nonlinearity="tanh", batch_first=True).to(dev).eval()
    recurrent = {"gru": gru, "rnn": rnn}

    def setup_with(module: nn.Module) -> Callable[[int], Callable[[], Any]]:
        def setup(n: int) -> Callable[[], Any]:
            x = seeded_randn((1, n, d), dev, torch.float32, 4)
            return lambda: module(x)

        return setup

    fused = any(ok for k, ok in sdpa_backends(str(dev)).items() if k != "sdpa_math")
    methods = [
        Method(key, setup_with(recurrent[key]), lambda n: 4 * n * d * 8, exponent=1.0) for key in s.recurrent
    ] + [
        Method(
            "attention",
            setup_with(attn),
            (lambda n: 4 * n * d * 8) if fused else (lambda n: 4 * n * d * 8 + 3 * s.n_heads * n * n * 4),
        ),
    ]
    lengths = np.array(doubling(s.n_min, s.n_max), dtype=np.int64)
    return run_sweep(
        "rnn", s, methods, dev, progress, extra={"lengths": lengths, "paths": path_lengths(lengths)}
    )
