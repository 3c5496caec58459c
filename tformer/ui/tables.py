"""Tables that fit a projected page: a table wider than the page is shown turned on its side.

st.dataframe sizes each column to its header and values and scrolls sideways when they add up
to more than the page: in a 1400 px window the precision table's last five columns (how far the
attention moved) were out of sight. A class cannot scroll a projector. Turned, the same numbers
read down one column per row of the original (one per variant, one per length), which fits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from ..figures.labels import text_px
from ..figures.layout import FULL_WIDTH

TABLE_FONT_PX = 14  # st.dataframe's cell and header font
CELL_PAD_PX = 24  # a column's padding and its sort icon's room
# text_px errs wide for a label (0.62 em a character); the grid's font averages nearer 0.5 em.
# Measured on the precision table: 1,428 px drawn where text_px said 2,106.
TEXT_SCALE = 0.75


def formatted(value: Any, fmt: str | None) -> str:
    """``value`` as a table cell: printf ``fmt`` for numbers (a column's NumberColumn format), ""
    for None."""
    if value is None:
        return ""
    if fmt and isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return fmt % value
        except (TypeError, ValueError):
            return str(value)
    return str(value)


def column_formats(config: Mapping[str, Any] | None) -> dict[str, str]:
    """The printf formats of a column_config (NumberColumn's ``format``), by column name."""
    out = {}
    for name, column in (config or {}).items():
        fmt = column.get("type_config", {}).get("format") if isinstance(column, Mapping) else None
        if isinstance(fmt, str):
            out[name] = fmt
    return out


def table_px(rows: Sequence[Mapping[str, Any]], formats: Mapping[str, str]) -> float:
    """An upper estimate of the width st.dataframe gives ``rows`` (no index column)."""
    if not rows:
        return 0.0
    names = list(rows[0])
    return sum(
        TEXT_SCALE
        * max(
            text_px(formatted(r.get(n), formats.get(n)), TABLE_FONT_PX)
            for r in [dict.fromkeys(names, n), *rows]
        )
        + CELL_PAD_PX
        for n in names
    )


def turned(rows: Sequence[Mapping[str, Any]], formats: Mapping[str, str]) -> list[dict[str, str]]:
    """``rows`` on their side: the first column's values become the column names, the other
    columns' names the first column, every value formatted as its column was."""
    if not rows:
        return []
    first, *others = list(rows[0])
    heads = [formatted(r.get(first), formats.get(first)) for r in rows]
    # repeated labels would merge columns: number them apart
    heads = [h if heads.count(h) == 1 else f"{h} ({i + 1})" for i, h in enumerate(heads)]
    return [
        {
            first: name,
            **{h: formatted(r.get(name), formats.get(name)) for h, r in zip(heads, rows, strict=True)},
        }
        for name in others
    ]


def fitted_table(
    rows: Sequence[Mapping[str, Any]],
    *,
    key: str,
    column_config: Mapping[str, Any] | None = None,
    width_px: int = FULL_WIDTH,
) -> None:
    """``rows`` as st.dataframe, every row shown, turned on its side (`turned`) when it would
    be wider than ``width_px`` (the page's main column in a 1400 px window) and turning it makes
    it narrower."""
    formats = column_formats(column_config)
    if table_px(rows, formats) > width_px:
        side = turned(rows, formats)
        if table_px(side, {}) < table_px(rows, formats):
            st.dataframe(side, hide_index=True, width="stretch", height="content", key=key)
            return
    st.dataframe(
        list(rows),
        hide_index=True,
        width="stretch",
        height="content",  # every row in sight: "auto" stops at ten (a turned table has more)
        column_config=dict(column_config or {}),
        key=key,
    )
