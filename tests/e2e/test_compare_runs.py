"""The Train page's "Compare runs" in Chromium: two runs saved by the real `save_run` (trained
here for a few updates) are overlaid from a share link, both runs' traces drawn in all four
panels with their labels in the legend, in English and in Chinese."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from .._saved_runs import RECIPE, train_and_save
from .streamlit_driver import charts, exception_boxes, open_page, screenshot

LINK = "train?train.section=compare&train.runs=e2e-base,e2e-no-clip"


def drawn(page) -> dict[str, list]:
    """The overlay's traces as Plotly drew them (name, legend group, panel, points), the legend's
    drawn texts and the number of lines drawn."""
    return charts(page).first.evaluate(
        """(c) => {
          const plot = c.querySelector('.js-plotly-plot');
          return {
            traces: plot._fullData.map((t) => [t.name, t.legendgroup, t.xaxis, t._length]),
            legend: Array.from(c.querySelectorAll('.legend .legendtext')).map((t) => t.textContent),
            lines: c.querySelectorAll('.scatterlayer .trace .js-line').length,
          };
        }"""
    )


def test_two_saved_runs_overlay_on_one_chart_in_english_and_chinese(page, probe, app_server):
    root = Path(app_server.extra_env["TFORMER_RUNS_DIR"])
    train_and_save(root / "e2e-base", updates=12)
    train_and_save(root / "e2e-no-clip", updates=12, recipe=dataclasses.replace(RECIPE, clip=0.0))

    open_page(page, LINK)
    assert charts(page).count() == 1
    seen = drawn(page)
    by_run: dict[str, set[str]] = {}
    for name, group, axis, n in seen["traces"]:
        assert n > 0, (name, axis)
        by_run.setdefault(group, set()).add(axis)
    assert by_run == {"0": {"x", "x2", "x3", "x4"}, "1": {"x", "x2", "x3", "x4"}}, seen["traces"]
    assert {"clip 1", "no clipping"} <= set(seen["legend"]), seen["legend"]
    assert seen["lines"] == 8  # both runs' lines drawn in the four panels
    screenshot(page, "train-compare")

    open_page(page, LINK + "&lang=zh")
    seen = drawn(page)
    assert len({group for _, group, _, _ in seen["traces"]}) == 2
    assert "不裁剪" in seen["legend"], seen["legend"]
    screenshot(page, "train-compare-zh")
    assert exception_boxes(page) == 0
    assert probe.page_errors == []
