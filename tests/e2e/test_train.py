"""The Train page in Chromium: a run starts, its progress moves while the page polls and goes on
across a page switch, Stop ends it, and the saved model opens on the Attention page with the
task's symbols as tokens; "Open this model" and the sidebar's run box open a trained run with its
own task input."""

from __future__ import annotations

import re
import time

from .streamlit_driver import (
    alert_texts,
    all_ticktext,
    axis_ticktext,
    charts,
    exception_boxes,
    mark,
    nav_to,
    open_page,
    screenshot,
    selectbox_options,
    selectbox_value,
    set_widget,
    text_value,
    wait_idle,
    widget_value,
)


def progress_step(page) -> int:
    text = " ".join(page.locator('[data-testid="stProgress"]').all_inner_texts())
    found = re.search(r"update (\d+)", text)
    return int(found.group(1)) if found else -1


def test_a_run_progresses_stops_and_opens_on_the_attention_page(page, probe):
    open_page(page, "train?train.task=copy&train.steps=20000&train.stop_at_99=0")
    m = mark(page)
    page.locator(".st-key-train-start button").click()
    wait_idle(page, 60_000, since=m)
    seen = []
    end = time.monotonic() + 30
    while time.monotonic() < end and len(set(seen)) < 3:
        seen.append(progress_step(page))
        page.wait_for_timeout(700)
    assert len({s for s in seen if s > 0}) >= 2, f"the progress did not move: {seen}"
    screenshot(page, "train-running")
    before = max(seen)
    nav_to(page, "attention", timeout=60_000)  # the run goes on while another page is open
    page.wait_for_timeout(1500)
    nav_to(page, "train", timeout=60_000)
    page.wait_for_timeout(1200)
    assert progress_step(page) > before, "the run was lost or stalled by a page switch"
    page.locator(".st-key-train-stop button").click()
    page.locator('[data-testid="stAlertContentSuccess"]').wait_for(timeout=15_000)
    message = page.locator('[data-testid="stAlertContentSuccess"]').inner_text()
    name = re.search(r"saved as ([A-Za-z0-9_-]+)", message)
    assert name, message
    screenshot(page, "train-stopped")

    open_page(page, f"attention?source=run&run={name.group(1)}&text=c+a+f+b+e+d")
    assert charts(page).count() >= 1
    ticks = {t for axis in all_ticktext(page, "x") for t in axis}
    assert {"c", "a", "f", "b", "e", "d"} <= ticks, ticks  # the task's symbols, no [CLS] or [SEP]
    assert not {"[CLS]", "[SEP]"} & ticks
    assert exception_boxes(page) == 0
    assert probe.page_errors == []


RUN_SOURCE = "A model trained on the Train page"


def saved_run(page, previous: str | None = None) -> str:
    """Wait for the run's end (a success line naming a saved run other than ``previous``) and
    the page's settling rerun; the name it was saved as."""
    success = page.locator('[data-testid="stAlertContentSuccess"]')
    end = time.monotonic() + 60
    name = None
    while time.monotonic() < end and name in (None, previous):
        if success.count():
            found = re.search(r"saved as ([A-Za-z0-9_-]+)", success.first.inner_text())
            name = found.group(1) if found else None
        page.wait_for_timeout(200)
    assert name is not None, alert_texts(page)
    assert name != previous, alert_texts(page)
    page.locator(".st-key-train-open button:not([disabled])").wait_for(timeout=15_000)
    wait_idle(page, 30_000)
    return name


def assert_task_input_shown(page) -> list[str]:
    """The text is a task input (letters the run knows) and the first chart's tokens are it."""
    symbols = text_value(page).split()
    assert symbols, symbols
    assert all(len(s) == 1 and s.isalpha() for s in symbols), symbols
    assert [t.strip() for t in axis_ticktext(page, 0, "x")] == symbols
    assert not any("unknown to this model" in a for a in alert_texts(page)), alert_texts(page)
    return symbols


def test_open_this_model_and_the_sidebar_open_a_trained_run_with_its_task_input(page, probe):
    open_page(page, "train?train.task=reverse&train.length=6&train.vocab=5&train.steps=40&train.stop_at_99=0")
    page.locator(".st-key-train-start button").click()
    first = saved_run(page)
    page.locator(".st-key-train-continue button").click()  # 40 more updates: a second saved run
    second = saved_run(page, previous=first)

    m = mark(page)
    page.locator(".st-key-train-open button").click()
    wait_idle(page, 60_000, since=m)
    assert page.url.split("?")[0].rstrip("/").endswith("/attention"), page.url
    assert widget_value(page, "source") == RUN_SOURCE
    assert selectbox_value(page, "run") == second
    assert_task_input_shown(page)
    screenshot(page, "train-open-this-model")

    # in the sidebar: away to MiniLM and back (the newest run comes back), then pick the other
    set_widget(page, "source", "Pretrained MiniLM", timeout=60_000)
    set_widget(page, "source", RUN_SOURCE, timeout=60_000)
    assert selectbox_value(page, "run") == second
    assert {first, second} <= set(selectbox_options(page, "run"))
    set_widget(page, "run", first, timeout=60_000)
    assert selectbox_value(page, "run") == first
    assert_task_input_shown(page)
    assert exception_boxes(page) == 0
    assert probe.page_errors == []
