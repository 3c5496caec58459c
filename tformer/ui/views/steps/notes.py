"""What each step of the walkthrough does and why, in a sentence or two, with the live numbers.

Kept in one place; the English text is the catalog key of its translation (`tformer.i18n.tr`,
catalog ``assets/i18n/zh/steps.json``). Facts filled in by the page: n (tokens), d_model,
d_head, d_ff, heads, head, layer, act, query (the chosen token, as inert markdown), plus
per-step figures (masked, top_share, top_key, zero_share, mu, sigma). Facts that are whole
sentences (positions, input, mask) come translated from `step_facts`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ....i18n import tr

# Short labels for the step bar, by step key (English; `short` translates).
SHORT = {
    "embed": "embedding",
    "pos_embed": "+ position",
    "token_type_embed": "+ segment",
    "sum": "sum",
    "input": "X",
    "embed_ln": "LayerNorm → X",
    "q": "Q",
    "k": "K",
    "v": "V",
    "raw": "q·k",
    "scale": "÷ √d_k",
    "mask": "mask",
    "softmax": "softmax",
    "z": "Σ p·v",
    "concat": "concat",
    "attn_out": "W_O",
    "add1": "+ residual",
    "ln1": "LayerNorm",
    "ffn_in": "W₁",
    "act": "activation",
    "ffn_out": "W₂",
    "add2": "+ residual",
    "ln2": "LayerNorm",
    "ln_final": "final LayerNorm",
}
# Labels that are symbols: the same in every language.
_SYMBOLS = {
    "X",
    "LayerNorm → X",
    "Q",
    "K",
    "V",
    "q·k",
    "÷ √d_k",
    "softmax",
    "Σ p·v",
    "W_O",
    "LayerNorm",
    "W₁",
    "W₂",
}


def short(key: str) -> str:
    """Step ``key``'s label in the step bar, in the interface's language."""
    label = SHORT.get(key, key)
    return label if label in _SYMBOLS or key not in SHORT else tr(label)


# Notes whose whole text is a fact the page computes (already translated).
_FROM_FACTS = {"input": "input", "mask": "mask"}

_NOTES = {
    "embed": (
        "Each token id picks one row of the embedding table ({vocab} × {d_model}): the token's "
        "learned vector. The same token gets the same row wherever it stands."
    ),
    "pos_embed": (
        "The embedding alone says nothing about order, so one vector per position is added: {positions}."
    ),
    "token_type_embed": (
        "BERT also adds a segment vector (sentence A or B); a single text is segment A throughout."
    ),
    "sum": "Embedding + position (+ segment): each row is now a token at its place.",
    "embed_ln": (
        "BERT normalises each row of the sum with a LayerNorm; the result is X, what layer 0 reads."
    ),
    "q": (
        "Each token's query, what it looks for: X times this head's {d_head} columns of W_Q. "
        "Head {head} of {heads} works in its own {d_head}-dimensional subspace."
    ),
    "k": "Each token's key, what it offers to be found by: X times this head's columns of W_K.",
    "v": "Each token's value, what it passes on once attended to: X times this head's columns of W_V.",
    "raw": (
        "Every query against every key: s_ij = q_i · k_j, a sum of {d_head} products, large when "
        "the two vectors point the same way. The outlined row is the query {query}."
    ),
    "scale": (
        "Divided by √d_k = √{d_head} = {sqrt_dk:.2f}. A dot product of {d_head} terms has a "
        "variance that grows with d_k; unscaled, the softmax would give one key nearly all the "
        "weight and its gradient would vanish."
    ),
    "softmax": (
        "Softmax turns each row into weights ≥ 0 that sum to 1 (a −∞ score becomes exactly 0). "
        "The query {query} puts {top_share:.0%} of its weight on {top_key}."
    ),
    "z": (
        "The head's output for each token: the value vectors averaged with that token's weights. "
        "Row {query} = Σ_j p_j v_j."
    ),
    "concat": (
        "Every head's output side by side: {heads} heads × {d_head} = {d_model} columns. Columns "
        "{head_from}–{head_to} are head {head}'s."
    ),
    "attn_out": (
        "W_O ({d_model} × {d_model}) mixes the heads into one vector per token: what attention "
        "adds to the residual stream."
    ),
    "add1": (
        "The residual connection: attention's output is added to the layer's input, not put in "
        "its place, so a token can pass through a layer nearly unchanged."
    ),
    "ffn_in": (
        "The feed-forward network works on each token by itself: W₁ widens {d_model} to {d_ff} ({ratio:g}×)."
    ),
    "act": (
        "{act_name}. {zero_share:.0%} of this layer's {d_ff} × {n} hidden values are zero or "
        "nearly (|a| < 0.01)."
    ),
    "ffn_out": "W₂ brings the {d_ff} hidden values back to {d_model}.",
    "add2": "The second residual connection: the FFN's output is added to its input.",
    "ln_final": (
        "A pre-norm model never normalises the residual stream inside its layers, so it "
        "normalises once more after the last one."
    ),
}

_LN = (
    "LayerNorm rescales each token's vector: minus its mean μ, divided by σ, then times γ plus β "
    "(learned, one per dimension). For the query {query}: μ = {mu:.3g}, σ = {sigma:.3g}."
)
_LN_WHERE = {
    ("ln1", "post"): "Post-norm (as in the paper and BERT): after attention's residual.",
    ("ln2", "post"): "Its output is this layer's output, what the next layer reads.",
    ("ln1", "pre"): "Pre-norm: before attention; the residual stream itself stays unnormalised.",
    ("ln2", "pre"): "Pre-norm: before the FFN.",
}
_ACT_NAMES = {
    "relu": "ReLU sets every negative value to 0: max(0, h)",
    "gelu": "GELU (BERT's choice) keeps h times the chance Φ(h) that a standard normal is below h: "
    "negatives shrink toward 0, smoothly",
}


def note(key: str, facts: Mapping[str, Any]) -> str:
    """The sentence(s) for step ``key`` with ``facts`` filled in, in the interface's language
    (markdown; user text in ``facts`` must already be inert)."""
    f = dict(facts)
    f.setdefault("ratio", f.get("d_ff", 0) / max(1, f.get("d_model", 1)))
    f.setdefault("sqrt_dk", f.get("d_head", 1) ** 0.5)
    act = str(f.get("act"))
    f.setdefault("act_name", tr(_ACT_NAMES[act]) if act in _ACT_NAMES else act)
    if key in ("ln1", "ln2"):
        where = _LN_WHERE.get((key, str(f.get("norm"))))
        text = tr(_LN, **f)
        return tr("{first} {second}", first=text, second=tr(where)) if where else text
    if key in _FROM_FACTS:
        return str(f.get(_FROM_FACTS[key], ""))
    template = _NOTES.get(key)
    return tr(template, **f) if template else ""
