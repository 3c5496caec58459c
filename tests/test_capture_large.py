"""The capture memory guard's estimate (capture_nbytes) at the sizes of real pretrained models."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from tformer import Encoder, EncoderConfig
from tformer.model.capture import ATTENTION, available_names, capture_ids, capture_nbytes
from tformer.model.tokenizer import Encoded

# BERT-base's shape (bert-base-uncased, RoBERTa-base, ELECTRA-base discriminator: 12 x 12 x 768).
BERT_BASE = EncoderConfig(
    vocab_size=30522,
    max_len=512,
    d_model=768,
    n_heads=12,
    n_layers=12,
    d_ff=3072,
    pos_encoding="learned",
    activation="gelu",
    type_vocab_size=2,
    embed_norm=True,
)


def encoded(n: int) -> Encoded:
    ids = [int(i) for i in np.random.default_rng(0).integers(5, 1000, n)]
    return Encoded(ids, [str(i) for i in ids], [str(i) for i in ids], [(0, 0)] * n, [False] * n, False, n)


def test_output_of_a_task_head_is_counted_at_its_width() -> None:
    """forward returns [pos, n_outputs] probabilities with a task head, not [pos, d_model]."""
    cfg = EncoderConfig(vocab_size=2000, max_len=64, d_model=24, n_heads=3, n_layers=2, n_outputs=200)
    cap = capture_ids(Encoder(cfg).eval(), encoded(10), ["pattern"])
    assert cap.output.shape == (10, 200)
    assert cap.nbytes == capture_nbytes(cfg, 10, ["pattern"])


@pytest.mark.slow
def test_a_768_wide_capture_at_512_tokens_is_exactly_the_estimate() -> None:
    """Two layers of BERT-base's width at 512 tokens, every activation it has: the arrays held
    are the estimate, to the byte (12 layers then scale linearly)."""
    cfg = dataclasses.replace(BERT_BASE, n_layers=2, vocab_size=2000)
    names = available_names(cfg)
    with torch.random.fork_rng():
        model = Encoder(cfg).eval()
    cap = capture_ids(model, encoded(512), names)
    assert cap.nbytes == capture_nbytes(cfg, 512, names)
    per_layer = capture_nbytes(cfg, 512, names, layers=[0])
    fixed = 2 * per_layer - capture_nbytes(cfg, 512, names)  # what does not grow with layers
    assert capture_nbytes(BERT_BASE, 512, names) == fixed + 12 * (per_layer - fixed)


def test_bert_base_at_512_tokens_fits_the_app_s_guard_or_is_refused_with_the_figure() -> None:
    from tformer.ui.caches import MAX_CAPTURE_BYTES

    attention = capture_nbytes(BERT_BASE, 512, ATTENTION)
    everything = capture_nbytes(BERT_BASE, 512, available_names(BERT_BASE))
    # The figures the guard compares (MiB): 361.5 for the attention pages, 637.5 for all 22
    # activations (the step-by-step page), against a limit of 768.
    assert round(attention / 2**20, 1) == 361.5
    assert round(everything / 2**20, 1) == 637.5
    assert everything < MAX_CAPTURE_BYTES
    # BERT-large's shape (24 x 16 x 1024) passes it: the guard refuses and says by how much.
    large = dataclasses.replace(BERT_BASE, n_layers=24, n_heads=16, d_model=1024, d_ff=4096)
    assert capture_nbytes(large, 512, ATTENTION) > MAX_CAPTURE_BYTES
