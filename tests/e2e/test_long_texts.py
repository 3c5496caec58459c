"""2,048 tokens in a real browser (issue 22): the from-scratch encoder's Attention page at its
limit, in English and in Chinese, and a page that caps the length, each drawn and screenshot to
artifacts/screenshots/ (attention-2048.png, attention-2048-zh.png, finder-2048.png).

Each shot also checks what the page must show: no error, every chart drawn, the detail heatmap
saying that its cells pool 8 x 8 positions, the capture's memory, and on the capped page the note
that says why it shows the first 512 tokens; in Chinese, no English word drawn.
"""

from __future__ import annotations

from typing import Any

import pytest

from .._i18n_check import english_words, latex_prose
from .streamlit_driver import (
    alert_texts,
    charts,
    drawn_words,
    exception_boxes,
    nav_to,
    open_page,
    scratch_counting_tokenizer,
    screenshot,
    set_text,
    set_widget,
    token_text,
)

LONG = 2048
ZH_TEXT = ("小猫坐在垫子上。" * 256)[:2046]  # one from-scratch token a character: 2,048 with [CLS], [SEP]
TIMEOUT = 120_000


def main_text(page: Any) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def check_drawn(page: Any) -> None:
    assert exception_boxes(page) == 0
    assert not [t for t in alert_texts(page) if "Could not" in t or "无法" in t]
    assert charts(page).count() >= 1
    sizes = charts(page).evaluate_all(
        """(cs) => cs.map((c) => { const s = c.querySelector('.main-svg');
                                   const r = s ? s.getBoundingClientRect() : null;
                                   return r ? Math.min(r.width, r.height) : 0; })"""
    )
    assert min(sizes) >= 100, sizes


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_attention_page_at_2048_tokens(page, probe, lang):
    open_page(page, "attention?source=scratch", timeout=TIMEOUT)
    if lang == "zh":
        set_widget(page, "lang", "中文", timeout=TIMEOUT)
        text = ZH_TEXT
    else:
        text, exact = token_text(LONG, 1, scratch_counting_tokenizer())
        assert exact
    set_text(page, text, timeout=TIMEOUT)
    check_drawn(page)
    assert probe.page_errors == []
    assert page.locator('[data-testid="stAlertContentWarning"]').count() == 0  # 2,048: nothing cut
    shown = main_text(page)
    if lang == "en":
        assert "2,048²" in shown  # the memory of the capture, stated
        assert "cells of 8×8 positions" in " ".join(
            charts(page).first.locator(".xtitle, .ytitle").all_text_contents()
        )
    else:
        assert "2,048²" in shown
        texts, tex = drawn_words(page)
        left = english_words(texts + [w for t in tex for w in latex_prose(t)])
        assert not left, f"English drawn at 2,048 tokens in Chinese: {left}"
    screenshot(page, f"attention-2048{'-zh' if lang == 'zh' else ''}")


def test_a_capped_page_at_2048_tokens_says_why(page):
    open_page(page, "attention?source=scratch", timeout=TIMEOUT)
    text, _ = token_text(LONG, 2, scratch_counting_tokenizer())
    set_text(page, text, timeout=TIMEOUT)
    nav_to(page, "finder", timeout=TIMEOUT)
    check_drawn(page)
    assert "This page shows the first 512 of the 2,048 tokens the model reads" in main_text(page)
    screenshot(page, "finder-2048")
