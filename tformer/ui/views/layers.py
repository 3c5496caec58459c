"""The Across layers page's cached numbers: the heads combined (mean, max) or the rollout."""

from __future__ import annotations

import numpy as np
import streamlit as st

from ...analysis.rollout import attention_rollout, combine_heads
from ...i18n import tr
from ...model.capture import ATTENTION
from ..caches import ModelChoice, get_capture


@st.cache_resource(max_entries=16, show_spinner=False)
def combined(choice: ModelChoice, text: str, how: str) -> np.ndarray:
    """[layer, query_pos, key_pos]: the heads' mean, max, or the rollout up to each layer."""
    p = get_capture(choice, text, ATTENTION).pattern
    with st.spinner(tr("Combining the heads...")):
        if how == "rollout":
            return attention_rollout(p)
        return combine_heads(p, "max" if how == "max" else "mean")
