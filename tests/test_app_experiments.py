"""The experiment pages under AppTest: why √d_k, masks, across layers (with the zoom of long
texts), the query/key space and the head finder."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("streamlit")

from .test_app_pages import assert_clean, decode, open_app

LONG = "the quick brown fox jumps over the lazy dog " * 60  # truncated to 512 tokens


def chart(at, key: str) -> dict:
    found = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if key in (c.proto.id or "")]
    assert found, f"no chart {key!r}"
    return found[0]


def heatmap_z(fig: dict) -> np.ndarray:
    return next(
        decode(t["z"]) for t in fig["data"] if t.get("type") == "heatmap" and decode(t["z"]).dtype.kind == "f"
    )


def test_scaling_at_tau_1_is_the_model_and_a_low_tau_sharpens():
    from tformer import capture_text, load_pretrained

    at = open_app("pages/scaling.py", text="The cat sat on the mat.", layer="0", head="0")
    assert_clean(at)
    model, tok = load_pretrained("minilm")
    cap = capture_text(model, tok, "The cat sat on the mat.")
    assert np.allclose(heatmap_z(chart(at, "tempered")), cap.pattern[0, 0], atol=1e-5)
    chart(at, "sweep")
    mean_max = float(np.mean(decode(chart(at, "row_stats")["data"][1]["y"])))
    at.select_slider(key="scaling.tau").set_value("0.1").run()
    assert_clean(at)
    assert float(np.mean(decode(chart(at, "row_stats")["data"][1]["y"]))) > mean_max
    at.toggle(key="scaling.scaled").set_value(False).run()
    assert_clean(at)


def test_a_custom_mask_blocks_its_cells_and_a_fully_masked_row_is_zero():
    at = open_app(
        "pages/masks.py",
        text="The cat sat on the mat today.",
        **{"masks.kind": "custom", "masks.spec": "3:5, 6:*"},
    )
    assert_clean(at)
    after = decode(chart(at, "mask_patterns")["data"][1]["z"])
    assert after[3, 5] == 0
    assert not after[6].any()
    assert np.allclose(after[[0, 1, 2, 3, 4, 5, 7]].sum(-1), 1, atol=1e-5)
    assert any("may attend to nothing" in c.value for c in at.caption)


@pytest.mark.parametrize("spec", ["<script>alert(1)</script>", "99:1", "1:2:3", "9" * 40 + ":1"])
def test_a_bad_custom_mask_is_explained(spec):
    at = open_app("pages/masks.py", **{"masks.kind": "custom", "masks.spec": spec})
    assert not at.exception
    assert at.error
    assert "cannot be used" in at.error[0].value


@pytest.mark.parametrize("kind", ["none", "causal", "window", "padding"])
@pytest.mark.parametrize("source", ["minilm", "scratch"])
def test_every_mask_draws(kind, source):
    at = open_app("pages/masks.py", source=source, **{"masks.kind": kind})
    assert_clean(at)
    assert at.get("plotly_chart")
    if kind == "padding":
        moved = next(c.value for c in at.caption if "at most" in c.value)
        assert float(moved.split("at most ")[1].split(" ")[0]) < 1e-3


def test_rollout_rows_sum_to_one_and_long_texts_zoom_and_jump():
    at = open_app(
        "pages/layers.py", text="The cat sat on the mat.", **{"layers.combine": "rollout", "layer": "5"}
    )
    assert_clean(at)
    z = heatmap_z(chart(at, "layers_matrix"))
    assert np.allclose(z.sum(-1), 1, atol=1e-4)
    at = open_app("pages/layers.py", text=LONG + " zebra")
    assert_clean(at)
    chart(at, "layers_zoom")
    at = open_app("pages/layers.py", text="alpha " * 300 + "zebra " + "beta " * 100)
    at.text_input(key="layers.find").input("zebra").run()
    assert_clean(at)
    assert at.number_input(key="layers.q0").value > 250
    meta = chart(at, "layers_zoom")["layout"]["meta"]
    assert meta["highlight"] is not None


def test_query_key_space_draws_and_translates():
    at = open_app("pages/qk_space.py", text="The cat sat on the mat.")
    assert_clean(at)
    chart(at, "qk_space")
    at.toggle(key="qk_space.translate").set_value(True).run()
    assert_clean(at)


def test_the_finder_surfaces_minilms_previous_token_head_and_opens_it():
    at = open_app("pages/finder.py", **{"finder.over": "examples"})
    assert_clean(at)
    first = next(b for b in at.button if b.key and b.key.startswith("finder.open."))
    assert first.key == "finder.open.0.2", first.label
    assert float(first.label.rsplit("· ", 1)[1]) >= 0.9
    first.click().run()
    assert_clean(at)
    assert at.session_state["view"].layer == 0
    assert at.session_state["view"].head == 2


EXPERIMENTS = [
    ("pages/scaling.py", {}),
    ("pages/masks.py", {"masks.kind": "custom", "masks.spec": "1:*"}),  # a fully masked row
    ("pages/masks.py", {"masks.kind": "window"}),
    ("pages/masks.py", {"masks.kind": "padding"}),
    ("pages/layers.py", {"layers.combine": "rollout"}),
    ("pages/layers.py", {"layers.combine": "head"}),
    ("pages/qk_space.py", {"qk_space.translate": "1"}),
    ("pages/finder.py", {"finder.role": "duplicate"}),
    ("pages/compare.py", {"compare.what": "heads"}),
]
CASES = {
    "one-token": {"source": "scratch", "text": "猫"},
    "512-tokens": {"text": LONG},
    "causal": {"source": "scratch", "causal": "1"},
    "one-head": {"source": "scratch", "n_heads": "1", "n_layers": "1"},
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize(("page", "view"), EXPERIMENTS, ids=lambda v: v if isinstance(v, str) else None)
def test_every_experiment_view_handles_awkward_inputs(page, view, case):
    at = open_app(page, **{**view, **CASES[case]})
    assert_clean(at)
    assert at.get("plotly_chart") or at.info, (page, view, case)
