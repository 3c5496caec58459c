"""The capture contract: names, shapes, short names, replacement, and nothing left behind."""

import pytest
import torch

from tformer import Encoder, act_name, capturing
from tformer.model.hooks import _ACTIVE

from ._models import model_and_ids, tiny

PER_BLOCK = [
    "hook_resid_pre",
    "attn.hook_q",
    "attn.hook_k",
    "attn.hook_v",
    "attn.hook_attn_scores",
    "attn.hook_pattern",
    "attn.hook_z",
    "hook_attn_out",
    "ln1.hook_scale",
    "ln1.hook_normalized",
    "hook_resid_mid",
    "mlp.hook_pre",
    "mlp.hook_post",
    "hook_mlp_out",
    "ln2.hook_scale",
    "ln2.hook_normalized",
    "hook_resid_post",
]


def test_pinned_hook_names_for_a_two_layer_model():
    model = Encoder(tiny())
    expected = ["hook_embed", "hook_pos_embed"] + [f"blocks.{i}.{n}" for i in range(2) for n in PER_BLOCK]
    assert model.hook_names() == expected


def test_bert_style_model_adds_token_type_hook():
    model = Encoder(tiny(type_vocab_size=2, embed_norm=True, pos_encoding="learned"))
    assert "hook_token_type_embed" in model.hook_names()


def test_shapes_follow_transformerlens():
    model, ids = model_and_ids(batch=2, pos=9)  # d_model 24, 3 heads, d_head 8
    _, cache = model.run_with_cache(ids)
    assert cache["hook_embed"].shape == (2, 9, 24)
    assert cache["hook_pos_embed"].shape == (2, 9, 24)
    for name in "qkvz":
        assert cache[name, 1].shape == (2, 9, 3, 8)
    assert cache["attn_scores", 0].shape == (2, 3, 9, 9)
    assert cache["pattern", 0].shape == (2, 3, 9, 9)
    assert cache["mlp_pre", 0].shape == (2, 9, 96)
    assert cache["mlp_post", 0].shape == (2, 9, 96)
    assert cache["ln1_scale", 0].shape == (2, 9, 1)
    assert cache["ln2_normalized", 1].shape == (2, 9, 24)
    for name in ("resid_pre", "attn_out", "resid_mid", "mlp_out", "resid_post"):
        assert cache[name, 1].shape == (2, 9, 24)


def test_short_names_resolve_to_full_names():
    model, ids = model_and_ids()
    _, cache = model.run_with_cache(ids)
    assert cache["pattern", 0] is cache["blocks.0.attn.hook_pattern"]
    assert cache["attn_scores", 1] is cache["blocks.1.attn.hook_attn_scores"]
    assert act_name("embed") == "hook_embed"
    with pytest.raises(ValueError, match="per-layer"):
        act_name("pattern")
    with pytest.raises(ValueError, match="did you mean"):
        act_name("scores")  # one name per concept: no aliases
    with pytest.raises(KeyError, match="not captured"):
        cache["pattern", 7]


def test_mlp_hooks_are_before_and_after_the_activation():
    model, ids = model_and_ids(activation="relu")
    _, cache = model.run_with_cache(ids)
    assert torch.equal(cache["mlp_post", 0], torch.relu(cache["mlp_pre", 0]))
    assert (cache["mlp_pre", 0] < 0).any()  # so the check above is not vacuous


def test_resid_post_is_the_output_and_chains_into_next_block():
    model, ids = model_and_ids()
    out, cache = model.run_with_cache(ids)
    assert torch.equal(cache["resid_post", 0], cache["resid_pre", 1])
    assert torch.equal(cache["resid_post", 1], out)


def test_names_filter_forms():
    model, ids = model_and_ids()
    _, only = model.run_with_cache(ids, names_filter="blocks.1.attn.hook_pattern")
    assert list(only) == ["blocks.1.attn.hook_pattern"]
    _, some = model.run_with_cache(ids, names_filter=lambda n: n.endswith("hook_z"))
    assert list(some) == ["blocks.0.attn.hook_z", "blocks.1.attn.hook_z"]
    with pytest.raises(ValueError, match="did you mean"):
        model.run_with_cache(ids, names_filter=["blocks.0.attn.hook_patern"])


