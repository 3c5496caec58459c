"""From text to every attention tensor, as read-only numpy on the CPU: what the pages plot.

No Streamlit here: the app caches `capture_text` results, a notebook can call it directly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .encoder import Encoder
from .tokenizer import Encoded, Tokenizer

# The tensors the views need, stacked over layers. The residual stream and MLP hooks are
# captured too when asked for by name (run_with_cache), but the app does not ship them.
_STACKED = {
    "patterns": "hook_pattern",  # [layer, head_index, query_pos, key_pos]
    "scores": "hook_attn_scores",  # [layer, head_index, query_pos, key_pos]
    "q": "hook_q",  # [layer, pos, head_index, d_head]
    "k": "hook_k",
    "v": "hook_v",
    "z": "hook_z",
}


@dataclass(frozen=True, eq=False)
class TextCapture:
    """One forward pass over one text, batch dimension dropped, arrays read-only."""

    encoded: Encoded
    patterns: np.ndarray  # [layer, head_index, query_pos, key_pos]
    scores: np.ndarray  # [layer, head_index, query_pos, key_pos], -inf where masked
    q: np.ndarray  # [layer, pos, head_index, d_head]
    k: np.ndarray  # [layer, pos, head_index, d_head]
    v: np.ndarray  # [layer, pos, head_index, d_head]
    z: np.ndarray  # [layer, pos, head_index, d_head]
    hidden: np.ndarray  # [pos, d_model], the encoder's output
    device: str

    @property
    def labels(self) -> list[str]:
        return self.encoded.labels

    @property
    def n_layers(self) -> int:
        return self.patterns.shape[0]

    @property
    def n_heads(self) -> int:
        return self.patterns.shape[1]

    @property
    def n_pos(self) -> int:
        return self.patterns.shape[2]

    def special_positions(self, token: str) -> list[int]:
        return [i for i, t in enumerate(self.encoded.tokens) if t == token and self.encoded.special[i]]

    @property
    def nbytes(self) -> int:
        arrays = (self.patterns, self.scores, self.q, self.k, self.v, self.z, self.hidden)
        return sum(a.nbytes for a in arrays)


def _frozen(t: torch.Tensor) -> np.ndarray:
    a = t.detach().to("cpu", torch.float32).numpy()
    a.flags.writeable = False  # shared between sessions through the app's cache
    return a


def capture_text(model: Encoder, tokenizer: Tokenizer, text: str) -> TextCapture:
    """Tokenize ``text`` (truncated to the model's max_len) and capture every head of every layer.

    Each hook copies its tensor straight into a preallocated [layer, ...] array: one copy, no
    torch.stack afterwards (at 512 tokens the patterns and scores alone are 150 MB).
    """
    encoded = tokenizer.encode(text)
    if not encoded.ids:
        raise ValueError("the tokenizer produced no tokens")
    cfg, n = model.cfg, len(encoded.ids)
    square = (cfg.n_layers, cfg.n_heads, n, n)
    per_head = (cfg.n_layers, n, cfg.n_heads, cfg.d_head)
    arrays = {f: np.empty(square if f in ("patterns", "scores") else per_head, np.float32) for f in _STACKED}

    def into(field: str, layer: int):
        def hook(tensor: torch.Tensor, hook) -> None:
            arrays[field][layer] = tensor[0].detach().to("cpu", torch.float32).numpy()

        return hook

    fwd_hooks = [
        (f"blocks.{layer}.attn.{name}", into(field, layer))
        for layer in range(cfg.n_layers)
        for field, name in _STACKED.items()
    ]
    with torch.inference_mode(), model.hooks(fwd_hooks):
        out = model(encoded.ids)
    for a in arrays.values():
        a.flags.writeable = False  # shared between sessions through the app's cache
    return TextCapture(encoded=encoded, hidden=_frozen(out[0]), device=str(model.device), **arrays)


def capture_nbytes(n_layers: int, n_heads: int, n_pos: int, d_model: int) -> int:
    """Bytes a TextCapture of this shape holds (float32): the app's memory guard uses it."""
    per_layer = 2 * n_heads * n_pos * n_pos + 4 * n_pos * d_model
    return 4 * (n_layers * per_layer + n_pos * d_model)


def ablate_heads(
    model: Encoder, ids: list[int], heads: list[tuple[int, int]]
) -> tuple[np.ndarray, np.ndarray]:
    """Hidden states [pos, d_model] without and with the given (layer, head_index) zeroed.

    A head is ablated by zeroing its slice of hook_z, so Concat(heads) W_O loses its share.
    """
    by_layer: dict[int, list[int]] = {}
    for layer, head in heads:
        if not (0 <= layer < model.cfg.n_layers and 0 <= head < model.cfg.n_heads):
            raise ValueError(
                f"head ({layer}, {head}) does not exist: the model has {model.cfg.n_layers} layers "
                f"x {model.cfg.n_heads} heads"
            )
        by_layer.setdefault(layer, []).append(head)

    def zero(index: list[int]):
        def hook(z: torch.Tensor, hook) -> torch.Tensor:
            # z: [batch, pos, head_index, d_head]
            return z.index_fill(2, torch.tensor(index, device=z.device), 0.0)

        return hook

    fwd_hooks = [(f"blocks.{layer}.attn.hook_z", zero(idx)) for layer, idx in by_layer.items()]
    base = model.run_with_hooks(ids, fwd_hooks=[])  # same explicit path as the ablated run
    ablated = model.run_with_hooks(ids, fwd_hooks=fwd_hooks)
    return _frozen(base[0]), _frozen(ablated[0])


def patterns_without_positions(model: Encoder, ids: list[int]) -> np.ndarray:
    """Every head's pattern [layer, head_index, query_pos, key_pos] with the positional
    encoding switched off (hook_pos_embed replaced by zeros), same weights otherwise."""
    patterns: dict[str, torch.Tensor] = {}

    def no_positions(pos: torch.Tensor, hook) -> torch.Tensor:
        return torch.zeros_like(pos)

    def save(pattern: torch.Tensor, hook) -> None:
        patterns[hook.name] = pattern

    with torch.inference_mode(), model.hooks(
        [("hook_pos_embed", no_positions), (lambda n: n.endswith("hook_pattern"), save)]
    ):
        model(ids)
    return _frozen(torch.stack([patterns[f"blocks.{i}.attn.hook_pattern"][0] for i in range(model.cfg.n_layers)]))


def positional_table(model: Encoder, n_pos: int) -> np.ndarray:
    """The positional vectors this model adds, [pos, d_model] for pos < min(n_pos, max_len)."""
    with torch.inference_mode():
        return _frozen(model.positions(min(n_pos, model.cfg.max_len)))
