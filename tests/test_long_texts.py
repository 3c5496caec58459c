"""2,048 tokens (issue 22): a capture at the from-scratch encoder's limit, the memory a capture
takes (its arrays and the forward's working memory, from the shapes) against what the run
really takes, and `Tokenizer.head`, which keeps a text's first tokens on pages that cap."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tformer import Encoder
from tformer.model.capture import ATTENTION, capture_ids, capture_memory, capture_nbytes
from tformer.model.tokenizer import scratch_tokenizer

from ._models import tiny

LONG = 2048
WORDS = "the quick brown fox jumps over the lazy dog while a small bird sings".split()


def long_text(n_words: int) -> str:
    return " ".join(WORDS[i % len(WORDS)] for i in range(n_words))


@pytest.fixture(scope="module")
def tok():
    return scratch_tokenizer(max_len=LONG)


def test_a_capture_at_2048_tokens_holds_every_row_of_every_head(tok):
    model = Encoder(tiny(vocab_size=tok.vocab_size, max_len=LONG, d_model=16, n_heads=2, n_layers=1)).eval()
    enc = tok.encode(long_text(3000))  # more words than fit: the tokenizer keeps 2,048 positions
    assert len(enc.ids) == LONG
    assert enc.truncated
    cap = capture_ids(model, enc, ATTENTION)
    assert cap.pattern.shape == (1, 2, LONG, LONG)
    np.testing.assert_allclose(cap.pattern.sum(-1), 1.0, atol=1e-4)  # every query row, softmaxed
    # the last query attends over all 2,048 keys (no mask): none of its weights is exactly 0
    assert (cap.pattern[0, :, -1] > 0).all()
    assert cap.nbytes == capture_memory(model.cfg, LONG, ATTENTION).stored


def test_the_memory_of_a_capture_is_its_shapes_times_four_bytes():
    cfg = tiny(vocab_size=100, max_len=LONG, d_model=64, n_heads=4, n_layers=2)
    n = LONG
    mem = capture_memory(cfg, n, ATTENTION)
    square = 2 * 4 * n * n * 4  # layers x heads x n² x 4 bytes, each of pattern and attn_scores
    per_pos = 2 * n * 4 * 16 * 4  # q, k, v, z: layers x pos x heads x d_head x 4 bytes, each
    assert mem.nbytes("pattern") == mem.nbytes("attn_scores") == square
    assert mem.stored == 2 * square + 4 * per_pos + n * 64 * 4  # and the output [pos, d_model]
    assert mem.stored == capture_nbytes(cfg, n, ATTENTION)
    assert mem.working == 2 * 4 * n * n * 4  # one layer's scores and weights while it runs
    assert mem.peak == mem.stored + mem.working
    # a capture of one layer keeps a layer's arrays, and runs every layer all the same
    one = capture_memory(cfg, n, ATTENTION, layers=[1])
    assert one.nbytes("pattern") == square // 2
    assert one.working == mem.working
    # at a few tokens the FFN's two hidden activations outweigh one layer's scores
    short = capture_memory(cfg, 8, ["pattern"])
    assert short.working == 2 * 8 * cfg.d_mlp * 4 > short.attention_working


# Run in a fresh interpreter: the app's allocator settings and its pool of recycled capture
# arrays (turned on for the whole process by any AppTest before this test) leave memory
# resident that a capture then reuses, so the peak in the test process counted 64 of 192 MiB.
PEAK_PROBE = """
import gc, json
from pathlib import Path

from tformer import Encoder
from tformer.model.capture import capture_ids
from tformer.model.config import EncoderConfig
from tformer.model.tokenizer import scratch_tokenizer


def status_mib(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise AssertionError(field)


tok = scratch_tokenizer(max_len={n})
cfg = EncoderConfig(vocab_size=tok.vocab_size, max_len={n}, d_model=32, n_heads=4, n_layers=1)
model = Encoder(cfg).eval()
enc = tok.encode({text!r})
capture_ids(model, enc, ["pattern"])  # warm: torch's first run allocates what stays
gc.collect()
Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
before = status_mib("VmRSS")
cap = capture_ids(model, enc, ["pattern"])
print(json.dumps({{"grew": status_mib("VmHWM") - before, "shape": list(cap.pattern.shape)}}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the peak RSS from /proc")
def test_the_peak_the_guard_checks_bounds_the_memory_the_run_takes(tok):
    """Arrays above glibc's mmap threshold (32 MiB) get fresh pages, so the peak resident set
    of a fresh process shows what the run allocated: at most the computed peak, and most of it."""
    import json
    import subprocess

    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pytest.skip("cannot reset the peak RSS (/proc/self/clear_refs)")
    script = PEAK_PROBE.format(n=LONG, text=long_text(3000))
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    cfg = tiny(vocab_size=tok.vocab_size, max_len=LONG, d_model=32, n_heads=4, n_layers=1)
    peak = capture_memory(cfg, LONG, ["pattern"]).peak / 2**20  # 64 + 128 MiB and the output
    assert result["shape"] == [1, 4, LONG, LONG]
    assert 0.6 * peak <= result["grew"] <= 1.05 * peak + 8, (result["grew"], peak)


def test_head_keeps_a_text_that_fits_as_it_is(tok):
    text = long_text(20)
    assert tok.head(text, 64) == text


def test_head_keeps_the_first_tokens_and_never_splits_a_word(tok):
    # "unbelievably" is 8 pieces (un ##b ##el ...): a cut may not fall between two of them
    text = " ".join(["unbelievably attention"] * 40)
    full = tok.encode(text)
    for n in range(5, 40):
        start = tok.head(text, n)
        enc = tok.encode(start)
        assert text.startswith(start)
        assert len(enc.ids) <= n
        assert enc.ids[:-1] == full.ids[: len(enc.ids) - 1]  # the same first tokens ([SEP] closes)
        assert not full.tokens[len(enc.ids) - 1].startswith("##"), (n, start[-20:])
        assert len(enc.ids) > n - 8  # at most one word (8 pieces) left out


def test_head_of_chinese_text_is_one_token_per_character(tok):
    text = "小猫坐在垫子上。" * 100
    start = tok.head(text, 50)
    assert start == text[:48]  # [CLS] and [SEP] take two of the 50 positions


def test_head_of_a_text_longer_than_the_model_reads(tok):
    short = scratch_tokenizer(max_len=64)
    start = short.head(long_text(500), 64)
    assert len(short.encode(start).ids) == 64
    assert not short.encode(start).truncated


def test_head_needs_room_for_text(tok):
    with pytest.raises(ValueError, match="no room for text"):
        tok.head("the cat", 2)
