"""capture_text hands the pages exactly the activations they name, as run_with_cache captured
them, as read-only numpy; the memory guard is computed from the request."""

import numpy as np
import pytest

from tformer import Encoder
from tformer.model.capture import ATTENTION, available_names, capture_nbytes, capture_text
from tformer.model.hooks import ACTS, act_name
from tformer.model.interventions import ablate_heads, patterns_without_positions
from tformer.model.tokenizer import scratch_tokenizer

from ._models import tiny


@pytest.fixture(scope="module")
def model_tok():
    tok = scratch_tokenizer(max_len=64)
    return Encoder(tiny(vocab_size=tok.vocab_size, causal=True)).eval(), tok


def test_capture_matches_run_with_cache(model_tok):
    model, tok = model_tok
    cap = capture_text(model, tok, "the cat sat on the mat 小猫")
    # the same hook set, so both runs take the same path (LayerNorm is fused unless hooked)
    names = [act_name(n, layer) for n in ATTENTION for layer in range(model.cfg.n_layers)]
    _, cache = model.run_with_cache(cap.encoded.ids, names_filter=names)
    for layer in range(model.cfg.n_layers):
        for name in ATTENTION:
            assert np.array_equal(cap[name][layer], cache[name, layer][0].numpy()), name
    assert cap.pattern.shape == (2, 3, cap.n_pos, cap.n_pos)
    assert np.isneginf(cap.attn_scores).any()  # causal: the future is masked with -inf
    assert cap.names == ATTENTION
    assert cap.nbytes == capture_nbytes(model.cfg, cap.n_pos, ATTENTION)


def test_arrays_are_read_only(model_tok):
    cap = capture_text(*model_tok, "hello")
    with pytest.raises(ValueError, match="read-only"):
        cap.pattern[0, 0, 0, 0] = 1.0


def test_truncation_is_reported(model_tok):
    cap = capture_text(*model_tok, "word " * 500)
    assert cap.encoded.truncated
    assert cap.n_pos == 64


def test_ablation_zeroes_only_the_chosen_heads(model_tok):
    model, tok = model_tok
    ids = tok.encode("the cat sat on the mat").ids
    base, same = ablate_heads(model, ids, [])
    assert np.array_equal(base, same)
    base, ablated = ablate_heads(model, ids, [(1, 2)])
    assert not np.allclose(base, ablated)
    with pytest.raises(ValueError, match="does not exist"):
        ablate_heads(model, ids, [(5, 0)])


def test_switching_positions_off_changes_attention_only_through_positions(model_tok):
    model, tok = model_tok
    ids = tok.encode("the cat sat on the mat").ids
    without = patterns_without_positions(model, ids)
    with_pe = capture_text(model, tok, "the cat sat on the mat").pattern
    assert not np.allclose(with_pe, without)
    no_pe = Encoder(tiny(vocab_size=tok.vocab_size, causal=True, pos_encoding="none")).eval()
    _, cache = no_pe.run_with_cache(ids)  # same seed, same weights, no positions at all
    assert np.allclose(without[0], cache["pattern", 0][0].numpy(), atol=1e-6)


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_any_hook_set_is_captured_by_its_short_names(norm):
    tok = scratch_tokenizer(max_len=64)
    model = Encoder(tiny(vocab_size=tok.vocab_size, norm=norm)).eval()
    names = available_names(model.cfg)
    cap = capture_text(model, tok, "the cat sat on the mat", names)
    _, cache = model.run_with_cache(cap.encoded.ids)
    assert set(cap.names) == set(names)
    for name in names:
        act = ACTS[name]
        layers = range(model.cfg.n_layers) if act.per_layer else [None]
        for layer in layers:
            want = cache[name, layer] if layer is not None else cache[name]
            got = cap[name][layer] if layer is not None else cap[name]
            assert np.array_equal(got, want[0].numpy()), (name, layer)
    assert cap.nbytes == capture_nbytes(model.cfg, cap.n_pos, names)
    assert np.allclose(
        cap.output,
        cap["resid_post"][-1]
        if norm == "post"
        else cap["ln_final_normalized"] * model.ln_final.weight.detach().numpy()
        + model.ln_final.bias.detach().numpy(),
        atol=1e-5,
    )


def test_a_capture_holds_only_what_was_asked_for(model_tok):
    model, tok = model_tok
    cap = capture_text(model, tok, "the cat sat", ["resid_mid", "ln1_scale", "embed"])
    assert cap.names == ("embed", "ln1_scale", "resid_mid")  # forward order, a stable cache key
    assert cap["ln1_scale"].shape == (2, cap.n_pos, 1)
    assert cap["embed"].shape == (cap.n_pos, 24)
    with pytest.raises(KeyError, match="was not captured"):
        cap["pattern"]
    with pytest.raises(ValueError, match="unknown activation names"):
        capture_text(model, tok, "the cat", ["patterns"])
    with pytest.raises(ValueError, match="has no"):
        capture_text(model, tok, "the cat", ["logits"])  # this model has no output head


def test_the_memory_guard_counts_exactly_the_requested_arrays(model_tok):
    model, _tok = model_tok
    cfg, n = model.cfg, 10
    square = cfg.n_layers * cfg.n_heads * n * n
    assert capture_nbytes(cfg, n, ["pattern"]) == 4 * (square + n * cfg.d_model)
    assert capture_nbytes(cfg, n, ["pattern", "attn_scores"]) == 4 * (2 * square + n * cfg.d_model)
    assert capture_nbytes(cfg, n, ["mlp_pre"]) == 4 * (cfg.n_layers * n * cfg.d_ff + n * cfg.d_model)


def test_ablation_can_reuse_the_captures_output_as_its_baseline(model_tok):
    model, tok = model_tok
    cap = capture_text(model, tok, "the cat sat on the mat")
    base, ablated = ablate_heads(model, cap.encoded.ids, [(1, 2)])
    reused, same = ablate_heads(model, cap.encoded.ids, [(1, 2)], base=cap.output)
    assert np.array_equal(base, cap.output)  # the capture ran the same explicit path
    assert reused is cap.output
    assert np.array_equal(ablated, same)


def test_a_capture_of_one_layer_holds_that_layers_values_and_a_sixth_of_the_bytes(model_tok):
    model, tok = model_tok
    text = "the cat sat on the mat 小猫"
    names = available_names(model.cfg)
    full = capture_text(model, tok, text, names)
    one = capture_text(model, tok, text, names, layers=[1])
    assert one.layers == (1,)
    assert full.layers is None
    for name in names:
        if ACTS[name].per_layer:
            assert one[name].shape[0] == 1
            # equal up to float rounding: the unhooked layer 0 takes the fused LayerNorm path
            assert np.allclose(one.at(name, 1), full.at(name, 1), atol=1e-5, equal_nan=True), name
            assert np.array_equal(full.at(name, 0), full[name][0])
            with pytest.raises(KeyError, match="layer 0 was not captured"):
                one.at(name, 0)
        else:
            assert np.array_equal(one[name], full[name]), name
    assert np.allclose(one.output, full.output, atol=1e-5)
    n = one.n_pos
    assert one.nbytes == capture_nbytes(model.cfg, n, names, layers=[1])
    assert full.nbytes == capture_nbytes(model.cfg, n, names)
    with pytest.raises(ValueError, match="subset"):
        capture_text(model, tok, text, names, layers=[model.cfg.n_layers])
    with pytest.raises(ValueError, match="not a per-layer"):
        one.at("embed", 1)
