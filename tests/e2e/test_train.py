"""The Train page in Chromium: a run starts, its progress moves while the page polls and goes on
across a page switch, Stop ends it, and the saved model opens on the Attention page with the
task's symbols as tokens."""

from __future__ import annotations

import re
import time

from .streamlit_driver import (
    all_ticktext,
    charts,
    exception_boxes,
    mark,
    nav_to,
    open_page,
    screenshot,
    wait_idle,
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
    assert exception_boxes(page) == 0 and probe.page_errors == []
