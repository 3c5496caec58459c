"""The Train page under AppTest: a run starts, its progress moves, Stop ends it within a second,
the trained model is saved and opens on the Attention page; a diverging recipe stops with a
message; the heads race trains 1, 2, 4 and 8 heads."""

from __future__ import annotations

import json
import time

import pytest

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest

from tformer.training.checkpoints import list_runs

from .test_app_pages import APP, TIMEOUT, assert_clean

TRAIN = "pages/train.py"


pytestmark = pytest.mark.usefixtures("runs_dir")  # tests/conftest.py: a temporary runs folder


def open_train(clean: bool = True, **params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    at.switch_page(TRAIN).run()
    if clean:
        assert_clean(at)
    return at


def poll(at: AppTest, done, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        at.run()
        if done(at):
            return
        time.sleep(0.2)
    raise AssertionError("timed out")


def status_text(at: AppTest) -> str:
    return " ".join(
        [e.value for e in at.success]
        + [e.value for e in at.error]
        + [e.value for e in at.info]
        + [p.proto.text for p in at.get("progress")]
    )


def test_a_run_trains_stops_saves_and_opens_on_the_attention_page(runs_dir):
    at = open_train(**{"train.task": "copy", "train.steps": "5000", "train.stop_at_99": "0"})
    assert at.dataframe  # the task's inputs and targets, as text
    at.button(key="train.start").click().run()
    poll(at, lambda at: "update" in status_text(at) and "update 0 " not in status_text(at) + " ")
    from tformer.ui.views.train.jobs import manager

    [run] = manager().runs()
    at.button(key="train.stop").click().run()
    time.sleep(1.0)
    steps_a_second_after_stop = run.progress.n_steps
    poll(at, lambda at: bool(at.success) or bool(at.error), timeout=30)
    assert run.progress.n_steps == steps_a_second_after_stop  # no update after the first second
    assert "saved as" in at.success[0].value, status_text(at)
    [saved] = list_runs(runs_dir)
    assert saved.task == "copy"
    at.run()  # settled: the run's end made the live part ask for one more full rerun
    keys = {
        key for c in at.get("plotly_chart") for key in ("curves", "snapshot") if key in (c.proto.id or "")
    }
    assert keys == {"curves", "snapshot"}, [c.proto.id for c in at.get("plotly_chart")]
    curves = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if "curves" in (c.proto.id or ""))
    assert curves["layout"]["meta"]["n_steps"] > 0

    at.switch_page("pages/attention.py")
    at.session_state["view"].set("source", "run")
    at.session_state["view"].set("run", saved.name)
    at.run()
    assert_clean(at)
    assert at.get("plotly_chart")
    assert "trained run" in " ".join(str(c.value) for c in at.caption) or at.get("plotly_chart")


def test_a_diverging_recipe_stops_with_a_message_naming_the_setting(runs_dir):
    at = open_train(
        **{
            "train.task": "sort",
            "train.lr": "1",
            "train.clip": "0",
            "train.warmup": "0",
            "train.schedule": "constant",
        }
    )
    at.button(key="train.start").click().run()
    poll(at, lambda at: bool(at.error) or bool(at.success), timeout=60)
    assert at.error, status_text(at)
    assert "lr" in at.error[0].value.lower(), status_text(at)


def test_the_heads_race_trains_every_head_count(runs_dir):
    at = open_train(**{"train.section": "heads", "train.task": "copy", "train.steps": "50"})
    at.button(key="train.start").click().run()
    poll(at, lambda at: bool(at.success) or bool(at.error), timeout=90)
    assert at.success, status_text(at)
    at.run()
    race = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if "race" in (c.proto.id or ""))
    names = {t.get("name") for t in race["data"]}
    assert {"1 head", "2 heads", "4 heads", "8 heads"} <= {str(n).split(" (")[0] for n in names}
    bar = next(t for t in race["data"] if t["type"] == "bar")
    assert bar["error_y"]["type"] == "data"  # each time per update with its quartiles
    assert all("quartiles" in text for text in bar["customdata"])
    assert any("the median of each update's own time" in c.value for c in at.caption)


