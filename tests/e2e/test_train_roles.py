"""The Train page's heads named as they form, in Chromium: a short run of the shift task draws
its role timeline under its loss and accuracy with the previous-token head named in words, the
saved run shows it again from its run.json, a preset says what the class should see, a run of
6 layers x 16 heads gets a strip per head, and the same in Chinese. Screenshots of each."""

from __future__ import annotations

import re
import time
from urllib.parse import urlencode

from ..test_app_train_roles import SHIFT_RUN  # the shift run that names its previous-token head
from .streamlit_driver import (
    alert_texts,
    charts,
    exception_boxes,
    mark,
    open_page,
    screenshot,
    set_widget,
    wait_idle,
)

WIDE_RUN = {"train.task": "reverse", "train.n_layers": "6", "train.n_heads": "16", "train.d_model": "128",
            "train.steps": "40", "train.snapshot_every": "5", "train.stop_at_99": "0"}  # fmt: skip


def train_and_save(page, params: dict[str, str]) -> str:
    """Open the Train page with ``params``, press start, wait for the saved run; its name."""
    open_page(page, "train?" + urlencode(params))
    m = mark(page)
    page.locator(".st-key-train-start button").click()
    wait_idle(page, 60_000, since=m)
    success = page.locator('[data-testid="stAlertContentSuccess"]')
    end = time.monotonic() + 180
    name = None
    while time.monotonic() < end and name is None:
        if success.count():
            found = re.search(r"(?:saved as|已保存为) ?([A-Za-z0-9_-]+)", success.first.inner_text())
            name = found.group(1) if found else None
        page.wait_for_timeout(300)
    assert name is not None, alert_texts(page)
    page.locator(".st-key-train-open button:not([disabled])").wait_for(timeout=15_000)
    wait_idle(page, 30_000)
    return name


def main_text(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def test_a_runs_role_timeline_live_saved_and_in_chinese(page, probe):
    name = train_and_save(page, SHIFT_RUN)
    assert charts(page).count() >= 3  # the curves, the role timeline, the snapshot
    assert "layer 0 head 0 became a previous-token head at update" in main_text(page)
    screenshot(page, "train-roles-live")

    page.locator('[data-testid="stExpander"] summary', has_text="Heads of a saved run").click()
    set_widget(page, "train.roles_run", name, timeout=60_000)
    assert charts(page).count() >= 4
    screenshot(page, "train-roles-saved")

    name_zh = train_and_save(page, {**SHIFT_RUN, "lang": "zh"})
    assert "成为前一词元头" in main_text(page)
    screenshot(page, "train-roles-live-zh")
    assert name_zh != name
    assert exception_boxes(page) == 0
    assert probe.page_errors == []


def test_a_presets_claim_and_a_timeline_of_96_heads(page, probe):
    open_page(page, "train")
    set_widget(page, "train.preset", "reverse: the anti-diagonal forms in layer 1", timeout=60_000)
    assert any("What the class should see" in a for a in alert_texts(page)), alert_texts(page)
    screenshot(page, "train-roles-preset")
    open_page(page, "train?lang=zh")
    set_widget(page, "train.preset", "反转：第 1 层形成反对角线", timeout=60_000)
    assert any("课堂上应看到" in a for a in alert_texts(page)), alert_texts(page)
    screenshot(page, "train-roles-preset-zh")

    train_and_save(page, WIDE_RUN)
    screenshot(page, "train-roles-96-heads")
    assert exception_boxes(page) == 0
    assert probe.page_errors == []
