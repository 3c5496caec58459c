"""Cached numbers behind the experiment pages: temperature and √d_k on one head, the d_k sweep,
runs under a mask (through the encoder's own mask argument), heads combined across layers, the
query/key space of a head, heads ranked by what they do."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import streamlit as st

from ..analysis.head_roles import average_scores, rank_heads, role_scores
from ..analysis.masks import causal_mask, custom_mask, describe, full_mask, output_shift, window_mask
from ..analysis.rollout import attention_rollout, combine_heads, project_2d
from ..analysis.scaling import row_entropy, row_max, scaling_sweep, temperature_pattern
from ..i18n import tr
from ..model.capture import ATTENTION, TextCapture, capture_batch, capture_ids
from ..resources import examples
from .caches import ModelChoice, get_capture, get_model


@st.cache_data(max_entries=64, show_spinner=False)
def tempered(
    choice: ModelChoice, text: str, layer: int, head: int, tau: float, scaled: bool
) -> dict[str, Any]:
    """One head's pattern with the logits divided by τ (and by √d_k or not), each row's entropy
    and largest weight, from the captured q and k."""
    cap = get_capture(choice, text, ATTENTION)
    q, k = cap.q[layer, :, head], cap.k[layer, :, head]
    n = q.shape[0]
    allowed = np.tril(np.ones((n, n), dtype=bool)) if cap.cfg.causal else None
    p = temperature_pattern(q @ k.T, q.shape[1], tau=tau, scaled=scaled, allowed=allowed)
    return {"pattern": p, "entropy": row_entropy(p), "max": row_max(p)}


# Spinners come from inside the cached bodies (shown only while one computes) so that they
# speak the session's language; a cache's show_spinner text is fixed at import.
@st.cache_resource(show_spinner=False)
def scaling_sweep_data() -> Any:
    """The d_k sweep: computed once per server (a fixed seed), shared by every session."""
    with st.spinner(tr("Sampling random queries and keys...")):
        return scaling_sweep()


# --- masks -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MaskRun:
    mask: np.ndarray  # [query_pos, key_pos] the mask asked for (True = may attend)
    base: TextCapture  # no extra mask
    masked: TextCapture  # the same text through the encoder with the mask
    shift: np.ndarray  # [pos] how far each token's output moved (relative L2)
    facts: dict[str, Any]  # share allowed, fully masked rows


def build_mask(kind: str, n: int, window: int, spec: str) -> np.ndarray:
    """The mask a page's choice describes (ValueError with a message for a bad custom spec)."""
    if kind == "causal":
        return causal_mask(n)
    if kind == "window":
        return window_mask(n, window)
    if kind == "custom":
        return custom_mask(n, spec)
    return full_mask(n)


@st.cache_resource(max_entries=16, show_spinner=False)
def masked_run(choice: ModelChoice, text: str, kind: str, window: int, spec: str) -> MaskRun:
    model, _ = get_model(choice)
    base = get_capture(choice, text, ATTENTION)
    mask = build_mask(kind, base.n_pos, window, spec)
    with st.spinner(tr("Running with the mask...")):
        masked = capture_ids(model, base.encoded, ATTENTION, attn_mask=mask)
    return MaskRun(mask, base, masked, output_shift(base.output, masked.output), describe(mask))


@st.cache_resource(max_entries=8, show_spinner=False)
def padded_pair(choice: ModelChoice, text: str, text_b: str) -> tuple[TextCapture, TextCapture]:
    """The two texts in one batch, padded to the longer one."""
    model, tok = get_model(choice)
    with st.spinner(tr("Running both texts in one batch...")):
        a, b = capture_batch(model, tok, [text, text_b], ATTENTION)
    return a, b


# --- across layers, query/key space, head roles ------------------------------------------------


@st.cache_resource(max_entries=16, show_spinner=False)
def combined(choice: ModelChoice, text: str, how: str) -> np.ndarray:
    """[layer, query_pos, key_pos]: the heads' mean, max, or the rollout up to each layer."""
    p = get_capture(choice, text, ATTENTION).pattern
    with st.spinner(tr("Combining the heads...")):
        if how == "rollout":
            return attention_rollout(p)
        return combine_heads(p, "max" if how == "max" else "mean")


@st.cache_resource(max_entries=32, show_spinner=False)
def qk_projection(choice: ModelChoice, text: str, layer: int, head: int, translate: bool) -> Any:
    cap = get_capture(choice, text, ATTENTION)
    return project_2d(cap.q[layer, :, head], cap.k[layer, :, head], translate_keys=translate)


def _roles_of(choice: ModelChoice, text: str) -> dict[str, np.ndarray]:
    cap = get_capture(choice, text, ATTENTION)
    enc = cap.encoded
    unk = get_model(choice)[1].unk_id  # repeated [UNK]s are not copies of one token
    return role_scores(
        cap.pattern, enc.ids, cls_pos=enc.leading_special, skip_special=enc.special, unk_id=unk
    )


@st.cache_data(max_entries=16, show_spinner=False)
def head_roles(choice: ModelChoice, text: str) -> dict[str, np.ndarray]:
    with st.spinner(tr("Scoring every head...")):
        return _roles_of(choice, text)


@st.cache_data(max_entries=4, show_spinner=False)
def head_roles_on_examples(choice: ModelChoice, lang: str = "en") -> tuple[dict[str, np.ndarray], int]:
    """Every role's score averaged over the example texts in ``lang`` (and how many there are)."""
    texts = [str(ex["text"]) for ex in examples() if ex.get("lang") == lang]
    with st.spinner(tr("Scoring every head on the example texts...")):
        return average_scores([_roles_of(choice, t) for t in texts]), len(texts)


__all__ = ["rank_heads"]  # re-exported for the pages (tformer.ui.rank_heads)
