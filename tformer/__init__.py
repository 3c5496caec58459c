"""tformer: see what every attention head of a Transformer encoder computes.

``import tformer`` loads nothing heavy: each name is imported from its module on first use
(PEP 562), so ``tformer.Encoder`` loads torch and ``tformer.figures`` (plotly) and
``tformer.ui`` (Streamlit, imported by the app alone) need no torch until a tensor is made. The
app relies on this: a page can start the browser loading its chart code before torch loads.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> the module (in this package) that defines it
_EXPORTS: dict[str, str] = {
    "MultiHeadAttention": "attention",
    "attention_pattern": "attention",
    "attention_scores": "attention",
    "scaled_dot_product_attention": "attention",
    "ATTENTION": "capture",
    "TextCapture": "capture",
    "capture_nbytes": "capture",
    "capture_text": "capture",
    "EncoderConfig": "config",
    "pick_device": "device",
    "MLP": "encoder",
    "Encoder": "encoder",
    "EncoderBlock": "encoder",
    "ACTS": "hooks",
    "ActivationCache": "hooks",
    "HookedRootModule": "hooks",
    "HookPoint": "hooks",
    "act_name": "hooks",
    "capturing": "hooks",
    "ablate_heads": "interventions",
    "patterns_without_positions": "interventions",
    "LayerNorm": "layernorm",
    "ModelFolderError": "model_files",
    "LoadedModel": "model_loader",
    "load_model_folder": "model_loader",
    "ModelEntry": "models_dir",
    "find_models": "models_dir",
    "FusedQKV": "layouts",
    "SeparateQKV": "layouts",
    "split_fused": "layouts",
    "pe_frequencies": "positional",
    "pe_shift_matrix": "positional",
    "sinusoidal_encoding": "positional",
    "Generation": "predictions",
    "Prediction": "predictions",
    "generate_greedy": "predictions",
    "predict": "predictions",
    "PretrainedUnavailable": "pretrained",
    "load_pretrained": "pretrained",
    "pretrained_available": "pretrained",
    "Encoded": "tokenizer",
    "Tokenizer": "tokenizer",
    "scratch_tokenizer": "tokenizer",
}

if TYPE_CHECKING:
    from .attention import (
        MultiHeadAttention,
        attention_pattern,
        attention_scores,
        scaled_dot_product_attention,
    )
    from .capture import ATTENTION, TextCapture, capture_nbytes, capture_text
    from .config import EncoderConfig
    from .device import pick_device
    from .encoder import MLP, Encoder, EncoderBlock
    from .hooks import ACTS, ActivationCache, HookedRootModule, HookPoint, act_name, capturing
    from .interventions import ablate_heads, patterns_without_positions
    from .layernorm import LayerNorm
    from .layouts import FusedQKV, SeparateQKV, split_fused
    from .model_files import ModelFolderError
    from .model_loader import LoadedModel, load_model_folder
    from .models_dir import ModelEntry, find_models
    from .positional import pe_frequencies, pe_shift_matrix, sinusoidal_encoding
    from .predictions import Generation, Prediction, generate_greedy, predict
    from .pretrained import PretrainedUnavailable, load_pretrained, pretrained_available
    from .tokenizer import Encoded, Tokenizer, scratch_tokenizer

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
