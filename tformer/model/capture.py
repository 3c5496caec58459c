"""From text to the activations a page asks for, as read-only numpy on the CPU.

A page names the activations it needs by their short names (``"pattern"``, ``"resid_mid"``,
``"ln1_scale"``, ...; see `tformer.model.hooks.ACTS`) and gets one `TextCapture` holding exactly those,
each per-layer one stacked over layers. No Streamlit here: the app caches `capture_text` per
(model, text, names, attn_mask); a notebook calls it directly.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from . import buffers
from .config import EncoderConfig
from .encoder import Encoder
from .hooks import ACTS, HookFn, HookPoint, act_name, act_shape
from .tokenizer import Encoded, Tokenizer

# What the attention views read: Q, K, V, the scores, the weights and the head outputs.
ATTENTION = ("q", "k", "v", "attn_scores", "pattern", "z")


def frozen_numpy(t: torch.Tensor) -> np.ndarray:
    a = t.detach().to("cpu", torch.float32).numpy()
    a.flags.writeable = False  # shared between sessions through the app's cache
    return a


def normalize_names(names: Iterable[str]) -> tuple[str, ...]:
    """Short names, unique, in forward order (a stable cache key); unknown names raise."""
    wanted = set(names)
    unknown = sorted(wanted - ACTS.keys())
    if unknown:
        raise ValueError(f"unknown activation names {unknown}; known: {list(ACTS)}")
    return tuple(n for n in ACTS if n in wanted)


def available_names(cfg: EncoderConfig) -> tuple[str, ...]:
    """The short names a model of this config has (e.g. no ``logits`` without an output head)."""
    model_has = {
        "token_type_embed": cfg.type_vocab_size > 0,
        "embed_ln_scale": cfg.embed_norm,
        "embed_ln_normalized": cfg.embed_norm,
        "ln_final_scale": cfg.norm == "pre",
        "ln_final_normalized": cfg.norm == "pre",
        "logits": cfg.n_outputs > 0,
    }
    return tuple(n for n in ACTS if model_has.get(n, True))


def _sizes(cfg: EncoderConfig, n_pos: int) -> dict[str, int]:
    return {
        "pos": n_pos,
        "d_model": cfg.d_model,
        "d_embed": cfg.d_embed_size,
        "head_index": cfg.n_heads,
        "d_head": cfg.d_head,
        "d_mlp": cfg.d_mlp,
        "n_outputs": cfg.n_outputs,
    }


def capture_shape(cfg: EncoderConfig, n_pos: int, name: str, n_layers: int | None = None) -> tuple[int, ...]:
    """Shape of ``name`` in a capture: [layer, ...] for per-layer activations (``n_layers`` of
    them: every layer of the model by default)."""
    one = act_shape(name, _sizes(cfg, n_pos))
    return (cfg.n_layers if n_layers is None else n_layers, *one) if ACTS[name].per_layer else one


FLOAT32_BYTES = 4


@dataclass(frozen=True)
class CaptureMemory:
    """The memory one capture takes, computed from the shapes (float32, before anything runs).

    ``stored``: what the capture keeps (its arrays and the output), e.g. the weights alone are
    layers x heads x n² x 4 bytes. ``working``: what the forward pass needs on top while it runs,
    one layer at a time: that layer's scores and weights (the explicit attention path a hooked
    run takes), 2 x heads x n² x 4 bytes, or the FFN's two hidden activations, 2 x n x d_mlp x 4
    bytes, whichever is larger. ``peak = stored + working`` is the memory the run takes at its
    highest (docs/performance.md compares it with the measured peak).
    """

    n_pos: int
    n_heads: int
    arrays: tuple[tuple[str, tuple[int, ...]], ...]  # (short name, shape) of each kept array
    output_shape: tuple[int, ...]  # [pos, d_model], or [pos, n_outputs] with a task head
    d_mlp: int

    def nbytes(self, name: str) -> int:
        """Bytes of the kept array ``name``."""
        return FLOAT32_BYTES * math.prod(dict(self.arrays)[name])

    @property
    def stored(self) -> int:
        return FLOAT32_BYTES * (sum(math.prod(s) for _, s in self.arrays) + math.prod(self.output_shape))

    @property
    def attention_working(self) -> int:
        """One layer's scores and weights, [head_index, query_pos, key_pos] each."""
        return FLOAT32_BYTES * 2 * self.n_heads * self.n_pos**2

    @property
    def working(self) -> int:
        return max(self.attention_working, FLOAT32_BYTES * 2 * self.n_pos * self.d_mlp)

    @property
    def peak(self) -> int:
        return self.stored + self.working


def capture_memory(
    cfg: EncoderConfig, n_pos: int, names: Iterable[str] = ATTENTION, layers: Iterable[int] | None = None
) -> CaptureMemory:
    """What a capture of ``names`` for ``n_pos`` tokens (per-layer ones for ``layers`` only)
    takes in memory: the app's memory guard checks its ``peak`` before running anything."""
    n_layers = None if layers is None else len(set(layers))
    arrays = tuple((n, capture_shape(cfg, n_pos, n, n_layers)) for n in normalize_names(names))
    # The output: hidden states, or the task head's probabilities (forward's softmax).
    output = (n_pos, cfg.n_outputs if cfg.n_outputs else cfg.d_model)
    return CaptureMemory(n_pos, cfg.n_heads, arrays, output, cfg.d_mlp)


