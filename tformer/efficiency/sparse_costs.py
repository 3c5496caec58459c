"""Sparse and local attention, measured: the local window (by blocks of w) and the strided
pattern (by blocks of s) of `tformer.efficiency.sparse`, which compute only the allowed scores, against
dense SDPA under the same bool mask; and the share of the n² scores each mask allows and each
implementation computes. Measured as `tformer.efficiency.costs` measures every sweep."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from .costs import Sweep, run_sweep, sdpa_backends, seeded_randn
from .measure import Budget, Method, Progress, doubling
from .sparse import allowed_count, computed_count, local_attention, strided_attention

__all__ = ["SparseSettings", "sparse_sweep", "stride_for"]


@dataclass(frozen=True)
class SparseSettings:
    n_heads: int = 12
    d_head: int = 32
    window: int = 64  # the local window's w at long lengths
    stride: int | None = None  # the strided pattern's s; None: the power of two nearest √n
    n_min: int = 256
    n_max: int = 16384
    budget: Budget = Budget(total_s=5.0)

    def __post_init__(self) -> None:
        if (
            self.n_heads < 1
            or self.d_head < 1
            or self.window < 0
            or (self.stride is not None and self.stride < 1)
        ):
            raise ValueError(
                f"n_heads={self.n_heads}, d_head={self.d_head} must be >= 1, window={self.window} >= 0, "
                f"stride={self.stride} >= 1"
            )
        doubling(self.n_min, self.n_max)


def stride_for(n: int, stride: int | None = None) -> int:
    """The strided pattern's s at length n: ``stride``, or the power of two nearest √n."""
    return stride if stride is not None else 1 << max(0, round(math.log2(math.sqrt(n))))


def _band_mask(n: int, w: int, device: torch.device) -> torch.Tensor:
    pos = torch.arange(n, device=device)
    return (pos[:, None] - pos[None, :]).abs() <= w


def _strided_mask(n: int, st: int, device: torch.device) -> torch.Tensor:
    pos = torch.arange(n, device=device)
    diff = pos[:, None] - pos[None, :]
    return (diff.abs() < st) | (diff % st == 0)


def sparse_sweep(
    settings: SparseSettings | None = None, device: str = "cpu", progress: Progress | None = None
) -> Sweep:
    """Time and peak memory against n of the local window and the strided pattern, each by
    blocks, against dense SDPA with the same bool mask; and the share of the n² scores each
    mask allows and each implementation computes."""
    s = settings or SparseSettings()
    dev, h, d, w = torch.device(device), s.n_heads, s.d_head, s.window

    def qkv(n: int) -> tuple[torch.Tensor, ...]:
        return tuple(seeded_randn((1, h, n, d), dev, torch.float32, seed) for seed in (5, 6, 7))

    def dense(make_mask: Callable[[int], torch.Tensor]) -> Callable[[int], Callable[[], Any]]:
        def setup(n: int) -> Callable[[], Any]:
            q, k, v = qkv(n)
            attn_mask = make_mask(n)  # made here, before the call: not part of what is measured
            return lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)

        return setup

    def sparse(
        fn: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], torch.Tensor],
    ) -> Callable[[int], Callable[[], Any]]:
        def setup(n: int) -> Callable[[], Any]:
            q, k, v = qkv(n)
            return lambda: fn(q, k, v, n)

        return setup

    def io(n: int) -> int:
        return 4 * h * n * d * 4

    backends = sdpa_backends(str(dev))
    # a fused kernel that takes a mask (CPU's flash, CUDA's memory-efficient) holds the mask and a
    # float copy of it; the math backend holds the scores of every head too
    fused = backends["sdpa_efficient"] or (dev.type == "cpu" and backends["sdpa_flash"])

    def dense_need(n: int) -> int:
        return io(n) + n * n * 5 + (0 if fused else 3 * h * n * n * 4)

    methods = [
        Method("dense_local", dense(lambda n: _band_mask(n, w, dev)), dense_need),
        Method(
            "local",
            sparse(lambda q, k, v, n: local_attention(q, k, v, w)),
            # scores and weights [n, B + 2w] (B = w), the gathered keys and values [n, 3, d]
            lambda n: io(n) + 4 * h * n * (8 * max(w, 1) + 8 * d),
            exponent=1.0,
        ),
        Method("dense_strided", dense(lambda n: _strided_mask(n, stride_for(n, s.stride), dev)), dense_need),
        Method(
            "strided",
            sparse(lambda q, k, v, n: strided_attention(q, k, v, stride_for(n, s.stride))),
            lambda n: io(n) + 4 * h * (4 * computed_count("strided", n, stride_for(n, s.stride)) + 6 * n * d),
            exponent=1.5,
        ),
    ]
    lengths = doubling(s.n_min, s.n_max)
    shares: dict[str, list[float]] = {
        "local": [],
        "strided": [],
        "local_computed": [],
        "strided_computed": [],
    }
    for n in lengths:
        cells, st = float(n) * n, stride_for(n, s.stride)
        shares["local"].append(allowed_count("local", n, w) / cells)
        shares["strided"].append(allowed_count("strided", n, st) / cells)
        shares["local_computed"].append(min(computed_count("local", n, w) / cells, 1.0))
        shares["strided_computed"].append(computed_count("strided", n, st) / cells)
    extra = {
        "lengths": np.array(lengths, dtype=np.int64),
        "shares": {k: np.array(v) for k, v in shares.items()},
        "strides": np.array([stride_for(n, s.stride) for n in lengths], dtype=np.int64),
    }
    return run_sweep("sparse", s, methods, dev, progress, extra=extra)
