"""Runs that change the model on purpose: heads switched off, positions switched off.

Each one goes through hooks that return a replacement tensor; the model itself is never edited,
so the shared cached model stays as it was for every other session.
"""

from __future__ import annotations

import numpy as np
import torch

from .capture import frozen_numpy
from .encoder import Encoder
from .hooks import HookFn, HookPoint, act_name


def ablate_heads(
    model: Encoder, ids: list[int], heads: list[tuple[int, int]], *, base: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Outputs [pos, d_model] without and with the given (layer, head_index) zeroed.

    A head is ablated by zeroing its slice of hook_z, so Concat(heads) W_O loses its share.
    ``base``: the unablated output if already at hand from a hooked run of the same ids
    (`TextCapture.output`: the same explicit path), which saves one forward pass.
    """
    by_layer: dict[int, list[int]] = {}
    for layer, head in heads:
        if not (0 <= layer < model.cfg.n_layers and 0 <= head < model.cfg.n_heads):
            raise ValueError(
                f"head ({layer}, {head}) does not exist: the model has {model.cfg.n_layers} layers "
                f"x {model.cfg.n_heads} heads"
            )
        by_layer.setdefault(layer, []).append(head)

    def zero(index: list[int]) -> HookFn:
        def hook(z: torch.Tensor, hook: HookPoint) -> torch.Tensor:
            # z: [batch, pos, head_index, d_head]
            return z.index_fill(2, torch.tensor(index, device=z.device), 0.0)

        return hook

    fwd_hooks = [(act_name("z", layer), zero(idx)) for layer, idx in by_layer.items()]
    ablated = frozen_numpy(model.run_with_hooks(ids, fwd_hooks=fwd_hooks)[0])
    if base is None:
        base = frozen_numpy(model.run_with_hooks(ids, fwd_hooks=[])[0])  # the same explicit path
    return base, ablated


def patterns_without_positions(model: Encoder, ids: list[int]) -> np.ndarray:
    """Every head's pattern [layer, head_index, query_pos, key_pos] with the positional
    encoding switched off (hook_pos_embed replaced by zeros), same weights otherwise."""
    patterns: dict[str, torch.Tensor] = {}

    def no_positions(pos: torch.Tensor, hook: HookPoint) -> torch.Tensor:
        return torch.zeros_like(pos)

    def save(pattern: torch.Tensor, hook: HookPoint) -> None:
        patterns[hook.name] = pattern

    names = [act_name("pattern", i) for i in range(model.cfg.n_layers)]
    with (
        torch.inference_mode(),
        model.hooks([(act_name("pos_embed"), no_positions)] + [(n, save) for n in names]),
    ):
        model(ids)
    return frozen_numpy(torch.stack([patterns[n][0] for n in names]))
