"""A click on the overview opens that head; a damaged checkpoint gives a message, not a traceback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .streamlit_driver import (
    alert_texts,
    charts,
    exception_boxes,
    install,
    mark,
    open_page,
    screenshot,
    set_widget,
    wait_idle,
    widget_value,
)

LOCAL = "Local BERT folder (TFORMER_MODEL_DIR)"


def click_overview_head(page, layer: int, head: int) -> None:
    """Click the overview's marker for (layer, head) at its pixel position on screen."""
    overview = charts(page).nth(1)
    xy = overview.evaluate(
        """(c, want) => {
          const gd = c.querySelector('.js-plotly-plot');
          const k = gd._fullData.findIndex((d) => d.type === 'scatter' && d.customdata);
          const cd = Array.from(gd._fullData[k].customdata, (r) => Array.from(r));
          const i = cd.findIndex((r) => r[0] === want[0] && r[1] === want[1]);
          // the marker Plotly drew for that point: click the middle of its box
          const pts = c.querySelectorAll('.scatterlayer .trace')[0].querySelectorAll('.points path');
          const r = pts[i].getBoundingClientRect();
          return [r.left + r.width / 2, r.top + r.height / 2];
        }""",
        [layer, head],
    )
    m = mark(page)
    page.mouse.click(*xy)
    wait_idle(page, 60_000, since=m)


def test_clicking_a_head_in_the_overview_opens_it_in_the_detail_view(page, probe):
    open_page(page, "")
    assert (widget_value(page, "layer"), widget_value(page, "head")) == ("0", "0")
    click_overview_head(page, 3, 7)
    screenshot(page, "overview-click")
    assert (widget_value(page, "layer"), widget_value(page, "head")) == ("3", "7")
    title = charts(page).nth(0).locator(".gtitle").text_content()
    assert "layer 3, head 7" in title
    assert exception_boxes(page) == 0 and probe.page_errors == []


@pytest.fixture()
def damaged_checkpoint(tmp_path: Path) -> Path:
    """A BERT folder with a real config and tokenizer but a truncated model.safetensors."""
    from tformer.pretrained import minilm_path

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
        open_page(p, "")
        set_widget(p, "source", LOCAL)
        screenshot(p, "fault-damaged-checkpoint")
        alerts = " ".join(alert_texts(p))
        assert "model.safetensors" in alerts, alerts
        assert exception_boxes(p) == 0
    finally:
        ctx.close()
