"""The step-by-step page under AppTest: every step of a layer in order, each checked against the
model's own hook on screen; the query and head pickers; the neuron view; the two layouts; and
the awkward cases (one token, 512 tokens, causal, d_head = 1, one layer, a fully masked row)."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from .test_app_pages import assert_clean, decode, open_app

STEPS = "pages/steps.py"


def chart(at: AppTest, key: str) -> dict:
    found = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.proto.id and key in c.proto.id]
    assert found, f"no chart {key!r}"
    return found[0]


def checks_on_screen(at: AppTest) -> list[str]:
    return [c.value for c in at.caption if "the model's own" in c.value]


def walk_to_the_end(at: AppTest) -> list[str]:
    """Press "next" until the last step; every step shows its formula and tensor and no check
    against the model fails. Returns the step headers seen."""
    headers = []
    while True:
        assert_clean(at)
        header = at.subheader[0].value
        headers.append(header)
        assert at.latex, f"no formula at {header}"
        chart(at, "step_tensor")
        assert not [c for c in checks_on_screen(at) if "differs" in c], checks_on_screen(at)
        if at.button(key="steps.next").disabled:
            return headers
        at.button(key="steps.next").click().run()


def open_steps(text: str | None = None, **params: str) -> AppTest:
    at = open_app(STEPS, text=text, **params)
    assert_clean(at)
    return at


def first_step(at: AppTest) -> None:
    while not at.button(key="steps.prev").disabled:
        at.button(key="steps.prev").click().run()


@pytest.mark.parametrize(
    ("params", "n_steps", "last"),
    [
        (
            {"layer": "0"},
            22,
            "LayerNorm",
        ),  # MiniLM layer 0: embeddings, segment, sum, LayerNorm, then the layer
        ({"layer": "5"}, 18, "LayerNorm"),
        ({"source": "scratch", "norm": "pre", "causal": "1", "layer": "1"}, 19, "final LayerNorm"),
        ({"source": "scratch", "n_layers": "1"}, 20, "LayerNorm"),
    ],
)
def test_every_step_draws_in_order_and_equals_the_model(params, n_steps, last):
    at = open_steps(**params)
    first_step(at)
    headers = walk_to_the_end(at)
    assert len(headers) == n_steps, headers
    assert all(h.startswith(f"Step {i + 1} of {n_steps}: ") for i, h in enumerate(headers))
    assert headers[-1].endswith(": " + last), headers[-1]
    first = "token embedding" if params.get("layer", "0") == "0" else "the layer's input X"
    assert headers[0].endswith(": " + first), headers[0]


def test_every_check_on_the_page_is_a_real_comparison():
    at = open_steps(layer="0", **{"steps.step": "softmax"})
    lines = checks_on_screen(at)
    assert lines
    assert all(line.startswith("✓ equals") for line in lines)
    assert "blocks.0.attn.hook_pattern" in lines[0]
    diff = float(lines[0].rsplit("difference ", 1)[1].rstrip(")"))
    assert diff <= 1e-5


def test_query_and_head_move_the_outlined_row_and_the_numbers():
    at = open_steps(text="The cat sat on the mat because it was warm.", **{"steps.step": "softmax"})
    before = chart(at, "step_tensor")
    assert before["layout"]["meta"]["highlight"] == 0
    assert before["layout"]["meta"]["numbers"]
    at.selectbox(key="query").set_value(4).run()
    after = chart(at, "step_tensor")
    assert after["layout"]["meta"]["highlight"] == 4
    bars_before = decode(chart(at, "step_row")["data"][0]["y"])
    at.selectbox(key="head").set_value(3).run()
    bars_after = decode(chart(at, "step_row")["data"][0]["y"])
    assert not np.allclose(bars_before, bars_after)
    assert abs(float(np.nansum(bars_after)) - 1.0) < 1e-4  # one softmax row


def test_long_text_shows_a_window_around_the_query():
    at = open_steps(text="word " * 600, query="300", **{"steps.step": "raw"})
    meta = chart(at, "step_tensor")["layout"]["meta"]
    assert meta["rows"] == 16
    assert meta["cols"] == 16
    assert meta["numbers"]
    assert any("of 512" in c.value for c in at.caption)
    at.radio(key="steps.zoom").set_value("all").run()
    assert_clean(at)
    meta = chart(at, "step_tensor")["layout"]["meta"]
    assert not meta["numbers"]


@pytest.mark.parametrize(
    "params",
    [
        {"source": "scratch", "d_model": "2", "n_heads": "2", "n_layers": "1"},  # d_head = 1
        {"source": "scratch", "causal": "1"},
    ],
)
def test_awkward_shapes_walk_without_errors(params):
    at = open_steps(**params, **{"steps.step": "q"})
    first_step(at)
    walk_to_the_end(at)


def test_one_token():
    at = open_steps(text="猫", source="scratch")
    first_step(at)
    walk_to_the_end(at)


def test_neuron_view_sums_to_the_models_score():
    at = open_steps(text="The cat sat on the mat.", **{"steps.section": "neuron"}, query="2")
    values = {m.label: m.value for m in at.metric}
    raw = float(values["Σ_d q_d·k_d"])
    scaled = next(float(v) for k, v in values.items() if k.startswith("÷ √"))
    assert abs(raw / np.sqrt(32) - scaled) < 1e-3
    assert abs(float(values["the model's score"]) - scaled) < 1e-3
    fig = chart(at, "neuron")
    assert fig["layout"]["meta"]["d_head"] == 32
    key = 1 if at.selectbox(key="steps.key").value != 1 else 2
    at.selectbox(key="steps.key").set_value(key).run()
    assert_clean(at)
    assert {m.label: m.value for m in at.metric}["Σ_d q_d·k_d"] != values["Σ_d q_d·k_d"]


def test_neuron_view_shows_a_masked_pair_as_minus_infinity():
    at = open_steps(source="scratch", causal="1", query="0", **{"steps.section": "neuron", "steps.key": "3"})
    values = {m.label: m.value for m in at.metric}
    assert values["the model's score"].startswith("−∞")
    assert values["share after softmax"] == "0.0%"


def test_both_layouts_agree_on_the_text():
    at = open_steps(**{"steps.section": "layouts"})
    values = {m.label: float(m.value) for m in at.metric}
    assert values["largest |separate − fused|"] <= 1e-5
    assert values["largest |fused − the model|"] <= 1e-5
    codes = [c.value for c in at.code]
    assert any("class SeparateQKV" in c for c in codes)
    assert any("class FusedQKV" in c for c in codes)


def fully_masked_script(offset: int) -> None:
    import numpy as np

    from tformer.analysis.walkthrough import walk_layer
    from tformer.model.config import EncoderConfig
    from tformer.ui.views.steps.draw import show_step, step_facts
    from tformer.ui.views.steps.walk import Walk

    rng = np.random.default_rng(0)
    n, d = 4, 8
    acts = {"resid_pre": rng.standard_normal((n, d)).astype(np.float32), "z": np.zeros((n, 2, 4), np.float32)}
    w = {
        "qkv_w": rng.standard_normal((3 * d, d)).astype(np.float32),
        "qkv_b": np.zeros(3 * d, np.float32),
        "o_w": np.eye(d, dtype=np.float32),
        "o_b": np.zeros(d, np.float32),
        **{f"ln{i}_{p}": np.ones(d, np.float32) for i in (1, 2) for p in ("g", "b")},
        "fc1_w": np.eye(d, dtype=np.float32),
        "fc1_b": np.zeros(d, np.float32),
        "fc2_w": np.eye(d, dtype=np.float32),
        "fc2_b": np.zeros(d, np.float32),
    }
    attn_mask = np.tril(np.ones((n, n), dtype=bool))
    attn_mask[2] = False  # query 2 may see no key: a fully masked row
    steps = walk_layer(
        acts, w, n_heads=2, head=0, norm="post", act="relu", eps=1e-5, causal=True, attn_mask=attn_mask
    )
    mask = next(i for i, s in enumerate(steps) if s.key == "mask")
    walk = Walk(tuple(steps), {})
    cfg = EncoderConfig(vocab_size=10, d_model=d, n_heads=2, n_layers=1, causal=True)
    labels = ["a", "b", "c", "d"]
    facts = step_facts(cfg, walk, 0, 0, 2, labels)
    show_step(walk, mask + offset, labels, 2, facts, zoom="window", dim=0)


@pytest.mark.parametrize("offset", [0, 1])  # the mask step, then the softmax step
def test_a_fully_masked_row_is_drawn_not_a_traceback(offset):
    at = AppTest.from_function(fully_masked_script, kwargs={"offset": offset}, default_timeout=60).run()
    assert_clean(at)
    assert len(at.get("plotly_chart")) == 2  # the step's heatmap and the query's row
    row = decode(chart(at, "step_row")["data"][0]["y"])
    assert not np.isfinite(row).any() or not row.any()  # all -inf scores, or all-zero weights
