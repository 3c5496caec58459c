"""The separate (W_q, W_k, W_v, W_o) and fused (qkv_proj, out_proj) layouts compute the same
attention, and the fused one built from a tformer model reproduces that model's attention."""

from __future__ import annotations

import pytest
import torch

from tformer import Encoder, capture_text, load_pretrained
from tformer.analysis.layouts import FusedQKV, SeparateQKV, compare_layouts, fused_from_model, split_fused

from ._models import tiny

# (d_model, n_heads): several heads, d_head = 1, a single head
SHAPES = [(24, 3), (4, 4), (8, 1)]


def causal(n_pos: int) -> torch.Tensor:
    return torch.ones(n_pos, n_pos, dtype=torch.bool).tril()  # [query_pos, key_pos]


def random_fused(d_model: int, n_heads: int) -> FusedQKV:
    fused = FusedQKV(d_model, n_heads).eval()
    with torch.no_grad():  # non-zero biases everywhere, so a misplaced bias block shows
        for p in fused.parameters():
            p.normal_(0.0, 0.5)
    return fused


@pytest.mark.parametrize(("d_model", "n_heads"), SHAPES)
@pytest.mark.parametrize("masked", [False, True], ids=["no_mask", "causal"])
def test_split_fused_computes_the_same_function(d_model, n_heads, masked):
    fused = random_fused(d_model, n_heads)
    separate = split_fused(fused)
    x = torch.randn(2, 7, d_model)
    mask = causal(7) if masked else None
    with torch.inference_mode():
        a, b = fused(x, mask), separate(x, mask)
    assert a.shape == b.shape == (2, 7, d_model)
    torch.testing.assert_close(b, a, atol=1e-6, rtol=0)


@pytest.mark.parametrize(("d_model", "n_heads"), SHAPES)
def test_a_query_with_nothing_to_attend_to_reads_zero(d_model, n_heads):
    fused = random_fused(d_model, n_heads)
    separate = split_fused(fused)
    x = torch.randn(2, 5, d_model)
    mask = causal(5).int()[None, None].repeat(2, 1, 1, 1)  # 0/1 [batch, 1, query_pos, key_pos]
    mask[1, :, 2] = 0  # batch 1, query 2 may attend to nothing
    with torch.inference_mode():
        outs = [fused(x, mask), separate(x, mask), fused(x, mask.bool())]
    for out in outs:
        assert not out.isnan().any()
        # z of that row is 0, so the output is W_o's bias alone
        torch.testing.assert_close(out[1, 2], fused.out_proj.bias.detach(), atol=1e-6, rtol=0)
        torch.testing.assert_close(out, outs[0], atol=1e-6, rtol=0)
    with torch.no_grad():
        fused.out_proj.bias.zero_()
    with torch.inference_mode():
        assert torch.equal(fused(x, mask)[1, 2], torch.zeros(d_model))


def test_split_fused_copies_the_row_blocks():
    fused = random_fused(6, 2)
    separate = split_fused(fused)
    w, b = fused.qkv_proj.weight, fused.qkv_proj.bias
    for i, proj in enumerate([separate.W_q, separate.W_k, separate.W_v]):
        assert torch.equal(proj.weight, w[6 * i : 6 * (i + 1)])
        assert torch.equal(proj.bias, b[6 * i : 6 * (i + 1)])
    assert torch.equal(separate.W_o.weight, fused.out_proj.weight)
    with torch.no_grad():
        fused.qkv_proj.weight.zero_()
    assert separate.W_q.weight.abs().sum() > 0  # copied, not shared


def test_split_fused_leaves_the_global_rng_alone():
    fused = random_fused(6, 2)
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    split_fused(fused)
    assert torch.equal(torch.rand(3), expected)


def test_heads_must_divide_d_model():
    for cls in (SeparateQKV, FusedQKV):
        with pytest.raises(ValueError, match="d_model=10 is not divisible by n_heads=4"):
            cls(10, 4)


def attention_input(model: Encoder, cache, layer: int) -> torch.Tensor:
    """What blocks[layer].attn reads: resid_pre (post-norm) or ln1(resid_pre) (pre-norm)."""
    block = model.blocks[layer]
    resid_pre = cache["resid_pre", layer]  # [batch, pos, d_model]
    return resid_pre if model.cfg.norm == "post" else block.ln1(resid_pre)


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("is_causal", [False, True], ids=["bidirectional", "causal"])
def test_fused_from_model_reproduces_the_models_attention(norm, is_causal):
    model = Encoder(tiny(norm=norm, causal=is_causal)).eval()
    B, T = 2, 9
    ids = torch.randint(0, model.cfg.vocab_size, (B, T))
    padding = torch.ones(B, T, dtype=torch.long)
    padding[1, :2] = 0  # batch 1 starts with two pads: with causal, its queries 0 and 1 see nothing
    _out, cache = model.run_with_cache(ids, attention_mask=padding)
    mask, dead_rows = model.layer_attn_mask(padding, B, T)
    assert (dead_rows is not None) == is_causal
    keys = padding[:, None, None, :]  # 0/1 [batch, 1, 1, key_pos], for compare_layouts
    if is_causal:
        keys = keys * causal(T)  # [batch, 1, query_pos, key_pos]
    for layer in range(model.cfg.n_layers):
        with torch.inference_mode():
            x = attention_input(model, cache, layer)
            ours = fused_from_model(model.blocks[layer].attn)(x, mask)
        torch.testing.assert_close(ours, cache["attn_out", layer], atol=1e-5, rtol=0)
        diffs = compare_layouts(model, layer, x, keys)
        assert diffs["separate_vs_fused"] <= 1e-5, diffs
        assert diffs["fused_vs_model"] <= 1e-5, diffs
        assert diffs["max_abs_output"] > 0.1, diffs  # the differences are small against a real signal


def test_compare_layouts_without_a_mask_and_bad_layers():
    model = Encoder(tiny()).eval()
    x = torch.randn(1, 6, model.cfg.d_model)
    diffs = compare_layouts(model, 1, x)
    assert set(diffs) == {"separate_vs_fused", "fused_vs_model", "max_abs_output"}
    assert all(isinstance(v, float) for v in diffs.values())
    assert diffs["fused_vs_model"] <= 1e-5
    with pytest.raises(ValueError, match="layer=2 is out of range for a model with n_layers=2"):
        compare_layouts(model, 2, x)


def test_layouts_reproduce_minilm_attention():
    # about 0.25 s here (loading included), so not marked slow
    model, tok = load_pretrained("minilm", device="cpu")
    assert model.cfg.norm == "post"  # so resid_pre is what each layer's attention reads
    text = "Attention lets every token weigh every other token. 注意力机制让每个位置都能看到其他所有位置。"
    ids = tok.encode(text).ids
    cap = capture_text(model, tok, text, ["resid_pre"])
    assert cap["resid_pre"].shape == (model.cfg.n_layers, len(ids), model.cfg.d_model)
    keep_last_out = torch.ones(1, len(ids), dtype=torch.long)
    keep_last_out[0, -1] = 0  # padding mask [batch, key_pos]: nobody reads the last token
    for layer in range(model.cfg.n_layers):
        x = torch.from_numpy(cap["resid_pre"][layer].copy())[None]  # [batch=1, pos, d_model]
        for mask in (None, keep_last_out[:, None, None, :]):
            diffs = compare_layouts(model, layer, x, mask)
            scale = max(1.0, diffs["max_abs_output"])
            assert diffs["separate_vs_fused"] <= 1e-5 * scale, (layer, diffs)
            assert diffs["fused_vs_model"] <= 1e-5 * scale, (layer, diffs)
