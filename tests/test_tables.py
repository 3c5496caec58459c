"""Tables that fit a projected page (`tformer.ui.tables`): too wide, they are turned on their
side, every value formatted as its column was."""

from __future__ import annotations

import pytest

st = pytest.importorskip("streamlit")

from tformer.ui.tables import column_formats, formatted, table_px, turned  # noqa: E402

WIDE = [
    {
        "variant": v,
        "forward (ms)": ms,
        "time / float32's": r,
        "rows whose top key changed": c,
        "device": "cpu",
    }
    | {f"a long measured quantity {i}": 0.001 * i for i in range(8)}
    for v, ms, r, c in (("float32 (the reference)", 11.94, 1.0, 0.0), ("INT8, scale per row", 4.9, 0.41, 7.4))
]
CONFIG = {
    "forward (ms)": st.column_config.NumberColumn("forward (ms)", format="%.1f"),
    "time / float32's": st.column_config.NumberColumn("time / float32's", format="%.2f×"),
    "rows whose top key changed": st.column_config.NumberColumn(
        "rows whose top key changed", format="%.1f %%"
    ),
}


def test_values_are_formatted_as_their_columns_were():
    formats = column_formats(CONFIG)
    assert formats == {
        "forward (ms)": "%.1f",
        "time / float32's": "%.2f×",
        "rows whose top key changed": "%.1f %%",
    }
    assert formatted(11.94, "%.1f") == "11.9"
    assert formatted(0.41, "%.2f×") == "0.41×"
    assert formatted(7.4, "%.1f %%") == "7.4 %"
    assert formatted(None, "%.1f") == ""
    assert formatted("cpu", "%.1f") == "cpu"


def test_a_table_too_wide_for_the_page_turns_and_then_fits():
    formats = column_formats(CONFIG)
    assert table_px(WIDE, formats) > 940
    side = turned(WIDE, formats)
    assert list(side[0]) == ["variant", "float32 (the reference)", "INT8, scale per row"]
    assert [r["variant"] for r in side][:3] == [
        "forward (ms)",
        "time / float32's",
        "rows whose top key changed",
    ]
    assert side[0]["INT8, scale per row"] == "4.9"
    assert side[2]["INT8, scale per row"] == "7.4 %"
    assert table_px(side, {}) <= 940


def test_repeated_row_labels_stay_apart_when_turned():
    side = turned([{"n": 1, "x": 2}, {"n": 1, "x": 3}], {})
    assert side == [{"n": "x", "1 (1)": "2", "1 (2)": "3"}]
    assert turned([], {}) == []
