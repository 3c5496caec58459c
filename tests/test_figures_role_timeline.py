"""The role timeline figure: panels on one update axis, a strip per head with its scores on the
fixed 0..1 scale, the moments heads took the role marked, the snapshot on show marked, bad
inputs named; and what it draws in Chinese."""

from __future__ import annotations

import numpy as np
import pytest

from tformer.figures.role_timeline import MAX_POINTS, role_timeline_figure
from tformer.i18n import use_language

STEPS = np.arange(0, 110, 10)


def scores(n_layers: int = 2, n_heads: int = 3) -> np.ndarray:
    """[snap, layer, head]: layer 1 head 2 climbs to 0.9, every other head stays at 0.05."""
    s = np.full((STEPS.size, n_layers, n_heads), 0.05)
    s[:, n_layers - 1, n_heads - 1] = np.linspace(0.05, 0.9, STEPS.size)
    return s


def axis(fig, panel: str, xy: str) -> dict:
    """The layout axis of ``panel`` (its suffix from the panels' order)."""
    i = fig.layout.meta["panels"].index(panel)
    return fig.layout[f"{xy}axis{'' if i == 0 else i + 1}"]


def test_three_panels_share_one_update_axis_and_the_heads_keep_their_order():
    loss = (np.arange(1, 101), np.linspace(3.0, 0.1, 100))
    acc = (np.arange(0, 101, 20), np.linspace(0.05, 1.0, 6))
    fig = role_timeline_figure(STEPS, scores(), role="anti-diagonal", loss=loss, accuracy=acc)
    assert fig.layout.meta["panels"] == ["loss", "accuracy", "heads"]
    ranges = {tuple(axis(fig, p, "x").range) for p in ("loss", "accuracy", "heads")}
    assert len(ranges) == 1  # the same updates under one another
    assert axis(fig, "accuracy", "x").matches == "x"
    assert axis(fig, "heads", "x").matches == "x"
    assert axis(fig, "heads", "x").showticklabels
    assert not axis(fig, "loss", "x").showticklabels
    heat = next(t for t in fig.data if t.type == "heatmap")
    z = np.asarray(heat.z)
    assert z.shape == (6, STEPS.size)
    assert z.dtype == np.float32
    np.testing.assert_allclose(z[5], np.linspace(0.05, 0.9, STEPS.size), rtol=1e-6)  # L1H2 is the last row
    assert (heat.zmin, heat.zmax) == (0.0, 1.0)
    assert heat.ygap == 1  # strips tall enough to label, a gap between them
    rows = axis(fig, "heads", "y")
    assert list(rows.ticktext) == ["L0H0", "L0H1", "L0H2", "L1H0", "L1H1", "L1H2"]
    assert rows.range[0] > rows.range[1]  # layer 0 on top
    doms = [axis(fig, p, "y").domain for p in ("loss", "accuracy", "heads")]
    assert doms[0][0] > doms[1][1]
    assert doms[1][0] > doms[2][1]


def test_the_forming_heads_are_marked_and_the_first_is_carried_through_the_curves():
    formed = [(1, 2, 60, "layer 1 head 2 became an anti-diagonal head at update 60")]
    fig = role_timeline_figure(
        STEPS, scores(), role="anti-diagonal", formed=formed, loss=(STEPS[1:], STEPS[1:] / 100), current=30
    )
    [marks] = [t for t in fig.data if t.type == "scatter" and t.mode == "markers"]
    assert list(marks.x) == [60.0]
    assert list(marks.y) == [5]
    assert marks.text[0] == formed[0][3]
    dotted = [s for s in fig.layout.shapes if s.line.dash == "dot"]
    solid = [s for s in fig.layout.shapes if s.line.dash == "solid"]
    assert {s.x0 for s in dotted} == {60}
    assert len(dotted) == 2
    assert {s.x0 for s in solid} == {30}
    assert len(solid) == 2
    assert any("first anti-diagonal head: update 60" in a.text for a in fig.layout.annotations)
    assert fig.layout.meta["formed"] == [60]
    assert fig.layout.meta["current"] == 30


def test_without_curves_only_the_heads_are_drawn_and_nothing_is_marked():
    fig = role_timeline_figure(STEPS, scores(1, 1), role="previous-token")
    assert fig.layout.meta["panels"] == ["heads"]
    assert fig.layout.meta["row_px"] * 1 >= 96  # one head: a strip tall enough for its colorbar
    assert not [t for t in fig.data if t.type == "scatter" and t.mode == "markers"]
    assert not fig.layout.shapes
    assert fig.layout.xaxis.title.text == "update step"


