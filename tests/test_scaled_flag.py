"""`EncoderConfig.scaled`: True (the default) keeps the paper's 1/√d_head, False scores the raw
q·k; `unscaled_as_scaled` writes an unscaled model as the same function in the paper's form."""

from __future__ import annotations

import math

import pytest
import torch

from tformer.model.encoder import Encoder, unscaled_as_scaled

from ._models import tiny

NAMES = ["blocks.0.attn.hook_q", "blocks.0.attn.hook_k", "blocks.0.attn.hook_attn_scores"]


def _ids(cfg, n=9):
    return torch.randint(0, cfg.vocab_size, (2, n), generator=torch.Generator().manual_seed(3))


def _scores(model, ids):
    """Layer 0's captured q, k ([batch, head_index, pos, d_head]) and attn_scores."""
    _, cache = model.run_with_cache(ids, names_filter=NAMES)
    q, k, s = (cache[n] for n in NAMES)
    return q.transpose(1, 2), k.transpose(1, 2), s


def test_the_default_is_scaled_and_a_config_refuses_a_non_boolean():
    assert tiny().scaled is True
    with pytest.raises(ValueError, match="scaled='yes' must be a boolean"):
        tiny(scaled="yes")


@pytest.mark.parametrize("scaled", [True, False])
def test_the_scores_are_q_dot_k_divided_by_root_d_head_only_when_scaled(scaled):
    cfg = tiny(scaled=scaled)
    q, k, s = _scores(Encoder(cfg).eval(), _ids(cfg))
    raw = q @ k.transpose(-1, -2)  # [batch, head_index, query_pos, key_pos]
    expected = raw / math.sqrt(cfg.d_head) if scaled else raw
    torch.testing.assert_close(s, expected, rtol=1e-5, atol=1e-5)


def test_the_default_model_computes_what_it_computed_before_the_flag():
    """scaled=True is the old path: the fused kernel's default scale, the capture's 1/√d_head."""
    cfg = tiny()
    model = Encoder(cfg).eval()
    ids = _ids(cfg)
    with torch.no_grad():
        fused = model(ids)
    q, k, _ = _scores(model, ids)
    _, cache = model.run_with_cache(ids, names_filter=["blocks.0.attn.hook_pattern"])
    pattern = cache["blocks.0.attn.hook_pattern"]
    torch.testing.assert_close(pattern, torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(cfg.d_head), -1))
    captured, _ = model.run_with_cache(ids, names_filter=["blocks.1.attn.hook_pattern"])
    torch.testing.assert_close(captured, fused, rtol=1e-5, atol=1e-5)


def test_an_unscaled_model_gives_the_same_output_fused_and_captured():
    cfg = tiny(scaled=False, norm="pre")
    model = Encoder(cfg).eval()
    ids = _ids(cfg)
    with torch.no_grad():
        fused = model(ids)
    captured, _ = model.run_with_cache(ids, names_filter=["blocks.1.attn.hook_pattern"])
    torch.testing.assert_close(captured, fused, rtol=1e-5, atol=1e-5)


def test_without_the_scaling_the_same_weights_attend_more_sharply():
    """The lesson: scores √d_head times larger, so every softmax row is more peaked."""
    rows = {}
    for scaled in (True, False):
        cfg = tiny(scaled=scaled, d_model=64, n_heads=2)  # d_head 32: scores 5.7x larger
        model = Encoder(cfg).eval()
        _, cache = model.run_with_cache(_ids(cfg), names_filter=["blocks.0.attn.hook_pattern"])
        p = cache["blocks.0.attn.hook_pattern"]
        rows[scaled] = -(p * p.clamp_min(1e-30).log()).sum(-1)  # entropy of each row
    assert (rows[False] < rows[True]).all()


def test_unscaled_as_scaled_is_the_same_function_in_the_papers_form():
    cfg = tiny(scaled=False, n_outputs=5)
    model = Encoder(cfg).train()
    folded = unscaled_as_scaled(model)
    assert folded.cfg.scaled is True
    assert folded.training  # the same mode
    assert model.cfg.scaled is False  # the original is left as it was
    ids = _ids(cfg)
    model.eval(), folded.eval()
    with torch.no_grad():
        torch.testing.assert_close(folded.logits(ids), model.logits(ids), rtol=1e-5, atol=1e-5)
    names = [f"blocks.{i}.attn.hook_pattern" for i in range(cfg.n_layers)]
    _, a = model.run_with_cache(ids, names_filter=names)
    _, b = folded.run_with_cache(ids, names_filter=names)
    for name in names:
        torch.testing.assert_close(b[name], a[name], rtol=1e-5, atol=1e-6)
    d = cfg.d_model
    w, w_folded = model.blocks[0].attn.qkv.weight, folded.blocks[0].attn.qkv.weight
    torch.testing.assert_close(w_folded[:d], w[:d] * math.sqrt(cfg.d_head))
    torch.testing.assert_close(w_folded[d:], w[d:])  # W_K and W_V untouched


def test_a_scaled_model_is_returned_as_it_is():
    model = Encoder(tiny())
    assert unscaled_as_scaled(model) is model


def test_the_app_opens_a_run_trained_without_the_scaling_as_the_same_function(tmp_path, monkeypatch):
    """Every page divides by √d_head: the app's model of such a run is `unscaled_as_scaled`'s."""
    from tformer.training.checkpoints import load_run
    from tformer.ui.caches import ModelChoice, get_model

    from ._saved_runs import train_and_save

    monkeypatch.setenv("TFORMER_RUNS_DIR", str(tmp_path))
    train_and_save(tmp_path / "unscaled", updates=2, scaled=False)
    trained, tokenizer, _ = load_run("unscaled")
    assert trained.cfg.scaled is False  # the run keeps how it was trained
    shown, _ = get_model(ModelChoice("run", run="unscaled"))
    assert shown.cfg.scaled is True
    ids = torch.tensor([tokenizer.encode("a b c d e a").ids])
    with torch.no_grad():
        torch.testing.assert_close(shown.logits(ids), trained.logits(ids), rtol=1e-5, atol=1e-5)
