"""The config fields issue 27 added: factorized embeddings (d_embed), LM heads, GPT-2's GELU."""

from __future__ import annotations

import dataclasses
import math
import re

import pytest
import torch

from tformer import Encoder, EncoderConfig
from tformer.model.activations import gelu_tanh
from tformer.model.capture import available_names, capture_ids, capture_nbytes
from tformer.model.tokenizer import Encoded, scratch_tokenizer

from ._models import tiny


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(d_embed=0), "d_embed=0 must be a positive integer"),
        (dict(d_embed=7, pos_encoding="sinusoidal"), "d_embed=7 must be even"),
        (dict(lm_head="lstm"), "lm_head='lstm' is not one of"),
        (dict(lm_head="tied", n_outputs=3), "lm_head='tied' and n_outputs=3"),
        (dict(lm_head="mlm", d_embed=8), "d_embed=8 must equal d_model=24"),
    ],
)
def test_new_fields_are_validated_with_their_numbers(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        tiny(**kwargs)


def test_d_embed_equal_to_d_model_is_one_config() -> None:
    a, b = tiny(), tiny(d_embed=24)
    assert a == b
    assert hash(a) == hash(b)
    assert b.d_embed is None
    # replace() of d_model then keeps the embeddings as wide as the model, with no projection.
    assert dataclasses.replace(a, d_model=48, n_heads=4).d_embed_size == 48


@pytest.mark.parametrize(
    "cfg",
    [
        tiny(d_embed=8, pos_encoding="learned", type_vocab_size=2, embed_norm=True),
        tiny(d_embed=10, pos_encoding="sinusoidal"),
        tiny(lm_head="tied", norm="pre", causal=True, pos_encoding="learned"),
        tiny(lm_head="mlm", activation="gelu", embed_norm=True, type_vocab_size=2),
    ],
)
def test_n_params_counts_the_projection_and_heads(cfg: EncoderConfig) -> None:
    model = Encoder(cfg)
    assert cfg.n_params() == sum(p.numel() for p in model.parameters())


def test_factorized_embeddings_have_d_embed_wide_hooks() -> None:
    cfg = tiny(d_embed=8, pos_encoding="learned", type_vocab_size=2, embed_norm=True)
    model = Encoder(cfg).eval()
    ids = list(range(5, 14))
    enc = Encoded(ids, [str(i) for i in ids], [str(i) for i in ids], [(0, 0)] * 9, [False] * 9, False, 9)
    names = available_names(cfg)
    cap = capture_ids(model, enc, names)
    assert cap["embed"].shape == (9, 8)
    assert cap["embed_ln_normalized"].shape == (9, 8)
    assert cap["resid_pre"].shape == (cfg.n_layers, 9, 24)
    assert cap.nbytes == capture_nbytes(cfg, 9, names)
    # resid_pre of layer 0 is the projection of the embedding LayerNorm's output.
    with torch.inference_mode():
        ln = model.embed_ln.weight * torch.from_numpy(cap["embed_ln_normalized"].copy()) + model.embed_ln.bias
        projected = model.embed_proj(ln)
    torch.testing.assert_close(projected, torch.from_numpy(cap["resid_pre"][0].copy()), atol=1e-5, rtol=0)


def test_gelu_tanh_is_the_gpt2_formula() -> None:
    x = torch.linspace(-6, 6, 1001, dtype=torch.float64)
    formula = 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    torch.testing.assert_close(gelu_tanh(x), formula, atol=1e-12, rtol=0)
    assert (gelu_tanh(x) - torch.nn.functional.gelu(x)).abs().max() > 1e-4  # not the erf GELU


def test_lm_head_leaves_forward_and_old_configs_alone() -> None:
    """forward keeps returning hidden states with an LM head, and a tied head adds no weights:
    the same seed gives the same model with or without it."""
    cfg = tiny(vocab_size=scratch_tokenizer().vocab_size)
    with_head = dataclasses.replace(cfg, lm_head="tied")
    ids = torch.tensor([[2, 7, 9, 3]])
    with torch.inference_mode():
        out = Encoder(with_head).eval()(ids)
        plain = Encoder(cfg).eval()(ids)
    assert out.shape == plain.shape == (1, 4, cfg.d_model)
    torch.testing.assert_close(out, plain)
