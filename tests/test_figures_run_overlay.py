"""`runs_overlay`: up to four runs on the four panels of the training curves, one color and dash
a run, one legend entry a run, "not recorded" where a run lacks a series, the averaging window
named, bounded payloads, and validation that names what is wrong."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tformer.figures.training import MAX_POINTS, RUN_COLORS, RUN_DASHES, runs_overlay
from tformer.i18n import use_language
from tformer.training.compare import Curves, curves_of

from ._i18n_check import english_words
from .test_figures_training import fake_run, layout_of, n_points, shape_names, texts


def curves(n: int = 200, seed: int = 0) -> Curves:
    steps, evals = fake_run(n, every=20, seed=seed)
    return curves_of(steps, evals)


def panels_of(fig) -> dict[str, set[str]]:
    """Legend group (a run) -> the panels ("x", "x2"...) it has a trace in."""
    out: dict[str, set[str]] = {}
    for t in fig.data:
        if t.x is not None and len(t.x) and t.x[0] is not None:
            out.setdefault(t.legendgroup, set()).add(t.xaxis or "x")
    return out


def test_each_run_is_drawn_in_all_four_panels_in_its_own_color_and_dash():
    fig = runs_overlay([curves(seed=0), curves(seed=1)], ["warm-up 50", "no warm-up"])
    assert panels_of(fig) == {"0": {"x", "x2", "x3", "x4"}, "1": {"x", "x2", "x3", "x4"}}
    for t in fig.data:
        i = int(t.legendgroup)
        assert (t.line.color, t.line.dash) == (RUN_COLORS[i], RUN_DASHES[i])
        assert t.name == ["warm-up 50", "no warm-up"][i]
    legend = [t.name for t in fig.data if t.showlegend]
    assert legend == ["warm-up 50", "no warm-up"]  # one entry a run
    assert layout_of(fig)["meta"]["labels"] == legend
    assert layout_of(fig)["showlegend"] is True


def test_a_series_one_run_lacks_says_not_recorded_by_that_run():
    old = dataclasses.replace(curves(seed=1), lr=None, grad_norm=None)
    fig = runs_overlay([curves(), old], ["new run", "old run"])
    assert panels_of(fig) == {"0": {"x", "x2", "x3", "x4"}, "1": {"x", "x2"}}
    assert texts(fig).count("not recorded by old run") == 2  # learning rate, gradient norm
    assert layout_of(fig)["meta"]["recorded"] == [
        ["accuracy", "grad_norm", "loss", "lr"],
        ["accuracy", "loss"],
    ]


def test_a_run_saved_before_the_curves_were_kept_says_so_in_the_legend():
    empty = curves_of(None, None)
    fig = runs_overlay([empty, empty], ["a", "b"])
    assert texts(fig).count("not recorded") == 4  # no run has any series
    legend = [t.name for t in fig.data if t.showlegend]
    assert legend == ["a (curves not recorded)", "b (curves not recorded)"]
    mixed = runs_overlay([curves(), empty], ["new", "old"])
    assert [t.name for t in mixed.data if t.showlegend] == ["new", "old (curves not recorded)"]
    assert not [t for t in texts(mixed) if "not recorded" in t]  # the legend says it, not each panel


def test_the_averaging_window_is_named_in_the_panel_titles():
    fig = runs_overlay([curves().smoothed(10), curves(seed=1).smoothed(10)], ["a", "b"])
    titles = texts(fig)
    assert "training loss, mean of 10 updates (log scale)" in titles
    assert "gradient norm, mean of 10 updates (log scale)" in titles
    assert layout_of(fig)["meta"]["window"] == 10
    raw = texts(runs_overlay([curves()], ["a"]))
    assert "training loss (log scale)" in raw


def test_clip_lines_are_drawn_once_for_each_threshold_in_use():
    fig = runs_overlay([curves(), curves(seed=1), curves(seed=2)], ["a", "b", "c"], clips=[1.0, 0.0, 1.0])
    assert shape_names(fig) == ["clip"]
    assert "clip = 1" in texts(fig)


def test_long_runs_are_thinned_for_the_browser():
    fig = runs_overlay([curves(5000), curves(300, seed=1)], ["long", "short"])
    long_loss = next(t for t in fig.data if t.legendgroup == "0" and (t.xaxis or "x") == "x")
    assert n_points(long_loss) <= MAX_POINTS + 1
    assert np.asarray(long_loss.x)[-1] == 5000  # the last update is kept


def test_the_panels_span_every_run():
    short, long = curves(100), curves(800, seed=1)
    fig = runs_overlay([short, long], ["a", "b"])
    assert layout_of(fig)["xaxis"]["range"][1] >= 800


def test_the_overlay_in_chinese_holds_no_english():
    old = dataclasses.replace(curves(seed=1), lr=None)
    with use_language("zh"):
        fig = runs_overlay([curves().smoothed(5), old.smoothed(5)], ["一", "二"], clips=[1.0])
    assert not english_words(texts(fig)), texts(fig)


def test_the_runs_a_note_names_are_joined_as_the_language_lists_them():
    """Labels hold commas of their own ("warm-up 50, no clipping"): the runs are set apart by a
    semicolon, the language's own (a full-width one in Chinese)."""
    old = dataclasses.replace(curves(seed=1), lr=None)
    runs = [curves(), old, dataclasses.replace(old)]
    fig = runs_overlay(runs, ["new", "old, no clipping", "old, no warm-up"])
    assert "not recorded by old, no clipping; old, no warm-up" in texts(fig)
    with use_language("zh"):
        zh = runs_overlay(runs, ["新", "旧，不裁剪", "旧，不预热"])
    assert "未记录：旧，不裁剪；旧，不预热" in texts(zh)


@pytest.mark.parametrize(
    ("runs", "labels", "message"),
    [
        ([], [], "pass 1 to 4 runs"),
        ([curves()] * 5, list("abcde"), "pass 1 to 4 runs"),
        ([curves()], ["a", "b"], "a label each"),
        ([curves().smoothed(5), curves()], ["a", "b"], "averaged over windows"),
        ([dataclasses.replace(curves(), lr=np.ones(3))], ["a"], r"runs\[0\].lr has shape \(3,\)"),
        ([dataclasses.replace(curves(), step=np.arange(200.0)[::-1])], ["a"], "increasing step order"),
        ([dataclasses.replace(curves(), accuracy=np.full(10, 2.0))], ["a"], "accuracy must be in 0..1"),
    ],
)
def test_runs_overlay_names_what_is_wrong(runs, labels, message):
    with pytest.raises(ValueError, match=message):
        runs_overlay(runs, labels)
