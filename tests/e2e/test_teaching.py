"""What a class sees on a projector, measured in Chromium: lesson cards of one height, tables
that fit the window, a chart toolbar that covers no title."""

from __future__ import annotations

from tformer.ui.lessons import lessons

from .streamlit_driver import exception_boxes, open_page, wait_idle


def boxes(page, selector: str) -> list[dict]:
    """Bounding boxes (x, y, width, height) of every element matching ``selector``."""
    return page.locator(selector).evaluate_all(
        "(els) => els.map((e) => { const r = e.getBoundingClientRect();"
        " return {x: r.x, y: r.y, width: r.width, height: r.height}; })"
    )


def test_the_lesson_cards_are_one_row_of_equal_height(page, probe):
    open_page(page, "")
    cards = boxes(page, "[class*='st-key-lesson_card_']")
    assert len(cards) == len(lessons()), cards
    assert max(c["y"] for c in cards) - min(c["y"] for c in cards) < 2, cards  # one row
    heights = [c["height"] for c in cards]
    assert max(heights) - min(heights) < 2, heights
    # each card's Start button sits at its foot: the buttons on one line
    feet = boxes(page, "[class*='st-key-lesson_card_'] [data-testid='stButton']")
    bottoms = [b["y"] + b["height"] for b in feet]
    assert len(bottoms) == len(lessons()), feet
    assert max(bottoms) - min(bottoms) < 2, feet
    assert exception_boxes(page) == 0
    assert probe.page_errors == []


def table_overflow(page, index: int = 0) -> dict | None:
    """How wide the page's ``index``-th st.dataframe's content is against the box it is shown
    in (px); None when there is none. (A dataframe's key gives its element no class.)"""
    return page.evaluate(
        """(index) => {
            const box = document.querySelectorAll('[data-testid=stDataFrame]')[index];
            const scroller = box && box.querySelector('.dvn-scroller');
            if (!scroller) return null;
            return {content: scroller.scrollWidth, shown: scroller.clientWidth,
                    content_h: scroller.scrollHeight, shown_h: scroller.clientHeight};
        }""",
        index,
    )


def test_the_precision_table_fits_a_1400_px_window(page, probe):
    open_page(page, "precision?text=Birds%20sing%20at%20dawn.", timeout=180_000)
    # the times and the comparisons the first run left to the server's worker arrive by the
    # page's own polling, in this browser, with no reload
    page.wait_for_function(
        "() => document.body.innerText.includes('Forward time:')"
        " && !document.body.innerText.includes('Still working in the background')",
        timeout=120_000,
    )
    wait_idle(page)
    size = table_overflow(page, 0)
    assert size is not None, "no precision table"
    assert size["content"] <= size["shown"] + 1, size  # nothing hidden to the right
    assert size["content_h"] <= size["shown_h"] + 1, size  # nor below
    assert exception_boxes(page) == 0
    assert probe.page_errors == []


def test_the_chart_toolbar_covers_no_panel_title_of_the_sparse_masks(page, probe):
    open_page(page, "costs?costs.section=sparse&text=Birds%20sing%20at%20dawn.", timeout=180_000)
    chart = page.locator("[data-testid=stPlotlyChart]").first
    chart.hover()  # plotly shows its toolbar while the pointer is over the chart
    page.wait_for_timeout(500)
    bar = boxes(page, "[data-testid=stPlotlyChart] .modebar")
    titles = chart.locator(".annotation-text").evaluate_all(
        "(els) => els.map((e) => { const r = e.getBoundingClientRect();"
        " return {x: r.x, y: r.y, width: r.width, height: r.height, text: e.textContent}; })"
    )
    assert bar, (bar, titles)
    assert len(titles) == 3, (bar, titles)
    m = bar[0]
    assert m["width"] > 0, m
    assert m["height"] > 0, m
    for t in titles:
        apart = (
            t["x"] >= m["x"] + m["width"] or t["x"] + t["width"] <= m["x"]
            or t["y"] >= m["y"] + m["height"] or t["y"] + t["height"] <= m["y"]
        )  # fmt: skip
        assert apart, (t, m)
    assert exception_boxes(page) == 0
    assert probe.page_errors == []


def test_flash_at_472_tokens_opens_on_tiles_sized_for_it(page, probe):
    from urllib.parse import quote

    from .streamlit_driver import token_text, widget_value

    text, exact = token_text(472, variant=3)
    assert exact
    open_page(page, f"flash?text={quote(text)}", timeout=180_000)
    assert widget_value(page, "flash.block_q") == widget_value(page, "flash.block_k") == "auto: 64"
    assert page.locator("h3").filter(has_text="Step 1 of 64:").count() == 1
    assert exception_boxes(page) == 0
    assert probe.page_errors == []
