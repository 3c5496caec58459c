"""tformer: see what every attention head of a Transformer encoder computes.

``import tformer`` loads torch and numpy only; figure builders live in ``tformer.figures``
(plotly) and the Streamlit glue in ``tformer.ui`` (imported by the app alone).
"""

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
from .positional import pe_frequencies, pe_shift_matrix, sinusoidal_encoding
from .pretrained import PretrainedUnavailable, load_pretrained, pretrained_available
from .tokenizer import Encoded, Tokenizer, scratch_tokenizer

__all__ = [
    "ACTS",
    "ATTENTION",
    "LayerNorm",
    "capture_nbytes",
    "patterns_without_positions",
    "ActivationCache",
    "Encoded",
    "PretrainedUnavailable",
    "TextCapture",
    "Tokenizer",
    "ablate_heads",
    "capture_text",
    "load_pretrained",
    "pretrained_available",
    "scratch_tokenizer",
    "Encoder",
    "EncoderBlock",
    "EncoderConfig",
    "HookPoint",
    "HookedRootModule",
    "MLP",
    "MultiHeadAttention",
    "act_name",
    "attention_pattern",
    "attention_scores",
    "capturing",
    "pe_frequencies",
    "pe_shift_matrix",
    "pick_device",
    "scaled_dot_product_attention",
    "sinusoidal_encoding",
]
__version__ = "0.1.0"
