"""The second setting of the side-by-side page: what B is, given A (the sidebar's model and text)
and what differs. Both captures go through the same cache as every page's."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..capture import ATTENTION
from ..config import EncoderConfig
from ..pretrained import pretrained_available
from .caches import ModelChoice, get_capture, scratch_config_of
from .page_data import patterns_without_pe
from .state import ViewState

# What B changes, as the page names it.
COMPARE_WHAT = {
    "text": "another text",
    "positions": "no positional encoding",
    "heads": "another number of heads (same d_model)",
    "norm": "post-norm ↔ pre-norm",
    "causal": "causal ↔ bidirectional",
    "model": "MiniLM ↔ the from-scratch encoder",
}
SCRATCH_ONLY = ("heads", "norm", "causal")


@dataclass(frozen=True)
class Side:
    name: str  # "A: ..." / "B: ..."
    pattern: np.ndarray  # [layer, head_index, query_pos, key_pos]
    labels: list[str]


def _shape(cfg: EncoderConfig) -> str:
    return f"{cfg.n_layers} layers × {cfg.n_heads} heads, d_model {cfg.d_model}, {cfg.norm}-norm" + (
        ", causal" if cfg.causal else ""
    )


def variant(view: ViewState, a: ModelChoice, what: str) -> tuple[ModelChoice, str]:
    """B's model and its name on the page; ValueError with a message when B cannot be made."""
    if what in ("text", "positions"):
        return a, a.label
    if what == "model":
        if a.source == "minilm":
            b = ModelChoice("scratch", scratch_config_of(view))
        elif pretrained_available():
            b = ModelChoice("minilm")
        else:
            raise ValueError("the pretrained MiniLM is not installed here")
        return b, b.label
    if a.source != "scratch" or a.cfg is None:
        raise ValueError(
            "this comparison changes the from-scratch encoder's shape; choose the from-scratch encoder in "
            "the sidebar (MiniLM's shape is fixed by its training)"
        )
    cfg = a.cfg
    if what == "heads":
        new = dataclasses.replace(cfg, n_heads=view.get("compare.heads_b"))
    elif what == "norm":
        new = dataclasses.replace(cfg, norm="pre" if cfg.norm == "post" else "post")
    else:
        new = dataclasses.replace(cfg, causal=not cfg.causal)
    return ModelChoice("scratch", new), f"from-scratch encoder: {_shape(new)}"


def compare_sides(view: ViewState, a: ModelChoice, text: str, what: str) -> tuple[Side, Side]:
    """A and B: each one's attention patterns and token labels (ValueError when B cannot be
    made: the page shows the message)."""
    cap_a = get_capture(a, text, ATTENTION)
    b, b_name = variant(view, a, what)
    name_a = (
        f"A: {a.label}"
        if a.source != "scratch" or a.cfg is None
        else f"A: from-scratch encoder: {_shape(a.cfg)}"
    )
    side_a = Side(name_a, cap_a.pattern, cap_a.labels)
    if what == "positions":
        return side_a, Side(
            "B: the same model, positions switched off", patterns_without_pe(a, text), cap_a.labels
        )
    text_b = view.get("compare.text_b") if what == "text" else text
    if not text_b.strip():
        raise ValueError("type a text B")
    cap_b = get_capture(b, text_b, ATTENTION)
    return side_a, Side(
        f"B: {b_name}" if what != "text" else "B: the same model, text B", cap_b.pattern, cap_b.labels
    )
