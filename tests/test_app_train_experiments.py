"""The Train page's two experiments under AppTest, in English and Chinese: "Heads and
overfitting" (a grid trained in the background, the gap plotted as cells arrive, the sentence
once it is complete, shared with a second visitor; both budgets refuse with a message) and
"Mixed precision" (float32 against autocast trained in the background: the table, both charts,
the sentence and the method). The grids and models are tiny; the code is the page's."""

from __future__ import annotations

import json
import threading
import time

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from tformer.training.overfit import GridSettings
from tformer.training.precision_train import PrecisionSettings

from ._i18n_check import english_words, visible_strings
from .test_app_pages import assert_clean
from .test_app_train import open_train, poll

pytestmark = pytest.mark.usefixtures("runs_dir", "one_thread")  # tests/conftest.py


@pytest.fixture(autouse=True)
def _tiny(monkeypatch):
    """Grids of 2 sizes x 2 head counts of a width-8 model, 5 updates a cell; precision
    comparisons of 12 updates of a width-16 model: the page's code, quicker."""
    from tformer.ui.views.train import overfit, precision

    def grid(task: str, seeds: int) -> GridSettings:
        return GridSettings(
            task=task,
            length=6,
            vocab=4,
            sizes=(8, 16),
            head_counts=(1, 2),
            seeds=seeds,
            d_model=8,
            updates=5,
            batch=4,
            n_held_out=16,
        )

    monkeypatch.setattr(overfit, "grid_settings", grid)
    monkeypatch.setattr(
        precision,
        "precision_settings",
        lambda: PrecisionSettings(
            length=8, n_layers=1, n_heads=2, d_model=16, batch=8, steps=12, time_s=0.05
        ),
    )


def _figure(at: AppTest, key: str) -> dict:
    return next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if key in (c.proto.id or ""))


def _english_left(at: AppTest) -> dict:
    import torch

    from tformer.efficiency.measure import device_name

    return english_words(visible_strings(at), device_name(torch.device("cpu")).split())  # "AMD EPYC"


# --- heads and overfitting -------------------------------------------------------------------------


def _trained_grid(lang: str = "en") -> AppTest:
    at = open_train(lang=lang, **{"train.section": "overfit"})
    assert at.latex, "the gap's formula is shown before anything runs"
    assert not at.get("plotly_chart")
    at.number_input(key="train.overfit_seeds").set_value(2).run()  # as Streamlit calls it
    assert at.session_state["view"].get("train.overfit_seeds") == 2
    at.selectbox(key="train.overfit_task").set_value("copy").run()
    assert at.session_state["view"].get("train.overfit_task") == "copy"
    assert [m.value for m in at.metric][-1] == "8"  # 2 seeds x 2 sizes x 2 head counts
    at.button(key="train.overfit.start").click().run()
    assert_clean(at)
    poll(
        at, lambda at: len(at.dataframe) == 1 and set(at.dataframe[0].value.iloc[:, -1]) == {"2"}
    )  # every seed
    at.run()  # the run's end: one more full rerun settles the button
    assert_clean(at)
    return at


@pytest.mark.slow  # the grid's timing probe, then 8 models in the background
def test_the_overfitting_grid_trains_in_the_background_and_says_what_it_shows():
    at = _trained_grid()
    fig = _figure(at, "overfit")
    assert fig["layout"]["meta"]["cells"] == 4
    assert fig["layout"]["meta"]["sizes"] == [8, 16]
    table = at.dataframe[0].value
    assert list(table["seeds"]) == ["2", "2", "2", "2"]
    said = " ".join(m.value for m in at.markdown)
    assert any(
        start in said
        for start in (
            "More heads overfit",
            "Fewer heads overfit",
            "The gap does not grow",
            "No overfitting shows",
        )
    ), said
    assert at.button(key="train.overfit.start").disabled  # every model is trained
    again = open_train(
        **{"train.section": "overfit", "train.overfit_seeds": "2", "train.overfit_task": "copy"}
    )
    assert _figure(again, "overfit")["layout"]["meta"]["cells"] == 4  # a second visitor: no training
    assert again.button(key="train.overfit.start").disabled


@pytest.mark.slow  # the grid's timing probe, then 8 models in the background
def test_the_overfitting_grid_in_chinese_shows_no_english():
    at = _trained_grid("zh")
    left = _english_left(at)
    assert not left, left


def test_the_grid_refuses_what_its_budgets_cannot_hold(monkeypatch):
    from tformer.ui.views.train import overfit

    monkeypatch.setattr(overfit, "BUDGET_BYTES", 2**20)
    at = open_train(**{"train.section": "overfit"})
    assert "over the budget of 1 MiB" in " ".join(w.value for w in at.warning)
    assert at.button(key="train.overfit.start").disabled
    monkeypatch.setattr(overfit, "BUDGET_BYTES", 2**30)
    monkeypatch.setattr(overfit, "GRID_SECONDS", 1e-6)  # predicted from measured updates
    at.run()
    at.button(key="train.overfit.start").click().run()
    poll(at, lambda at: any("over the limit" in w.value for w in at.warning))
    assert not at.get("plotly_chart")  # nothing was trained


