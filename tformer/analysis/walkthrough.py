r"""One encoder layer, step by step, recomputed in numpy from the previous step's captured tensor.

Each function is one step of the lesson, with its formula in its docstring; the attention
steps themselves (score, scale, mask, softmax, weighted values) are the numpy reference's, in
`tformer.analysis.reference`. `walk_layer` chains them for one layer and head in the order the
model runs them (post-norm, as the paper and MiniLM, or pre-norm) and says, for each step,
which hook holds the model's own value, so a page can show the numbers and a test can check
that they are the model's (they agree to ~1e-6).
Inputs are the arrays of a `TextCapture` (batch dropped) and the layer's weights
(`layer_weights`); nothing here runs the model again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from .reference import apply_mask, raw_scores, scale_scores, softmax_rows, weighted_values

Array = npt.NDArray[np.float32]


def input_sum(embed: Array, pos_embed: Array, token_type_embed: Array | None = None) -> Array:
    r"""The encoder's input: each token's embedding plus its position's vector.

    .. math::
        X = \mathrm{Embed}(t) + PE
    """
    x = embed + pos_embed
    return x if token_type_embed is None else x + token_type_embed


def project(x: Array, w: Array, b: Array) -> Array:
    r"""One head's projection of X [pos, d_model] with its rows of W [d_head, d_model] and b.

    .. math::
        Q = XW_Q + b_Q,\quad K = XW_K + b_K,\quad V = XW_V + b_V
    """
    out: Array = x @ w.T + b  # [pos, d_head]
    return out


def concat_heads(z: Array) -> Array:
    r"""All heads' outputs side by side: [pos, head_index, d_head] -> [pos, d_model].

    .. math::
        \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)
    """
    return z.reshape(z.shape[0], -1)


def output_projection(concat: Array, w_o: Array, b_o: Array) -> Array:
    r"""Mix the heads back into d_model with W_O.

    .. math::
        \mathrm{MultiHead}(X) = \mathrm{Concat}(\mathrm{head}_1,\dots,\mathrm{head}_h)\,W_O + b_O
    """
    out: Array = concat @ w_o.T + b_o  # [pos, d_model]
    return out


def add_residual(x: Array, sublayer_out: Array) -> Array:
    r"""The residual connection: the sublayer adds to its input instead of replacing it.

    .. math::
        x + \mathrm{SubLayer}(x)
    """
    return x + sublayer_out


@dataclass(frozen=True)
class Normalized:
    mean: Array  # [pos, 1] μ
    scale: Array  # [pos, 1] σ (the hook ln*_scale)
    normalized: Array  # [pos, d_model] (x - μ) / σ (the hook ln*_normalized)
    out: Array  # [pos, d_model] γ ⊙ normalized + β


def layer_norm(x: Array, gamma: Array, beta: Array, eps: float) -> Normalized:
    r"""Normalise each token over d_model, then scale by γ and shift by β.

    .. math::
        \mathrm{LayerNorm}(x) = \gamma \odot \frac{x - \mu}{\sigma} + \beta,\qquad
        \sigma = \sqrt{\mathrm{Var}(x) + \varepsilon}
    """
    mean = x.mean(-1, keepdims=True)
    sigma = np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + np.float32(eps)).astype(np.float32)
    normalized = ((x - mean) / sigma).astype(np.float32)
    return Normalized(mean, sigma, normalized, (normalized * gamma + beta).astype(np.float32))


def ffn_in(x: Array, w1: Array, b1: Array) -> Array:
    r"""The FFN's first layer: d_model -> d_ff (4 × d_model by default).

    .. math::
        h = xW_1 + b_1
    """
    h: Array = x @ w1.T + b1  # [pos, d_mlp]
    return h


def activation(h: Array, kind: str) -> Array:
    r"""The nonlinearity between the FFN's two layers: ReLU (the paper) or GELU (BERT).

    .. math::
        \mathrm{ReLU}(h) = \max(0, h),\qquad \mathrm{GELU}(h) = h\,\Phi(h)
    """
    if kind == "relu":
        relu: Array = np.maximum(h, np.float32(0.0))
        return relu
    return (0.5 * h * (1.0 + _erf(h.astype(np.float64) / math.sqrt(2.0)))).astype(np.float32)


# Chebyshev fit of erfc (Numerical Recipes' erfcc): relative error below 1.2e-7 everywhere, far
# inside float32's rounding of the result; vectorised, so it beats a math.erf per element on a
# whole FFN layer (docs/performance.md).
_ERFC_COEFFS = (
    -1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
    0.27886807, -1.13520398, 1.48851587, -0.82215223, 0.17087277,
)  # fmt: skip


def _erf(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = np.zeros_like(z)
    for c in reversed(_ERFC_COEFFS[1:]):
        poly = (poly + c) * t
    erfc = t * np.exp(-z * z + _ERFC_COEFFS[0] + poly)
    return np.where(x >= 0, 1.0 - erfc, erfc - 1.0)


def ffn_out(a: Array, w2: Array, b2: Array) -> Array:
    r"""The FFN's second layer: back from d_ff to d_model.

    .. math::
        \mathrm{FFN}(x) = \max(0, xW_1 + b_1)W_2 + b_2
    """
    out: Array = a @ w2.T + b2  # [pos, d_model]
    return out


@dataclass(frozen=True)
class Step:
    key: str  # stable id, e.g. "scale"
    title: str
    value: Array
    fn: Callable[..., Any]  # the function that computed it (its docstring holds the formula)
    # capture short name -> this step's recomputed array that must equal it (for q, k, v,
    # attn_scores, pattern and z: this head's slice of the capture)
    checks: Mapping[str, Array] = field(default_factory=dict)
    extra: Mapping[str, Array] = field(default_factory=dict)  # e.g. μ and σ of a LayerNorm
    axes: tuple[str, str] = ("pos", "d_model")  # what the value's rows and columns are


def _ln_step(key: str, title: str, ln: Normalized, checks: dict[str, Array]) -> Step:
    name = key  # "ln1" | "ln2": the LayerNorm's hooks are <name>_scale and <name>_normalized
    checks = {f"{name}_scale": ln.scale, f"{name}_normalized": ln.normalized, **checks}
    extra = {"mean": ln.mean, "scale": ln.scale, "normalized": ln.normalized}
    return Step(key, title, ln.out, layer_norm, checks, extra)


def input_weights(model: Any) -> dict[str, Array]:
    """The embedding LayerNorm's γ and β (BERT) as float32 numpy; empty when there is none."""
    ln = getattr(model, "embed_ln", None)
    if ln is None:
        return {}
    return {
        "embed_ln_g": ln.weight.detach().to("cpu").float().numpy(),
        "embed_ln_b": ln.bias.detach().to("cpu").float().numpy(),
    }