def test_ablation_changes_output_and_leaves_no_hooks():
    model, ids = model_and_ids()
    with torch.inference_mode():
        clean = model(ids)

    def zero_head_1(z, hook):
        z = z.clone()
        z[:, :, 1] = 0.0  # [batch, pos, head_index, d_head]
        return z

    ablated = model.run_with_hooks(ids, fwd_hooks=[("blocks.0.attn.hook_z", zero_head_1)])
    assert (ablated - clean).abs().max() > 1e-3
    assert _ACTIVE.get() is None
    assert not capturing()
    with torch.inference_mode():
        assert torch.equal(model(ids), clean)


def test_replacement_reaches_the_cache_and_downstream():
    model, ids = model_and_ids()
    seen = {}

    def uniform(pattern, hook):
        return torch.full_like(pattern, 1.0 / pattern.shape[-1])

    def record(z, hook):
        seen["z"] = z

    model.run_with_hooks(
        ids, fwd_hooks=[("blocks.0.attn.hook_pattern", uniform), ("blocks.0.attn.hook_z", record)]
    )
    v = model.run_with_cache(ids, names_filter="blocks.0.attn.hook_v")[1]["v", 0]
    assert torch.allclose(seen["z"], v.mean(dim=1, keepdim=True).expand_as(v), atol=1e-5)


def test_no_hook_remains_after_an_exception_inside():
    model, ids = model_and_ids()

    def boom(t, hook):
        raise RuntimeError("inside the hook")

    with pytest.raises(RuntimeError, match="inside the hook"):
        model.run_with_hooks(ids, fwd_hooks=[("blocks.1.hook_mlp_out", boom)])
    assert _ACTIVE.get() is None
    _out, cache = model.run_with_cache(ids)  # works, and the failed run left nothing
    assert len(cache) == len(model.hook_names())


def test_nested_runs_see_only_their_own_hooks():
    model, ids = model_and_ids()
    outer_calls, inner = [], {}

    def outer(t, hook):
        outer_calls.append(hook.name)
        if len(outer_calls) == 1:  # run a whole second capture from inside a hook
            inner["out"], inner["cache"] = model.run_with_cache(ids, names_filter="hook_embed")

    model.run_with_hooks(ids, fwd_hooks=[(lambda n: n.endswith("hook_resid_pre"), outer)])
    assert outer_calls == ["blocks.0.hook_resid_pre", "blocks.1.hook_resid_pre"]
    assert list(inner["cache"]) == ["hook_embed"]
    assert _ACTIVE.get() is None


def test_hook_receives_its_hookpoint_with_its_name():
    model, ids = model_and_ids()
    names = []
    model.run_with_hooks(ids, fwd_hooks=[("blocks.1.attn.hook_q", lambda t, h: names.append(h.name))])
    assert names == ["blocks.1.attn.hook_q"]


def test_every_short_name_is_a_hook_of_a_model_that_has_it():
    from tformer.model.hooks import ACTS

    model = Encoder(tiny(type_vocab_size=2, embed_norm=True, pos_encoding="learned", norm="pre", n_outputs=5))
    built = {act_name(n, 0 if a.per_layer else None) for n, a in ACTS.items()}
    assert built <= set(model.hook_names())
    # ...and every hook point of that model has a short name
    assert {n.replace("blocks.1.", "blocks.0.") for n in model.hook_names()} == built


def test_layernorm_hooks_show_sigma_and_the_normalized_values():
    model, ids = model_and_ids()
    _, cache = model.run_with_cache(ids)
    x = cache["resid_pre", 0] + cache["attn_out", 0]  # post-norm: LayerNorm(x + SubLayer(x))
    mu, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
    ln = model.blocks[0].ln1
    assert torch.allclose(cache["ln1_scale", 0], (var + ln.eps).sqrt(), atol=1e-6)
    assert torch.allclose(cache["ln1_normalized", 0], (x - mu) / (var + ln.eps).sqrt(), atol=1e-5)
    expected = torch.nn.functional.layer_norm(x, (24,), ln.weight, ln.bias, ln.eps)
    assert torch.allclose(cache["resid_mid", 0], expected, atol=1e-5)
    assert set(ln.state_dict()) == {"weight", "bias"}  # loads nn.LayerNorm state dicts as before
