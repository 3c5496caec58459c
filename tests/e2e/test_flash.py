"""The FlashAttention page in Chromium: next, next, back move the loop's step and the highlighted
tile (read from the tile grid's layout.meta in the page), the tile's numbers change, and no
exception box appears; a screenshot for a person."""

from __future__ import annotations

from urllib.parse import quote

from .streamlit_driver import exception_boxes, mark, open_page, screenshot, wait_idle

TEXT = "The cat sat on the mat because it was warm."  # 13 tokens: 4 x 4 tiles of 4


def grid_meta(page) -> dict | None:
    """The tile grid's layout.meta, as the browser's plotly holds it."""
    return page.evaluate(
        """() => {
            const box = document.querySelector('.st-key-flash_grid');
            const gd = box && box.querySelector('.js-plotly-plot');
            return gd && gd.layout ? gd.layout.meta || null : null;
        }"""
    )


def score_texts(page) -> list[str]:
    """The numbers written in the current tile's score heatmap."""
    return page.evaluate(
        """() => {
            const gd = document.querySelector('.st-key-flash_scores .js-plotly-plot');
            return gd ? Array.from(gd.querySelectorAll('.main-svg text'))
                .map((t) => t.textContent).filter((t) => /^[−-]?[0-9]/.test(t)) : [];
        }"""
    )


def click(page, key: str) -> None:
    m = mark(page)
    page.locator(f".st-key-{key.replace('.', '-')} button").click()
    wait_idle(page, 60_000, since=m)


def tile(meta: dict) -> tuple[int, int, int, int]:
    return meta["q0"], meta["q1"], meta["k0"], meta["k1"]


def test_next_next_back_move_the_step_and_the_highlighted_tile(page, probe):
    open_page(page, f"flash?text={quote(TEXT)}")
    first = grid_meta(page)
    assert first is not None
    assert first["step"] == 0
    assert first["n_steps"] == 16
    assert tile(first) == (0, 4, 0, 4)
    assert page.locator("h3").first.text_content().startswith("Step 1 of 16")
    numbers_first = score_texts(page)
    assert numbers_first

    click(page, "flash.next")
    second = grid_meta(page)
    assert second["step"] == 1
    assert tile(second) == (0, 4, 4, 8)
    assert page.locator("h3").first.text_content().startswith("Step 2 of 16")
    numbers_second = score_texts(page)
    assert numbers_second
    assert numbers_second != numbers_first

    click(page, "flash.next")
    third = grid_meta(page)
    assert third["step"] == 2
    assert tile(third) == (0, 4, 8, 12)
    assert page.locator("h3").first.text_content().startswith("Step 3 of 16")

    click(page, "flash.prev")
    back = grid_meta(page)
    assert back["step"] == 1
    assert tile(back) == tile(second)
    assert page.locator("h3").first.text_content().startswith("Step 2 of 16")
    assert score_texts(page) == numbers_second
    screenshot(page, "flash-step")
    assert exception_boxes(page) == 0
    assert probe.page_errors == []
