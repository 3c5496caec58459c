"""Every step of the walkthrough, recomputed from the previous step, equals the model's hook."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tformer import Encoder, capture_text, load_pretrained, scratch_tokenizer
from tformer.analysis.walkthrough import layer_weights, walk_layer
from tformer.formulas import latex_of
from tformer.model.capture import available_names

from ._models import tiny

PER_HEAD = {"q", "k", "v", "attn_scores", "pattern", "z"}
TEXT = "The animal didn't cross the street because it was too tired. 小猫跳了上去。"


def check_every_step(model, cap, layer: int, head: int) -> int:
    cfg = model.cfg
    acts = {
        name: cap[name][layer]
        for name in cap.names
        if name in available_names(cfg) and cap[name].ndim > 1 and cap[name].shape[0] == cfg.n_layers
    }
    steps = walk_layer(
        acts,
        layer_weights(model, layer),
        n_heads=cfg.n_heads,
        head=head,
        norm=cfg.norm,
        act=cfg.activation,
        eps=cfg.layer_norm_eps,
        causal=cfg.causal,
    )
    checked = 0
    for step in steps:
        latex_of(step.fn)  # every step shows a formula
        for hook, mine in step.checks.items():
            theirs = acts[hook]
            if hook in PER_HEAD:
                theirs = theirs[head] if hook in ("attn_scores", "pattern") else theirs[:, head]
            finite = np.isfinite(theirs)
            assert np.array_equal(finite, np.isfinite(mine)), (step.key, hook)  # -inf where masked
            assert np.abs(mine[finite] - theirs[finite]).max() <= 1e-5 * max(
                1.0, np.abs(theirs[finite]).max()
            ), (step.key, hook, float(np.abs(mine[finite] - theirs[finite]).max()))
            checked += 1
    keys = [s.key for s in steps]
    order = ["q", "raw", "scale", "mask", "softmax", "z", "concat", "attn_out", "add1"]
    assert [k for k in keys if k in order] == order
    return checked


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("causal", [False, True])
def test_from_scratch_every_step_is_the_models(norm, causal):
    tok = scratch_tokenizer(max_len=64)
    model = Encoder(tiny(vocab_size=tok.vocab_size, norm=norm, causal=causal)).eval()
    cap = capture_text(model, tok, TEXT, available_names(model.cfg))
    for layer in range(model.cfg.n_layers):
        for head in (0, model.cfg.n_heads - 1):
            assert check_every_step(model, cap, layer, head) >= 14


@pytest.mark.slow
def test_minilm_every_step_is_the_models():
    model, tok = load_pretrained("minilm")
    cap = capture_text(model, tok, TEXT, available_names(model.cfg))
    for layer in (0, 5):
        for head in (0, 7, 11):
            assert check_every_step(model, cap, layer, head) >= 14


def test_a_fully_masked_row_gives_zero_weights_not_nan():
    from tformer.analysis.walkthrough import apply_mask, softmax_rows

    s = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    p = softmax_rows(apply_mask(s, np.array([[True, False], [False, False]])))
    assert np.array_equal(p, [[1.0, 0.0], [0.0, 0.0]])


@pytest.mark.parametrize("causal", [False, True])
def test_neuron_view_adds_up_to_the_models_score_and_weight(causal):
    from tformer.analysis.walkthrough import neuron_view

    tok = scratch_tokenizer(max_len=64)
    model = Encoder(tiny(vocab_size=tok.vocab_size, causal=causal)).eval()
    cap = capture_text(model, tok, TEXT)
    layer, head = 1, 2
    q, k = cap.q[layer, :, head], cap.k[layer, :, head]
    for i, j in [(3, 1), (5, 5), (2, 7), (cap.n_pos - 1, 0)]:
        nv = neuron_view(q, k, i, j, causal=causal)
        assert np.isclose(nv.products.sum(), nv.raw, atol=1e-5)
        assert np.isclose(nv.scaled, cap.attn_scores[layer, head, i, j], atol=1e-5) or (
            np.isneginf(nv.scaled) and np.isneginf(cap.attn_scores[layer, head, i, j])
        )
        assert np.isclose(nv.share, cap.pattern[layer, head, i, j], atol=1e-6)
    with pytest.raises(ValueError, match="must be positions"):
        neuron_view(q, k, cap.n_pos, 0, causal=causal)


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"norm": "pre"},
        {"pos_encoding": "learned", "type_vocab_size": 2, "embed_norm": True, "n_outputs": 7},
    ],
)
def test_parameter_counts_sum_to_the_models_total(overrides):
    from tformer.analysis.architecture import parameter_counts

    model = Encoder(tiny(**overrides))
    parts = parameter_counts(model)
    assert sum(p.params for p in parts) == sum(p.numel() for p in model.parameters()) == model.cfg.n_params()
    names = [p.name for p in parts]
    assert names[0] == "token embedding"
    assert "layer 0 · multi-head attention (W_Q, W_K, W_V, W_O)" in names
    d = model.cfg.d_model
    attn = next(p for p in parts if p.name.startswith("layer 1 · multi-head"))
    assert attn.params == 4 * d * d + 4 * d


@pytest.mark.slow
def test_minilm_parameter_counts_sum_to_its_total():
    from tformer.analysis.architecture import parameter_counts

    model, _ = load_pretrained("minilm")
    assert sum(p.params for p in parameter_counts(model)) == sum(p.numel() for p in model.parameters())


def check_input_and_final(model, cap) -> int:
    """walk_input ends at the first layer's resid_pre; a pre-norm model's walk_final equals
    the ln_final hooks."""
    from tformer.analysis.walkthrough import input_weights, walk_final, walk_input

    cfg = model.cfg
    acts = {n: cap[n] for n in ("embed", "pos_embed", "token_type_embed") if n in cap}
    acts["resid_pre"] = cap["resid_pre"][0]
    steps = walk_input(acts, input_weights(model), eps=cfg.layer_norm_eps)
    if cfg.norm == "pre":
        ln = model.ln_final
        steps.append(
            walk_final(
                cap["resid_post"][-1],
                ln.weight.detach().numpy(),
                ln.bias.detach().numpy(),
                eps=cfg.layer_norm_eps,
            )
        )
    checked = 0
    for step in steps:
        latex_of(step.fn)
        for hook, mine in step.checks.items():
            theirs = acts[hook] if hook in acts else cap[hook]
            assert np.abs(mine - theirs).max() <= 1e-5 * max(1.0, np.abs(theirs).max()), (step.key, hook)
            checked += 1
    assert steps[-1].key in ("input", "embed_ln", "ln_final")
    return checked


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_the_input_and_the_final_norm_are_the_models(norm):
    tok = scratch_tokenizer(max_len=64)
    model = Encoder(tiny(vocab_size=tok.vocab_size, norm=norm)).eval()
    cap = capture_text(model, tok, TEXT, available_names(model.cfg))
    assert check_input_and_final(model, cap) == (1 if norm == "post" else 3)


@pytest.mark.slow
def test_minilm_input_is_the_models():
    model, tok = load_pretrained("minilm")
    cap = capture_text(model, tok, TEXT, available_names(model.cfg))
    assert check_input_and_final(model, cap) == 3  # μ/σ scale, normalized, resid_pre


def test_gelu_matches_math_erf():
    from tformer.analysis.walkthrough import activation

    h = np.linspace(-12, 12, 20001, dtype=np.float32)
    exact = np.array([0.5 * x * (1 + math.erf(x / math.sqrt(2))) for x in h.astype(np.float64)])
    assert np.abs(activation(h, "gelu") - exact).max() < 2e-6
