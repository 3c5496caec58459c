"""Which transformers model families load into our `Encoder`, and how each ``config.json`` maps.

Every family here is the paper's block with switches of `EncoderConfig`:

========== ========================================================================
BERT        post-norm, learned positions, segment embeddings, LayerNorm after embedding
RoBERTa     BERT, with positions counted from ``pad_token_id + 1`` (see ``pos_offset``)
XLM-RoBERTa RoBERTa (another vocabulary)
ELECTRA     BERT, with embeddings ``embedding_size`` wide projected up to ``hidden_size``
DistilBERT  BERT without segment embeddings, its own tensor names, optional sinusoids
GPT-2       pre-norm, causal, learned positions, a final LayerNorm, its LM head tied to W_E
========== ========================================================================

`model_spec` reads only numbers: it checks them against the bounds of `tformer.model.model_files`
before building the (allocation-free) config, so a hostile ``config.json`` costs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..i18n import tr
from .config import EncoderConfig
from .model_files import (
    MAX_D_FF,
    MAX_D_MODEL,
    MAX_HEADS,
    MAX_LAYERS,
    MAX_MODEL_PARAMS,
    MAX_POSITIONS,
    MAX_TYPE_VOCAB,
    MAX_VOCAB,
    ModelFolderError,
)

__all__ = ["FAMILIES", "HF_ACTIVATIONS", "ModelSpec", "family_of", "model_spec"]

# model_type -> the family's name on screen
FAMILIES: dict[str, str] = {
    "bert": "BERT",
    "roberta": "RoBERTa",
    "xlm-roberta": "XLM-RoBERTa",
    "electra": "ELECTRA",
    "distilbert": "DistilBERT",
    "gpt2": "GPT-2",
}
# An older config.json may name only its class: longest prefixes first (XLMRoberta before Roberta).
_ARCHITECTURE_PREFIXES = (
    ("XLMRoberta", "xlm-roberta"),
    ("Roberta", "roberta"),
    ("DistilBert", "distilbert"),
    ("Bert", "bert"),
    ("Electra", "electra"),
    ("GPT2", "gpt2"),
)
# transformers' hidden_act names -> ours. gelu_new, gelu_fast and gelu_pytorch_tanh are one formula.
HF_ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_python": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "relu": "relu",
}
# Each family's config class defaults, for keys a config.json leaves out.
_DEFAULTS: dict[str, dict[str, Any]] = {
    "bert": {
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
        "layer_norm_eps": 1e-12,
        "hidden_act": "gelu",
    },
    "roberta": {
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
        "layer_norm_eps": 1e-12,
        "hidden_act": "gelu",
        "pad_token_id": 1,
    },
    "electra": {
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
        "layer_norm_eps": 1e-12,
        "hidden_act": "gelu",
        "embedding_size": 128,
    },
    "distilbert": {"max_position_embeddings": 512, "activation": "gelu", "sinusoidal_pos_embds": False},
    "gpt2": {
        "n_positions": 1024,
        "n_inner": None,
        "activation_function": "gelu_new",
        "layer_norm_epsilon": 1e-5,
    },
}
_DEFAULTS["xlm-roberta"] = _DEFAULTS["roberta"]


@dataclass(frozen=True)
class ModelSpec:
    """What config.json says, mapped: the family, our config and the checkpoint's quirks."""

    family: str  # a key of FAMILIES
    cfg: EncoderConfig
    # Rows of the checkpoint's position table before position 0. RoBERTa counts positions from
    # pad_token_id + 1 (its pads take row pad_token_id); we keep the rows real tokens use.
    pos_offset: int = 0
    # DistilBERT's sinusoidal_pos_embds: its table is the sinusoid formula, not learned.
    sinusoidal_table: bool = False

    @property
    def label(self) -> str:
        return FAMILIES[self.family]