def walk_input(acts: Mapping[str, Array], weights: Mapping[str, Array], *, eps: float) -> list[Step]:
    """How the first layer's input X is made: token embedding, positional vector, their sum
    (plus the segment embedding and a LayerNorm in BERT). ``acts`` holds the captured
    ``embed``, ``pos_embed`` ([pos, d_model]; ``token_type_embed`` when the model has one) and
    the first layer's ``resid_pre``, which the last step must equal."""
    embed, pos = acts["embed"], acts["pos_embed"]
    segment = acts.get("token_type_embed")
    x = input_sum(embed, pos, segment)
    steps = [
        Step("embed", "token embedding", embed, input_sum),
        Step("pos_embed", "positional encoding", pos, input_sum),
    ]
    if segment is not None:
        steps.append(Step("token_type_embed", "segment embedding", segment, input_sum))
    if "embed_ln_g" not in weights:
        steps.append(Step("input", "X = embedding + position", x, input_sum, {"resid_pre": x}))
        return steps
    steps.append(Step("sum", "embedding + position", x, input_sum))
    ln = layer_norm(x, weights["embed_ln_g"], weights["embed_ln_b"], eps)
    checks = {"embed_ln_scale": ln.scale, "embed_ln_normalized": ln.normalized, "resid_pre": ln.out}
    extra = {"mean": ln.mean, "scale": ln.scale, "normalized": ln.normalized}
    steps.append(Step("embed_ln", "LayerNorm of the embeddings = X", ln.out, layer_norm, checks, extra))
    return steps


