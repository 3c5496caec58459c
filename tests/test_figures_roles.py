"""The head-role figures: a [layer x head] map of one role and a ranking of the best heads."""

from __future__ import annotations

import numpy as np
import pytest

from tformer.figures.labels import TICK_FONT_PX
from tformer.figures.layout import FULL_WIDTH, HALF_WIDTH
from tformer.figures.roles import BAR_PX, head_name, role_map_figure, role_ranking_figure


def _scores(n_layers: int = 6, n_heads: int = 12, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"previous": rng.random((n_layers, n_heads)), "self": rng.random((n_layers, n_heads))}


def _tick_fonts(fig) -> list[int]:
    return [fig.layout[ax].tickfont.size for ax in ("xaxis", "yaxis")]


# --- role_map_figure ------------------------------------------------------------------------


def test_map_is_one_heatmap_of_the_role_on_a_fixed_0_to_1_scale():
    s = _scores()
    fig = role_map_figure(s, "previous")
    (heat,) = fig.data
    assert heat.type == "heatmap"
    np.testing.assert_array_equal(heat.z, s["previous"].astype(np.float32))
    assert np.asarray(heat.z).shape == (6, 12)  # layers down, heads across
    assert (heat.zmin, heat.zmax) == (0.0, 1.0)
    assert heat.hovertemplate == "layer %{y}, head %{x}<br>previous %{z:.3f}<extra></extra>"
    assert list(fig.layout.xaxis.tickvals) == list(range(12))
    assert list(fig.layout.yaxis.tickvals) == list(range(6))
    assert fig.layout.yaxis.range == (5.5, -0.5)  # layer 0 on top
    assert fig.layout.xaxis.title.text == "head"
    assert fig.layout.yaxis.title.text == "layer"
    assert min(_tick_fonts(fig)) >= TICK_FONT_PX
    assert fig.layout.meta["role"] == "previous"
    assert fig.layout.meta["width"] == FULL_WIDTH
    assert fig.layout.meta["range"] == [0.0, 1.0]
    assert fig.layout.width is None  # Streamlit stretches it to the column


def test_map_writes_values_up_to_12_by_12_heads_when_they_fit():
    s = {"self": np.array([[0.5, 1.0, 0.0234], [0.999, np.nan, 0.1]])}
    fig = role_map_figure(s, "self")
    heat = fig.data[0]
    assert fig.layout.meta["values_shown"] is True
    assert heat.texttemplate == "%{text}"
    assert [list(r) for r in heat.text] == [["0.50", "1.00", "0.02"], ["1.00", "", "0.10"]]
    assert heat.textfont.size >= 12
    assert role_map_figure(_scores(12, 12), "self").layout.meta["values_shown"] is True
    for big in (_scores(13, 12), _scores(6, 13)):
        fig = role_map_figure(big, "self")
        assert fig.layout.meta["values_shown"] is False
        assert fig.data[0].text is None
    # 12 heads in a half-width column: cells too narrow for "0.00" at 12 px
    assert role_map_figure(_scores(), "self", width=HALF_WIDTH).layout.meta["values_shown"] is False


def test_map_draws_nan_cells_as_gaps():
    s = _scores()
    s["previous"][2, 3] = np.nan
    fig = role_map_figure(s, "previous")
    heat = fig.data[0]
    z = np.asarray(heat.z)
    assert np.isnan(z[2, 3])
    assert np.isfinite(np.delete(z.ravel(), 2 * 12 + 3)).all()
    assert heat.hoverongaps is False  # nothing to hover in a gap
    assert heat.text[2][3] == ""
    assert fig.layout.meta["n_missing"] == 1
    assert fig.layout.annotations == ()
    empty = role_map_figure({"duplicate": np.full((2, 3), np.nan)}, "duplicate")
    (note,) = empty.layout.annotations
    assert "no head has a duplicate score" in note.text
    assert empty.layout.meta["n_missing"] == 6


