"""Where each checkpoint tensor goes in our `Encoder`, per family: a list of `Take` lines.

A `Take` names one of our state-dict entries and the checkpoint tensor(s) it comes from:
BERT's separate query, key and value Linears are stacked into our ``qkv`` (rows Q;K;V); GPT-2's
``Conv1D`` stores its weight as [in, out] and is transposed (its fused ``c_attn`` is already
Q;K;V); RoBERTa's position table loses the rows before position 0. From the takes, the shape
every checkpoint tensor must have follows from our model's shapes, so a file is checked against
``config.json`` before one tensor is read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .families import ModelSpec

__all__ = [
    "PREFIXES",
    "Take",
    "canonical_names",
    "head_names",
    "is_buffer",
    "is_ignorable",
    "their_shape",
    "weight_plan",
]

# The base model's prefix in a checkpoint of a model with a head (BertForMaskedLM: "bert.").
PREFIXES = {
    "bert": "bert.",
    "roberta": "roberta.",
    "xlm-roberta": "roberta.",
    "electra": "electra.",
    "distilbert": "distilbert.",
    "gpt2": "transformer.",
}
# Tensors a checkpoint may hold that our encoder does not use: buffers, and the heads of other
# tasks (next sentence, pooler, ELECTRA's discriminator / generator, classifiers, QA spans).
_IGNORED_SUFFIXES = (
    "embeddings.position_ids",
    "embeddings.token_type_ids",
    ".attn.bias",
    ".attn.masked_bias",
)
_IGNORED_PREFIXES = (
    "pooler.",
    "cls.",
    "lm_head.",
    "discriminator_predictions.",
    "generator_predictions.",
    "generator_lm_head.",
    "classifier.",
    "pre_classifier.",
    "qa_outputs.",
    "score.",
    "vocab_transform.",
    "vocab_layer_norm.",
    "vocab_projector.",
)


@dataclass(frozen=True)
class Take:
    """Our tensor ``ours`` = the checkpoint tensors ``theirs``, each transposed if ``transpose``,
    stacked along dim 0, with the first ``skip_rows`` rows dropped."""

    ours: str
    theirs: tuple[str, ...]
    transpose: bool = False
    skip_rows: int = 0


def their_shape(take: Take, ours: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The shape each of ``take.theirs`` must have for our tensor to have shape ``ours``."""
    n = len(take.theirs)
    one = (ours[0] // n, *ours[1:]) if n > 1 else ours
    if take.skip_rows:
        one = (one[0] + take.skip_rows, *one[1:])
    if take.transpose:
        one = tuple(reversed(one))
    return [one] * n


def canonical_names(names: Iterable[str], family: str) -> dict[str, str]:
    """canonical name -> name in the file: the base model's prefix dropped, TF-era LayerNorm
    ``gamma``/``beta`` renamed ``weight``/``bias``."""
    prefix = PREFIXES[family]
    out: dict[str, str] = {}
    for name in names:
        key = name[len(prefix) :] if name.startswith(prefix) else name
        if key.endswith("LayerNorm.gamma"):
            key = key[: -len("gamma")] + "weight"
        elif key.endswith("LayerNorm.beta"):
            key = key[: -len("beta")] + "bias"
        out[key] = name
    return out


def is_ignorable(name: str) -> bool:
    """A tensor the encoder may leave unused: a buffer, or another task's head."""
    return is_buffer(name) or name.startswith(_IGNORED_PREFIXES)


def is_buffer(name: str) -> bool:
    """A non-learned tensor some checkpoints save (position ids, GPT-2's causal mask)."""
    return name.endswith(_IGNORED_SUFFIXES)


@dataclass(frozen=True)
class HeadNames:
    """An MLM head's tensors in one family: present when ``marker`` is."""

    marker: str
    dense: str
    ln: str
    bias: str
    decoder: str  # the output matrix when the checkpoint stores it (tied: a copy of W_E)
    head_act_is_model_act: bool  # RoBERTa's lm_head always uses the erf GELU

    @property
    def decoder_bias(self) -> str:
        """Older checkpoints store the output bias (also) under the decoder's name."""
        return self.decoder[: -len("weight")] + "bias"


_MLM_HEADS = {
    "bert": HeadNames(
        "cls.predictions.transform.dense.weight",
        "cls.predictions.transform.dense",
        "cls.predictions.transform.LayerNorm",
        "cls.predictions.bias",
        "cls.predictions.decoder.weight",
        True,
    ),
    "roberta": HeadNames(
        "lm_head.dense.weight",
        "lm_head.dense",
        "lm_head.layer_norm",
        "lm_head.bias",
        "lm_head.decoder.weight",
        False,
    ),
    "distilbert": HeadNames(
        "vocab_transform.weight",
        "vocab_transform",
        "vocab_layer_norm",
        "vocab_projector.bias",
        "vocab_projector.weight",
        True,
    ),
}
_MLM_HEADS["xlm-roberta"] = _MLM_HEADS["roberta"]
GPT2_DECODER = "lm_head.weight"


def head_names(family: str) -> HeadNames | None:
    """The MLM head's tensor names in ``family`` (None: it has none we load)."""
    return _MLM_HEADS.get(family)


def _pair(ours: str, theirs: str, **kw: object) -> list[Take]:
    return [Take(f"{ours}.{p}", (f"{theirs}.{p}",), **kw) for p in ("weight", "bias")]  # type: ignore[arg-type]


def weight_plan(spec: ModelSpec, names: Mapping[str, str]) -> list[Take]:
    """Every tensor of our Encoder (built from ``spec.cfg``) and where it comes from.

    ``names``: the checkpoint's canonical names (to see which optional tensors exist).
    """
    cfg = spec.cfg
    if spec.family == "gpt2":
        takes = [Take("embed.weight", ("wte.weight",)), Take("pos_embed.weight", ("wpe.weight",))]
        for i in range(cfg.n_layers):
            b, h = f"blocks.{i}.", f"h.{i}."
            takes += _pair(b + "ln1", h + "ln_1") + _pair(b + "ln2", h + "ln_2")
            takes += [Take(b + "attn.qkv.weight", (h + "attn.c_attn.weight",), transpose=True)]
            takes += [Take(b + "attn.qkv.bias", (h + "attn.c_attn.bias",))]
            for ours, theirs in (
                ("attn.out", "attn.c_proj"),
                ("mlp.fc1", "mlp.c_fc"),
                ("mlp.fc2", "mlp.c_proj"),
            ):
                takes += [Take(f"{b}{ours}.weight", (f"{h}{theirs}.weight",), transpose=True)]
                takes += [Take(f"{b}{ours}.bias", (f"{h}{theirs}.bias",))]
        return takes + _pair("ln_final", "ln_f")
    takes = [Take("embed.weight", ("embeddings.word_embeddings.weight",))]
    if cfg.pos_encoding == "learned":
        takes += [
            Take("pos_embed.weight", ("embeddings.position_embeddings.weight",), skip_rows=spec.pos_offset)
        ]
    if cfg.type_vocab_size:
        takes += [Take("token_type_embed.weight", ("embeddings.token_type_embeddings.weight",))]
    takes += _pair("embed_ln", "embeddings.LayerNorm")
    if cfg.d_embed is not None:
        takes += _pair("embed_proj", "embeddings_project")
    for i in range(cfg.n_layers):
        takes += _block(spec.family, i)
    head = head_names(spec.family)
    if cfg.lm_head == "mlm" and head is not None:
        takes += _pair("lm_head.dense", head.dense) + _pair("lm_head.ln", head.ln)
        takes += [Take("lm_head.bias", (head.bias if head.bias in names else head.decoder_bias,))]
    return takes


def _block(family: str, i: int) -> list[Take]:
    b = f"blocks.{i}."
    if family == "distilbert":
        layer = f"transformer.layer.{i}."
        qkv = tuple(f"{layer}attention.{x}_lin" for x in "qkv")
        parts = [("attn.out", "attention.out_lin"), ("ln1", "sa_layer_norm"), ("mlp.fc1", "ffn.lin1")]
        parts += [("mlp.fc2", "ffn.lin2"), ("ln2", "output_layer_norm")]
    else:
        layer = f"encoder.layer.{i}."
        qkv = tuple(f"{layer}attention.self.{x}" for x in ("query", "key", "value"))
        parts = [("attn.out", "attention.output.dense"), ("ln1", "attention.output.LayerNorm")]
        parts += [("mlp.fc1", "intermediate.dense"), ("mlp.fc2", "output.dense"), ("ln2", "output.LayerNorm")]
    takes = [Take(f"{b}attn.qkv.{p}", tuple(f"{n}.{p}" for n in qkv)) for p in ("weight", "bias")]
    for ours, theirs in parts:
        takes += _pair(b + ours, layer + theirs)
    return takes