def capture_nbytes(
    cfg: EncoderConfig, n_pos: int, names: Iterable[str] = ATTENTION, layers: Iterable[int] | None = None
) -> int:
    """Bytes a capture of these activations holds (float32, the output included):
    `capture_memory`'s ``stored``."""
    return capture_memory(cfg, n_pos, names, layers).stored


def layer_selection(cfg: EncoderConfig, layers: Iterable[int] | None) -> tuple[int, ...] | None:
    """``layers`` sorted and checked against the model (None: every layer)."""
    if layers is None:
        return None
    sel = tuple(sorted({int(x) for x in layers}))
    if not sel or not all(0 <= x < cfg.n_layers for x in sel):
        raise ValueError(f"layers={list(sel)} must be a non-empty subset of 0..{cfg.n_layers - 1}")
    return sel


@dataclass(frozen=True, eq=False)
class TextCapture:
    """One forward pass over one text: the requested activations, batch dropped, read-only.

    ``capture["pattern"]`` is [layer, head_index, query_pos, key_pos]; every per-layer
    activation has the layer first, the others (``embed``, ``pos_embed``...) do not.
    """

    encoded: Encoded
    arrays: Mapping[str, np.ndarray]  # short name -> array
    output: np.ndarray  # [pos, d_model], what the encoder returns (probabilities with a head)
    cfg: EncoderConfig
    device: str
    # None: every layer. Else the layers the per-layer arrays hold, in order: their first axis
    # indexes this tuple, not the model's layers; read them with `at`.
    layers: tuple[int, ...] | None = None
    # The extra mask the run used, bool [query_pos, key_pos] (True = may attend); None: none.
    attn_mask: np.ndarray | None = None

    def at(self, name: str, layer: int) -> np.ndarray:
        """Per-layer activation ``name`` of model layer ``layer``, in full or layer-limited
        captures alike (KeyError for a layer the capture does not hold)."""
        a = self[name]
        if not ACTS[name].per_layer:
            raise ValueError(f"{name!r} is not a per-layer activation: use capture[{name!r}]")
        # `...` keeps every axis after the layer's: the slice is typed as an array, not a scalar.
        if self.layers is None:
            return a[layer, ...]
        if layer not in self.layers:
            raise KeyError(f"layer {layer} was not captured; this capture holds layers {list(self.layers)}")
        return a[self.layers.index(layer), ...]

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self.arrays[name]
        except KeyError:
            raise KeyError(f"{name!r} was not captured; this capture holds {list(self.arrays)}") from None

    def __contains__(self, name: object) -> bool:
        return name in self.arrays

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.arrays)

    # The attention activations, typed, under their short names.
    @property
    def pattern(self) -> np.ndarray:
        return self["pattern"]  # [layer, head_index, query_pos, key_pos]

    @property
    def attn_scores(self) -> np.ndarray:
        return self["attn_scores"]  # [layer, head_index, query_pos, key_pos], -inf where masked

    @property
    def q(self) -> np.ndarray:
        return self["q"]  # [layer, pos, head_index, d_head]

    @property
    def k(self) -> np.ndarray:
        return self["k"]  # [layer, pos, head_index, d_head]

    @property
    def v(self) -> np.ndarray:
        return self["v"]  # [layer, pos, head_index, d_head]

    @property
    def z(self) -> np.ndarray:
        return self["z"]  # [layer, pos, head_index, d_head]

    @property
    def labels(self) -> list[str]:
        return self.encoded.labels

    @property
    def n_layers(self) -> int:
        return self.cfg.n_layers

    @property
    def n_heads(self) -> int:
        return self.cfg.n_heads

    @property
    def n_pos(self) -> int:
        return len(self.encoded.ids)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays.values()) + self.output.nbytes


def capture_text(
    model: Encoder,
    tokenizer: Tokenizer,
    text: str,
    names: Iterable[str] = ATTENTION,
    layers: Iterable[int] | None = None,
    attn_mask: np.ndarray | None = None,
) -> TextCapture:
    """Tokenize ``text`` (truncated to the model's max_len) and capture ``names`` in one pass.

    Each hook copies its tensor straight into a preallocated [layer, ...] array: one copy, no
    torch.stack afterwards. ``attn_mask``: see `capture_ids`.
    """
    return capture_ids(model, tokenizer.encode(text), names, layers, attn_mask=attn_mask)


