"""capture_text hands the pages exactly what run_with_cache captured, as read-only numpy."""

import numpy as np
import pytest

from tformer import Encoder
from tformer.capture import ablate_heads, capture_nbytes, capture_text, patterns_without_positions
from tformer.tokenizer import scratch_tokenizer

from ._models import tiny


@pytest.fixture(scope="module")
def model_tok():
    tok = scratch_tokenizer(max_len=64)
    return Encoder(tiny(vocab_size=tok.vocab_size, causal=True)).eval(), tok


def test_capture_matches_run_with_cache(model_tok):
    model, tok = model_tok
    cap = capture_text(model, tok, "the cat sat on the mat 小猫")
    _, cache = model.run_with_cache(cap.encoded.ids)
    for layer in range(model.cfg.n_layers):
        assert np.array_equal(cap.patterns[layer], cache["pattern", layer][0].numpy())
        assert np.array_equal(cap.scores[layer], cache["attn_scores", layer][0].numpy())
        for name in "qkvz":
            assert np.array_equal(getattr(cap, name)[layer], cache[name, layer][0].numpy())
    assert cap.patterns.shape == (2, 3, cap.n_pos, cap.n_pos)
    assert np.isneginf(cap.scores).any()  # causal: the future is masked with -inf
    assert cap.nbytes == capture_nbytes(2, 3, cap.n_pos, 24)


def test_arrays_are_read_only(model_tok):
    cap = capture_text(*model_tok, "hello")
    with pytest.raises(ValueError):
        cap.patterns[0, 0, 0, 0] = 1.0


def test_truncation_is_reported(model_tok):
    cap = capture_text(*model_tok, "word " * 500)
    assert cap.encoded.truncated and cap.n_pos == 64


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
    with_pe = capture_text(model, tok, "the cat sat on the mat").patterns
    assert not np.allclose(with_pe, without)
    no_pe = Encoder(tiny(vocab_size=tok.vocab_size, causal=True, pos_encoding="none")).eval()
    _, cache = no_pe.run_with_cache(ids)  # same seed, same weights, no positions at all
    assert np.allclose(without[0], cache["pattern", 0][0].numpy(), atol=1e-6)
