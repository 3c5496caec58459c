"""Every step of the walkthrough, recomputed from the previous step, equals the model's hook."""

from __future__ import annotations

import numpy as np
import pytest

from tformer import Encoder, capture_text, load_pretrained, scratch_tokenizer
from tformer.capture import available_names
from tformer.formulas import latex_of
from tformer.walkthrough import layer_weights, walk_layer

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
    from tformer.walkthrough import apply_mask, softmax_rows

    s = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    p = softmax_rows(apply_mask(s, np.array([[True, False], [False, False]])))
    assert np.array_equal(p, [[1.0, 0.0], [0.0, 0.0]])
