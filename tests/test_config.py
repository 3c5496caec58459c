import re

import pytest

from tformer import Encoder, EncoderConfig


def test_defaults_and_derived_values():
    cfg = EncoderConfig(d_model=64, n_heads=4)
    assert cfg.d_ff == 256  # 4 x d_model
    assert cfg.d_head == 16
    assert hash(cfg) == hash(EncoderConfig(d_model=64, n_heads=4))  # usable as a cache key


def test_frozen():
    cfg = EncoderConfig()
    with pytest.raises(AttributeError):
        cfg.d_model = 128  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(d_model=50, n_heads=4), "d_model=50 is not divisible by n_heads=4"),
        (dict(d_model=0), "d_model=0 must be a positive integer"),
        (dict(n_layers=-1), "n_layers=-1 must be a positive integer"),
        (dict(pos_encoding="rotary"), "pos_encoding='rotary' is not one of"),
        (dict(activation="tanh"), "activation='tanh' is not one of"),
        (dict(norm="middle"), "norm='middle' is not one of"),
        (dict(dropout=1.5), "dropout=1.5 must be in [0, 1)"),
        (dict(d_model=6, n_heads=2, pos_encoding="sinusoidal", d_ff=8), None),
        (dict(d_model=9, n_heads=3), "d_model=9 must be even"),
        (dict(layer_norm_eps=0.0), "layer_norm_eps=0.0 must be > 0"),
        (dict(type_vocab_size=-2), "type_vocab_size=-2 must be a non-negative integer"),
        (dict(n_heads=2.0), "n_heads=2.0 must be a positive integer"),
    ],
)
def test_validation_names_the_numbers(kwargs, message):
    if message is None:
        EncoderConfig(**kwargs)  # valid: must not raise
        return
    with pytest.raises(ValueError, match=re.escape(message)):
        EncoderConfig(**kwargs)


@pytest.mark.parametrize(
    "cfg",
    [
        EncoderConfig(vocab_size=50, d_model=16, n_heads=2, n_layers=2),
        EncoderConfig(
            vocab_size=50,
            max_len=20,
            d_model=12,
            n_heads=3,
            n_layers=1,
            pos_encoding="learned",
            type_vocab_size=2,
            embed_norm=True,
            norm="pre",
            n_outputs=5,
            d_ff=7,
        ),
    ],
)
def test_n_params_matches_the_built_model(cfg):
    model = Encoder(cfg)
    assert cfg.n_params() == sum(p.numel() for p in model.parameters())
