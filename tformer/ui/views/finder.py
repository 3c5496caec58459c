"""The Head finder's cached numbers: every head scored for each role (previous token, next token,
[CLS], duplicate token, broad) on the text or averaged over the example texts, and ranked."""

from __future__ import annotations

import numpy as np
import streamlit as st

from ...analysis.head_roles import average_scores, rank_heads, role_scores
from ...i18n import tr
from ...model.capture import ATTENTION
from ...resources import examples
from ..caches import ModelChoice, get_capture, get_model


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


__all__ = ["head_roles", "head_roles_on_examples", "rank_heads"]  # rank_heads: re-exported for the page