def test_snapshots_are_bounded_in_number_and_memory():
    from tformer.training.recipe import Recipe
    from tformer.ui.views.train.jobs import MAX_SNAPSHOT_BYTES, MAX_SNAPSHOTS, snapshot_stride

    assert snapshot_stride(Recipe(steps=2000, snapshot_every=5), 8_192) == 20  # 100 frames
    assert snapshot_stride(Recipe(steps=100, snapshot_every=5), 8_192) == 5
    big = 6 * 16 * 64 * 64 * 4  # the largest model the page allows, 64 tokens
    stride = snapshot_stride(Recipe(steps=20_000, snapshot_every=5), big)
    assert (20_000 // stride + 1) * big <= MAX_SNAPSHOT_BYTES + big
    assert 20_000 // stride <= MAX_SNAPSHOTS


def test_a_run_over_the_memory_limit_is_refused_before_it_starts_with_the_figures():
    big = {"train.n_layers": "6", "train.d_model": "256", "train.d_ff": "768", "train.length": "64"}
    at = open_train(False, **big, **{"train.batch": "512"})
    assert not at.exception
    refusal = " ".join(e.value for e in at.error)
    assert "MB of memory while training" in refusal
    assert "the limit for one run here is 1,536 MB" in refusal
    assert at.button(key="train.start").disabled
    at.number_input(key="train.batch").set_value(64).run()  # a smaller batch fits
    assert_clean(at)
    assert not at.button(key="train.start").disabled
    stated = " ".join(c.value for c in at.caption)
    assert "MB while training (the limit for one run here is 1,536 MB" in stated
    assert "A run stops after 10 minutes, watched or not" in stated
    # dropout runs attention unfused: batch x heads x length² per layer, named in the refusal
    at.select_slider(key="train.dropout").set_value(0.1).run()
    at.number_input(key="train.batch").set_value(256).run()
    assert "heads × length, with dropout" in " ".join(e.value for e in at.error)


def test_a_watched_run_stops_at_the_time_limit_and_is_saved(runs_dir, monkeypatch):
    import tformer.ui.views.train.jobs as jobs

    monkeypatch.setattr(jobs, "MAX_RUN_SECONDS", 4.0)
    at = open_train(**{"train.task": "sort", "train.steps": "20000", "train.stop_at_99": "0"})
    at.button(key="train.start").click().run()
    poll(at, lambda at: bool(at.success) or bool(at.error), timeout=30)  # polling = watching
    message = at.success[0].value
    assert "a run may train for at most 0.0666667 min on this server" in message
    assert "saved as" in message
    assert len(list_runs(runs_dir)) == 1


def test_open_this_model_shows_the_run_with_its_task_input_on_the_attention_page(runs_dir):
    at = open_train(**{"train.task": "reverse", "train.steps": "30", "train.stop_at_99": "0"})
    assert at.button(key="train.open").disabled  # nothing saved yet
    at.button(key="train.start").click().run()
    poll(at, lambda at: bool(at.success) or bool(at.error), timeout=60)
    at.run()
    [saved] = list_runs(runs_dir)
    meta = json.loads((saved.path / "run.json").read_text())
    assert not at.button(key="train.open").disabled
    at.button(key="train.open").click().run()
    assert_clean(at)
    assert at.radio(key="source").value == "run"
    assert at.selectbox(key="run").value == saved.name
    assert at.text_area(key="text").value == meta["examples"][0]
    ticks = json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["xaxis"]["ticktext"]
    assert [t.strip() for t in ticks] == meta["examples"][0].split()
    assert not any("unknown to this model" in w.value for w in at.warning)


def test_the_race_times_updates_by_their_median_not_the_mean_with_evaluations(monkeypatch):
    """Each head count's time per update is the median of its updates' own times after the
    warm-up, with quartiles: a slow evaluation or a slow first update does not count, and a
    training run of another session (in another thread) is named as other work."""
    import threading

    from tformer.timing import activity
    from tformer.training.recipe import Recipe, model_config
    from tformer.training.tasks import TaskSpec
    from tformer.training.trainer import StepStats, Trainer
    from tformer.ui.views.train import jobs as train_jobs

    durations = {1: 0.010, 2: 0.030, 4: 0.010, 8: 0.010}  # 2 heads: slower by 20 ms an update

    def step(self, batches=None):
        self.step_count += 1
        base = durations[self.cfg.n_heads]
        slow = 1.0 if self.step_count == 1 else 0.0  # the first update: allocation, kernels
        return StepStats(self.step_count, 1.0, 1e-3, 1.0, base * (1 + 0.1 * (self.step_count % 3)) + slow)

    def evaluate(self, *args, **kwargs):
        time.sleep(0.02)  # evaluations take time: they are not updates
        return 0.5

    monkeypatch.setattr(Trainer, "step", step)
    monkeypatch.setattr(Trainer, "evaluate", evaluate)

    class Handle:
        def __init__(self) -> None:
            self.evals: list[dict] = []

        def should_stop(self) -> bool:
            return False

        def report_eval(self, **stats) -> None:
            self.evals.append(stats)

        def set_message(self, *a, **k) -> None:
            pass

    spec = TaskSpec("copy")
    cfg = model_config(spec, n_layers=1, n_heads=1, d_model=16)
    started, release = threading.Event(), threading.Event()

    def other_session() -> None:
        with activity("training run"):
            started.set()
            release.wait(30)

    th = threading.Thread(target=other_session, daemon=True)
    th.start()
    started.wait(5)
    handle = Handle()
    try:
        train_jobs._race(cfg, spec, Recipe(steps=40, eval_every=20), None)(handle)
    finally:
        release.set()
        th.join(5)
    from tformer.ui.views.train.draw import race_times

    seconds, spread, notes = race_times(handle.evals)
    assert set(seconds) == {1, 2, 4, 8}
    for h, base in durations.items():
        assert seconds[h] == pytest.approx(base * 1.1)  # the median of 1.0, 1.1, 1.2 x base
        q1, q3 = spread[h]
        assert base <= q1 <= seconds[h] <= q3 <= base * 1.2 + 1e-12
    assert seconds[2] > seconds[1]
    last = [e for e in handle.evals if e["heads"] == 1][-1]
    assert last["timed_updates"] == 40 - train_jobs.RACE_WARMUP_UPDATES
    assert last["other_work"].endswith(":training run")
    assert "|" not in last["other_work"]
    assert any("Other work ran during this measurement: 1 training run" in n for n in notes)
    assert any("1 and 2 heads" not in n and "4 and 8 heads" in n for n in notes if "overlap" in n)
