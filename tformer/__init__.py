"""tformer: see what every attention head of a Transformer encoder computes.

``import tformer`` loads nothing heavy: each name is imported from its module on first use
(PEP 562), so ``tformer.Encoder`` loads torch and ``tformer.figures`` (plotly) and
``tformer.ui`` (Streamlit, imported by the app alone) need no torch until a tensor is made. The
app relies on this: a page can start the browser loading its chart code before torch loads.

The modules are grouped by what they teach: `tformer.model` (the encoder, its hooks, tokenizers,
loading and capture), `tformer.analysis` (what the lessons compute from a capture),
`tformer.efficiency` (what attention costs) and `tformer.training` (training from scratch).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> the module (in this package, e.g. "model.encoder") that defines it
_EXPORTS: dict[str, str] = {
    "MultiHeadAttention": "model.attention",
    "attention_pattern": "model.attention",
    "attention_scores": "model.attention",
    "scaled_dot_product_attention": "model.attention",
    "ATTENTION": "model.capture",
    "TextCapture": "model.capture",
    "capture_nbytes": "model.capture",
    "capture_text": "model.capture",
    "EncoderConfig": "model.config",
    "pick_device": "model.device",
    "MLP": "model.encoder",
    "Encoder": "model.encoder",
    "EncoderBlock": "model.encoder",
    "ACTS": "model.hooks",
    "ActivationCache": "model.hooks",
    "HookedRootModule": "model.hooks",
    "HookPoint": "model.hooks",
    "act_name": "model.hooks",
    "capturing": "model.hooks",
    "ablate_heads": "model.interventions",
    "patterns_without_positions": "model.interventions",
    "LayerNorm": "model.layernorm",
    "ModelFolderError": "model.model_files",
    "LoadedModel": "model.model_loader",
    "load_model_folder": "model.model_loader",
    "ModelEntry": "model.models_dir",
    "find_models": "model.models_dir",
    "FusedQKV": "analysis.layouts",
    "SeparateQKV": "analysis.layouts",
    "split_fused": "analysis.layouts",
    "pe_frequencies": "model.positional",
    "pe_shift_matrix": "model.positional",
    "sinusoidal_encoding": "model.positional",
    "Generation": "model.predictions",
    "Prediction": "model.predictions",
    "generate_greedy": "model.predictions",
    "predict": "model.predictions",
    "PretrainedUnavailable": "model.pretrained",
    "load_pretrained": "model.pretrained",
    "pretrained_available": "model.pretrained",
    "Encoded": "model.tokenizer",
    "Tokenizer": "model.tokenizer",
    "scratch_tokenizer": "model.tokenizer",
}

if TYPE_CHECKING:
    from .analysis.layouts import FusedQKV, SeparateQKV, split_fused
    from .model.attention import (
        MultiHeadAttention,
        attention_pattern,
        attention_scores,
        scaled_dot_product_attention,
    )
    from .model.capture import ATTENTION, TextCapture, capture_nbytes, capture_text
    from .model.config import EncoderConfig
    from .model.device import pick_device
    from .model.encoder import MLP, Encoder, EncoderBlock
    from .model.hooks import ACTS, ActivationCache, HookedRootModule, HookPoint, act_name, capturing
    from .model.interventions import ablate_heads, patterns_without_positions
    from .model.layernorm import LayerNorm
    from .model.model_files import ModelFolderError
    from .model.model_loader import LoadedModel, load_model_folder
    from .model.models_dir import ModelEntry, find_models
    from .model.positional import pe_frequencies, pe_shift_matrix, sinusoidal_encoding
    from .model.predictions import Generation, Prediction, generate_greedy, predict
    from .model.pretrained import PretrainedUnavailable, load_pretrained, pretrained_available
    from .model.tokenizer import Encoded, Tokenizer, scratch_tokenizer

__all__ = sorted(_EXPORTS)
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tformer' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # the next access is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
