"""The Why √d_k page's cached numbers: one head under a temperature, with or without the
scaling, and the d_k sweep."""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

from ...analysis.scaling import row_entropy, row_max, scaling_sweep, temperature_pattern
from ...i18n import tr
from ...model.capture import ATTENTION
from ..caches import ModelChoice, get_capture


@st.cache_data(max_entries=64, show_spinner=False)
def tempered(
    choice: ModelChoice, text: str, layer: int, head: int, tau: float, scaled: bool
) -> dict[str, Any]:
    """One head's pattern with the logits divided by τ (and by √d_k or not), each row's entropy
    and largest weight, from the captured q and k."""
    cap = get_capture(choice, text, ATTENTION)
    q, k = cap.q[layer, :, head], cap.k[layer, :, head]
    n = q.shape[0]
    attn_mask = np.tril(np.ones((n, n), dtype=bool)) if cap.cfg.causal else None
    p = temperature_pattern(q @ k.T, q.shape[1], tau=tau, scaled=scaled, attn_mask=attn_mask)
    return {"pattern": p, "entropy": row_entropy(p), "max": row_max(p)}


# Spinners come from inside the cached bodies (shown only while one computes) so that they
# speak the session's language; a cache's show_spinner text is fixed at import.
@st.cache_resource(show_spinner=False)
def scaling_sweep_data() -> Any:
    """The d_k sweep: computed once per server (a fixed seed), shared by every session."""
    with st.spinner(tr("Sampling random queries and keys...")):
        return scaling_sweep()
