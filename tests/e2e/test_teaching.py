"""What a class sees on a projector, measured in Chromium: lesson cards of one height, tables
that fit the window, a chart toolbar that covers no title."""

from __future__ import annotations

from .streamlit_driver import exception_boxes, open_page


def boxes(page, selector: str) -> list[dict]:
    """Bounding boxes (x, y, width, height) of every element matching ``selector``."""
    return page.locator(selector).evaluate_all(
        "(els) => els.map((e) => { const r = e.getBoundingClientRect();"
        " return {x: r.x, y: r.y, width: r.width, height: r.height}; })"
    )


def test_the_lesson_cards_are_one_row_of_equal_height(page, probe):
    open_page(page, "")
    cards = boxes(page, "[class*='st-key-lesson_card_']")
    assert len(cards) == 3, cards
    assert max(c["y"] for c in cards) - min(c["y"] for c in cards) < 2, cards  # one row
    heights = [c["height"] for c in cards]
    assert max(heights) - min(heights) < 2, heights
    # each card's Start button sits at its foot: the three buttons on one line
    feet = boxes(page, "[class*='st-key-lesson_card_'] [data-testid='stButton']")
    bottoms = [b["y"] + b["height"] for b in feet]
    assert len(bottoms) == 3 and max(bottoms) - min(bottoms) < 2, feet
    assert exception_boxes(page) == 0 and probe.page_errors == []
