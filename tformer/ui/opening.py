"""The head a page opens on when the user has chosen none: one that shows something.

Layer 0, head 0 is often the least telling head of a model (MiniLM's is spread over every
token). So until the user picks a head (a selectbox, a click on the overview or the head
finder, a lesson step, a link's ``layer`` / ``head``), the view's layer and head are None and
pages open on:

- the head an example text names for this model (assets/examples.json, "opens": MiniLM's
  layer 3, head 1 on "The animal didn't cross the street because it was too tired.", whose
  "it" looks at "animal"), else
- the model's clearest head by the head finder (`head_roles.telling_heads`) over its example
  texts (the English examples; a trained run's own task inputs), computed once per model, so
  that the head does not jump about while a teacher types.

With a layer chosen and no head, the clearest head of that layer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import streamlit as st

from ..analysis.head_roles import average_scores, role_scores, telling_heads
from ..i18n import tr
from ..model.capture import TextCapture, capture_ids
from ..resources import examples
from .binding import view
from .caches import ModelChoice, get_model, run_meta
from .guard import plain
from .lessons import Claim, parse_claim

log = logging.getLogger("tformer.app")

# Example texts longer than this are left out of the finder's average (they cost the most).
MAX_FINDER_TEXTS = 8


@dataclass(frozen=True)
class Opening:
    layer: int
    head: int
    per_layer: tuple[int, ...]  # the head to open in each layer
    why: str  # "example": named for this text; "finder": the clearest head; "none": no scores
    role: str | None = None  # finder: the role that made the head the clearest
    score: float | None = None
    claim: Claim | None = None  # example: what the example says this head shows


def named_opening(choice: ModelChoice, text: str) -> Claim | None:
    """The head an example names for this model when ``text`` is that example's text."""
    for ex in examples():
        opens = ex.get("opens")
        if ex.get("text") == text and isinstance(opens, dict) and choice.source in opens:
            return parse_claim(opens[choice.source], f"example {ex.get('label')!r}")
    return None


def _finder_texts(choice: ModelChoice) -> list[str]:
    if choice.run is not None:
        found = run_meta(choice.run).get("examples", [])
        return [t for t in found if isinstance(t, str)][:MAX_FINDER_TEXTS]
    return [str(e["text"]) for e in examples() if e.get("lang") == "en"][:MAX_FINDER_TEXTS]


@st.cache_data(max_entries=8, show_spinner=False)
def clearest_heads(choice: ModelChoice) -> tuple[tuple[int, int], tuple[int, ...], str, float] | None:
    """`telling_heads` of the role scores averaged over the model's example texts; None when
    they cannot be scored (the run's inputs are gone, the model fails on them)."""
    try:
        model, tokenizer = get_model(choice)
        per_text = []
        for text in _finder_texts(choice):
            enc = tokenizer.encode(text)
            pattern = capture_ids(model, enc, ("pattern",)).pattern  # short texts: a few MB at most
            per_text.append(
                role_scores(
                    pattern,
                    enc.ids,
                    cls_pos=enc.leading_special,
                    skip_special=enc.special,
                    unk_id=tokenizer.unk_id,
                )
            )
        if not per_text:
            return None
        best, per_layer, role, score = telling_heads(average_scores(per_text))
    except (ValueError, KeyError, IndexError, OSError, RuntimeError) as err:  # a page must still open
        log.warning("no opening head for %s: %s", choice.source, err)
        return None
    return best, tuple(per_layer), role, score


def opening(choice: ModelChoice, text: str, n_layers: int, n_heads: int) -> Opening:
    """Where a page opens for this model and text (see the module docstring)."""
    found = clearest_heads(choice)
    per_layer = found[1] if found is not None and len(found[1]) == n_layers else (0,) * n_layers
    named = named_opening(choice, text)
    if named is not None and named.layer < n_layers and named.head < n_heads:
        layers = tuple(named.head if i == named.layer else h for i, h in enumerate(per_layer))
        return Opening(named.layer, named.head, layers, "example", claim=named)
    if found is None or len(found[1]) != n_layers:
        return Opening(0, 0, per_layer, "none")
    (layer, head), _, role, score = found
    return Opening(layer, head, per_layer, "finder", role, score)


def chosen_head(choice: ModelChoice, text: str, n_layers: int, n_heads: int) -> tuple[int, int]:
    """The layer and head the view shows: the user's (clamped to the model), else the opening's."""
    v = view()
    layer, head = v.layer, v.head
    if layer is None or head is None:
        op = opening(choice, text, n_layers, n_heads)
        if layer is None:
            layer = op.layer
        if head is None:
            head = op.head if v.layer is None else op.per_layer[min(layer, n_layers - 1)]
    return min(max(layer, 0), n_layers - 1), min(max(head, 0), n_heads - 1)


# What each head-finder role is called on screen (English templates, translated where shown).
ROLE_NAMES = {
    "previous": "previous token",
    "next": "next token",
    "self": "itself",
    "cls": "first token / [CLS]",
    "duplicate": "earlier copy of the same token",
    "broad": "broad (spread out)",
}


def opening_note(choice: ModelChoice, text: str, capture: TextCapture) -> str | None:
    """Why the page opened on its head, with this text's numbers; None once the user chose one."""
    v = view()
    if v.layer is not None or v.head is not None:
        return None
    op = opening(choice, text, capture.n_layers, capture.n_heads)
    pick = tr("Pick any other head above, or in the overview.")
    if op.why == "example" and op.claim is not None:
        c = op.claim
        if c.kind == "weight" and "pattern" in capture and capture.layers is None:
            labels = capture.labels
            if c.query in labels and c.key in labels:
                weight = float(capture.pattern[c.layer, c.head, labels.index(c.query), labels.index(c.key)])
                return tr(
                    "Opened on layer {layer}, head {head}, the head this example is about: the row of "
                    "“{query}” puts {weight:.2f} of its weight on “{key}”.",
                    layer=c.layer, head=c.head, query=plain(c.query), key=plain(c.key), weight=weight,
                ) + " " + pick  # fmt: skip
        role = tr(ROLE_NAMES.get(c.role or "", c.role or ""))
        return tr(
            "Opened on layer {layer}, head {head}, this example's head for “{role}”.",
            layer=c.layer, head=c.head, role=role,
        ) + " " + pick  # fmt: skip
    if op.why == "finder" and op.role is not None and op.score is not None:
        return tr(
            "Opened on layer {layer}, head {head}: of this model's heads it shows its habit most clearly on "
            "the example texts (“{role}”, {score:.2f} by the head finder).",
            layer=op.layer, head=op.head, role=tr(ROLE_NAMES[op.role]), score=op.score,
        ) + " " + pick  # fmt: skip
    return None