def capture_ids(
    model: Encoder,
    encoded: Encoded,
    names: Iterable[str] = ATTENTION,
    layers: Iterable[int] | None = None,
    attn_mask: np.ndarray | None = None,
) -> TextCapture:
    """`capture_text` for text that is already tokenized. ``layers``: capture the per-layer
    activations of these layers only (a smaller capture: read it with `TextCapture.at`).

    ``attn_mask``: bool (or 0/1) [query_pos, key_pos], True where a query may attend, ANDed
    inside the encoder with its causal mask (`Encoder.layer_attn_mask`); it is part of what
    the result depends on, so a cache keys on it too (a numpy array hashes). The capture keeps
    a read-only copy as ``TextCapture.attn_mask``.
    """
    if not encoded.ids:
        raise ValueError("the tokenizer produced no tokens")
    mask = None
    if attn_mask is not None:
        mask = np.asarray(attn_mask)
        if mask.shape != (len(encoded.ids), len(encoded.ids)):
            raise ValueError(
                f"attn_mask has shape {mask.shape}; the text has {len(encoded.ids)} tokens, so it "
                f"must be [query_pos, key_pos] = ({len(encoded.ids)}, {len(encoded.ids)})"
            )
    [cap] = _capture(model, [encoded], names, layers, attn_mask=mask)
    return cap


def capture_batch(
    model: Encoder,
    tokenizer: Tokenizer,
    texts: Sequence[str],
    names: Iterable[str] = ATTENTION,
    layers: Iterable[int] | None = None,
) -> list[TextCapture]:
    """Several texts in ONE forward pass, padded at the end to the longest: one `TextCapture`
    per text, each of the padded length (``capture.encoded.n_pad`` pads labelled ``"[PAD]"``).

    The encoder gets ``attention_mask`` (1 real, 0 pad), so every padded key gets weight 0 and
    the real tokens compute what they would alone. Padded query rows are still computed: they
    attend to the real keys only, and their outputs mean nothing.
    """
    if not texts:
        raise ValueError("capture_batch needs at least one text")
    encoded = [tokenizer.encode(t) for t in texts]
    n = max(len(e) for e in encoded)
    if tokenizer.pad_id is None and any(len(e) < n for e in encoded):
        raise ValueError("this tokenizer has no pad token ([PAD], <pad>), so texts cannot be batched")
    pad_id = 0 if tokenizer.pad_id is None else tokenizer.pad_id
    pad_token = tokenizer.pad_token or "[PAD]"
    padded = [e.padded(n, pad_id, pad_token) for e in encoded]
    return _capture(model, padded, names, layers)


def _capture(
    model: Encoder,
    encoded: Sequence[Encoded],
    names: Iterable[str],
    layers: Iterable[int] | None,
    attn_mask: np.ndarray | None = None,
) -> list[TextCapture]:
    """One forward pass over texts of equal (padded) length; one capture per text."""
    cfg, B, n = model.cfg, len(encoded), len(encoded[0].ids)
    if any(len(e.ids) != n for e in encoded):
        raise ValueError(f"texts of a batch must have one length, got {[len(e.ids) for e in encoded]}")
    wanted = normalize_names(names)
    missing = [name for name in wanted if name not in available_names(cfg)]
    if missing:
        raise ValueError(f"this model has no {missing} (see available_names)")
    sel = layer_selection(cfg, layers)
    kept = range(cfg.n_layers) if sel is None else sel
    # [batch, layer, ...]: the capture of text b is the contiguous view arrays[name][b].
    # Large arrays from recycled memory when the process turned that on (`buffers`).
    arrays = {
        name: buffers.empty((B, *capture_shape(cfg, n, name, len(kept))), np.float32) for name in wanted
    }

    def into(name: str, layer: int | None) -> HookFn:
        def hook(tensor: torch.Tensor, hook: HookPoint) -> None:
            a = tensor.detach().to("cpu", torch.float32).numpy()  # [batch, ...]
            if layer is None:
                arrays[name][...] = a
            else:
                arrays[name][:, layer] = a

        return hook

    fwd_hooks = [
        (act_name(name, layer), into(name, None if layer is None else i))
        for name in wanted
        for i, layer in enumerate(kept if ACTS[name].per_layer else [None])
    ]
    ids = [e.ids for e in encoded]
    padding = [e.attention_mask for e in encoded] if any(e.n_pad for e in encoded) else None
    with torch.inference_mode(), model.hooks(fwd_hooks):
        out = model(ids, attention_mask=padding, attn_mask=attn_mask)
    for a in arrays.values():
        a.flags.writeable = False  # shared between sessions through the app's cache
    kept_mask = None
    if attn_mask is not None:
        kept_mask = np.array(attn_mask, dtype=bool)  # the encoder accepted it: bool or 0/1
        kept_mask.flags.writeable = False
    return [
        TextCapture(
            encoded=e,
            arrays={name: a[b] for name, a in arrays.items()},
            output=frozen_numpy(out[b]),
            cfg=cfg,
            device=str(model.device),
            layers=sel,
            attn_mask=kept_mask,
        )
        for b, e in enumerate(encoded)
    ]


def positional_table(model: Encoder, n_pos: int) -> np.ndarray:
    """The positional vectors this model adds, [pos, d_model] for pos < min(n_pos, max_len)."""
    with torch.inference_mode():
        return frozen_numpy(model.positions(min(n_pos, model.cfg.max_len)))
