"""The model in use as a list of components with their real shapes and parameter counts.

The counts come from the model's own parameters (grouped by name), so they add up to
``sum(p.numel() for p in model.parameters())`` whatever the configuration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Component:
    name: str  # e.g. "layer 0 · multi-head attention"
    params: int
    layer: int | None = None  # None: not inside a block


# The parts of a block, in the order the paper draws them, by parameter-name prefix.
_BLOCK_PARTS = (
    ("attn.", "multi-head attention (W_Q, W_K, W_V, W_O)"),
    ("ln1.", "add & norm 1 (LayerNorm γ, β)"),
    ("mlp.", "feed-forward (W_1, W_2)"),
    ("ln2.", "add & norm 2 (LayerNorm γ, β)"),
)
_TOP_PARTS = (
    ("embed.", "token embedding"),
    ("pos_embed.", "learned positions"),
    ("token_type_embed.", "segment embedding"),
    ("embed_ln.", "embedding LayerNorm"),
    ("ln_final.", "final LayerNorm"),
    ("head.", "output Linear"),
)


def parameter_counts(model: Any) -> list[Component]:
    """Every component of a tformer Encoder with its parameter count, in forward order."""
    counts: dict[tuple[str, int | None], int] = {}
    for name, p in model.named_parameters():
        if name.startswith("blocks."):
            _, layer_s, rest = name.split(".", 2)
            layer: int | None = int(layer_s)
            label = next((label for prefix, label in _BLOCK_PARTS if rest.startswith(prefix)), rest)
        else:
            layer = None
            label = next((label for prefix, label in _TOP_PARTS if name.startswith(prefix)), name)
        counts[(label, layer)] = counts.get((label, layer), 0) + int(p.numel())

    def order(item: tuple[tuple[str, int | None], int]) -> tuple[int, int]:
        (label, layer), _ = item
        if layer is None:
            top = [lab for _, lab in _TOP_PARTS]
            rank = top.index(label) if label in top else len(top)
            return (-1 if rank < 4 else 10**6, rank)  # embeddings first, final parts last
        parts = [lab for _, lab in _BLOCK_PARTS]
        return (layer, parts.index(label) if label in parts else len(parts))

    return [
        Component(f"layer {layer} · {label}" if layer is not None else label, n, layer)
        for (label, layer), n in sorted(counts.items(), key=order)
    ]
