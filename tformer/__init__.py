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

# The same names for type checkers; `name as name` is what mypy's strict mode reads as a re-export.
if TYPE_CHECKING:
    from .analysis.layouts import FusedQKV as FusedQKV
    from .analysis.layouts import SeparateQKV as SeparateQKV
    from .analysis.layouts import split_fused as split_fused
    from .model.attention import MultiHeadAttention as MultiHeadAttention
    from .model.attention import attention_pattern as attention_pattern
    from .model.attention import attention_scores as attention_scores
    from .model.attention import scaled_dot_product_attention as scaled_dot_product_attention
    from .model.capture import ATTENTION as ATTENTION
    from .model.capture import TextCapture as TextCapture
    from .model.capture import capture_nbytes as capture_nbytes
    from .model.capture import capture_text as capture_text
    from .model.config import EncoderConfig as EncoderConfig
    from .model.device import pick_device as pick_device
    from .model.encoder import MLP as MLP
    from .model.encoder import Encoder as Encoder
    from .model.encoder import EncoderBlock as EncoderBlock
    from .model.hooks import ACTS as ACTS
    from .model.hooks import ActivationCache as ActivationCache
    from .model.hooks import HookedRootModule as HookedRootModule
    from .model.hooks import HookPoint as HookPoint
    from .model.hooks import act_name as act_name
    from .model.hooks import capturing as capturing
    from .model.interventions import ablate_heads as ablate_heads
    from .model.interventions import patterns_without_positions as patterns_without_positions
    from .model.layernorm import LayerNorm as LayerNorm
    from .model.model_files import ModelFolderError as ModelFolderError
    from .model.model_loader import LoadedModel as LoadedModel
    from .model.model_loader import load_model_folder as load_model_folder
    from .model.models_dir import ModelEntry as ModelEntry
    from .model.models_dir import find_models as find_models
    from .model.positional import pe_frequencies as pe_frequencies
    from .model.positional import pe_shift_matrix as pe_shift_matrix
    from .model.positional import sinusoidal_encoding as sinusoidal_encoding
    from .model.predictions import Generation as Generation
    from .model.predictions import Prediction as Prediction
    from .model.predictions import generate_greedy as generate_greedy
    from .model.predictions import predict as predict
    from .model.pretrained import PretrainedUnavailable as PretrainedUnavailable
    from .model.pretrained import load_pretrained as load_pretrained
    from .model.pretrained import pretrained_available as pretrained_available
    from .model.tokenizer import Encoded as Encoded
    from .model.tokenizer import Tokenizer as Tokenizer
    from .model.tokenizer import scratch_tokenizer as scratch_tokenizer

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
