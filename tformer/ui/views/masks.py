"""The Masks page's cached runs: the text through the encoder with the mask asked for (through
the encoder's own mask argument), and two texts padded in one batch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import streamlit as st

from ...analysis.masks import causal_mask, custom_mask, describe, full_mask, output_shift, window_mask
from ...i18n import tr
from ...model.capture import ATTENTION, TextCapture, capture_batch, capture_ids
from ..caches import ModelChoice, get_capture, get_model


@dataclass(frozen=True)
class MaskRun:
    attn_mask: np.ndarray  # [query_pos, key_pos] the mask asked for (True = may attend)
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


# What the page reads from the masked run: one head's scores and weights, and the output.
MASKED_NAMES = ("attn_scores", "pattern")


def adds_nothing(attn_mask: np.ndarray, causal: bool) -> bool:
    """Whether ``attn_mask`` blocks nothing the model does not block already (every cell, or for
    a causal model every cell on and below the diagonal): the run with it is the run without
    it, number for number (blocking no cell changes no score, and no row is dead)."""
    own = np.tril(np.ones_like(attn_mask, dtype=bool)) if causal else np.ones_like(attn_mask, dtype=bool)
    return bool(attn_mask[own].all())


# A few entries: each holds a masked capture of every layer's scores and weights (150 MB at 512
# tokens), and the kinds and windows a class goes through are few.
@st.cache_resource(max_entries=4, show_spinner=False)
def masked_run(choice: ModelChoice, text: str, kind: str, window: int, spec: str) -> MaskRun:
    model, _ = get_model(choice)
    base = get_capture(choice, text, ATTENTION)
    attn_mask = build_mask(kind, base.n_pos, window, spec)
    if adds_nothing(attn_mask, bool(model.cfg.causal)):
        masked = base  # no second run: it would give the same numbers
    else:
        with st.spinner(tr("Running with the mask...")):
            masked = capture_ids(model, base.encoded, MASKED_NAMES, attn_mask=attn_mask)
    return MaskRun(attn_mask, base, masked, output_shift(base.output, masked.output), describe(attn_mask))


@st.cache_resource(max_entries=8, show_spinner=False)
def padded_pair(choice: ModelChoice, text: str, text_b: str) -> tuple[TextCapture, TextCapture]:
    """The two texts in one batch, padded to the longer one."""
    model, tok = get_model(choice)
    with st.spinner(tr("Running both texts in one batch...")):
        a, b = capture_batch(model, tok, [text, text_b], ATTENTION)
    return a, b
