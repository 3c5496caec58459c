"""The Heads compared page's cached numbers: every head's metrics, the heads' likeness (JS
divergence, clustered) and what ablating heads changes (numpy out, plain keys in); the Export
page's metrics table uses `head_names` and `head_stats` too."""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

from ...analysis.metrics import (
    cluster_order,
    head_metrics,
    js_divergence_matrix,
    js_rows_budget,
    output_change,
)
from ...i18n import tr
from ...model.capture import ATTENTION
from ...model.interventions import ablate_heads
from ..caches import ModelChoice, get_capture, get_model


def head_names(n_layers: int, n_heads: int) -> list[str]:
    return [f"L{layer}H{head}" for layer in range(n_layers) for head in range(n_heads)]


# Spinners come from inside the cached bodies (shown only while one computes) so that they
# speak the session's language; a cache's show_spinner text is fixed at import.
@st.cache_data(max_entries=16, show_spinner=False)
def head_stats(choice: ModelChoice, text: str) -> dict[str, np.ndarray]:
    """Every head's metrics; the special positions come from the tokenizer's own specials."""
    cap = get_capture(choice, text, ATTENTION)
    enc = cap.encoded
    with st.spinner(tr("Measuring every head...")):
        return head_metrics(cap.pattern, cls_pos=enc.leading_special, sep_pos=enc.trailing_specials or None)


@st.cache_data(max_entries=16, show_spinner=False)
def head_similarity(choice: ModelChoice, text: str) -> dict[str, Any]:
    """JS divergence between every pair of heads, the clustered order, and how many query rows
    the mean is over (evenly spaced ones when the text is long and the heads many)."""
    p = get_capture(choice, text, ATTENTION).pattern
    flat = p.reshape(-1, *p.shape[2:])  # [layer * head_index, query_pos, key_pos]
    rows = js_rows_budget(flat.shape[0], flat.shape[1])
    with st.spinner(tr("Comparing heads...")):
        div = js_divergence_matrix(flat, max_rows=rows)
    return {"divergence": div, "order": cluster_order(div), "rows": rows, "n_rows": flat.shape[1]}


@st.cache_data(max_entries=32, show_spinner=False)
def ablation_change(choice: ModelChoice, text: str, heads: tuple[tuple[int, int], ...]) -> np.ndarray:
    cap = get_capture(choice, text, ATTENTION)
    model = get_model(choice)[0]
    with st.spinner(tr("Ablating...")):
        base, ablated = ablate_heads(model, cap.encoded.ids, list(heads), base=cap.output)
    return output_change(base, ablated)
