"""The captured steps are the textbook formula, and the fused path agrees with them."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tformer import Encoder
from tformer.model.attention import scaled_dot_product_attention

from ._models import model_and_ids, tiny


def padding_mask(batch, pos, lengths):
    mask = torch.zeros(batch, pos, dtype=torch.long)
    for b, n in enumerate(lengths):
        mask[b, :n] = 1
    return mask


@settings(max_examples=25, deadline=None)
@given(
    pos=st.integers(1, 12),
    heads=st.sampled_from([1, 2, 4]),
    causal=st.booleans(),
    pad=st.integers(0, 5),
    norm=st.sampled_from(["post", "pre"]),
)
def test_rows_sum_to_one_and_padded_keys_get_zero(pos, heads, causal, pad, norm):
    model = Encoder(tiny(d_model=8 * heads, n_heads=heads, causal=causal, norm=norm)).eval()
    ids = torch.randint(0, 60, (2, pos))
    lengths = [pos, max(1, pos - pad)]
    _, cache = model.run_with_cache(ids, attention_mask=padding_mask(2, pos, lengths))
    for layer in range(2):
        pattern = cache["pattern", layer]  # [batch, head_index, query_pos, key_pos]
        assert torch.allclose(pattern.sum(-1), torch.ones_like(pattern[..., 0]), atol=1e-5)
        assert (pattern[1, :, :, lengths[1] :] == 0).all()
        if causal:
            assert (pattern.triu(diagonal=1) == 0).all()


def test_scores_pattern_and_z_are_recomputed_from_captured_qkv():
    model, ids = model_and_ids(causal=True)
    mask = padding_mask(2, 9, [9, 6])
    _, cache = model.run_with_cache(ids, attention_mask=mask)
    d_head = model.cfg.d_head
    allowed = mask.bool()[:, None, None, :] & torch.ones(9, 9, dtype=torch.bool).tril()
    for layer in range(2):
        q, k, v = (cache[name, layer].transpose(1, 2) for name in "qkv")  # [batch, head_index, pos, d_head]
        scores = q @ k.transpose(-1, -2) / math.sqrt(d_head)
        scores = scores.masked_fill(~allowed, float("-inf"))
        assert torch.equal(torch.isinf(scores), torch.isinf(cache["attn_scores", layer]))
        finite = torch.isfinite(scores)
        assert torch.allclose(scores[finite], cache["attn_scores", layer][finite], atol=1e-5)
        pattern = torch.softmax(scores, dim=-1)
        assert torch.allclose(pattern, cache["pattern", layer], atol=1e-6)
        z = (pattern @ v).transpose(1, 2)  # [batch, pos, head_index, d_head]
        assert torch.allclose(z, cache["z", layer], atol=1e-5)
        # attn_out is Concat(heads) W_O + b
        attn = model.blocks[layer].attn
        out = z.reshape(2, 9, -1) @ attn.out.weight.T + attn.out.bias
        assert torch.allclose(out, cache["attn_out", layer], atol=1e-5)


@pytest.mark.parametrize("overrides", [{}, {"causal": True}, {"norm": "pre", "activation": "gelu"}])
def test_fused_path_agrees_with_the_captured_path(overrides):
    model, ids = model_and_ids(**overrides)
    mask = padding_mask(2, 9, [9, 4])
    with torch.inference_mode():
        fused = model(ids, attention_mask=mask)
    explicit, _ = model.run_with_cache(ids, attention_mask=mask)
    assert (fused - explicit).abs().max() <= 1e-5


def test_fully_masked_input_gives_zeros_not_nan():
    model, ids = model_and_ids()
    mask = padding_mask(2, 9, [9, 0])  # second sequence: nothing to attend to
    out_fused = model(ids, attention_mask=mask)
    out, cache = model.run_with_cache(ids, attention_mask=mask)
    assert not torch.isnan(out).any()
    assert not torch.isnan(out_fused).any()
    assert (cache["pattern", 0][1] == 0).all()
    assert torch.allclose(out, out_fused, atol=1e-5)


def test_pure_function_zero_row_for_dead_query():
    q = k = v = torch.randn(1, 1, 3, 4)
    mask = torch.tensor([[True, False, False], [False, False, False], [True, True, True]])[None, None]
    dead = ~mask.any(-1, keepdim=True)
    z, pattern = scaled_dot_product_attention(q, k, v, mask, dead)
    assert (pattern[0, 0, 1] == 0).all()
    assert (z[0, 0, 1] == 0).all()
    assert pattern[0, 0, 0].tolist() == [1.0, 0.0, 0.0]


def test_equals_torch_multihead_attention_with_the_same_weights():
    model = Encoder(tiny(d_model=32, n_heads=4, n_layers=1)).eval()
    attn = model.blocks[0].attn
    ref = torch.nn.MultiheadAttention(32, 4, batch_first=True).eval()
    with torch.no_grad():
        ref.in_proj_weight.copy_(attn.qkv.weight)  # both stack W_Q; W_K; W_V
        ref.in_proj_bias.copy_(attn.qkv.bias)
        ref.out_proj.weight.copy_(attn.out.weight)
        ref.out_proj.bias.copy_(attn.out.bias)
    x = torch.randn(2, 7, 32)
    key_padding = torch.tensor([[False] * 7, [False] * 5 + [True] * 2])
    ref_out, ref_weights = ref(x, x, x, key_padding_mask=key_padding, average_attn_weights=False)
    mask = (~key_padding)[:, None, None, :].expand(2, 1, 7, 7)
    store = {}
    with model.hooks([("blocks.0.attn.hook_pattern", lambda t, hook: store.setdefault("p", t))]):
        out = attn(x, mask)
    assert torch.allclose(out, ref_out, atol=1e-5)
    assert torch.allclose(store["p"], ref_weights, atol=1e-6)
    with torch.no_grad():  # and through the fused path
        assert torch.allclose(attn(x, mask), ref_out, atol=1e-5)


def test_permutation_equivariance_without_positions():
    model, ids = model_and_ids(pos_encoding="none", batch=1)
    perm = torch.randperm(9)
    with torch.inference_mode():
        out = model(ids)
        out_perm = model(ids[:, perm])
    assert torch.allclose(out[:, perm], out_perm, atol=1e-5)


def test_positions_break_permutation_equivariance():
    model, ids = model_and_ids(pos_encoding="sinusoidal", batch=1)
    perm = torch.arange(8, -1, -1)
    with torch.inference_mode():
        assert not torch.allclose(model(ids)[:, perm], model(ids[:, perm]), atol=1e-3)
