"""The FlashAttention page under AppTest: it opens on a text, steps forward to the end and back,
ends with the model's own z matched to ≤ 1e-5 and the memory sentence; the block sizes change the
number of steps; and the awkward cases (1 token, 512 tokens, a causal from-scratch model,
d_head = 1) draw without errors."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from .test_app_pages import assert_clean, open_app
from .test_app_steps import chart

FLASH = "pages/flash.py"
TEXT = "The cat sat on the mat because it was warm."  # 13 tokens with [CLS] and [SEP]


def open_flash(text: str | None = TEXT, **params: str) -> AppTest:
    at = open_app(FLASH, text=text, **params)
    assert_clean(at)
    return at


def meta(at: AppTest) -> dict:
    return chart(at, "flash_grid")["layout"]["meta"]


def equality_line(at: AppTest) -> str | None:
    lines = [s.value for s in at.success if "largest difference" in s.value]
    return lines[0] if lines else None


def difference(line: str) -> float:
    return float(line.rsplit("difference ", 1)[1])


def go_to_end(at: AppTest) -> int:
    """Press "next" until it is disabled; check each step's grid on the way. The steps seen."""
    seen = 1
    while not at.button(key="flash.next").disabled:
        at.button(key="flash.next").click().run()
        assert_clean(at)
        seen += 1
        assert meta(at)["shown"] == seen
    return seen


def test_steps_forward_to_the_end_and_back():
    at = open_flash()
    m = meta(at)
    assert m["step"] == 0
    assert m["shown"] == 1
    assert (m["block_q"], m["block_k"]) == (4, 4)
    assert m["n_steps"] == 16
    assert m["tiles"] == [4, 4]  # 13 tokens in tiles of 4
    assert at.button(key="flash.prev").disabled
    assert equality_line(at) is None
    for key in ("flash_grid", "flash_scores", "flash_p", "flash_rows", "flash_out"):
        chart(at, key)
    assert at.latex
    assert any("def flash_steps" in c.value for c in at.code)
    assert at.subheader[0].value.startswith("Step 1 of 16")

    assert go_to_end(at) == 16
    m = meta(at)
    assert (m["i"], m["j"], m["q0"], m["q1"], m["k0"], m["k1"]) == (3, 3, 12, 13, 12, 13)
    line = equality_line(at)
    assert line is not None
    assert "blocks.0.attn.hook_z" in line
    assert difference(line) <= 1e-5
    memory = [md.value for md in at.markdown if md.value.startswith("**Memory.**")]
    assert memory
    assert "13 × 13" in memory[0]

    at.button(key="flash.prev").click().run()
    assert_clean(at)
    assert meta(at)["shown"] == 15
    assert equality_line(at) is None
    at.button(key="flash.prev").click().run()
    assert meta(at)["step"] == 13


def test_block_sizes_change_the_number_of_steps():
    at = open_flash()
    at.selectbox(key="flash.block_q").set_value(2).run()
    assert_clean(at)
    assert meta(at)["n_steps"] == 7 * 4
    assert meta(at)["tiles"] == [7, 4]
    at.selectbox(key="flash.block_k").set_value(16).run()
    assert_clean(at)
    assert meta(at)["n_steps"] == 7
    at.slider(key="flash.step").set_value(7).run()  # the last step
    assert_clean(at)
    assert difference(equality_line(at)) <= 1e-5
    # larger tiles than the text: one step, no slider
    at.selectbox(key="flash.block_q").set_value(64).run()
    assert_clean(at)
    assert meta(at)["n_steps"] == 1
    assert not at.slider
    assert difference(equality_line(at)) <= 1e-5


def test_a_step_from_the_link_is_clamped_to_the_steps():
    at = open_flash(**{"flash.step": "999", "flash.block_q": "8", "flash.block_k": "8"})
    assert meta(at)["shown"] == meta(at)["n_steps"] == 4
    assert equality_line(at) is not None


