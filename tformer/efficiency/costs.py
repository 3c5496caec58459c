r"""What attention costs, measured on the device in use: three sweeps over the sequence length.

- `wall_sweep` (here), the n² wall: time and peak memory of one attention call (batch 1) for the
  explicit attention (materialised scores), ``F.scaled_dot_product_attention`` under each
  backend the device offers, and our tiled loop (`tformer.efficiency.tiled`), doubling n until a budget
  stops each method; the fitted exponent of each curve.
- `tformer.efficiency.rnn.rnn_sweep`, attention against an RNN at the same d_model: a GRU must step through the n
  positions one after another, one self-attention layer sees them all at once; the path
  between the first and the last token is n − 1 steps long in the GRU and 1 in attention.
- `tformer.efficiency.sparse_costs.sparse_sweep`, sparse and local attention (`tformer.efficiency.sparse`): implementations that compute
  only the allowed scores against dense attention under the same mask.

How each number is measured, and how the budgets stop a sweep: `tformer.efficiency.measure`. The
sweeps are plain functions: settings in, a `Sweep` out, a progress callback called along the
way; no Streamlit. This module holds what the three share: the `Sweep` result, `run_sweep`,
the SDPA backends.
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ..timing import Load, watch
from .measure import (
    Budget,
    Curve,
    Method,
    Note,
    Progress,
    device_name,
    doubling,
    exclusive,
    measure_curves,
    memory_method,
    mib,
)
from .tiled import explicit_attention, tile_bytes, tiled_attention

__all__ = [
    "BACKENDS",
    "DTYPES",
    "Sweep",
    "WallSettings",
    "describe_budget",
    "run_sweep",
    "sdpa_backends",
    "sdpa_call",
    "seeded_randn",
    "wall_sweep",
]

# method key -> torch.nn.attention.SDPBackend member
BACKENDS = {
    "sdpa_math": "MATH",
    "sdpa_efficient": "EFFICIENT_ATTENTION",
    "sdpa_flash": "FLASH_ATTENTION",
    "sdpa_cudnn": "CUDNN_ATTENTION",
}
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


@dataclass(frozen=True)
class WallSettings:
    n_heads: int = 12  # MiniLM's heads and head width
    d_head: int = 32
    n_min: int = 64
    n_max: int = 16384
    dtype: str = "float32"
    block: int = 128  # the tiled loop's query and key tile: few Python steps, small tiles
    budget: Budget = Budget(total_s=9.0)

    def __post_init__(self) -> None:
        if self.n_heads < 1 or self.d_head < 1 or self.block < 1:
            raise ValueError(f"n_heads={self.n_heads}, d_head={self.d_head}, block={self.block} must be >= 1")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype={self.dtype!r} must be one of {', '.join(DTYPES)}")
        doubling(self.n_min, self.n_max)


@dataclass(frozen=True)
class Sweep:
    kind: str  # "wall", "rnn" or "sparse"
    device: str  # torch's name: "cpu", "cuda:0"
    device_name: str  # the GPU's or the CPU's model
    threads: int  # torch's CPU threads
    memory_method: str  # "cuda", "profiler" or "none" (`costs_measure.memory_method`)
    memory_budget: int  # bytes
    settings: Any
    curves: tuple[Curve, ...]
    unavailable: tuple[str, ...]  # methods this device cannot run (SDPA backends)
    seconds: float
    extra: dict[str, Any] = field(default_factory=dict)  # per kind: formula lines, shares, paths
    load: Load = field(default_factory=Load)  # what else ran on the machine during the sweep

    def curve(self, method: str) -> Curve:
        for c in self.curves:
            if c.method == method:
                return c
        raise KeyError(f"no curve {method!r}; this sweep has {[c.method for c in self.curves]}")


def _progress_or_nothing(progress: Progress | None) -> Progress:
    return progress if progress is not None else (lambda fraction, note: None)


def seeded_randn(shape: tuple[int, ...], device: torch.device, dtype: torch.dtype, seed: int) -> torch.Tensor:
    """Standard normal numbers from their own generator: the same inputs at every run, and the
    global seed left alone."""
    gen = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(shape, generator=gen, device=device, dtype=dtype)


# --- SDPA backends ---------------------------------------------------------------------------------


@functools.cache
def sdpa_backends(device: str, dtype: str = "float32") -> dict[str, bool]:
    """Which SDPA backends run here: a tiny call under each (``sdpa_kernel``), recorded."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    dev = torch.device(device)
    q = torch.randn(1, 2, 16, 32, device=dev, dtype=DTYPES[dtype])
    found = {}
    for key, name in BACKENDS.items():
        backend = getattr(SDPBackend, name, None)
        ok = False
        if backend is not None:
            try:
                # a backend that cannot run says why in a UserWarning, then raises: keep the log quiet
                with warnings.catch_warnings(), torch.inference_mode(), sdpa_kernel(backend):
                    warnings.simplefilter("ignore")
                    F.scaled_dot_product_attention(q, q, q)
                ok = True
            except (RuntimeError, NotImplementedError, ValueError):
                ok = False
        found[key] = ok
    return found


