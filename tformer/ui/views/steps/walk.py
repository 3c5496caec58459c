"""Cached numbers behind the step-by-step page: one layer walked for one head, each step checked
against the model's own hook; the neuron view; the two code layouts run on the layer's input.

Everything reads the capture the page holds for the text and the chosen layer (`WALK_NAMES`,
that layer only: `open_page(one_layer=True)`): changing the head, the query token, the step or
the section never runs the model again; a new layer runs it once per text and layer (cached).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import streamlit as st

from ....analysis.walkthrough import (
    NeuronView,
    Step,
    input_weights,
    layer_weights,
    neuron_view,
    walk_final,
    walk_input,
    walk_layer,
)
from ....model.capture import TextCapture, available_names
from ....model.config import EncoderConfig
from ....model.hooks import ACTS, act_name
from ...caches import ModelChoice, get_capture, get_model

# Every activation a model has, except the output head's logits: the step-by-step page walks
# from the embeddings to the last LayerNorm. Pages ask for this set; `open_page` drops the
# names a given model lacks (a segment embedding, BERT's embedding LayerNorm...).
WALK_NAMES = tuple(name for name in ACTS if name != "logits")
# What the encoder page reads for every layer: the residual stream, the sublayers' outputs, the
# FFN's hidden values and the LayerNorms (no [query_pos, key_pos] maps: those dominate a
# capture's size and the page does not show them).
STATS_NAMES = (
    "resid_pre", "attn_out", "resid_mid", "mlp_pre", "mlp_post", "mlp_out", "resid_post",
    "ln1_scale", "ln1_normalized", "ln2_scale", "ln2_normalized",
)  # fmt: skip

# Hooks that hold one head's slice at [:, head] ([pos, head_index, d_head]) or [head]
# ([head_index, query_pos, key_pos]) in a layer's capture.
_PER_POSITION_HEAD = ("q", "k", "v", "z")
_PER_HEAD = ("attn_scores", "pattern")


def walk_names(cfg: EncoderConfig) -> tuple[str, ...]:
    """The names of `WALK_NAMES` this model has, in forward order (the capture's cache key)."""
    return tuple(n for n in available_names(cfg) if n in WALK_NAMES)


@dataclass(frozen=True)
class Check:
    hook: str  # the full hook name, e.g. "blocks.0.attn.hook_pattern"
    max_diff: float  # largest |recomputed - captured| over the finite entries


@dataclass(frozen=True)
class Walk:
    steps: tuple[Step, ...]
    checks: dict[str, tuple[Check, ...]]  # step key -> its checks against the model's hooks


def _model_value(cap: TextCapture, name: str, layer: int, head: int) -> np.ndarray:
    if not ACTS[name].per_layer:
        return cap[name]
    a = cap.at(name, layer)
    if name in _PER_POSITION_HEAD:
        return a[:, head]
    return a[head] if name in _PER_HEAD else a


def _max_diff(mine: np.ndarray, theirs: np.ndarray) -> float:
    finite = np.isfinite(theirs)
    if not np.array_equal(finite, np.isfinite(mine)):
        return float("inf")  # a masked entry in one and not the other
    return float(np.abs(mine[finite] - theirs[finite]).max()) if finite.any() else 0.0


def layer_capture(choice: ModelChoice, text: str, layer: int) -> TextCapture:
    """The capture of every activation of ``layer`` (and the embeddings) for ``text``: the one
    the step-by-step page opened with (same cache key)."""
    return get_capture(choice, text, walk_names(get_model(choice)[0].cfg), (layer,))


@st.cache_resource(max_entries=16, show_spinner=False)
def walk(choice: ModelChoice, text: str, layer: int, head: int) -> Walk:
    """Layer ``layer`` of the text's pass, every step for head ``head`` (the first layer starts
    at the embeddings; a pre-norm model's last layer ends with its final LayerNorm)."""
    model = get_model(choice)[0]
    cfg = model.cfg
    cap = layer_capture(choice, text, layer)
    acts = {n: cap.at(n, layer) for n in cap.names if ACTS[n].per_layer}
    steps = walk_layer(
        acts,
        layer_weights(model, layer),
        n_heads=cfg.n_heads,
        head=head,
        norm=cfg.norm,
        act=cfg.activation,
        eps=cfg.layer_norm_eps,
        causal=cfg.causal,
    )
    if layer == 0:
        start = {n: cap[n] for n in ("embed", "pos_embed", "token_type_embed") if n in cap}
        start["resid_pre"] = acts["resid_pre"]
        steps = walk_input(start, input_weights(model), eps=cfg.layer_norm_eps) + steps[1:]
    if model.ln_final is not None and layer == cfg.n_layers - 1:
        ln = model.ln_final
        g, b = (t.detach().to("cpu").float().numpy() for t in (ln.weight, ln.bias))
        steps.append(walk_final(acts["resid_post"], g, b, eps=cfg.layer_norm_eps))
    checks = {
        s.key: tuple(
            Check(act_name(name, layer if ACTS[name].per_layer else None), _max_diff(mine, theirs))
            for name, mine in s.checks.items()
            for theirs in [_model_value(cap, name, layer, head)]
        )
        for s in steps
    }
    return Walk(tuple(steps), checks)


@st.cache_data(max_entries=64, show_spinner=False)
def neuron(choice: ModelChoice, text: str, layer: int, head: int, query: int, key: int) -> NeuronView:
    cap = layer_capture(choice, text, layer)
    q, k = cap.at("q", layer)[:, head], cap.at("k", layer)[:, head]
    return neuron_view(q, k, query, key, causal=cap.cfg.causal)


@st.cache_data(max_entries=16, show_spinner=False)
def layouts_agree(choice: ModelChoice, text: str, layer: int) -> dict[str, float]:
    """The seeds' two layouts of attention, built from this layer's weights, run on the layer's
    attention input; their largest differences from each other and from the model's output."""
    import torch

    from ....analysis.layouts import compare_layouts

    model = get_model(choice)[0]
    cap = layer_capture(choice, text, layer)
    x = cap.at("resid_pre", layer) if model.cfg.norm == "post" else cap.at("ln1_normalized", layer)
    if model.cfg.norm == "pre":  # the attention reads LayerNorm's output: γ ⊙ normalized + β
        ln: Any = model.blocks[layer].ln1
        x = x * ln.weight.detach().cpu().numpy() + ln.bias.detach().cpu().numpy()
    xt = torch.as_tensor(np.array(x), device=model.device)[None]  # [batch, pos, d_model]
    n = xt.shape[1]
    attn_mask = (
        torch.ones(n, n, dtype=torch.bool, device=model.device).tril()[None, None]
        if model.cfg.causal
        else None
    )
    return compare_layouts(model, layer, xt, attn_mask)
