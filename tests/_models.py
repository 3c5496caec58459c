"""Small configs and inputs shared by the core tests."""

from __future__ import annotations

import torch

from tformer import Encoder, EncoderConfig


def tiny(**overrides) -> EncoderConfig:
    base = dict(vocab_size=60, max_len=64, d_model=24, n_heads=3, n_layers=2)
    base.update(overrides)
    return EncoderConfig(**base)


def model_and_ids(batch=2, pos=9, seed=1, **overrides):
    cfg = tiny(**overrides)
    model = Encoder(cfg).eval()
    ids = torch.randint(0, cfg.vocab_size, (batch, pos), generator=torch.Generator().manual_seed(seed))
    return model, ids