def test_many_heads_get_thin_strips_labelled_by_layer_and_long_curves_are_thinned():
    s = np.full((STEPS.size, 6, 16), 0.1)
    n = 3 * MAX_POINTS + 7
    fig = role_timeline_figure(STEPS, s, role="self", loss=(np.arange(1, n + 1), np.ones(n)))
    rows = fig.layout.yaxis2
    assert fig.layout.meta["row_px"] < 12
    assert list(rows.ticktext) == [f"L{layer}H0" for layer in range(6)]
    assert next(t for t in fig.data if t.type == "heatmap").ygap == 0  # no gap: a line between layers
    rules = [s for s in fig.layout.shapes if s.line.color == "#ffffff"]
    assert sorted(s.y0 for s in rules) == [16 * layer - 0.5 for layer in range(1, 6)]
    line = next(t for t in fig.data if t.type == "scatter")
    assert len(line.x) <= MAX_POINTS + 1
    assert line.x[-1] == n  # the last update is always drawn
    assert fig.layout.height < 1000


def test_nan_scores_are_gaps():
    s = scores()
    s[:, 0, 0] = np.nan  # no row counted: a duplicate head on an input without a repeat
    fig = role_timeline_figure(STEPS, s, role="duplicate-token")
    heat = next(t for t in fig.data if t.type == "heatmap")
    assert np.isnan(np.asarray(heat.z)[0]).all()
    assert heat.hoverongaps is False


def test_the_callers_curves_are_left_as_they_are():
    """The loss of a saved run comes read-only (shared by the app's cache): an infinite value
    is drawn as a gap without writing into the caller's array."""
    loss = np.array([2.0, np.inf, 1.0])
    loss.setflags(write=False)
    fig = role_timeline_figure(STEPS, scores(), role="self", loss=(np.array([1.0, 2, 3]), loss))
    line = next(t for t in fig.data if t.type == "scatter")
    assert np.isnan(np.asarray(line.y)[1])
    assert loss.tolist() == [2.0, np.inf, 1.0]


@pytest.mark.parametrize(
    ("steps", "s", "match"),
    [
        (np.array([]), np.zeros((0, 1, 1)), "at least one snapshot"),
        (np.array([0, 10, 10]), np.zeros((3, 1, 1)), "increasing"),
        (np.array([0, 5.5]), np.zeros((2, 1, 1)), "whole update numbers"),
        (np.array([0, 10]), np.zeros((3, 1, 1)), r"\[snap=2, layer, head_index\]"),
        (np.array([0, 10]), np.zeros((2, 4)), r"got shape \(2, 4\)"),
        (np.array([0, 10]), np.full((2, 1, 1), 1.5), "0..1"),
    ],
)
def test_bad_inputs_are_named(steps, s, match):
    with pytest.raises(ValueError, match=match):
        role_timeline_figure(steps, s, role="self")


@pytest.mark.parametrize(
    ("formed", "current", "match"),
    [
        ([(2, 0, 30, "x")], None, "layer 2 head 0 at update 30: not a head of the 2 x 3 grid"),
        ([(0, 3, 30, "x")], None, "not a head of the 2 x 3 grid"),
        ([(0, 0, -10, "x")], None, "at an update >= 0"),
        ([(0, 0, 30)], None, r"formed\[0\] must be \(layer, head, step, sentence\)"),
        ((), -5, "current=-5 must be an update >= 0"),
    ],
)
def test_marks_off_the_grid_are_named(formed, current, match):
    with pytest.raises(ValueError, match=match):
        role_timeline_figure(STEPS, scores(), role="self", formed=formed, current=current)


def test_curves_must_pair_steps_with_values():
    with pytest.raises(ValueError, match="loss must be"):
        role_timeline_figure(STEPS, scores(), role="self", loss=(np.arange(3), np.arange(4)))


def test_in_chinese_the_titles_and_hovers_are_chinese():
    with use_language("zh"):
        fig = role_timeline_figure(
            STEPS,
            scores(),
            role="反对角线",
            formed=[(1, 2, 60, "x")],
            loss=(STEPS, STEPS / 100),
            accuracy=(STEPS, STEPS / 100),
        )
    texts = [a.text for a in fig.layout.annotations] + [fig.layout.xaxis3.title.text]
    texts += [t.hovertemplate for t in fig.data]
    assert all(not any(w in t for w in ("update", "loss", "accuracy", "score", "head")) for t in texts), texts