def sdpa_call(
    key: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attn_mask: torch.Tensor | None = None
) -> torch.Tensor:
    """``F.scaled_dot_product_attention`` under one backend (`BACKENDS` key)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(getattr(SDPBackend, BACKENDS[key])):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)


# --- 1. the n² wall ----------------------------------------------------------------------------------


def wall_sweep(
    settings: WallSettings | None = None, device: str = "cpu", progress: Progress | None = None
) -> Sweep:
    """Time and peak memory against n for explicit attention, each SDPA backend this device
    runs, and the tiled loop; batch 1, ``settings.n_heads`` heads of ``settings.d_head``."""
    s = settings or WallSettings()
    dev, dtype = torch.device(device), DTYPES[s.dtype]
    size = torch.tensor([], dtype=dtype).element_size()
    backends = sdpa_backends(str(dev), s.dtype)
    h, d = s.n_heads, s.d_head

    def inputs(n: int) -> int:  # q, k, v and the output
        return 4 * h * n * d * size

    def qkv(n: int) -> tuple[torch.Tensor, ...]:
        return tuple(seeded_randn((1, h, n, d), dev, dtype, seed) for seed in (1, 2, 3))

    def setup_with(fn: Callable[..., torch.Tensor]) -> Callable[[int], Callable[[], Any]]:
        def setup(n: int) -> Callable[[], Any]:
            q, k, v = qkv(n)
            return lambda: fn(q, k, v)

        return setup

    tile = functools.partial(tiled_attention, block_q=s.block, block_k=s.block)
    methods = [
        # S and softmax(S): two [heads, n, n] arrays
        Method("explicit", setup_with(explicit_attention), lambda n: inputs(n) + 2 * h * n * n * size),
    ]
    for key in BACKENDS:
        if not backends[key]:
            continue
        quadratic = key == "sdpa_math"  # the math backend materialises the scores too
        methods.append(
            Method(
                key,
                setup_with(functools.partial(sdpa_call, key)),
                (lambda n: inputs(n) + 3 * h * n * n * size)
                if quadratic
                else (lambda n: inputs(n) + h * n * d * 4 * size),
            )
        )
    methods.append(
        Method(
            "tiled",
            setup_with(tile),
            lambda n: inputs(n) + 2 * tile_bytes(h, min(s.block, n), min(s.block, n), d),
        )
    )
    lengths = np.array(doubling(s.n_min, s.n_max), dtype=np.int64)
    formula = h * lengths.astype(np.float64) ** 2 * size  # the scores alone: n² × heads × bytes
    return run_sweep(
        "wall",
        s,
        methods,
        dev,
        progress,
        extra={"scores_bytes": (lengths, formula), "dtype": s.dtype},
        unavailable=tuple(k for k, ok in backends.items() if not ok),
    )


# --- shared ------------------------------------------------------------------------------------------


def run_sweep(
    kind: str,
    settings: Any,
    methods: list[Method],
    dev: torch.device,
    progress: Progress | None,
    *,
    extra: dict[str, Any],
    unavailable: tuple[str, ...] = (),
) -> Sweep:
    """Measure ``methods`` at ``settings``' doubling lengths under its budget, one sweep at a
    time in this process (`exclusive`), and wrap the curves with the device's facts and what
    else ran meanwhile (`tformer.timing.watch`)."""
    report = _progress_or_nothing(progress)
    with exclusive(report), watch() as load:
        start = time.perf_counter()
        lengths = doubling(settings.n_min, settings.n_max)
        curves, mem_budget = measure_curves(methods, lengths, settings.budget, dev, report)
        seconds = time.perf_counter() - start
    return Sweep(
        kind=kind,
        device=str(dev),
        device_name=device_name(dev),
        threads=torch.get_num_threads(),
        memory_method=memory_method(dev),
        memory_budget=mem_budget,
        settings=settings,
        curves=tuple(curves),
        unavailable=unavailable,
        seconds=seconds,
        extra=extra,
        load=load.load,
    )


def describe_budget(sweep: Sweep) -> Note:
    """The budgets a sweep ran under, as one sentence."""
    b = sweep.settings.budget
    return Note.of(
        "Budgets: {call:.0f} ms per call, {memory} MiB of memory (checked by formula before each "
        "length), {total:.0f} s for the whole sweep.",
        call=b.call_s * 1e3,
        memory=mib(sweep.memory_budget),
        total=b.total_s,
    )
