"""A click on the overview opens that head; a damaged checkpoint gives a message, not a traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .streamlit_driver import (
    alert_texts,
    charts,
    exception_boxes,
    grid_button,
    install,
    mark,
    open_page,
    screenshot,
    set_widget,
    wait_idle,
    widget_value,
)

LOCAL = "Local BERT folder (TFORMER_MODEL_DIR)"


def test_clicking_a_head_in_the_overview_opens_it_in_the_detail_view(page, probe):
    open_page(page, "attention")
    # the first example opens on the head it names (tformer.ui.opening): layer 3, head 1
    assert (widget_value(page, "layer"), widget_value(page, "head")) == ("3", "1")
    assert grid_button(page, 3, 1).get_attribute("aria-pressed") == "true"
    m = mark(page)
    grid_button(page, 3, 7).click()
    wait_idle(page, 60_000, since=m)
    screenshot(page, "overview-click")
    assert (widget_value(page, "layer"), widget_value(page, "head")) == ("3", "7")
    title = charts(page).nth(0).locator(".gtitle").text_content()
    assert "layer 3, head 7" in title
    assert grid_button(page, 3, 7).get_attribute("aria-pressed") == "true"
    assert grid_button(page, 3, 1).get_attribute("aria-pressed") == "false"
    assert exception_boxes(page) == 0
    assert probe.page_errors == []


def test_a_head_can_be_chosen_from_the_keyboard(page, probe):
    open_page(page, "attention")
    grid_button(page, 1, 2).focus()
    m = mark(page)
    page.keyboard.press("Space")
    wait_idle(page, 60_000, since=m)
    assert (widget_value(page, "layer"), widget_value(page, "head")) == ("1", "2")
    assert "layer 1, head 2" in charts(page).nth(0).locator(".gtitle").text_content()
    assert exception_boxes(page) == 0
    assert probe.page_errors == []


@pytest.fixture
def damaged_checkpoint(tmp_path: Path) -> Path:
    """A BERT folder with a real config and tokenizer but a truncated model.safetensors."""
    from tformer.model.pretrained import minilm_path

    src, folder = minilm_path(), tmp_path / "damaged-bert"
    folder.mkdir()
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(src / name, folder / name)
    data = (src / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 3])
    return folder


def test_damaged_checkpoint_folder_gives_a_clear_message(app_server_factory, browser, damaged_checkpoint):
    server = app_server_factory(extra_env={"TFORMER_MODEL_DIR": str(damaged_checkpoint)})
    ctx = browser.new_context(base_url=server.url + "/")
    try:
        p = ctx.new_page()
        install(p)
        open_page(p, "attention")
        set_widget(p, "source", LOCAL)
        screenshot(p, "fault-damaged-checkpoint")
        alerts = " ".join(alert_texts(p))
        assert "model.safetensors" in alerts, alerts
        assert exception_boxes(p) == 0
    finally:
        ctx.close()
