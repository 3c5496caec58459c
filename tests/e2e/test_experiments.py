"""The experiment pages in Chromium: blocked cells of a custom mask turn to zero, the side-by-side
view draws both settings and their difference, and a ranked head of the finder opens on the
Attention page."""

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

TEXT = "The cat sat on the mat today."


def chart_z(page, key: str, trace: int) -> list[list[float]]:
    """The z of heatmap trace ``trace`` (-1: the last) as the browser drew it (plotly decodes
    the binary arrays into its full data)."""
    return page.evaluate(
        """([key, i]) => {
            const gd = document.querySelector('.st-key-' + key + ' .js-plotly-plot');
            const maps = gd._fullData.filter((d) => d.type === 'heatmap');
            const z = maps[i < 0 ? maps.length + i : i].z;
            return Array.from(z, (row) => Array.from(row));
        }""",
        [key, trace],
    )


def test_blocked_cells_of_a_custom_mask_turn_to_zero(page, probe):
    open_page(page, f"masks?text={quote(TEXT)}&masks.kind=custom&masks.spec={quote('3:5, 6:*')}")
    before, after = chart_z(page, "mask_patterns", 0), chart_z(page, "mask_patterns", 1)
    assert before[3][5] > 0
    assert any(before[6])
    assert after[3][5] == 0
    assert not any(after[6])
    set_widget(page, "masks.spec", "2:1")
    after = chart_z(page, "mask_patterns", 1)
    assert after[2][1] == 0
    assert after[3][5] > 0
    assert any(after[6])
    screenshot(page, "masks-custom")
    assert exception_boxes(page) == 0
    assert probe.page_errors == []


def test_side_by_side_draws_both_settings_and_their_difference(page, probe):
    open_page(page, f"compare?text={quote(TEXT)}&source=scratch&compare.what=causal")
    a, b = chart_z(page, "compare_ab", 0), chart_z(page, "compare_ab", 1)
    assert b[0][1] == 0
    assert a[0][1] > 0  # the causal side hides the future
    diff = chart_z(page, "compare_diff", -1)
    assert len(diff) == len(a)
    assert abs(diff[0][1] - (b[0][1] - a[0][1])) < 1e-5
    screenshot(page, "compare-causal")
    assert exception_boxes(page) == 0
    assert probe.page_errors == []


def test_a_ranked_head_opens_on_the_attention_page(page, probe):
    open_page(page, "finder?finder.over=examples")
    m = mark(page)
    page.locator(".st-key-finder-open-0-2 button").click()
    wait_idle(page, 60_000, since=m)
    assert page.url.rstrip("/").split("?")[0].endswith("/attention")
    assert (widget_value(page, "layer"), widget_value(page, "head")) == ("0", "2")
    assert exception_boxes(page) == 0
    assert probe.page_errors == []
