"""Predict, then see, in Chromium: the first lesson's first step asks which token "it" looks at,
the heatmap waits; a click on the wrong token's pill and Check gives the hint, a click on
"animal" and Check reveals the heatmap with the query's row and the key outlined."""

from __future__ import annotations

from tformer.ui.lessons import lesson_by_id

from .streamlit_driver import exception_boxes, mark, open_page, screenshot, wait_idle, widget


def _it_step() -> int:
    lesson = lesson_by_id("attention-basics")
    assert lesson is not None
    return next(i for i, s in enumerate(lesson.steps) if s.question and s.question.template == "argmax_key")


IT = _it_step()  # which token does "it" look at? (steps may be added before it)
STEP = f"attention?lesson=attention-basics&lesson_step={IT}"


def click(page, locator) -> None:
    m = mark(page)
    locator.click()
    wait_idle(page, since=m)


def charts(page) -> int:
    return page.locator("[data-testid=stPlotlyChart]").count()


def test_a_token_question_answered_by_clicking_reveals_the_outlined_heatmap(page, probe):
    open_page(page, STEP, timeout=180_000)
    bar = widget(page, "lesson_bar")
    assert 'which token does "it" give the most weight to?' in bar.inner_text()
    assert charts(page) == 0, "the heatmap waits for the answer"
    screenshot(page, "lesson-question-asked")
    pills = widget(page, f"lq.{IT}.answer").locator("button")
    click(page, pills.filter(has_text="street"))
    click(page, widget(page, "lq.check").locator("button"))
    text = bar.inner_text()
    assert "Not quite" in text, text
    assert "Hint" in text, text
    assert charts(page) == 0
    click(page, widget(page, f"lq.{IT}.answer").locator("button").filter(has_text="animal"))
    click(page, widget(page, "lq.check").locator("button"))
    assert "Right: the model's value is 'animal'" in bar.inner_text()
    assert charts(page) >= 1
    # the outline: plotly draws each layout shape as a path in the chart's shape layer
    shapes = page.locator("[data-testid=stPlotlyChart] .layer-above .shapelayer path")
    assert shapes.count() >= 2, shapes.count()
    screenshot(page, "lesson-question-revealed")
    assert exception_boxes(page) == 0
    assert probe.page_errors == []
