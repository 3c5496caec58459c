"""The Train page's two experiments in Chromium, with the app's real settings: each section opens
with its formula drawn, its button starts a background run whose progress moves while the page
polls, the stop button ends it, and what was kept is shown (the overfitting grid's first models
plotted, with how many of the grid are done)."""

from __future__ import annotations

import re
import time

from .streamlit_driver import alert_texts, charts, exception_boxes, mark, open_page, screenshot, wait_idle


def _progress(page, pattern: str) -> int:
    text = " ".join(page.locator('[data-testid="stProgress"], [data-testid="stAlert"]').all_inner_texts())
    found = re.search(pattern, text)
    return int(found.group(1)) if found else -1


def _moves(page, pattern: str, timeout_s: float) -> list[int]:
    """The numbers the progress line showed until two different positive ones were seen."""
    seen: list[int] = []
    end = time.monotonic() + timeout_s
    while time.monotonic() < end and len({s for s in seen if s > 0}) < 2:
        seen.append(_progress(page, pattern))
        page.wait_for_timeout(700)
    return seen


def _start_then_stop(page, key: str) -> None:
    m = mark(page)
    page.locator(f".st-key-{key} button").click()
    wait_idle(page, 60_000, since=m)
    assert page.locator(f".st-key-{key} button").is_disabled()  # a second start waits for this one


def test_the_overfitting_grid_trains_in_the_background_and_stops(page, probe):
    open_page(page, "train?train.section=overfit&train.overfit_seeds=1")
    assert page.locator(".katex").count() >= 1  # the gap's formula
    assert charts(page).count() == 0
    screenshot(page, "train-overfit-before")
    _start_then_stop(page, "train-overfit-start")
    seen = _moves(page, r"training model (\d+) of 25", 180)
    assert len({s for s in seen if s > 0}) >= 2, f"the grid's progress did not move: {seen}"
    page.wait_for_function("() => document.querySelectorAll('[data-testid=stPlotlyChart]').length > 0")
    screenshot(page, "train-overfit-running")
    m = mark(page)
    page.locator(".st-key-train-overfit-start-stop button").click()
    wait_idle(page, 60_000, since=m)
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=stAlert]')]"
        ".some((a) => /models trained: press the button/.test(a.innerText))",
        timeout=60_000,
    )
    kept = next(t for t in alert_texts(page) if "models trained" in t)
    done = int(re.search(r"(\d+) of 25 models trained", kept).group(1))
    assert 1 <= done < 25, kept
    assert charts(page).count() == 1
    assert not page.locator(".st-key-train-overfit-start button").is_disabled()  # it can go on
    assert exception_boxes(page) == 0
    assert probe.page_errors == []


def test_mixed_precision_trains_in_the_background_and_stops(page, probe):
    open_page(page, "train?train.section=precision")
    assert page.locator(".katex").count() >= 1  # the scaler's rule
    assert "bfloat16" in page.inner_text("body")  # the button names what it compares
    screenshot(page, "train-precision-before")
    _start_then_stop(page, "train-precision-start")
    seen = _moves(page, r"update (\d+) of \d+", 120)
    assert len({s for s in seen if s > 0}) >= 2, f"the comparison's progress did not move: {seen}"
    m = mark(page)
    page.locator(".st-key-train-precision-start-stop button").click()
    wait_idle(page, 60_000, since=m)
    page.wait_for_function(
        "() => !document.querySelector('.st-key-train-precision-start button').disabled", timeout=60_000
    )
    assert charts(page).count() == 0  # a stopped comparison keeps nothing half-measured
    assert exception_boxes(page) == 0
    assert probe.page_errors == []
