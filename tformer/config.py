"""The encoder's shape, in one frozen dataclass that every module takes."""

from __future__ import annotations

from dataclasses import dataclass

from .i18n import tr

POS_ENCODINGS = ("sinusoidal", "learned", "none")
ACTIVATIONS = ("relu", "gelu")
NORMS = ("post", "pre")


@dataclass(frozen=True)
class EncoderConfig:
    """Hyper-parameters of a Transformer encoder. Weights are a pure function of (config, seed).

    Frozen so it hashes: Streamlit caches key on it directly.
    """

    vocab_size: int = 8192
    max_len: int = 512
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int | None = None  # None -> 4 * d_model, the paper's ratio (2048 / 512)
    pos_encoding: str = "sinusoidal"
    activation: str = "relu"  # the paper's FFN is max(0, xW1+b1)W2+b2; BERT uses gelu
    norm: str = "post"  # "post" is the paper's LayerNorm(x + SubLayer(x)); "pre" is GPT-2's
    dropout: float = 0.0  # 0 by default: this is a tool for looking, not for training
    layer_norm_eps: float = 1e-5
    type_vocab_size: int = 0  # BERT's segment embeddings; 0 disables them
    embed_norm: bool = False  # BERT applies a LayerNorm right after the embeddings
    causal: bool = False  # True: query_pos attends only to key_pos <= query_pos
    seed: int = 0
    n_outputs: int = 0  # > 0 adds the optional final Linear -> softmax

    def __post_init__(self) -> None:
        if self.d_ff is None:
            object.__setattr__(self, "d_ff", 4 * self.d_model)
        positive = ("vocab_size", "max_len", "d_model", "n_heads", "n_layers", "d_ff")
        for name in positive:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(
                    tr("{name}={value} must be a positive integer", name=name, value=repr(value))
                )
        for name in ("type_vocab_size", "n_outputs", "seed"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(
                    tr("{name}={value} must be a non-negative integer", name=name, value=repr(value))
                )
        if self.d_model % self.n_heads:
            raise ValueError(
                tr(
                    "d_model={d_model} is not divisible by n_heads={n_heads}",
                    d_model=self.d_model,
                    n_heads=self.n_heads,
                )
            )
        if self.pos_encoding not in POS_ENCODINGS:
            raise ValueError(
                tr(
                    "{name}={value} is not one of {choices}",
                    name="pos_encoding",
                    value=repr(self.pos_encoding),
                    choices=POS_ENCODINGS,
                )
            )
        if self.pos_encoding == "sinusoidal" and self.d_model % 2:
            raise ValueError(
                tr(
                    "d_model={d_model} must be even for sinusoidal positions (sin/cos pairs)",
                    d_model=self.d_model,
                )
            )
        if self.activation not in ACTIVATIONS:
            raise ValueError(
                tr(
                    "{name}={value} is not one of {choices}",
                    name="activation",
                    value=repr(self.activation),
                    choices=ACTIVATIONS,
                )
            )
        if self.norm not in NORMS:
            raise ValueError(
                tr(
                    "{name}={value} is not one of {choices}",
                    name="norm",
                    value=repr(self.norm),
                    choices=NORMS,
                )
            )
        if not 0.0 <= float(self.dropout) < 1.0:
            raise ValueError(tr("dropout={value} must be in [0, 1)", value=repr(self.dropout)))
        if not float(self.layer_norm_eps) > 0.0:
            raise ValueError(tr("layer_norm_eps={value} must be > 0", value=repr(self.layer_norm_eps)))
        if not isinstance(self.causal, bool) or not isinstance(self.embed_norm, bool):
            raise ValueError(
                tr(
                    "causal={causal} and embed_norm={embed_norm} must be booleans",
                    causal=repr(self.causal),
                    embed_norm=repr(self.embed_norm),
                )
            )

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def d_mlp(self) -> int:
        """The FFN's inner width (d_ff once resolved): the ``d_mlp`` axis of the hook shapes."""
        return self.d_ff if self.d_ff is not None else 4 * self.d_model

    def n_params(self) -> int:
        """Parameter count of the Encoder this config builds (without building it)."""
        d, f = self.d_model, self.d_mlp
        per_block = (3 * d * d + 3 * d) + (d * d + d) + (d * f + f) + (f * d + d) + 4 * d
        embed = self.vocab_size * d + self.type_vocab_size * d
        embed += self.max_len * d if self.pos_encoding == "learned" else 0
        embed += 2 * d if self.embed_norm else 0
        final = 2 * d if self.norm == "pre" else 0
        head = d * self.n_outputs + self.n_outputs
        return embed + self.n_layers * per_block + final + head
