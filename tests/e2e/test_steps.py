"""The step-by-step page in Chromium: a new query token moves the outlined row and changes the
numbers of the query's row; the back / next buttons walk the steps; a screenshot for a person."""

from __future__ import annotations

from urllib.parse import quote

from .streamlit_driver import (
    exception_boxes,
    mark,
    open_page,
    screenshot,
    set_widget,
    wait_idle,
    widget_value,
)

TEXT = "The cat sat on the mat because it was warm."


def chart_state(page, key: str) -> dict:
    """What a keyed chart shows: the layout's meta, the y tick labels, and every text the SVG
    draws (the cells' and bars' numbers among them)."""
    return page.evaluate(
        """(key) => {
            const box = document.querySelector('.st-key-' + key);
            const gd = box && box.querySelector('.js-plotly-plot');
            if (!gd || !gd.layout) return null;
            const ticks = Array.from(gd.querySelectorAll('.ytick text')).map((t) => t.textContent);
            const texts = Array.from(gd.querySelectorAll('.main-svg text')).map((t) => t.textContent);
            return {meta: gd.layout.meta || {}, yticks: ticks, texts: texts};
        }""",
        key,
    )


def test_a_new_query_token_moves_the_outlined_row_and_changes_the_numbers(page, probe):
    open_page(page, f"steps?text={quote(TEXT)}&steps.step=softmax")
    before, row_before = chart_state(page, "step_tensor"), chart_state(page, "step_row")
    assert before["meta"]["highlight"] == 0
    assert before["meta"]["numbers"]
    assert [t for t in before["yticks"] if t.startswith("▶")] == ["▶ [CLS]"]
    assert widget_value(page, "query").startswith("0 ")
    set_widget(page, "query", "2 · cat")
    after, row_after = chart_state(page, "step_tensor"), chart_state(page, "step_row")
    assert after["meta"]["highlight"] == 2
    assert [t for t in after["yticks"] if t.startswith("▶")] == ["▶ cat"]
    numbers = [t for t in row_after["texts"] if t.strip() and t[0] in "0123456789−-."]
    assert numbers
    assert numbers != [t for t in row_before["texts"] if t.strip() and t[0] in "0123456789−-."]
    screenshot(page, "steps-query")
    assert exception_boxes(page) == 0
    assert probe.page_errors == []


def test_back_and_next_walk_the_steps(page, probe):
    open_page(page, f"steps?text={quote(TEXT)}&steps.step=raw")
    header = page.locator("h3").first.text_content()
    assert "q·k" in header
    m = mark(page)
    page.locator(".st-key-steps-next button").click()
    wait_idle(page, 60_000, since=m)
    assert "÷ √d_k" in page.locator("h3").first.text_content()
    m = mark(page)
    page.locator(".st-key-steps-prev button").click()
    wait_idle(page, 60_000, since=m)
    assert page.locator("h3").first.text_content() == header
    assert exception_boxes(page) == 0
    assert probe.page_errors == []
