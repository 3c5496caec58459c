"""The Positional encoding page's cached numbers: the sinusoid table, PE(pos+k) as a rotation of
PE(pos), the model's own position table, and the attention with positions switched off (which
the Side by side page's "positions off" compares too)."""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

from ...i18n import tr
from ...model.capture import ATTENTION, positional_table
from ...model.interventions import patterns_without_positions
from ...model.positional import pe_shift_matrix, sinusoidal_encoding
from ..caches import ModelChoice, get_capture, get_model


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