def walk_final(resid_post: Array, gamma: Array, beta: Array, *, eps: float) -> Step:
    """A pre-norm model's last step, after its last layer: one more LayerNorm (checked against
    the ``ln_final_*`` hooks)."""
    ln = layer_norm(resid_post, gamma, beta, eps)
    checks = {"ln_final_scale": ln.scale, "ln_final_normalized": ln.normalized}
    extra = {"mean": ln.mean, "scale": ln.scale, "normalized": ln.normalized}
    return Step("ln_final", "final LayerNorm", ln.out, layer_norm, checks, extra)


def layer_weights(model: Any, layer: int) -> dict[str, Array]:
    """The weights of block ``layer`` of a tformer Encoder, as float32 numpy (CPU)."""
    block = model.blocks[layer]

    def np32(t: Any) -> Array:
        arr: Array = t.detach().to("cpu").float().numpy()
        return arr

    return {
        "qkv_w": np32(block.attn.qkv.weight),  # [3 * d_model, d_model], rows Q;K;V
        "qkv_b": np32(block.attn.qkv.bias),
        "o_w": np32(block.attn.out.weight),
        "o_b": np32(block.attn.out.bias),
        "ln1_g": np32(block.ln1.weight),
        "ln1_b": np32(block.ln1.bias),
        "ln2_g": np32(block.ln2.weight),
        "ln2_b": np32(block.ln2.bias),
        "fc1_w": np32(block.mlp.fc1.weight),
        "fc1_b": np32(block.mlp.fc1.bias),
        "fc2_w": np32(block.mlp.fc2.weight),
        "fc2_b": np32(block.mlp.fc2.bias),
    }


def _walk_attention(
    attn_in: Array,
    acts: Mapping[str, Array],
    weights: Mapping[str, Array],
    *,
    n_heads: int,
    head: int,
    attn_mask: npt.NDArray[np.bool_] | None,
) -> list[Step]:
    """The attention sublayer's steps for one head, from its input [pos, d_model] (X, or X
    after the pre-norm LayerNorm) to W_O: project, score, scale, mask, softmax, weight the
    values, concat every head's captured z, output projection. The last step's value is the
    sublayer's output."""
    d_model = attn_in.shape[1]
    dh = d_model // n_heads
    rows = slice(head * dh, (head + 1) * dh)
    w, b = weights["qkv_w"], weights["qkv_b"]
    q = project(attn_in, w[rows], b[rows])
    k = project(attn_in, w[d_model:][rows], b[d_model:][rows])
    v = project(attn_in, w[2 * d_model :][rows], b[2 * d_model :][rows])
    steps = [
        Step(name, f"{name.upper()} = XW_{name.upper()}", t, project, {name: t}, axes=("pos", "d_head"))
        for name, t in (("q", q), ("k", k), ("v", v))
    ]
    scores = ("query_pos", "key_pos")
    s = raw_scores(q, k)
    steps.append(Step("raw", "scores q·k", s, raw_scores, axes=scores))
    s = scale_scores(s, dh)
    steps.append(Step("scale", "÷ √d_k", s, scale_scores, axes=scores))
    s = apply_mask(s, attn_mask)
    steps.append(Step("mask", "mask", s, apply_mask, {"attn_scores": s}, axes=scores))
    p = softmax_rows(s)
    steps.append(Step("softmax", "softmax", p, softmax_rows, {"pattern": p}, axes=scores))
    z = weighted_values(p, v)
    steps.append(Step("z", "Σ p v", z, weighted_values, {"z": z}, axes=("pos", "d_head")))
    concat = concat_heads(acts["z"])  # every head's z, as the model concatenates them
    steps.append(Step("concat", "concat the heads", concat, concat_heads))
    attn_out = output_projection(concat, weights["o_w"], weights["o_b"])
    steps.append(Step("attn_out", "W_O", attn_out, output_projection, {"attn_out": attn_out}))
    return steps


def _walk_ffn(ffn_input: Array, weights: Mapping[str, Array], *, act: str) -> list[Step]:
    """The FFN sublayer's steps, from its input [pos, d_model] to W_2: the last step's value is
    the sublayer's output."""
    h = ffn_in(ffn_input, weights["fc1_w"], weights["fc1_b"])
    a = activation(h, act)
    f = ffn_out(a, weights["fc2_w"], weights["fc2_b"])
    return [
        Step("ffn_in", "W_1", h, ffn_in, {"mlp_pre": h}, axes=("pos", "d_mlp")),
        Step("act", act, a, activation, {"mlp_post": a}, axes=("pos", "d_mlp")),
        Step("ffn_out", "W_2", f, ffn_out, {"mlp_out": f}),
    ]