@pytest.mark.parametrize("source", ["minilm", "scratch"])
def test_one_token_of_text(source):
    text = "cat" if source == "minilm" else "猫"
    at = open_flash(text=text, source=source)
    assert meta(at)["n_steps"] == 1  # [CLS], the token, [SEP]: one tile of 4
    assert at.subheader[0].value.startswith("Step 1 of 1: query tile 0 (tokens 0–2)")
    assert difference(equality_line(at)) <= 1e-5
    at.selectbox(key="flash.block_q").set_value(2).run()
    at.selectbox(key="flash.block_k").set_value(2).run()
    assert meta(at)["tiles"] == [2, 2]
    assert go_to_end(at) == 4
    assert difference(equality_line(at)) <= 1e-5


def test_512_tokens():
    at = open_flash(text="word " * 600, **{"flash.block_q": "64", "flash.block_k": "64"})
    m = meta(at)
    assert m["tiles"] == [8, 8]
    assert m["n_steps"] == 64
    at.slider(key="flash.step").set_value(64).run()
    assert_clean(at)
    assert difference(equality_line(at)) <= 1e-5
    memory = next(md.value for md in at.markdown if md.value.startswith("**Memory.**"))
    assert "512 × 512" in memory
    assert "262,144" in memory
    grid = chart(at, "flash_grid")
    assert len(grid["data"][0]["y"]) == 9  # tile edges, not 512 rows


def test_causal_from_scratch_model_skips_the_masked_tiles():
    at = open_flash(source="scratch", causal="1", n_layers="1")
    m = meta(at)
    assert m["skipped"] == 6  # 4 x 4 tiles, the 6 above the diagonal
    at.slider(key="flash.step").set_value(2).run()  # query tile 0, key tile 1: masked
    assert_clean(at)
    assert any("skips it" in md.value for md in at.markdown)
    at.slider(key="flash.step").set_value(16).run()
    assert difference(equality_line(at)) <= 1e-5


def test_d_head_one():
    at = open_flash(source="scratch", d_model="2", n_heads="2", n_layers="1", head="1")
    at.slider(key="flash.step").set_value(meta(at)["n_steps"]).run()
    assert_clean(at)
    assert difference(equality_line(at)) <= 1e-5
    assert re.search(r"d_k = 1\b", " ".join(c.value for c in at.caption))


def test_empty_text_shows_the_frames_message():
    at = open_app(FLASH, text="")
    assert not at.exception
    assert at.info
    assert not at.get("plotly_chart")


@pytest.mark.parametrize("step", ["1", "2", "8", "999"])  # first tile, skipped, a later one, the end
def test_every_kind_of_step_in_chinese_has_no_english_left(step):
    from tformer.resources import examples

    from ._i18n_check import english_words, visible_strings

    text = next(str(e["text"]) for e in examples() if e["lang"] == "zh")
    at = open_flash(text=text, lang="zh", source="scratch", causal="1", **{"flash.step": step})
    assert not english_words(visible_strings(at)), english_words(visible_strings(at))
    if step == "999":
        assert at.success
        assert "最大差值" in at.success[0].value


def test_tiles_scale_with_the_length_and_a_chosen_size_stays():
    # 470 words make 472 tokens: 4-token tiles would take 118 x 118 = 13,924 steps
    at = open_flash(text="word " * 470)
    m = meta(at)
    assert m["n_steps"] <= 64, m
    assert (m["block_q"], m["block_k"]) == (64, 64), m
    assert at.subheader[0].value.startswith(f"Step 1 of {m['n_steps']}:")
    assert at.selectbox(key="flash.block_q").value == 0  # "auto", which says its size
    assert at.selectbox(key="flash.block_q").format_func(0) == "auto: 64"
    at.selectbox(key="flash.block_q").set_value(32).run()  # the user's own choice wins
    assert_clean(at)
    assert (meta(at)["block_q"], meta(at)["block_k"]) == (32, 64)
    at.text_area(key="text").input("word " * 200).run()
    assert_clean(at)
    assert (meta(at)["block_q"], meta(at)["block_k"]) == (32, 32)  # k follows the new length
    assert at.query_params["flash.block_q"] == "32"
    assert "flash.block_k" not in at.query_params
    at.selectbox(key="flash.block_q").set_value(0).run()  # and back to auto
    assert_clean(at)
    assert meta(at)["block_q"] == 32
    assert "flash.block_q" not in at.query_params
