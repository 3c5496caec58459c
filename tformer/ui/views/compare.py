"""The second setting of the side-by-side page: what B is, given A (the sidebar's model and text)
and what differs. Both captures go through the same cache as every page's."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ...i18n import tr
from ...model.capture import ATTENTION
from ...model.config import EncoderConfig
from ...model.pretrained import pretrained_available
from ..caches import ModelChoice, get_capture, scratch_config_of
from ..state import ViewState
from .positional import patterns_without_pe

# What B changes, as the page names it (English templates: the page translates them).
COMPARE_WHAT = {
    "text": "another text",
    "positions": "no positional encoding",
    "heads": "another number of heads (same d_model)",
    "norm": "post-norm ↔ pre-norm",
    "causal": "causal ↔ bidirectional",
    "model": "MiniLM ↔ the from-scratch encoder",
}
SCRATCH_ONLY = ("heads", "norm", "causal")


# A side's name is shown as plain text (st.text), cut to this many characters.
MAX_NAME_CHARS = 120


@dataclass(frozen=True)
class Side:
    name: str  # "A: ..." / "B: ...", printable characters only (user text may be in it)
    pattern: np.ndarray  # [layer, head_index, query_pos, key_pos]
    labels: list[str]


def _side(name: str, pattern: np.ndarray, labels: list[str]) -> Side:
    """A side, its name (which may hold a run's name or a path) made inert, printable text."""
    return Side("".join(ch for ch in name if ch.isprintable())[:MAX_NAME_CHARS], pattern, labels)


def _shape(cfg: EncoderConfig) -> str:
    """The encoder's shape in words, in the session's language."""
    norm = tr("pre-norm") if cfg.norm == "pre" else tr("post-norm")
    shape = tr(
        "{n_layers} layers × {n_heads} heads, d_model {d_model}, {norm}",
        n_layers=cfg.n_layers,
        n_heads=cfg.n_heads,
        d_model=cfg.d_model,
        norm=norm,
    )
    return tr("{shape}, causal", shape=shape) if cfg.causal else shape


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
            raise ValueError(tr("the pretrained MiniLM is not installed here"))
        return b, b.label
    if a.source != "scratch" or a.cfg is None:
        raise ValueError(
            tr(
                "this comparison changes the from-scratch encoder's shape; choose the from-scratch encoder "
                "in the sidebar (MiniLM's shape is fixed by its training)"
            )
        )
    cfg = a.cfg
    if what == "heads":
        new = dataclasses.replace(cfg, n_heads=view.get("compare.n_heads_b"))
    elif what == "norm":
        new = dataclasses.replace(cfg, norm="pre" if cfg.norm == "post" else "post")
    else:
        new = dataclasses.replace(cfg, causal=not cfg.causal)
    return ModelChoice("scratch", new), tr("from-scratch encoder: {shape}", shape=_shape(new))


def compare_sides(view: ViewState, a: ModelChoice, text: str, what: str) -> tuple[Side, Side]:
    """A and B: each one's attention patterns and token labels (ValueError when B cannot be
    made: the page shows the message)."""
    cap_a = get_capture(a, text, ATTENTION)
    b, b_name = variant(view, a, what)
    name_a = tr(
        "A: {name}",
        name=a.label
        if a.source != "scratch" or a.cfg is None
        else tr("from-scratch encoder: {shape}", shape=_shape(a.cfg)),
    )
    side_a = _side(name_a, cap_a.pattern, cap_a.labels)
    if what == "positions":
        return side_a, _side(
            tr("B: the same model, positions switched off"), patterns_without_pe(a, text), cap_a.labels
        )
    text_b = view.get("compare.text_b") if what == "text" else text
    if not text_b.strip():
        raise ValueError(tr("type a text B"))
    cap_b = get_capture(b, text_b, ATTENTION)
    return side_a, _side(
        tr("B: {name}", name=b_name) if what != "text" else tr("B: the same model, text B"),
        cap_b.pattern,
        cap_b.labels,
    )
