"""The predictions page's room: the model's output head, the position it opens on, the cached
prediction (logits, softmax, top tokens) and the cached greedy generation."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from ....i18n import tr
from ....model.predictions import Generation, Prediction, generate_greedy, output_head_kind, predict
from ...caches import ModelChoice, get_model

__all__ = [
    "MASK_TOKENS",
    "HeadInfo",
    "continuation",
    "generation",
    "head_info",
    "mask_positions",
    "prediction",
    "start_position",
]

MASK_TOKENS = ("[MASK]", "<mask>")  # BERT, DistilBERT, ELECTRA; RoBERTa, XLM-R


@dataclass(frozen=True)
class HeadInfo:
    """What the model's output head is, in words a page shows."""

    kind: str | None  # "next" (a causal LM), "mlm" (a masked LM), "task" (a task head), None
    n_outputs: int
    mask_token: str | None  # the tokenizer's mask token, for an MLM


def head_info(choice: ModelChoice) -> HeadInfo:
    model, tokenizer = get_model(choice)
    kind = output_head_kind(model)
    if kind == "lm":
        kind = "next" if model.cfg.causal else "mlm"
    if kind == "task":
        n = model.cfg.n_outputs
    elif kind is not None:
        n = model.cfg.vocab_size
    else:
        n = 0
    mask = next((t for t in MASK_TOKENS if tokenizer.token_to_id(t) is not None), None)
    return HeadInfo(kind, n, mask if kind == "mlm" else None)


def mask_positions(choice: ModelChoice, text: str) -> list[int]:
    """Positions of the text's mask tokens ([MASK], <mask>)."""
    _, tokenizer = get_model(choice)
    ids = {tokenizer.token_to_id(t) for t in MASK_TOKENS} - {None}
    return [i for i, t in enumerate(tokenizer.encode(text).ids) if t in ids]


def start_position(info: HeadInfo, special: list[bool], masks: list[int]) -> int:
    """Where the view opens: an MLM's first mask, else its first token that is not a special
    ([CLS], <s>); the last token for the others (a causal LM predicts what follows the text)."""
    if info.kind == "mlm":
        if masks:
            return masks[0]
        return next((i for i, s in enumerate(special) if not s), 0)
    return len(special) - 1


def continuation(choice: ModelChoice, gen: Generation) -> str:
    """The new tokens as text, decoded together (a byte-level BPE character may span tokens)."""
    _, tokenizer = get_model(choice)
    return str(tokenizer.backend.decode(list(gen.new_ids), skip_special_tokens=False))


@st.cache_data(max_entries=32, show_spinner=False)
def prediction(
    choice: ModelChoice, text: str, position: int, temperature: float, k: int, lang: str = "en"
) -> Prediction:
    """`tformer.model.predictions.predict` for the model in use, cached per its arguments (and
    the language, which a task head's class names are in)."""
    model, tokenizer = get_model(choice)
    labels = None
    if model.lm_head is None and model.cfg.n_outputs != tokenizer.vocab_size:
        labels = [tr("class {i}", i=i) for i in range(model.cfg.n_outputs)]
    with st.spinner(tr("Running the model...")):
        return predict(model, tokenizer, text, position, temperature, k, labels=labels)


@st.cache_data(max_entries=16, show_spinner=False)
def generation(choice: ModelChoice, text: str, n_new: int) -> Generation:
    """`tformer.model.predictions.generate_greedy`, cached per model, prompt and length."""
    model, tokenizer = get_model(choice)
    with st.spinner(tr("Generating...")):
        return generate_greedy(model, tokenizer, text, n_new)
