"""The encoder page under AppTest: the architecture follows the model and its counts are the
model's; the FFN, residual and LayerNorm views draw for awkward texts and shapes."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("streamlit")

from .test_app_pages import assert_clean, open_app

ENCODER = "pages/encoder.py"


def chart(at, key: str) -> dict:
    found = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if key in (c.proto.id or "")]
    assert found, f"no chart {key!r}"
    return found[0]


def test_the_architecture_counts_are_the_models_and_follow_edits():
    from tformer import EncoderConfig, load_pretrained

    at = open_app(ENCODER)
    assert_clean(at)
    meta = chart(at, "architecture")["layout"]["meta"]
    model, _ = load_pretrained("minilm")
    assert meta["total"] == sum(p.numel() for p in model.parameters()) == 22_565_376
    assert sum(meta["counts"].values()) == meta["total"]

    at.radio(key="source").set_value("scratch").run()
    at.number_input(key="n_layers").set_value(3).run()
    at.number_input(key="n_heads").set_value(2).run()
    at.number_input(key="d_model").set_value(32).run()
    assert_clean(at)
    meta = chart(at, "architecture")["layout"]["meta"]
    v = at.session_state["view"]
    cfg = EncoderConfig(
        vocab_size=meta["counts"]["embed"] // 32, d_model=32, n_heads=2, n_layers=3,
        max_len=512, pos_encoding=v.pos_encoding, norm=v.norm,
    )  # fmt: skip
    assert meta["total"] == cfg.n_params()
    texts = " ".join(a.get("text", "") for a in chart(at, "architecture")["layout"]["annotations"])
    assert "3 ×" in texts
    assert "d_head 16" in texts


@pytest.mark.parametrize("section", ["ffn", "residual", "layernorm"])
@pytest.mark.parametrize(
    "params",
    [
        {},
        {"text": "word " * 600, "query": "300", "layer": "5"},  # 512 tokens, a window
        {"source": "scratch", "norm": "pre", "causal": "1", "text": "猫"},  # one token
        {"source": "scratch", "n_layers": "1", "d_model": "2", "n_heads": "2"},  # d_head = 1
    ],
    ids=["minilm", "512", "one-token-pre-causal", "tiny"],
)
def test_every_view_draws_for_awkward_inputs(section, params):
    at = open_app(ENCODER, **{"encoder.section": section, **params})
    assert_clean(at)
    assert at.get("plotly_chart"), section
    if section == "layernorm":
        at.radio(key="encoder.norm").set_value("ln2").run()
        assert_clean(at)
