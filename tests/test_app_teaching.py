"""Teaching defaults and what a projected page says, under AppTest: the captions fit the model
shown, a link's layer and head are clamped to the model's real shape and say so, the opening
head is one that shows something."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("streamlit")

from .test_app_pages import assert_clean, open_app


def captions(at) -> str:
    return " ".join(c.value for c in at.caption)


def test_a_random_model_grid_caption_says_what_random_heads_show():
    at = open_app("pages/attention.py", text="Birds sing at dawn.", source="scratch")
    assert_clean(at)
    text = captions(at)
    assert "link related words" not in text, text
    assert "look at neighbours" not in text, text
    assert "random" in text
    trained = open_app("pages/attention.py", text="Birds sing at dawn.")
    assert "related words" in captions(trained)  # a trained model keeps the reading hint


def infos(at) -> str:
    return " ".join(i.value for i in at.info)


@pytest.mark.parametrize(("asked", "shown"), [("99", 5), ("10", 5), ("63", 5)])
def test_a_link_layer_beyond_the_model_is_clamped_to_its_shape_and_says_so(asked, shown):
    at = open_app("app.py", text="Birds sing at dawn.", layer=asked, head="40")
    said = infos(at)  # the start page, which knows no model yet
    at.switch_page("pages/attention.py").run()
    assert_clean(at)
    said += " " + infos(at)
    assert "outside" not in said, said  # "outside 0..63", the view's own bound, means nothing here
    assert f"layer {asked}" in said, said
    assert "6 layers" in said, said
    assert f"layer {shown}" in said, said
    assert "head 40" in said, said
    assert "12 heads" in said, said
    assert "head 11" in said, said
    assert (at.selectbox(key="layer").value, at.selectbox(key="head").value) == (shown, 11)
    at.selectbox(key="head").set_value(3).run()
    assert_clean(at)
    assert "layer " + asked not in infos(at)  # said once


def test_a_link_within_the_model_says_nothing_and_a_hostile_one_still_falls_back():
    at = open_app("pages/attention.py", text="Birds sing at dawn.", layer="4", head="2")
    assert_clean(at)
    assert "From the link" not in infos(at)
    assert (at.selectbox(key="layer").value, at.selectbox(key="head").value) == (4, 2)
    at = open_app("app.py", text="Birds sing at dawn.", layer="-3")
    assert_clean(at)
    assert "layer" in infos(at)  # a value that is no layer at all is ignored with a notice


def test_the_zoom_window_labels_are_whole_and_mark_word_pieces():
    from .test_app_steps import chart

    text = "A Transformer reads the whole sentence at once. " * 12  # > 64 tokens: the zoom shows
    at = open_app("pages/layers.py", text=text)
    assert_clean(at)
    zoom = chart(at, "layers_zoom")["layout"]
    for axis in ("xaxis", "yaxis"):
        ticks = [
            t.replace("<b>", "").replace("</b>", "").replace("▶ ", "").strip() for t in zoom[axis]["ticktext"]
        ]
        assert ticks[:4] == ["0 [CLS]", "1 A", "2 Transform", "3 ##er"], ticks[:4]
        assert not [t for t in ticks if "…" in t], ticks


@pytest.mark.parametrize("step", ["q", "raw", "softmax", "ffn_in"])
def test_step_by_step_numbers_are_large_enough_to_read_from_the_back(step):
    from tformer.figures.layout import FULL_WIDTH

    from .test_app_steps import chart

    # 16 tokens: the whole 16 x 16 window has numbers
    text = "old tree near the river the quick brown fox jumps over the lazy dog"
    at = open_app("pages/steps.py", text=text, **{"steps.step": step})
    assert_clean(at)
    fig = chart(at, "step_tensor")
    meta = fig["layout"]["meta"]
    assert meta["numbers"]
    assert meta["width"] == FULL_WIDTH  # drawn for the page's full width
    assert meta["number_font"] >= 16, meta
    cell_w, row_h = meta["plot_px"][0] / meta["cols"], meta["plot_px"][1] / meta["rows"]
    assert row_h >= 1.3 * meta["number_font"], meta
    assert cell_w >= 40, meta


def test_the_color_scale_is_chosen_on_the_page_stated_on_the_chart_and_kept_by_links():
    from .test_app_pages import charts, decode

    at = open_app("pages/attention.py", text="Birds sing at dawn.")
    assert_clean(at)
    assert at.button_group(key="weight_scale").value == "linear"
    at.button_group(key="weight_scale").set_value("log").run()
    assert_clean(at)
    detail = charts(at)[0]
    assert detail["data"][-1]["colorbar"]["title"]["text"] == "weight (log scale)"
    z = decode(detail["data"][-1]["z"])
    assert z.max() <= 0
    assert z.min() >= -4
    assert at.query_params["weight_scale"] == "log"  # the share link holds it
    assert "on the 0-to-1 colors" in captions(at)
    assert "same colors" not in captions(at)  # the grid keeps 0 to 1
    at.switch_page("pages/layers.py").run()  # the choice follows the user
    assert_clean(at)
    assert charts(at)[0]["data"][-1]["colorbar"]["title"]["text"] == "weight (log scale)"
    # a link opens on its scale; scores have no weight scale
    linked = open_app("pages/attention.py", text="Birds sing at dawn.", weight_scale="row")
    assert_clean(linked)
    z = decode(charts(linked)[0]["data"][-1]["z"])
    assert np.allclose(z.max(axis=1), 1.0)
    linked.radio(key="attention.kind").set_value("attn_scores").run()
    assert_clean(linked)
    assert linked.button_group(key="weight_scale").disabled


@pytest.mark.parametrize("scale", ["log", "row"])
@pytest.mark.parametrize("page", ["pages/attention.py", "pages/heads.py", "pages/layers.py"])
def test_the_color_scales_speak_chinese(page, scale):
    from tformer.resources import examples

    from ._i18n_check import english_words, visible_strings

    zh = next(str(e["text"]) for e in examples() if e["lang"] == "zh")
    at = open_app(page, text=zh, lang="zh", weight_scale=scale, layer="9", head="99")
    assert_clean(at)
    left = english_words(visible_strings(at))
    assert not left, left


ANIMAL = "The animal didn't cross the street because it was too tired."


def shown_head(at) -> tuple[int, int]:
    return at.selectbox(key="layer").value, at.selectbox(key="head").value


def test_the_first_page_opens_on_the_examples_named_head_and_says_what_it_shows():
    at = open_app("pages/attention.py")  # the default text is the first example
    assert_clean(at)
    assert at.text_area(key="text").value == ANIMAL
    assert shown_head(at) == (3, 1)  # named in assets/examples.json; layer 0 head 0 is diffuse
    assert "layer 3, head 1" in captions(at), captions(at)
    assert "0.68" in captions(at), captions(at)
    assert "layer" not in at.query_params  # nothing chosen: a link opens where this one does


def test_another_text_opens_on_the_models_clearest_head_and_a_choice_wins():
    at = open_app("pages/attention.py", text="Birds sing at dawn.")
    assert_clean(at)
    assert shown_head(at) == (0, 2)  # the head finder's previous-token head (1.00 on the examples)
    assert "previous token" in captions(at)
    at.selectbox(key="layer").set_value(5).run()  # a layer chosen, no head: that layer's clearest
    assert_clean(at)
    assert at.selectbox(key="layer").value == 5
    assert "head" not in at.query_params
    at.selectbox(key="head").set_value(7).run()
    at.text_area(key="text").input(ANIMAL).run()  # the user's own choice wins over the example's
    assert_clean(at)
    assert shown_head(at) == (5, 7)
    assert "0.68" not in captions(at)
    linked = open_app("pages/attention.py", text=ANIMAL, layer="1", head="4")  # and so does a link's
    assert shown_head(linked) == (1, 4)


@pytest.mark.parametrize("page", ["pages/steps.py", "pages/qkv.py", "pages/flash.py", "pages/layers.py"])
def test_every_page_opens_on_the_same_head(page):
    at = open_app(page)
    assert_clean(at)
    assert at.selectbox(key="layer").value == 3
    if page != "pages/layers.py":
        assert at.selectbox(key="head").value == 1


def test_a_random_model_opens_on_its_clearest_head_without_error():
    at = open_app("pages/attention.py", text="Birds sing at dawn.", source="scratch", n_layers="3")
    assert_clean(at)
    layer, head = shown_head(at)
    assert 0 <= layer < 3
    assert 0 <= head < 4


def test_the_sparse_time_table_is_turned_to_fit_the_page():
    from tformer.ui.tables import table_px

    from .test_app_costs import run_section

    at = run_section("sparse", text="The cat sat on the mat.")
    shown = at.dataframe[0].value
    assert shown.columns[0] == "n"
    assert "stride s" in set(shown["n"])  # a column per length
    rows = shown.to_dict("records")
    assert table_px(rows, {}) <= 940