def family_of(hf: Mapping[str, Any], source: str | Path = "config.json") -> str:
    """The family of a config.json (its model_type, else its architectures); refuses others."""
    model_type = hf.get("model_type")
    architectures = hf.get("architectures") or []
    if isinstance(model_type, str) and model_type in FAMILIES:
        return model_type
    if model_type is None and isinstance(architectures, list):
        for arch in architectures:
            for prefix, family in _ARCHITECTURE_PREFIXES:
                if isinstance(arch, str) and arch.startswith(prefix):
                    return family
    raise ModelFolderError(
        tr(
            "{source}: model_type={model_type} (architectures={architectures}) is not supported; "
            "supported: {supported}",
            source=source,
            model_type=repr(model_type),
            architectures=architectures if isinstance(architectures, list) else repr(architectures),
            supported=", ".join(FAMILIES),
        )
    )


class _Reader:
    """config.json's values, each checked before use; errors name the file and the key."""

    def __init__(self, hf: Mapping[str, Any], family: str, source: str | Path) -> None:
        self.hf, self.defaults, self.source = hf, _DEFAULTS[family], source

    def get(self, key: str) -> Any:
        if key in self.hf:
            return self.hf[key]
        if key in self.defaults:
            return self.defaults[key]
        raise ModelFolderError(tr("{source} lacks {key}", source=self.source, key=repr(key)))

    def int(self, key: str, lo: int, hi: int) -> int:
        value = self.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
            raise ModelFolderError(
                tr(
                    "{source}: {key}={value} must be an integer from {lo} to {hi}",
                    source=self.source,
                    key=key,
                    value=repr(value),
                    lo=lo,
                    hi=hi,
                )
            )
        return value

    def eps(self, key: str) -> float:
        value = self.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
            raise ModelFolderError(
                tr(
                    "{source}: {key}={value} must be a number in (0, 1]",
                    source=self.source,
                    key=key,
                    value=repr(value),
                )
            )
        return float(value)

    def activation(self, key: str) -> str:
        act = self.get(key)
        if not isinstance(act, str) or act not in HF_ACTIVATIONS:
            raise ModelFolderError(
                tr(
                    "{source}: {key}={value} is not supported (supported: {supported})",
                    source=self.source,
                    key=key,
                    value=repr(act),
                    supported=", ".join(sorted(HF_ACTIVATIONS)),
                )
            )
        return HF_ACTIVATIONS[act]

    def refuse_if(self, key: str, bad: Any, why: str) -> None:
        if key in self.hf and self.hf[key] == bad:
            raise ModelFolderError(
                tr(
                    "{source}: {key}={value} is not supported: {why}",
                    source=self.source,
                    key=key,
                    value=repr(bad),
                    why=why,
                )
            )


def model_spec(hf: Mapping[str, Any], source: str | Path = "config.json") -> ModelSpec:
    """Map a config.json onto a `ModelSpec`; ModelFolderError naming the file and the key.

    Nothing is allocated: the numbers are bounded first, then the parameter count.
    """
    family = family_of(hf, source)
    r = _Reader(hf, family, source)
    if family == "gpt2":
        spec = _gpt2(r)
    elif family == "distilbert":
        spec = _distilbert(r)
    else:
        spec = _bert_like(r, family)
    cfg = spec.cfg
    # The sinusoid table is a buffer, not a parameter, but it takes memory all the same.
    n = cfg.n_params() + (cfg.max_len * cfg.d_embed_size if cfg.pos_encoding == "sinusoidal" else 0)
    if n > MAX_MODEL_PARAMS:
        raise ModelFolderError(
            tr(
                "{source} describes {n:.0f} M parameters, over the {limit:.0f} M this app loads",
                source=source,
                n=n / 1e6,
                limit=MAX_MODEL_PARAMS / 1e6,
            )
        )
    return spec


def _config(r: _Reader, **fields: Any) -> EncoderConfig:
    try:
        return EncoderConfig(dropout=0.0, **fields)  # loaded for looking, not training
    except ValueError as exc:
        raise ModelFolderError(f"{r.source}: {exc}") from exc


