"""Masks reach attention through the encoder's own ``attn_mask``: builders and the spec parser
(hostile input included), the math by hand from captured q, k, v, the AND with the causal and
padding masks, and padded batches that change no real token."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

from tformer import Encoder, load_pretrained
from tformer.analysis.masks import (
    MAX_ITEMS,
    causal_mask,
    custom_mask,
    describe,
    full_mask,
    output_shift,
    window_mask,
)
from tformer.model.capture import ATTENTION, capture_batch, capture_ids, capture_text
from tformer.model.tokenizer import scratch_tokenizer

from ._models import model_and_ids, tiny

# --- builders -----------------------------------------------------------------------------------


def test_builders():
    assert full_mask(3).dtype == bool
    assert full_mask(3).all()
    assert full_mask(3).shape == (3, 3)
    assert np.array_equal(causal_mask(3), [[1, 0, 0], [1, 1, 0], [1, 1, 1]])
    assert np.array_equal(window_mask(4, 1), [[1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 1, 1]])
    assert np.array_equal(window_mask(4, 0), np.eye(4, dtype=bool))
    assert window_mask(4, 10).all()
    for bad in (0, -1, 2.5, True, "3"):
        with pytest.raises(ValueError, match="positive number of tokens"):
            full_mask(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="w=-1"):
        window_mask(4, -1)


def test_custom_mask_items():
    n = 8
    m = custom_mask(n, "3:5")
    assert not m[3, 5]
    assert m.sum() == n * n - 1
    m = custom_mask(n, "2-4:0-1")
    assert not m[2:5, 0:2].any()
    assert m.sum() == n * n - 6
    m = custom_mask(n, "6:*")
    assert not m[6].any()
    assert describe(m)["dead_rows"] == [6]
    m = custom_mask(n, "*:0")
    assert not m[:, 0].any()
    assert describe(m)["dead_rows"] == []
    # separators, whitespace, empty items and a repeated item
    m = custom_mask(n, " 1 : 2 ;\n 3 - 4 : * ,, 1:2 ,")
    expected = full_mask(n)
    expected[1, 2] = False
    expected[3:5, :] = False
    assert np.array_equal(m, expected)
    assert custom_mask(n, "").all()
    assert custom_mask(n, " ,; \n").all()
    assert custom_mask(n, "7:7")[7, 7] == np.False_  # the last position is in range


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("<script>alert(1)</script>", r"mask item '<script>alert\(1\)</script>' is malformed"),
        ("1:2:3", r"mask item '1:2:3' is malformed"),
        ("3", r"mask item '3' is malformed"),
        (":", r"mask item ':' is malformed"),
        ("-1:2", r"mask item '-1:2' is malformed"),
        ("1.5:2", r"is malformed"),
        ("a:b", r"is malformed"),
        ("1:2, x", r"mask item 'x' is malformed"),
        ("\u0663:1", r"is malformed"),  # Arabic-Indic digit three: digits are ASCII only
        ("8:0", r"mask item '8:0': query 8 is out of range 0..7"),
        ("0:8", r"mask item '0:8': key 8 is out of range 0..7"),
        ("2-9:0", r"query 9 is out of range"),
        ("99999999999999999999:1", r"query 999999999\.\.\. is out of range 0..7"),
        ("1:" + "9" * 5000, r"key 999999999\.\.\. is out of range"),
        ("4-2:0", r"mask item '4-2:0': query range 4-2 runs backwards"),
        ("1:" + "x" * 100, r"mask item '1:x{35}\.\.\.' is malformed"),  # long items are shortened
    ],
)
def test_custom_mask_rejects_bad_items_naming_them(spec, message):
    with pytest.raises(ValueError, match=message):
        custom_mask(8, spec)


def test_custom_mask_limits():
    ok = ",".join(f"{i % 8}:{i % 5}" for i in range(MAX_ITEMS))
    assert not custom_mask(8, ok).all()
    with pytest.raises(ValueError, match=f"{MAX_ITEMS + 1} items; at most {MAX_ITEMS}"):
        custom_mask(8, ok + ",1:1")
    with pytest.raises(ValueError, match="characters"):
        custom_mask(8, "1:1," * 100_000)
    with pytest.raises(ValueError, match="must be text"):
        custom_mask(8, None)  # type: ignore[arg-type]
    # a pathological run of spaces is rejected fast (no regex blow-up)
    with pytest.raises(ValueError, match="malformed"):
        custom_mask(8, "1" + " " * 9_000 + "x")


def test_describe_and_output_shift():
    d = describe(custom_mask(4, "0:*, 1:0"))
    assert d == {"n": 4, "allowed": 11, "allowed_share": 11 / 16, "dead_rows": [0]}
    with pytest.raises(ValueError, match=r"square \[query_pos, key_pos\], got shape \(2, 3\)"):
        describe(np.ones((2, 3), bool))
    base = np.array([[3.0, 4.0], [1.0, 0.0], [0.0, 0.0]])
    masked = np.array([[3.0, 4.0], [1.0, 1.0], [0.0, 0.0]])
    shift = output_shift(base, masked)
    assert shift.shape == (3,)
    assert np.allclose(shift, [0.0, 1.0, 0.0])
    with pytest.raises(ValueError, match=r"\(3, 2\).*\(2, 2\)"):
        output_shift(base, masked[:2])


# --- the mask inside the encoder ----------------------------------------------------------------


def by_hand(cache, layer: int, allowed: torch.Tensor):
    """Scores, pattern and z of one layer from its captured q, k, v: [batch, head_index, ...]."""
    q, k, v = (cache[name, layer] for name in ("q", "k", "v"))  # [batch, pos, head_index, d_head]
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~allowed, float("-inf"))
    dead = ~allowed.any(dim=-1, keepdim=True)
    pattern = torch.softmax(scores, dim=-1).nan_to_num(0.0).masked_fill(dead, 0.0)
    z = torch.einsum("bhqk,bkhd->bqhd", pattern, v)
    return scores, pattern, z


def test_attn_mask_equals_the_math_by_hand():
    model, ids = model_and_ids(batch=2, pos=7)
    mask = custom_mask(7, "2:3, 1-2:0, 5:*, *:6")  # row 5 fully masked
    allowed = torch.from_numpy(mask)[None, None]  # [1, 1, query_pos, key_pos]
    out, cache = model.run_with_cache(ids, attn_mask=mask)
    for layer in range(model.cfg.n_layers):
        scores, pattern, z = by_hand(cache, layer, allowed)
        got = cache["attn_scores", layer]
        assert torch.equal(torch.isneginf(got), ~allowed.expand_as(got))
        torch.testing.assert_close(got, scores, atol=1e-5, rtol=0)
        got_pattern = cache["pattern", layer]
        assert not got_pattern.isnan().any()
        assert (got_pattern[~allowed.expand_as(got_pattern)] == 0).all()
        sums = got_pattern.sum(-1)  # [batch, head_index, query_pos]
        expected_sums = torch.ones_like(sums)
        expected_sums[..., 5] = 0.0
        torch.testing.assert_close(sums, expected_sums)
        torch.testing.assert_close(got_pattern, pattern, atol=1e-6, rtol=0)
        got_z = cache["z", layer]
        assert (got_z[:, 5] == 0).all()  # the fully masked query attends to nothing
        torch.testing.assert_close(got_z, z, atol=1e-5, rtol=0)
    # the fused path (nothing hooked) computes the same, dead row included, without NaN
    with torch.inference_mode():
        fused = model(ids, attn_mask=mask)
    assert not fused.isnan().any()
    torch.testing.assert_close(fused, out, atol=1e-5, rtol=0)


def test_attn_mask_forms_and_validation():
    model, ids = model_and_ids(batch=2, pos=5)
    with torch.inference_mode():
        plain = model(ids)
        assert torch.equal(model(ids, attn_mask=full_mask(5)), plain)
        as_bool = model(ids, attn_mask=causal_mask(5))
        as_int = model(ids, attn_mask=causal_mask(5).astype(int).tolist())
        as_tensor = model(ids, attn_mask=torch.from_numpy(causal_mask(5)).float())
        per_text = model(ids, attn_mask=np.stack([causal_mask(5), window_mask(5, 1)]))
        second = model(ids[1:], attn_mask=window_mask(5, 1))
    assert not torch.allclose(as_bool, plain)
    assert torch.equal(as_bool, as_int)
    assert torch.equal(as_bool, as_tensor)
    torch.testing.assert_close(per_text[0], as_bool[0])
    torch.testing.assert_close(per_text[1], second[0], atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match=r"attn_mask has shape \(4, 4\); ids have \(2, 5\)"):
        model(ids, attn_mask=full_mask(4))
    with pytest.raises(ValueError, match=r"\(3, 5, 5\)"):
        model(ids, attn_mask=np.ones((3, 5, 5), bool))
    with pytest.raises(ValueError, match="bool or 0/1"):
        model(ids, attn_mask=np.full((5, 5), 0.5))


def test_causal_model_and_window_mask_are_anded():
    causal, ids = model_and_ids(pos=8, causal=True)
    bidirectional = Encoder(tiny()).eval()  # same seed: same weights, no causal mask
    window = window_mask(8, 2)
    out_c, cache_c = causal.run_with_cache(ids, attn_mask=window)
    out_b, cache_b = bidirectional.run_with_cache(ids, attn_mask=window & causal_mask(8))
    torch.testing.assert_close(out_c, out_b, atol=1e-6, rtol=0)
    blocked = ~torch.from_numpy(window & causal_mask(8))
    for layer in range(causal.cfg.n_layers):
        pattern = cache_c["pattern", layer]  # [batch, head_index, query_pos, key_pos]
        assert (pattern[..., blocked] == 0).all()
        assert (pattern[..., ~blocked] > 0).all()
        torch.testing.assert_close(pattern, cache_b["pattern", layer], atol=1e-6, rtol=0)


# --- captures ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scratch():
    tok = scratch_tokenizer(max_len=64)
    return Encoder(tiny(vocab_size=tok.vocab_size)).eval(), tok


def test_capture_with_a_read_only_mask(scratch):
    model, tok = scratch
    enc = tok.encode("the cat sat on the mat")
    n = len(enc)
    mask = custom_mask(n, "3:*, *:0")
    mask.flags.writeable = False  # as a cache key is
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch warns when it wraps a read-only array
        cap = capture_ids(model, enc, attn_mask=mask)
    base = capture_text(model, tok, "the cat sat on the mat")
    assert base.attn_mask is None
    assert np.array_equal(cap.attn_mask, mask)
    assert not cap.attn_mask.flags.writeable
    assert (cap.pattern[:, :, 3] == 0).all()
    assert (cap.pattern[:, :, :, 0] == 0).all()
    assert (cap.z[:, 3] == 0).all()
    shift = output_shift(base.output, cap.output)
    assert shift.shape == (n,)
    assert shift[3] > 0
    layer_limited = capture_ids(model, enc, ["pattern"], layers=[1], attn_mask=mask.astype(int))
    assert np.array_equal(layer_limited.at("pattern", 1), cap.pattern[1])
    assert layer_limited.attn_mask.dtype == bool
    with pytest.raises(ValueError, match=rf"the text has {n} tokens"):
        capture_ids(model, enc, attn_mask=full_mask(n + 1))


def test_padded_encoded(scratch):
    _, tok = scratch
    enc = tok.encode("the cat")
    assert tok.pad_token == "[PAD]"
    assert tok.pad_id == 0
    padded = enc.padded(len(enc) + 2, tok.pad_id)
    assert padded.ids[-2:] == [0, 0]
    assert padded.labels[-2:] == ["[PAD]", "[PAD]"]
    assert padded.n_pad == 2
    assert padded.n_real == len(enc)
    assert padded.ids[: len(enc)] == enc.ids
    assert padded.attention_mask == [1] * len(enc) + [0, 0]
    assert padded.trailing_specials == enc.trailing_specials  # padding is not [SEP]
    assert enc.padded(len(enc), 0) is enc
    with pytest.raises(ValueError, match="shorter"):
        enc.padded(1, 0)


TEXTS = ["Transformers read every word at once and weigh each one.", "the cat sat", "小猫"]


def check_batch(model, tok, texts) -> None:
    caps = capture_batch(model, tok, texts)
    n = max(len(tok.encode(t)) for t in texts)
    assert len(caps) == len(texts)
    for text, cap in zip(texts, caps, strict=True):
        alone = capture_text(model, tok, text)
        real = alone.n_pos
        assert cap.n_pos == n
        assert cap.encoded.n_real == real
        assert cap.labels[:real] == alone.labels
        assert cap.labels[real:] == ["[PAD]"] * (n - real)
        assert cap.names == ATTENTION
        np.testing.assert_allclose(cap.output[:real], alone.output, atol=1e-5, rtol=0)
        np.testing.assert_allclose(cap.pattern[:, :, :real, :real], alone.pattern, atol=1e-5, rtol=0)
        assert (cap.pattern[..., real:] == 0).all()  # padded keys get weight 0
        assert np.isneginf(cap.attn_scores[..., real:]).all()
        np.testing.assert_allclose(cap.pattern.sum(-1), 1.0, atol=1e-5)  # pad queries see real keys
        assert not cap.pattern.flags.writeable


def test_capture_batch_from_scratch_model(scratch):
    check_batch(*scratch, TEXTS)
    model, tok = scratch
    [one] = capture_batch(model, tok, ["the cat"])
    assert one.encoded.n_pad == 0
    with pytest.raises(ValueError, match="at least one text"):
        capture_batch(model, tok, [])


def test_capture_batch_minilm():
    model, tok = load_pretrained("minilm", device="cpu")
    check_batch(model, tok, TEXTS)


def test_a_mask_that_blocks_nothing_new_changes_no_number(scratch):
    """The Masks page skips the second run for a mask that blocks nothing the model does not
    block already (`adds_nothing`): that run gives the first one's numbers exactly."""
    pytest.importorskip("streamlit")
    from tformer.ui.views.masks import adds_nothing

    model, tok = scratch
    enc = tok.encode("the cat sat on the mat")
    n = len(enc)
    causal_model = Encoder(tiny(vocab_size=tok.vocab_size, causal=True)).eval()
    for m, mask in ((model, full_mask(n)), (model, window_mask(n, n)), (causal_model, causal_mask(n))):
        assert adds_nothing(mask, bool(m.cfg.causal))
        plain, masked = capture_ids(m, enc, ATTENTION), capture_ids(m, enc, ATTENTION, attn_mask=mask)
        for name in ATTENTION:
            assert np.array_equal(plain[name], masked[name]), name
        assert np.array_equal(plain.output, masked.output)
    assert not adds_nothing(causal_mask(n), False)
    assert not adds_nothing(window_mask(n, 1), True)  # blocks cells below the diagonal
    assert not adds_nothing(custom_mask(n, "3:5"), False)
    assert adds_nothing(custom_mask(n, "1:4"), True)  # above the diagonal: blocked already
