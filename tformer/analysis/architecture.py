"""The model in use as a list of components with their real shapes and parameter counts.

The counts come from the model's own parameters (grouped by name), so they add up to
``sum(p.numel() for p in model.parameters())`` whatever the configuration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from ..model.config import EncoderConfig

T = TypeVar("T")


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


# ---------------------------------------------------------------------------------------------
# The architecture diagram's input: the config's sizes, the current text's length, the counts
# ---------------------------------------------------------------------------------------------
# Short key of each part: the parameter-name prefix, which is also the hook's module name.
BLOCK_KEYS = tuple(prefix.rstrip(".") for prefix, _ in _BLOCK_PARTS)  # attn, ln1, mlp, ln2
TOP_KEYS = tuple(prefix.rstrip(".") for prefix, _ in _TOP_PARTS)
OTHER_KEY = "other"  # a parameter no prefix names (none in a tformer Encoder)


class _FromConfig(Generic[T]):
    """A read-only attribute of `ArchitectureSpec` that is its config's value: of the same name,
    or of ``name`` when given. Not a dataclass field (it has no annotation), so it is never
    copied into the spec."""

    def __init__(self, name: str | None = None) -> None:
        self.name = name

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = self.name or name

    def __get__(self, spec: Any, owner: type | None = None) -> T:
        return cast("T", getattr(spec.cfg, str(self.name)))


@dataclass(frozen=True)
class ArchitectureSpec:
    """What the architecture diagram draws: the model's config, the text's length, parameters
    per part.

    The sizes are read from ``cfg`` (``spec.n_heads`` is ``spec.cfg.n_heads``), never copied
    into fields of their own, so the spec cannot disagree with the model it describes and a new
    config field is on the spec the moment it is on the config. ``counts`` maps a part's key
    (``embed``, ``pos_embed``, ``token_type_embed``, ``embed_ln``, ``attn``, ``ln1``, ``mlp``,
    ``ln2``, ``ln_final``, ``head``) to its parameter count, summed over layers for the four
    block parts; parts without parameters (sinusoidal positions, the residual adds) are absent.
    ``per_layer[i]`` holds the block parts of layer i. The counts add up to ``total``.
    """

    cfg: EncoderConfig
    n_pos: int  # tokens of the current text: the ``pos`` of every tensor shape
    counts: Mapping[str, int]
    per_layer: tuple[Mapping[str, int], ...]
    total: int

    # The sizes the diagram names, each the config's own value (d_ff resolved: 4 x d_model when
    # the config left it to its default).
    n_layers = _FromConfig[int]()
    n_heads = _FromConfig[int]()
    d_model = _FromConfig[int]()
    d_head = _FromConfig[int]()
    d_ff = _FromConfig[int]("d_mlp")
    vocab_size = _FromConfig[int]()
    max_len = _FromConfig[int]()
    type_vocab_size = _FromConfig[int]()
    norm = _FromConfig[str]()  # tformer.model.config.NORMS
    pos_encoding = _FromConfig[str]()  # tformer.model.config.POS_ENCODINGS
    activation = _FromConfig[str]()  # tformer.model.config.ACTIVATIONS
    embed_norm = _FromConfig[bool]()
    n_outputs = _FromConfig[int]()

    def layer_params(self, key: str) -> int:
        """Parameters of block part ``key`` in one layer (every layer has the same)."""
        return int(self.per_layer[0].get(key, 0)) if self.per_layer else 0


def _part_key(component: Component) -> str:
    if component.layer is not None:
        label = component.name.split(" · ", 1)[-1]
        return next(
            (key for key, (_, lab) in zip(BLOCK_KEYS, _BLOCK_PARTS, strict=True) if lab == label), OTHER_KEY
        )
    return next(
        (key for key, (_, lab) in zip(TOP_KEYS, _TOP_PARTS, strict=True) if lab == component.name), OTHER_KEY
    )


def architecture_spec(cfg: EncoderConfig, n_pos: int, components: Sequence[Component]) -> ArchitectureSpec:
    """Group ``parameter_counts(model)`` by part, beside the config ``cfg``, for ``n_pos`` tokens.

    Block parts are summed over layers in ``counts`` and kept per layer in ``per_layer``.
    Raises ValueError when the components name a layer the config does not have, or when
    ``n_pos`` is not a positive integer.
    """
    if isinstance(n_pos, bool) or not isinstance(n_pos, int) or n_pos < 1:
        raise ValueError(f"n_pos={n_pos!r} must be a positive integer (tokens of the current text)")
    counts: dict[str, int] = {}
    per_layer: list[dict[str, int]] = [{} for _ in range(cfg.n_layers)]
    for c in components:
        key = _part_key(c)
        counts[key] = counts.get(key, 0) + int(c.params)
        if c.layer is not None:
            if not 0 <= c.layer < cfg.n_layers:
                raise ValueError(f"component {c.name!r} is in layer {c.layer}, but n_layers={cfg.n_layers}")
            per_layer[c.layer][key] = per_layer[c.layer].get(key, 0) + int(c.params)
    return ArchitectureSpec(
        cfg=cfg,
        n_pos=n_pos,
        counts=counts,
        per_layer=tuple(per_layer),
        total=sum(int(c.params) for c in components),
    )