def _sizes(r: _Reader, vocab: str, width: str, layers: str, heads: str) -> dict[str, int]:
    return {
        "vocab_size": r.int(vocab, 1, MAX_VOCAB),
        "d_model": r.int(width, 1, MAX_D_MODEL),
        "n_layers": r.int(layers, 1, MAX_LAYERS),
        "n_heads": r.int(heads, 1, MAX_HEADS),
    }


def _bert_like(r: _Reader, family: str) -> ModelSpec:
    """BERT, RoBERTa, XLM-RoBERTa and ELECTRA share BERT's config keys and block."""
    sizes = _sizes(r, "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads")
    d_ff = r.int("intermediate_size", 1, MAX_D_FF)
    n_positions = r.int("max_position_embeddings", 1, MAX_POSITIONS)
    if r.hf.get("position_embedding_type", "absolute") != "absolute":
        raise ModelFolderError(
            tr(
                "{source}: position_embedding_type={value} is not supported (only 'absolute')",
                source=r.source,
                value=repr(r.hf.get("position_embedding_type")),
            )
        )
    r.refuse_if("is_decoder", True, tr("encoder only"))
    r.refuse_if("add_cross_attention", True, tr("encoder only"))
    offset = 0
    if family in ("roberta", "xlm-roberta"):
        offset = r.int("pad_token_id", 0, n_positions - 2) + 1
    d_embed = r.int("embedding_size", 1, MAX_D_MODEL) if family == "electra" else None
    cfg = _config(
        r,
        **sizes,
        max_len=n_positions - offset,
        d_ff=d_ff,
        d_embed=d_embed,
        pos_encoding="learned",
        activation=r.activation("hidden_act"),
        norm="post",
        layer_norm_eps=r.eps("layer_norm_eps"),
        type_vocab_size=r.int("type_vocab_size", 0, MAX_TYPE_VOCAB),
        embed_norm=True,
    )
    return ModelSpec(family, cfg, pos_offset=offset)


def _distilbert(r: _Reader) -> ModelSpec:
    sizes = _sizes(r, "vocab_size", "dim", "n_layers", "n_heads")
    sinusoidal = r.get("sinusoidal_pos_embds")
    if not isinstance(sinusoidal, bool):
        raise ModelFolderError(
            tr(
                "{source}: sinusoidal_pos_embds={value} must be true or false",
                source=r.source,
                value=repr(sinusoidal),
            )
        )
    cfg = _config(
        r,
        **sizes,
        max_len=r.int("max_position_embeddings", 1, MAX_POSITIONS),
        d_ff=r.int("hidden_dim", 1, MAX_D_FF),
        pos_encoding="sinusoidal" if sinusoidal else "learned",
        activation=r.activation("activation"),
        norm="post",
        layer_norm_eps=1e-12,  # fixed in DistilBERT's code, not in its config
        type_vocab_size=0,  # DistilBERT dropped BERT's segment embeddings
        embed_norm=True,
    )
    return ModelSpec("distilbert", cfg, sinusoidal_table=sinusoidal)


def _gpt2(r: _Reader) -> ModelSpec:
    sizes = _sizes(r, "vocab_size", "n_embd", "n_layer", "n_head")
    r.refuse_if("scale_attn_weights", False, tr("the scores would not be divided by sqrt(d_head)"))
    r.refuse_if(
        "scale_attn_by_inverse_layer_idx", True, tr("the scores would be divided by the layer number")
    )
    r.refuse_if("add_cross_attention", True, tr("self-attention only"))
    inner = r.get("n_inner")
    d_ff = 4 * sizes["d_model"] if inner is None else r.int("n_inner", 1, MAX_D_FF)
    cfg = _config(
        r,
        **sizes,
        max_len=r.int("n_positions", 1, MAX_POSITIONS),
        d_ff=d_ff,
        pos_encoding="learned",
        activation=r.activation("activation_function"),
        norm="pre",
        layer_norm_eps=r.eps("layer_norm_epsilon"),
        causal=True,
        lm_head="tied",  # GPT-2's output layer is the token embedding matrix
    )
    return ModelSpec("gpt2", cfg)
