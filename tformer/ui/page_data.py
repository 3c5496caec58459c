"""Cached numbers behind the positional-encoding and heads pages (numpy out, plain keys in)."""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

from ..analysis.metrics import (
    cluster_order,
    head_metrics,
    js_divergence_matrix,
    js_rows_budget,
    output_change,
)
from ..i18n import tr
from ..model.capture import ATTENTION, positional_table
from ..model.interventions import ablate_heads, patterns_without_positions
from ..model.positional import pe_shift_matrix, sinusoidal_encoding
from .caches import ModelChoice, get_capture, get_model


@st.cache_data(max_entries=16, show_spinner=False)
def sinusoids(n_pos: int, d_model: int) -> np.ndarray:
    return sinusoidal_encoding(n_pos, d_model).numpy()


@st.cache_data(max_entries=16, show_spinner=False)
def shift_check(pos: int, k: int, d_model: int) -> dict[str, Any]:
    """PE(pos+k) next to M_k PE(pos), as numbers, in float64."""
    m = pe_shift_matrix(k, d_model)
    lo = min(pos, pos + k)
    pe = sinusoidal_encoding(abs(k) + 1, d_model, start=lo).double()
    here, there = (pe[0], pe[-1]) if k >= 0 else (pe[-1], pe[0])
    rotated = m @ here
    table = [
        {
            "dim": i,
            f"PE({pos})": round(float(here[i]), 6),
            f"PE({pos + k})": round(float(there[i]), 6),
            f"M_k·PE({pos})": round(float(rotated[i]), 6),
        }
        for i in range(min(8, d_model))
    ]
    return {"table": table, "max_error": float((rotated - there).abs().max()), "matrix": m.numpy()}


@st.cache_data(max_entries=8, show_spinner=False)
def model_positions(choice: ModelChoice, n_pos: int) -> np.ndarray:
    return positional_table(get_model(choice)[0], n_pos)


# Spinners come from inside the cached bodies (shown only while one computes) so that they
# speak the session's language; a cache's show_spinner text is fixed at import.
@st.cache_data(max_entries=8, show_spinner=False)
def patterns_without_pe(choice: ModelChoice, text: str) -> np.ndarray:
    ids = get_capture(choice, text, ATTENTION).encoded.ids
    with st.spinner(tr("Running without positions...")):
        return patterns_without_positions(get_model(choice)[0], ids)


@st.cache_data(max_entries=16, show_spinner=False)
def row_focus(choice: ModelChoice, text: str, names: tuple[str, ...]) -> tuple[float, float]:
    """Mean of each row's largest weight over every head, and what spreading evenly over the
    allowed keys would give: (focus, even). Once per text, not on every rerun."""
    p = get_capture(choice, text, names).pattern  # [layer, head_index, query_pos, key_pos]
    allowed = np.maximum((p > 0).sum(-1), 1)  # keys each row may attend to
    return float(p.max(-1).mean()), float((1 / allowed).mean())


def head_names(n_layers: int, n_heads: int) -> list[str]:
    return [f"L{layer}H{head}" for layer in range(n_layers) for head in range(n_heads)]


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
