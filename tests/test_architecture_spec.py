"""The architecture spec and the sidebar's encoder are derived from the config, not copied."""

from __future__ import annotations

import dataclasses

from tests._models import tiny
from tformer.analysis.architecture import ArchitectureSpec, architecture_spec, parameter_counts
from tformer.model.config import EncoderConfig
from tformer.model.encoder import Encoder
from tformer.ui.caches import SCRATCH_SETTINGS, scratch_config_of
from tformer.ui.state import ViewState


def test_every_size_the_spec_names_is_its_configs():
    cfg = tiny(norm="pre", pos_encoding="learned", type_vocab_size=2, embed_norm=True, n_outputs=3, d_ff=40)
    spec = architecture_spec(cfg, 5, parameter_counts(Encoder(cfg)))
    assert spec.cfg is cfg
    names = [f.name for f in dataclasses.fields(EncoderConfig)] + ["d_head"]
    named = [n for n in names if n in vars(ArchitectureSpec)]
    assert len(named) == 13, named  # every size the diagram reads but d_ff (resolved: d_mlp)
    for name in named:
        assert getattr(spec, name) == getattr(cfg, name), name
    assert not {f.name for f in dataclasses.fields(ArchitectureSpec)} & set(names)  # none copied
    assert (spec.d_ff, spec.d_head) == (cfg.d_mlp, cfg.d_head) == (40, cfg.d_model // cfg.n_heads)


def test_the_scratch_encoder_takes_every_view_setting_named_like_a_config_field():
    view_fields = {f.name for f in dataclasses.fields(ViewState)}
    config_fields = [f.name for f in dataclasses.fields(EncoderConfig)]
    assert list(SCRATCH_SETTINGS) == [n for n in config_fields if n in view_fields]
    assert set(SCRATCH_SETTINGS) >= {
        "n_layers",
        "n_heads",
        "d_model",
        "d_ff",
        "pos_encoding",
        "norm",
        "causal",
        "seed",
    }
    v = ViewState()
    for key, value in {"n_layers": 3, "n_heads": 2, "d_model": 32, "d_ff": 48, "pos_encoding": "learned",
                       "norm": "pre", "causal": True, "seed": 7}.items():  # fmt: skip
        v.set(key, value)
    cfg = scratch_config_of(v)
    assert all(getattr(cfg, name) == v.get(name) for name in SCRATCH_SETTINGS)
