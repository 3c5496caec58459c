"""The Query/key space page's cached numbers: one head's queries and keys projected to a plane."""

from __future__ import annotations

from typing import Any

import streamlit as st

from ...analysis.rollout import project_2d
from ...model.capture import ATTENTION
from ..caches import ModelChoice, get_capture


@st.cache_resource(max_entries=32, show_spinner=False)
def qk_projection(choice: ModelChoice, text: str, layer: int, head: int, translate: bool) -> Any:
    cap = get_capture(choice, text, ATTENTION)
    return project_2d(cap.q[layer, :, head], cap.k[layer, :, head], translate_keys=translate)
