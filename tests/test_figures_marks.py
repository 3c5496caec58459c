"""The reveal's outline on an attention heatmap: the query's row across the plot, the key's cell
in that row, on the cell that holds a position when the heatmap is pooled."""

from __future__ import annotations

import numpy as np
import pytest

from tformer.figures.attention import attention_heatmap
from tformer.figures.marks import outline_answer


def heatmap(n: int, **kw):
    rng = np.random.default_rng(0)
    m = rng.random((n, n)).astype(np.float32)
    return attention_heatmap(m / m.sum(1, keepdims=True), [f"t{i}" for i in range(n)], **kw)


def test_the_row_and_the_key_are_outlined_and_the_figure_is_left_alone():
    fig = heatmap(12)
    out = outline_answer(fig, 10, [2, 5])
    assert not fig.layout.shapes  # a copy: the cached figure keeps no outline
    row, *cells = out.layout.shapes
    assert (row.xref, row.x0, row.x1, row.y0, row.y1) == ("x domain", 0, 1, 9.5, 10.5)
    assert [(c.xref, c.x0, c.x1, c.y0, c.y1) for c in cells] == [
        ("x", 1.5, 2.5, 9.5, 10.5),
        ("x", 4.5, 5.5, 9.5, 10.5),
    ]
    assert row.line.dash == "dash"
    assert cells[0].line.dash == "solid"
    assert out.data[0].z.shape == fig.data[0].z.shape


def test_without_a_row_the_key_column_is_outlined():
    (col,) = outline_answer(heatmap(6), None, [3]).layout.shapes
    assert (col.x0, col.x1, col.y0, col.y1) == (2.5, 3.5, -0.5, 5.5)


def test_a_pooled_heatmap_outlines_the_cell_that_holds_the_position():
    fig = heatmap(300, max_side=100)
    block = fig.layout.meta["block"]
    assert block > 1
    row, cell = outline_answer(fig, 250, [7]).layout.shapes
    r = 250 // block
    assert (row.y0, row.y1) == (r - 0.5, r + 0.5)
    assert (cell.x0, cell.x1) == (7 // block - 0.5, 7 // block + 0.5)


@pytest.mark.parametrize(("row", "cols"), [(12, []), (-1, []), (0, [12]), (0, [1.5])])
def test_a_position_outside_the_tokens_is_refused(row, cols):
    with pytest.raises(ValueError, match="outside the figure's 12 tokens"):
        outline_answer(heatmap(12), row, cols)


def test_a_figure_that_is_not_a_token_heatmap_is_refused():
    import plotly.graph_objects as go

    with pytest.raises(ValueError, match="needs a heatmap"):
        outline_answer(go.Figure(), 0, [1])
