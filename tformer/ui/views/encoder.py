"""Cached numbers behind the encoder page: the architecture with its parameter counts, and the
FFN, residual-stream and LayerNorm statistics of the text, all from the capture the page holds."""

from __future__ import annotations

import numpy as np
import streamlit as st

from ...analysis.architecture import ArchitectureSpec, architecture_spec, parameter_counts
from ...analysis.layer_stats import (
    FfnSparsity,
    LayerNormStats,
    SublayerNorms,
    ffn_sparsity,
    layernorm_stats,
    sublayer_norms,
)
from ...model.capture import TextCapture
from ..caches import ModelChoice, get_capture, get_model
from .steps.walk import STATS_NAMES


@st.cache_resource(max_entries=16, show_spinner=False)
def architecture_of(choice: ModelChoice, n_pos: int) -> ArchitectureSpec:
    """The model's parts with their real parameter counts (they sum to the model's total)."""
    model = get_model(choice)[0]
    return architecture_spec(model.cfg, n_pos, parameter_counts(model))


def stats_capture(choice: ModelChoice, text: str) -> TextCapture:
    """The capture the encoder page opened with: `STATS_NAMES` of every layer."""
    return get_capture(choice, text, STATS_NAMES)


@st.cache_resource(max_entries=8, show_spinner=False)
def ffn_stats(choice: ModelChoice, text: str) -> FfnSparsity:
    cap = stats_capture(choice, text)
    return ffn_sparsity(cap["mlp_pre"], cap["mlp_post"])


@st.cache_resource(max_entries=8, show_spinner=False)
def residual_norms(choice: ModelChoice, text: str) -> SublayerNorms:
    cap = stats_capture(choice, text)
    return sublayer_norms(cap["resid_pre"], cap["attn_out"], cap["mlp_out"])


@st.cache_resource(max_entries=16, show_spinner=False)
def layernorm_io(
    choice: ModelChoice, text: str, layer: int, which: str
) -> tuple[np.ndarray, np.ndarray, LayerNormStats]:
    """What LayerNorm ``which`` ("ln1" | "ln2") of ``layer`` reads [pos, d_model], its
    normalised output (x − μ) / σ, and μ and σ per token. Post-norm: ln1 reads x + attention,
    ln2 reads its output + FFN; pre-norm: ln1 reads the block's input, ln2 the residual after
    attention."""
    cfg = get_model(choice)[0].cfg
    cap = stats_capture(choice, text)
    if cfg.norm == "post":
        x = (
            cap["resid_pre"][layer] + cap["attn_out"][layer]
            if which == "ln1"
            else cap["resid_mid"][layer] + cap["mlp_out"][layer]
        )
    else:
        x = cap["resid_pre"][layer] if which == "ln1" else cap["resid_mid"][layer]
    return x, cap[f"{which}_normalized"][layer], layernorm_stats(x, eps=cfg.layer_norm_eps)