@pytest.mark.slow  # the grid's timing probe, then 8 models in the background
def test_a_stopped_grid_goes_on_where_it_stopped(monkeypatch):
    from tformer.training import overfit as core
    from tformer.ui.views.train import board as board_module
    from tformer.ui.views.train.overfit import board, grid_settings

    real, gate, calls = core.train_cell, threading.Event(), []

    def held(*args, **kwargs):  # the grid's second cell waits for the gate, or for a stop
        if "stop" in kwargs:  # not the throwaway cells that time the grid
            calls.append(args)
            while len(calls) > 1 and not gate.is_set() and not kwargs["stop"]():
                time.sleep(0.02)
        return real(*args, **kwargs)

    monkeypatch.setattr(core, "train_cell", held)
    params = {"train.section": "overfit", "train.overfit_seeds": "1"}
    at = open_train(**params)
    assert at.button(key="train.overfit.start.stop").disabled  # nothing runs yet
    at.button(key="train.overfit.start").click().run()
    poll(at, lambda at: bool(at.dataframe))
    with monkeypatch.context() as m:  # another visitor (AppTest's sessions share one id) ...
        m.setattr(board_module, "session_id", lambda: "another visitor")
        other = open_train(**params)
    assert other.button(key="train.overfit.start").disabled  # ... sees the run, cannot stop it
    assert other.button(key="train.overfit.start.stop").disabled
    at.run()
    at.button(key="train.overfit.start.stop").click().run()
    poll(at, lambda at: any("models trained: press the button" in i.value for i in at.info))
    first = dict(board().get(grid_settings("reverse", 1)) or {})
    assert len(first) == 1
    gate.set()
    at.button(key="train.overfit.start").click().run()
    poll(at, lambda at: bool(at.dataframe) and len(at.dataframe[0].value) == 4)
    cells = board().get(grid_settings("reverse", 1)) or {}
    assert len(cells) == 4
    assert all(cells[k] is v for k, v in first.items())  # kept, not trained again


# --- mixed precision -------------------------------------------------------------------------------


def _measured(lang: str = "en") -> AppTest:
    at = open_train(lang=lang, **{"train.section": "precision"})
    assert at.latex, "the scaler's rule is shown before anything runs"
    assert not at.dataframe
    at.button(key="train.precision.start").click().run()
    assert_clean(at)
    poll(at, lambda at: bool(at.dataframe) and len(at.get("plotly_chart")) == 2)
    at.run()
    assert_clean(at)
    return at


def test_mixed_precision_is_measured_side_by_side():
    at = _measured()
    table = at.dataframe[0].value
    assert list(table["precision"]) == ["float32", "bfloat16"]
    assert list(table["updates"]) == ["12", "12"]
    costs = _figure(at, "precision_costs")
    assert costs["layout"]["meta"]["names"] == ["float32", "bfloat16"]
    losses = _figure(at, "precision_losses")
    assert losses["layout"]["meta"]["updates"] == [12, 12]
    said = " ".join(m.value for m in at.markdown)
    assert "bfloat16" in said
    assert "held-out accuracy" in said
    captions = " ".join(c.value for c in at.caption)
    assert "the torch profiler's memory events" in captions
    assert at.button(key="train.precision.start").disabled  # measured once per device


def test_mixed_precision_in_chinese_shows_no_english():
    at = _measured("zh")
    left = _english_left(at)
    assert not left, left


def test_a_measurement_taken_on_a_busy_machine_can_be_taken_again():
    import dataclasses

    from tformer.timing import Load
    from tformer.ui.views.train.precision import board, precision_settings

    at = _measured()
    settings = precision_settings()
    quiet = board().get(settings)
    assert quiet is not None
    if any(r.timing.load.busy for r in quiet.runs):  # this machine was busy: the button says so already
        assert at.button(key="train.precision.start").label == "▶ Measure again"
    busy = dataclasses.replace(
        quiet,
        runs=tuple(
            dataclasses.replace(r, timing=dataclasses.replace(r.timing, load=Load(1.0, 0.9)))
            for r in quiet.runs
        ),
    )
    board().update(settings, lambda _old: busy)
    at.run()
    assert any("Other work ran during this measurement" in w.value for w in at.warning)
    again = at.button(key="train.precision.start")
    assert again.label == "▶ Measure again"
    assert not again.disabled
    again.click().run()
    poll(at, lambda at: board().get(settings) is not busy and board().run(settings).is_final)
    at.run()
    assert_clean(at)
    assert board().get(settings).runs[0].losses == quiet.runs[0].losses  # the same seed, the same training
