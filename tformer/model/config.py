"""The encoder's shape, in one frozen dataclass that every module takes."""

from __future__ import annotations

from dataclasses import dataclass

from ..i18n import tr

POS_ENCODINGS = ("sinusoidal", "learned", "none")
ACTIVATIONS = ("relu", "gelu", "gelu_tanh")  # see tformer.model.activations
NORMS = ("post", "pre")
LM_HEADS = ("none", "tied", "mlm")  # see tformer.model.heads


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
    # Token embeddings' width; None -> d_model (kept None then, so replace(d_model=...) follows).
    # ELECTRA embeds narrower and projects up to d_model.
    d_embed: int | None = None
    # A language-model head over the vocabulary (GPT-2's "tied" h W_E^T, BERT's "mlm"), apart from
    # the task head: forward still returns hidden states, tformer.model.predictions reads the head.
    lm_head: str = "none"
    # Divide the scores by √d_head, as the paper does; False gives the raw q·k, the Train page's
    # "without the 1/√d_k scaling" (`unscaled_as_scaled` turns such a model into this form).
    scaled: bool = True

    def __post_init__(self) -> None:
        if self.d_ff is None:
            object.__setattr__(self, "d_ff", 4 * self.d_model)
        positive = ("vocab_size", "max_len", "d_model", "n_heads", "n_layers", "d_ff", "d_embed")
        for name in positive:
            value = getattr(self, name)
            if name == "d_embed" and value is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(
                    tr("{name}={value} must be a positive integer", name=name, value=repr(value))
                )
        if self.d_embed == self.d_model:
            object.__setattr__(self, "d_embed", None)  # one spelling per model: equal configs hash equal
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
        if self.pos_encoding == "sinusoidal" and self.d_embed_size % 2:
            raise ValueError(
                tr(
                    "d_embed={d_embed} must be even for sinusoidal positions (sin/cos pairs)",
                    d_embed=self.d_embed_size,
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
        self._check_lm_head()
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
        if not isinstance(self.scaled, bool):
            raise ValueError(tr("scaled={value} must be a boolean", value=repr(self.scaled)))

    def _check_lm_head(self) -> None:
        if self.lm_head not in LM_HEADS:
            raise ValueError(
                tr(
                    "{name}={value} is not one of {choices}",
                    name="lm_head",
                    value=repr(self.lm_head),
                    choices=LM_HEADS,
                )
            )
        if self.lm_head != "none" and self.n_outputs:
            raise ValueError(
                tr(
                    "lm_head={lm_head} and n_outputs={n_outputs}: a model has one output head",
                    lm_head=repr(self.lm_head),
                    n_outputs=self.n_outputs,
                )
            )
        if self.lm_head != "none" and self.d_embed_size != self.d_model:
            raise ValueError(
                tr(
                    "lm_head={lm_head} multiplies by the token embeddings, so d_embed={d_embed} must "
                    "equal d_model={d_model}",
                    lm_head=repr(self.lm_head),
                    d_embed=self.d_embed_size,
                    d_model=self.d_model,
                )
            )

    @property
    def d_embed_size(self) -> int:
        """The token embeddings' width (d_embed once resolved; d_model unless factorized)."""
        return self.d_embed if self.d_embed is not None else self.d_model

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def d_mlp(self) -> int:
        """The FFN's inner width (d_ff once resolved): the ``d_mlp`` axis of the hook shapes."""
        return self.d_ff if self.d_ff is not None else 4 * self.d_model

    def block_params(self) -> dict[str, int]:
        """Parameters of each named part of one block, each matrix with its bias: W_Q, W_K, W_V,
        W_O [d_model × d_model], W_1 [d_model × d_mlp], W_2 [d_mlp × d_model] and the two
        LayerNorms' γ and β. Every block has the same."""
        d, f = self.d_model, self.d_mlp
        return {
            "W_Q": d * d + d,
            "W_K": d * d + d,
            "W_V": d * d + d,
            "W_O": d * d + d,
            "W_1": d * f + f,
            "W_2": f * d + d,
            "ln1": 2 * d,
            "ln2": 2 * d,
        }

    def top_params(self) -> dict[str, int]:
        """Parameters of the parts outside the blocks, 0 for a part this model does not have."""
        d, e = self.d_model, self.d_embed_size
        return {
            "embed": self.vocab_size * e,
            "token_type_embed": self.type_vocab_size * e,
            "pos_embed": self.max_len * e if self.pos_encoding == "learned" else 0,
            "embed_ln": 2 * e if self.embed_norm else 0,
            "embed_proj": e * d + d if e != d else 0,  # the projection up to d_model
            "ln_final": 2 * d if self.norm == "pre" else 0,
            "head": d * self.n_outputs + self.n_outputs,
            # "tied" reuses the embedding matrix; "mlm" adds its dense layer, LayerNorm and bias
            "lm_head": d * d + d + 2 * d + self.vocab_size if self.lm_head == "mlm" else 0,
        }

    def n_params(self) -> int:
        """Parameter count of the Encoder this config builds (without building it)."""
        return sum(self.top_params().values()) + self.n_layers * sum(self.block_params().values())
