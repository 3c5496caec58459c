"""2,048 tokens in the app (issue 22): the from-scratch encoder reads them and the Attention page
draws them (pooled, and saying so) with the capture's memory stated; a capture over the memory
limit is refused before anything runs; the pages that cap the length say so; MiniLM says why it
keeps 512. In English and in Chinese, on tiny from-scratch shapes so that each run is quick."""

from __future__ import annotations

import pytest

pytest.importorskip("streamlit")

from tformer.i18n import tr
from tformer.ui.registry import CAPPED_TOKENS, PAGES

from ._i18n_check import english_words, visible_strings
from .test_app_pages import assert_clean, charts, open_app

ATTENTION = "pages/attention.py"
TINY = {"source": "scratch", "n_layers": "1", "n_heads": "2", "d_model": "16"}
CAPPED = [p for p in PAGES if p.max_tokens is not None]


def words(n_tokens: int) -> str:
    """A text of exactly ``n_tokens`` from-scratch tokens: [CLS], n - 2 words, [SEP]."""
    return " ".join(["word"] * (n_tokens - 2))


def captions(at) -> list[str]:
    return [c.value for c in at.caption]


def test_the_attention_page_draws_2048_tokens_pooled_and_states_the_memory():
    at = open_app(ATTENTION, text=words(2048), **TINY)
    assert_clean(at)
    assert not at.warning  # nothing was cut: 2,048 is the from-scratch encoder's limit
    detail = charts(at)[0]
    assert detail["layout"]["meta"]["n_pos"] == 2048
    assert detail["layout"]["meta"]["block"] == 8  # 2,048 positions in 256 cells a side
    # the axes say that each cell is a block of positions
    assert tr(", cells of {block}×{block} positions", block=8) in detail["layout"]["xaxis"]["title"]["text"]
    step = detail["layout"]["meta"]["tick_step"]
    pooled = [c for c in captions(at) if c.startswith("**2,048 tokens in 256 × 256 cells.**")]
    assert pooled == [
        "**2,048 tokens in 256 × 256 cells.** Each cell stands for 8 × 8 positions: their largest weight, "
        f"or their score farthest from 0; one label every {step} tokens. Hover a cell for its positions; "
        "Across layers zooms into a window at full resolution."
    ]
    memory = next(c for c in captions(at) if c.startswith("Memory of this capture"))
    # 1 layer x 2 heads x 2,048² floats: 32 MiB for the weights, 32 for the scores, 64 while running
    assert "weights [layer, head, query, key]: 1 × 2 × 2,048² × 4 bytes = 32 MiB" in memory
    assert "one layer's scores and weights: 2 × 2 × 2,048² × 4 bytes = 64 MiB" in memory
    assert "the limit for one capture is 768 MiB" in memory
    limit = [c.value for c in at.sidebar.caption if c.value.startswith("At most")]
    assert limit == [
        "At most 2,048 tokens: sinusoidal positions work at any length; 2,048 keeps one capture within "
        "the server's memory limit."
    ]


def test_a_head_switch_at_2048_tokens_redraws_the_head():
    at = open_app(ATTENTION, text=words(2048), **TINY)
    before = charts(at)[0]["layout"]["title"]["text"]
    head = at.selectbox(key="head")
    head.set_value(1 - head.value).run()
    assert_clean(at)
    after = charts(at)[0]
    assert after["layout"]["title"]["text"] != before
    assert after["layout"]["meta"]["n_pos"] == 2048


def test_the_guard_refuses_a_capture_over_the_limit_before_running_it(monkeypatch):
    """2 layers x 32 heads (d_head 2) at 1,100 tokens: 591 MiB of weights and scores kept and
    295 MiB more while running, past the 768 MiB limit. Nothing may be captured."""
    import tformer.ui.caches as caches

    at = open_app(ATTENTION, text="a short text", source="scratch", n_layers="2", n_heads="32")
    assert_clean(at)

    def refuse(*args, **kwargs):
        raise AssertionError("the capture ran although the guard should have refused it")

    monkeypatch.setattr(caches, "capture_ids", refuse)
    at.text_area(key="text").input(words(1100)).run()
    assert not at.exception
    errors = " ".join(e.value for e in at.error)
    n, square = 1100, 2 * 32 * 1100**2  # [layer, head, query, key]
    kept = 2 * square + 4 * 2 * n * 64 + n * 64  # weights, scores; q, k, v, z; the output
    peak = 4 * (kept + square) / 2**20  # and one layer's scores and weights while it runs
    assert f"for 1,100 tokens would take {peak:,.0f} MiB at the peak of the run" in errors
    assert "weights [layer, head, query, key]: 2 × 32 × 1,100² × 4 bytes = 295 MiB" in errors
    assert "one layer's scores and weights: 2 × 32 × 1,100² × 4 bytes = 295 MiB" in errors
    assert "the limit for one capture is 768 MiB" in errors
    assert not at.get("plotly_chart")


@pytest.mark.slow
@pytest.mark.parametrize("spec", CAPPED, ids=[p.key for p in CAPPED])
def test_a_page_that_caps_the_length_shows_the_first_tokens_and_says_why(spec):
    at = open_app(spec.script, text=words(600), **TINY)
    assert_clean(at)
    notes = [i.value for i in at.info if i.value.startswith("This page shows the first")]
    why = tr(spec.max_tokens_why, limit=spec.max_tokens, n=600)
    assert notes == [
        f"This page shows the first {CAPPED_TOKENS} of the 600 tokens the model reads: {why} The "
        "Attention page shows all 600."
    ]


def test_a_capped_page_under_its_limit_shows_the_whole_text():
    at = open_app(CAPPED[0].script, text=words(CAPPED_TOKENS), **TINY)
    assert_clean(at)
    assert not [i.value for i in at.info if i.value.startswith("This page shows the first")]


@pytest.mark.slow
def test_minilm_says_it_reads_512_tokens_and_why():
    at = open_app(ATTENTION, text="The cat sat on the mat.")
    assert_clean(at)
    limit = [c.value for c in at.sidebar.caption if c.value.startswith("At most")]
    assert limit == [
        "At most 512 tokens: this model learned one position vector for each of its first 512 positions, "
        "and has none beyond. The from-scratch encoder, with sinusoidal positions, reads up to 2,048."
    ]
    at.text_area(key="text").input(" ".join(["word"] * 600)).run()
    assert any("this model reads at most 512" in w.value for w in at.warning)


ZH_LONG = ("小猫坐在垫子上。" * 256)[:2046]  # one from-scratch token a character: 2,048 with [CLS], [SEP]


@pytest.mark.parametrize("page", [ATTENTION, CAPPED[0].script])
def test_2048_tokens_in_chinese_leave_no_english(page):
    at = open_app(page, text=ZH_LONG, lang="zh", **TINY)
    assert_clean(at)
    assert not at.warning  # exactly the limit: nothing cut
    shown = visible_strings(at)
    left = sorted(set(english_words(shown, []).values()))
    assert not left, f"English left on {page} at 2,048 tokens: {left}"
    if page == ATTENTION:
        assert any("2,048²" in s and "MiB" in s for s in shown)  # the memory, said in Chinese
    else:
        assert any(s.startswith("本页只显示") for s in shown)