def walk_layer(
    acts: Mapping[str, Array],
    weights: Mapping[str, Array],
    *,
    n_heads: int,
    head: int,
    norm: str,
    act: str,
    eps: float,
    causal: bool,
    attn_mask: npt.NDArray[np.bool_] | None = None,
) -> list[Step]:
    """Every step of one layer for one head, each computed from the previous step's value,
    starting from the layer's input ``acts["resid_pre"]`` [pos, d_model]. ``acts`` holds this
    layer's captured arrays (for the Q, K, V and z of every head: [pos, head_index, d_head]).
    ``attn_mask`` [query_pos, key_pos] (True = may attend) replaces the mask that ``causal``
    implies, e.g. with a fully masked row."""
    x = acts["resid_pre"]
    n = x.shape[0]
    if attn_mask is None and causal:
        attn_mask = np.tril(np.ones((n, n), dtype=bool))
    steps: list[Step] = [Step("input", "the layer's input X", x, input_sum, {"resid_pre": x})]

    # 1. attention, with its LayerNorm before it (pre-norm) or after the residual (post-norm)
    attn_in = x
    if norm == "pre":
        ln = layer_norm(x, weights["ln1_g"], weights["ln1_b"], eps)
        steps.append(_ln_step("ln1", "LayerNorm before attention", ln, {}))
        attn_in = ln.out
    steps += _walk_attention(attn_in, acts, weights, n_heads=n_heads, head=head, attn_mask=attn_mask)
    mid = add_residual(x, steps[-1].value)
    steps.append(Step("add1", "+ residual", mid, add_residual, {} if norm == "post" else {"resid_mid": mid}))
    if norm == "post":
        ln = layer_norm(mid, weights["ln1_g"], weights["ln1_b"], eps)
        steps.append(_ln_step("ln1", "LayerNorm", ln, {"resid_mid": ln.out}))
        mid = ffn_input = ln.out
    else:
        ln = layer_norm(mid, weights["ln2_g"], weights["ln2_b"], eps)
        steps.append(_ln_step("ln2", "LayerNorm before the FFN", ln, {}))
        ffn_input = ln.out

    # 2. the FFN, the same way round
    steps += _walk_ffn(ffn_input, weights, act=act)
    out = add_residual(mid, steps[-1].value)
    steps.append(Step("add2", "+ residual", out, add_residual, {} if norm == "post" else {"resid_post": out}))
    if norm == "post":
        ln = layer_norm(out, weights["ln2_g"], weights["ln2_b"], eps)
        steps.append(_ln_step("ln2", "LayerNorm", ln, {"resid_post": ln.out}))
    return steps


@dataclass(frozen=True)
class NeuronView:
    """How query i's score for key j is made, one d_head dimension at a time."""

    q: Array  # [d_head] q_i
    k: Array  # [d_head] k_j
    products: Array  # [d_head] q_i ⊙ k_j
    raw: float  # Σ_d q_id k_jd
    scaled: float  # raw / √d_k (-inf where j is masked for i)
    share: float  # p_ij: key j's weight after the softmax over the whole row


def neuron_view(q: Array, k: Array, query: int, key: int, *, causal: bool) -> NeuronView:
    r"""The score of one (query, key) pair dimension by dimension, and its weight in the row.

    .. math::
        s_{ij} = \frac{1}{\sqrt{d_k}} \sum_{d} q_{id}\,k_{jd},\qquad
        p_{ij} = \frac{e^{s_{ij}}}{\sum_{j'} e^{s_{ij'}}}

    ``q``, ``k``: one head's [pos, d_head].
    """
    n, dh = q.shape
    if not (0 <= query < n and 0 <= key < n):
        raise ValueError(f"query={query} and key={key} must be positions in 0..{n - 1}")
    products = (q[query] * k[key]).astype(np.float32)
    attn_mask = np.tril(np.ones((n, n), dtype=bool))[query] if causal else None
    row = apply_mask(
        scale_scores(raw_scores(q[query : query + 1], k), dh), None if attn_mask is None else attn_mask[None]
    )
    share = softmax_rows(row)[0, key]
    return NeuronView(q[query], k[key], products, float(products.sum()), float(row[0, key]), float(share))