def test_map_outlines_the_selected_head():
    fig = role_map_figure(_scores(), "previous", selected=(0, 2))
    (rect,) = fig.layout.shapes
    assert (rect.x0, rect.x1, rect.y0, rect.y1) == (1.5, 2.5, -0.5, 0.5)
    assert (rect.xref, rect.yref) == ("x", "y")
    assert rect.line.width >= 2
    assert rect.fillcolor == "rgba(0,0,0,0)"
    assert fig.layout.meta["selected"] == [0, 2]
    assert role_map_figure(_scores(), "previous").layout.shapes == ()
    with pytest.raises(ValueError, match=r"selected=\(6, 0\) is outside the 6 x 12"):
        role_map_figure(_scores(), "previous", selected=(6, 0))
    with pytest.raises(ValueError, match="outside"):
        role_map_figure(_scores(), "previous", selected=(0, -1))


def test_map_height_follows_the_layers_and_stays_on_screen():
    h6 = role_map_figure(_scores(6), "self").layout.height
    h12 = role_map_figure(_scores(12), "self").layout.height
    assert h12 > h6
    assert role_map_figure(_scores(24, 16), "self").layout.height < 24 * 56


def test_map_escapes_the_role_and_validates():
    s = {"<b>$x$</b>": np.zeros((2, 2))}
    fig = role_map_figure(s, "<b>$x$</b>")
    assert "<b>" not in fig.data[0].hovertemplate
    assert "&lt;b&gt;&#36;x&#36;" in fig.data[0].hovertemplate
    assert "<b>" not in fig.data[0].colorbar.title.text
    with pytest.raises(ValueError, match="'next' is not one of"):
        role_map_figure(_scores(), "next")
    with pytest.raises(ValueError, match=r"2-D \[layer, head_index\], got shape \(12,\)"):
        role_map_figure({"self": np.zeros(12)}, "self")
    with pytest.raises(ValueError, match="no heads"):
        role_map_figure({"self": np.zeros((0, 12))}, "self")


# --- role_ranking_figure -----------------------------------------------------------------------


RANKED = [(0, 2, 0.9998), (2, 11, 0.397), (1, 9, 0.363)]


def test_ranking_bars_named_by_head_best_on_top():
    fig = role_ranking_figure(RANKED, "previous")
    (bar,) = fig.data
    assert bar.type == "bar"
    assert bar.orientation == "h"
    np.testing.assert_allclose(bar.x, [0.9998, 0.397, 0.363], rtol=1e-6)
    assert list(bar.y) == [0, 1, 2]
    assert list(fig.layout.yaxis.ticktext) == ["L0H2", "L2H11", "L1H9"]
    assert fig.layout.yaxis.range == (2.5, -0.5)  # the first (best) bar on top
    assert list(bar.text) == ["1.00", "0.40", "0.36"]
    assert bar.textposition == "outside"
    assert bar.cliponaxis is False
    assert fig.layout.xaxis.range == (0.0, 1.0)
    assert fig.layout.xaxis.title.text == "previous score"
    assert list(bar.customdata) == ["L0H2", "L2H11", "L1H9"]
    assert min(_tick_fonts(fig)) >= TICK_FONT_PX
    assert bar.textfont.size >= TICK_FONT_PX
    meta = fig.layout.meta
    assert meta["role"] == "previous"
    assert meta["width"] == HALF_WIDTH
    assert meta["order"] == [[0, 2], [2, 11], [1, 9]]
    assert meta["n_bars"] == 3
    assert fig.layout.height == 3 * BAR_PX + fig.layout.margin.t + fig.layout.margin.b
    assert head_name(11, 3) == "L11H3"


def test_ranking_nan_gets_no_bar_and_says_so():
    fig = role_ranking_figure([(0, 0, 0.5), (1, 1, float("nan"))], "duplicate")
    bar = fig.data[0]
    assert list(bar.x) == [0.5, 0.0]
    assert list(bar.text) == ["0.50", "n/a"]


def test_ranking_escapes_the_role_and_validates():
    fig = role_ranking_figure(RANKED, "<i>r</i>")
    assert "<i>" not in fig.layout.xaxis.title.text
    assert "<i>" not in fig.data[0].hovertemplate
    with pytest.raises(ValueError, match="ranked is empty"):
        role_ranking_figure([], "previous")
    with pytest.raises(ValueError, match=r"\(layer, head, score\) triples"):
        role_ranking_figure([(0, 1)], "previous")  # type: ignore[list-item]
