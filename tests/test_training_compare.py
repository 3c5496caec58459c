"""tformer.training.compare: what a run saves of its curves, reading saved runs back (hostile
folders refused with a reason while the table goes on), labels that say what differs, and the
"same run without ..." variants (same seed and data, one setting off)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import statistics
from pathlib import Path

import numpy as np
import pytest

from tformer.i18n import use_language
from tformer.timing import Load
from tformer.training import compare
from tformer.training.checkpoints import is_run_name, list_runs
from tformer.training.compare import (
    VARIANTS,
    Refused,
    SavedRun,
    comparison_title,
    curves_of,
    differing,
    model_text,
    read_or_refuse,
    read_saved_run,
    recipe_changes,
    run_labels,
    saved_history,
    scan_runs,
    task_text,
    trailing_mean,
    variant,
    variant_name,
)
from tformer.training.recipe import Recipe, model_config
from tformer.training.trainer import Trainer

from ._i18n_check import english_words
from ._saved_runs import RECIPE, TASK, train_and_save


def steps_of(n: int) -> list[dict]:
    return [
        {"step": i, "loss": 3.0 / i, "lr": 0.01, "grad_norm": 1.0 + i, "seconds": 0.5}
        for i in range(1, n + 1)
    ]


# --- what a run saves ---------------------------------------------------------------------------


def test_the_saved_history_keeps_every_update_and_sums_it_up():
    steps = steps_of(25)
    evals = [{"step": 0, "accuracy": 0.1}, {"step": 20, "accuracy": 0.5}]
    h = saved_history(steps, evals, accuracy=0.6, step=25)
    assert h["steps"] == steps
    assert h["evals"] == evals
    assert h["every"] == 1
    assert h["final"]["accuracy"] == 0.6
    assert h["final"]["step"] == 25
    assert h["final"]["loss"] == pytest.approx(sum(3.0 / i for i in range(16, 26)) / 10)  # the last 10
    assert h["final"]["seconds"] == pytest.approx(25 * 0.5)


def test_the_saved_history_holds_the_time_per_update_and_what_else_ran():
    steps = steps_of(25)
    for s, seconds in zip(steps, [9.0] * 5 + [0.01 * i for i in range(1, 21)], strict=True):
        s["seconds"] = seconds  # the first 5 updates are slow (allocation, kernel choice)
    busy = Load(2.0, 0.4, ((7, "training run"),))
    final = saved_history(steps, [], accuracy=0.5, step=25, load=busy)["final"]
    q1, median, q3 = statistics.quantiles([10.0 * i for i in range(1, 21)], n=4, method="inclusive")
    assert final["ms_per_update"] == pytest.approx([q1, median, q3])  # the first 5 left out
    assert (final["busy"], final["other_work"], final["other_cpu"]) == (True, ["training run"], 0.4)
    quiet = saved_history(steps, [], accuracy=0.5, step=25, load=Load(2.0, 0.01))["final"]
    assert quiet["busy"] is False


def test_a_long_history_is_thinned_to_every_kth_update_and_the_last(monkeypatch):
    monkeypatch.setattr(compare, "MAX_SAVED_STEPS", 10)
    h = saved_history(steps_of(25), [], accuracy=0.5, step=25)
    assert [s["step"] for s in h["steps"]] == [1, 4, 7, 10, 13, 16, 19, 22, 25]
    assert h["every"] == 3
    assert h["final"]["seconds"] == pytest.approx(25 * 0.5)  # summed before thinning


def test_a_thinned_record_holds_the_mean_of_the_updates_it_stands_for(monkeypatch):
    """Record k stands for the updates after record k-1 up to its own: its loss, gradient norm
    and time are their means, its learning rate its own update's."""
    monkeypatch.setattr(compare, "MAX_SAVED_STEPS", 10)
    rng = np.random.default_rng(0)
    steps = [
        {
            "step": i,
            "loss": float(rng.random()),
            "lr": i / 1000,
            "grad_norm": float(rng.random()),
            "seconds": i / 10,
        }
        for i in range(1, 26)
    ]
    kept = saved_history(steps, [], accuracy=0.5, step=25)["steps"]
    before = 0
    for record in kept:
        block = [s for s in steps if before < s["step"] <= record["step"]]
        for key in ("loss", "grad_norm", "seconds"):
            assert record[key] == pytest.approx(np.mean([s[key] for s in block])), (record["step"], key)
        assert record["lr"] == record["step"] / 1000
        before = record["step"]
    # so the records, weighted by the updates each stands for, add up to every update's loss
    sizes = np.diff([0] + [r["step"] for r in kept])
    assert np.dot(sizes, [r["loss"] for r in kept]) == pytest.approx(sum(s["loss"] for s in steps))


# --- curves --------------------------------------------------------------------------------------


def test_curves_hold_each_series_and_none_for_what_was_not_recorded():
    c = curves_of([{"step": 1, "loss": 2.0}, {"step": 2, "loss": 1.5}], [{"step": 0, "accuracy": 0.25}])
    assert c.step.tolist() == [1.0, 2.0]
    assert c.loss.tolist() == [2.0, 1.5]
    assert c.lr is None
    assert c.grad_norm is None
    assert c.accuracy.tolist() == [0.25]
    assert not c.step.flags.writeable  # shared by the app's cache
    empty = curves_of(None, None)
    assert empty.empty
    assert empty.loss is None


@pytest.mark.parametrize(
    ("steps", "evals", "message"),
    [
        ({"step": 1}, None, "not a list of entries"),
        ([{"step": 1, "loss": 1.0}, {"step": 2}], None, r"history.steps\[1\] has no loss"),
        ([{"step": 1, "loss": "low"}], None, r"history.steps\[0\].loss is not a number"),
        ([{"step": 1, "loss": True}], None, "is not a number"),
        ([{"step": 2, "loss": 1.0}, {"step": 2, "loss": 1.0}], None, "the steps must increase"),
        ([{"step": 1.5, "loss": 1.0}], None, "whole number"),
        ([{"loss": 1.0}], None, "has no step"),
        (None, [{"step": 0, "accuracy": 1.5}], "outside 0..1"),
        (None, [{"step": 0, "accuracy": float("nan")}], "outside 0..1"),
    ],
)
def test_malformed_curves_are_refused_naming_the_entry(steps, evals, message):
    with pytest.raises(ValueError, match=message):
        curves_of(steps, evals)


def test_a_curve_longer_than_the_bound_is_refused(monkeypatch):
    monkeypatch.setattr(compare, "MAX_CURVE_POINTS", 5)
    with pytest.raises(ValueError, match="6 entries, over the 5 read"):
        curves_of(steps_of(6), None)


def test_the_trailing_mean_averages_the_last_window_updates():
    step = np.array([1.0, 2, 3, 4, 5])
    values = np.array([1.0, 2, 3, 4, 5])
    assert trailing_mean(step, values, 1).tolist() == values.tolist()
    assert trailing_mean(step, values, 3).tolist() == [1.0, 1.5, 2.0, 3.0, 4.0]
    gap = trailing_mean(step, np.array([1.0, np.nan, 3, 5, 7]), 2)
    assert np.isnan(gap[1])  # a gap stays a gap ...
    assert gap.tolist()[2:] == [3.0, 4.0, 6.0]  # ... and does not poison its neighbours
    thinned = trailing_mean(np.array([1.0, 5, 9]), np.array([1.0, 2, 3]), 4)
    assert thinned.tolist() == [1.0, 2.0, 3.0]  # the window counts updates, not entries


def test_smoothed_curves_average_the_loss_and_gradient_norm_only():
    c = curves_of(steps_of(4), [{"step": 0, "accuracy": 0.5}])
    s = c.smoothed(2)
    assert s.window == 2
    assert s.loss.tolist() == pytest.approx([3.0, 2.25, 1.25, 0.875])
    assert s.grad_norm.tolist() == pytest.approx([2.0, 2.5, 3.5, 4.5])
    assert s.lr.tolist() == c.lr.tolist()
    assert s.accuracy.tolist() == c.accuracy.tolist()
    with pytest.raises(ValueError, match="averaged already"):
        s.smoothed(2)


# --- reading saved runs --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """One tiny saved run, copied wherever a test needs a run folder to spoil or count."""
    root = tmp_path_factory.mktemp("template")
    train_and_save(root / "run", updates=4)
    return root / "run"


def copy(template: Path, to: Path) -> Path:
    shutil.copytree(template, to)
    return to


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A tiny run saved as the Train page saves it, and what it reported while it trained."""
    root = tmp_path_factory.mktemp("runs")
    return root, train_and_save(root / "base")


def test_a_saved_run_reads_back_what_was_trained(saved):
    root, base = saved
    run = read_saved_run(root / "base")
    assert run.name == "base"
    assert run.task == TASK
    assert run.cfg == base.trainer.cfg
    assert run.recipe == RECIPE
    assert run.updates == 8
    assert run.loss == pytest.approx(np.mean([s["loss"] for s in base.steps]))  # 8 updates < 10
    assert run.seconds == pytest.approx(sum(s["seconds"] for s in base.steps))
    assert run.accuracy == pytest.approx(base.trainer.evaluate())
    times = sorted(1e3 * s["seconds"] for s in base.steps[5:])
    assert times[0] <= run.ms_per_update[0] <= run.ms_per_update[1] <= run.ms_per_update[2] <= times[-1]
    assert run.busy is None  # train_and_save watched nothing
    assert run.curves.step.tolist() == [s["step"] for s in base.steps]
    assert run.curves.lr.tolist() == pytest.approx([s["lr"] for s in base.steps])
    assert run.curves.grad_norm.tolist() == pytest.approx([s["grad_norm"] for s in base.steps])
    assert run.curves.eval_step.tolist() == [0, 4, 8]
    assert read_saved_run(root / "base", curves=False).curves is None


def test_a_run_saved_before_the_curves_were_kept_reads_as_not_recorded(tmp_path, template):
    copy(template, tmp_path / "old")
    meta = json.loads((tmp_path / "old" / "run.json").read_text())
    meta["history"] = {"final": {"accuracy": 0.5, "step": 8}}  # what the Train page saved before
    (tmp_path / "old" / "run.json").write_text(json.dumps(meta))
    run = read_saved_run(tmp_path / "old")
    assert (run.updates, run.accuracy, run.loss, run.seconds) == (8, 0.5, None, None)
    assert (run.ms_per_update, run.busy) == (None, None)
    assert run.curves.empty
    assert run.curves.loss is None


def test_summary_numbers_that_are_not_numbers_read_as_not_recorded(tmp_path, template):
    copy(template, tmp_path / "odd")
    odd = {"loss": "low", "seconds": -1e400, "ms_per_update": [3, 2, 1], "busy": "yes", "step": -4}
    _edit(tmp_path / "odd", lambda m: m["history"]["final"].update(odd))
    run = read_saved_run(tmp_path / "odd")
    assert (run.loss, run.seconds, run.ms_per_update, run.busy, run.updates) == (None, None, None, None, None)


def test_retraining_a_saved_runs_settings_draws_the_same_batches_from_the_same_weights(saved):
    """What a comparison relies on: the saved task, config and recipe give back the same run."""
    root, base = saved
    run = read_saved_run(root / "base")
    again = Trainer(run.cfg, run.task, run.recipe, n_held_out=32)
    losses = [again.step().loss for _ in range(8)]
    assert losses == pytest.approx([s["loss"] for s in base.steps], abs=1e-6)


def test_a_variant_starts_from_the_same_weights_and_batches(saved):
    root, base = saved
    cfg, recipe = variant(read_saved_run(root / "base"), "clip")
    other = Trainer(cfg, TASK, recipe, n_held_out=32)
    # the first loss comes before any update: equal weights and an equal first batch
    assert other.step().loss == pytest.approx(base.steps[0]["loss"], abs=1e-7)
    assert recipe.clip == 0


# --- hostile folders -----------------------------------------------------------------------------


def _edit(folder: Path, change) -> None:
    meta = json.loads((folder / "run.json").read_text())
    change(meta)
    (folder / "run.json").write_text(json.dumps(meta))


HOSTILE = {
    "not-json": lambda f: (f / "run.json").write_text("{not json"),
    "huge-int": lambda f: (f / "run.json").write_text('{"format": "tformer-run", "a": ' + "1" * 5000 + "}"),
    "deep": lambda f: (f / "run.json").write_text("[" * 100_000 + "]" * 100_000),
    "unknown-setting": lambda f: _edit(f, lambda m: m["recipe"].update(turbo=True)),
    "betas-text": lambda f: _edit(f, lambda m: m["recipe"].update(betas="ab")),
    "lr-text": lambda f: _edit(f, lambda m: m["recipe"].update(lr="fast")),
    "held-out-text": lambda f: _edit(f, lambda m: m["task"].update(held_out="0.2")),
    "task-list": lambda f: _edit(f, lambda m: m.update(task=[1, 2])),
    "steps-dict": lambda f: _edit(f, lambda m: m["history"].update(steps={"1": 2})),
    "loss-text": lambda f: _edit(f, lambda m: m["history"]["steps"][0].update(loss="x")),
    "loss-huge": lambda f: _edit(f, lambda m: m["history"]["steps"][0].update(loss=10**400)),
    "created-junk": lambda f: _edit(f, lambda m: m.update(created="yesterday")),
    "big-lr": lambda f: _edit(f, lambda m: m["recipe"].update(lr=10**400)),
    "final-list": lambda f: _edit(f, lambda m: m["history"].update(final=[1, 2])),
    "no-config": lambda f: (f / "config.json").unlink(),
    "big-config": lambda f: (f / "config.json").write_text(" " * (2 * 2**20) + "{}"),
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, template):
    root = tmp_path_factory.mktemp("hostile")
    copy(template, root / "good")
    for name, spoil in HOSTILE.items():
        spoil(copy(template, root / name))
    return root


def test_hostile_folders_are_refused_with_a_reason_and_the_table_goes_on(hostile):
    scan = scan_runs(hostile)
    assert [r.name for r in scan.runs] == ["good"]
    refused = {r.name: r.reason for r in scan.refused}
    assert set(refused) == set(HOSTILE)
    assert all(str(hostile / name) in reason for name, reason in refused.items()), refused
    assert "not valid JSON" in refused["not-json"]
    assert "not valid JSON" in refused["huge-int"]  # Python's 4,300-digit limit
    assert "unknown settings ['turbo']" in refused["unknown-setting"]
    assert "betas" in refused["betas-text"]
    assert "held_out" in refused["held-out-text"]
    assert "history.steps[0].loss is not a number" in refused["loss-text"]
    assert "history.steps[0].loss is too large for a number" in refused["loss-huge"]
    assert "MB" in refused["big-config"]


def test_an_oversized_run_json_is_refused_before_it_is_read(tmp_path, monkeypatch, template):
    from tformer.training import checkpoints

    copy(template, tmp_path / "big")
    monkeypatch.setattr(checkpoints, "MAX_RUN_JSON_BYTES", 1000)
    refused = read_or_refuse(tmp_path / "big")
    assert isinstance(refused, Refused)
    assert "MB allowed" in refused.reason


def test_the_sidebars_run_list_survives_a_number_too_large_for_a_float(tmp_path, template):
    copy(template, tmp_path / "huge-accuracy")
    _edit(tmp_path / "huge-accuracy", lambda m: m.update(accuracy=10**400))
    [info] = list_runs(tmp_path)
    assert info.accuracy is None


def test_what_is_not_a_run_folder_is_not_listed(tmp_path, template):
    copy(template, tmp_path / "good")
    (tmp_path / "empty").mkdir()  # no run.json
    (tmp_path / ".tmp-good-1234").mkdir()  # a save in progress
    (tmp_path / "a file").write_text("x")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    copy(template, outside / "elsewhere")
    os.symlink(outside / "elsewhere", tmp_path / "link")  # leads outside the runs folder
    scan = scan_runs(tmp_path)
    assert [r.name for r in scan.runs] == ["good"]
    assert scan.refused == ()


def test_a_scan_reads_the_newest_folders_up_to_its_bound(tmp_path, template):
    for i, name in enumerate(("old", "mid", "new")):
        copy(template, tmp_path / name)
        os.utime(tmp_path / name, (1_000_000 + i, 1_000_000 + i))
    scan = scan_runs(tmp_path, most=2)
    assert sorted(r.name for r in scan.runs) == ["mid", "new"]
    assert scan.unread == 1


def test_a_scan_reads_the_newest_folders_up_to_its_bytes_before_reading_them(tmp_path, template):
    """Sizes come from the disk before anything is read: a folder of huge run.json files costs
    a scan its byte bound, not 200 files' parsing."""
    for i, name in enumerate(("old", "mid", "new")):
        copy(template, tmp_path / name)
        os.utime(tmp_path / name, (1_000_000 + i, 1_000_000 + i))
    size = (tmp_path / "new" / "run.json").stat().st_size
    read: list[str] = []

    def reader(folder):
        read.append(folder.name)
        return read_or_refuse(folder, curves=False)

    scan = scan_runs(tmp_path, most_bytes=2 * size, read=reader)
    assert read == ["new", "mid"]
    assert sorted(r.name for r in scan.runs) == ["mid", "new"]
    assert scan.unread == 1
    read.clear()
    one = scan_runs(tmp_path, most_bytes=1, read=reader)  # the newest is read whatever its size
    assert (read, one.unread) == (["new"], 2)


# --- what differs ---------------------------------------------------------------------------------


def run(name: str, recipe: Recipe | None = None, **model) -> SavedRun:
    """A run as the table holds it, made here (no folder): for the labels."""
    cfg = dataclasses.replace(model_config(TASK), **model)
    return SavedRun.unsaved(name, TASK, cfg, recipe or Recipe(), curves_of(None, None))


def test_labels_say_what_differs_between_the_runs_chosen():
    base = run("a")
    assert run_labels([base, run("b", Recipe(clip=0.0))]) == ["clip 1", "no clipping"]
    assert run_labels([base, run("b", Recipe(ramp=False))]) == ["warm-up 50", "no warm-up"]
    assert run_labels([base, run("b", scaled=False)]) == ["scores ÷ √d_k", "no 1/√d_k scaling"]
    assert run_labels([base, run("b", Recipe(warmup=100, label_smoothing=0.1))]) == [
        "warm-up 50, no label smoothing",
        "warm-up 100, label smoothing 0.1",
    ]
    assert run_labels([base, run("b", n_heads=1)]) == ["4 heads", "1 head"]
    # without its ramp a 1/√step schedule holds the peak for the warm-up; a constant one has none
    held = run("b", Recipe(warmup=100, ramp=False))
    assert held.recipe.lr_at(1) == held.recipe.lr_at(100) > held.recipe.lr_at(101)
    assert run_labels([base, held]) == ["warm-up 50", "peak lr held 100 updates, no warm-up"]
    flat = run("b", Recipe(schedule="constant", warmup=100, ramp=False))
    assert flat.recipe.lr_at(1) == flat.recipe.lr_at(5000)
    assert run_labels([base, flat]) == ["1/√step decay, warm-up 50", "constant lr, no warm-up"]
    assert comparison_title([base, run("b", Recipe(warmup=0, schedule="constant"))]) == (
        "1/√step decay vs constant lr · warm-up 50 vs no warm-up"
    )


def test_runs_alike_are_told_apart_by_name():
    a, b = run("a"), run("b")
    assert run_labels([a, b]) == ["a", "b"]  # nothing differs
    hand_written = run("c", Recipe(clip=1, lr=7e-3, betas=(0.9, 0.99)))  # ints where JSON had 1
    assert repr(hand_written.recipe.clip) != repr(a.recipe.clip)
    assert differing([a, hand_written]) == []
    assert run_labels([a, hand_written]) == ["a", "c"]
    assert comparison_title([a, b]) == ""
    c = run("c", Recipe(dropout=0.1))
    assert run_labels([a, b, c]) == ["no dropout (a)", "no dropout (b)", "dropout 0.1"]


def test_the_steps_a_run_may_take_and_how_often_it_is_watched_are_not_differences():
    a, b = run("a"), run("b", Recipe(steps=100, eval_every=5, snapshot_every=7))
    assert differing([a, b]) == []
    assert recipe_changes(b.recipe) == []


def test_the_table_names_the_recipes_changes_from_the_defaults_and_the_models_shape():
    assert recipe_changes(Recipe()) == []
    assert recipe_changes(Recipe(clip=0.0, warmup=100, lr=3e-3)) == ["lr 0.003", "warm-up 100", "no clipping"]
    assert task_text(TASK) == "reverse, 6 tokens, 5 symbols"
    assert model_text(run("a")) == "2 layers × 4 heads, d_model 64"
    assert model_text(run("a", n_layers=1, n_heads=1, scaled=False)) == (
        "1 layer × 1 head, d_model 64, no 1/√d_k scaling"
    )


def test_labels_in_chinese_hold_no_english():
    runs = [run("a"), run("b", Recipe(clip=0.0, ramp=False, label_smoothing=0.1, dropout=0.1), scaled=False)]
    with use_language("zh"):
        words = [*run_labels(runs), comparison_title(runs), task_text(TASK), model_text(runs[1])]
        words += recipe_changes(runs[1].recipe)
    assert not english_words(words), words


# --- the same run without ... ------------------------------------------------------------------


@pytest.mark.parametrize("key", list(VARIANTS))
def test_each_variant_switches_off_exactly_one_thing(key):
    base = run("base", Recipe(label_smoothing=0.1, dropout=0.1))
    cfg, recipe = variant(base, key)
    changed = dataclasses.replace(base, name="v", cfg=cfg, recipe=recipe)
    expected = {"warmup": "ramp", "clip": "clip", "label_smoothing": "label_smoothing",
                "dropout": "dropout", "scaled": "scaled"}[key]  # fmt: skip
    assert [s.name for s in differing([base, changed])] == [expected]
    assert cfg.seed == base.cfg.seed
    assert recipe.seed == base.recipe.seed


def test_a_variant_of_what_a_run_has_off_already_is_none():
    base = run("base")  # label smoothing and dropout are off by default
    assert variant(base, "label_smoothing") is None
    assert variant(base, "dropout") is None
    assert variant(run("b", Recipe(warmup=0, schedule="constant")), "warmup") is None
    assert variant(run("c", scaled=False), "scaled") is None
    with pytest.raises(ValueError, match="not one of"):
        variant(base, "everything")


def test_without_warm_up_the_peak_comes_at_once_and_the_decay_is_the_same():
    with_ramp, without = Recipe(warmup=50), Recipe(warmup=50, ramp=False)
    assert without.lr_at(1) == without.lr_at(50) == with_ramp.lr_at(50) == with_ramp.lr
    assert with_ramp.lr_at(1) == pytest.approx(with_ramp.lr / 50)
    for step in (51, 200, 1000):
        assert without.lr_at(step) == with_ramp.lr_at(step)
    constant = Recipe(schedule="constant", warmup=20, ramp=False)
    assert constant.lr_at(1) == constant.lr
    with pytest.raises(ValueError, match="ramp='yes' must be true or false"):
        Recipe(ramp="yes")


def test_a_variants_name_is_a_free_run_name():
    assert variant_name("reverse-2L4H64", "warmup") == "reverse-2L4H64-no-warmup"
    long = "x" * 64
    name = variant_name(long, "label_smoothing")
    assert len(name) == 64
    assert name.endswith("-no-smoothing")
    taken = {"a-no-clip", "a-no-clip-2"}
    assert variant_name("a", "clip", taken=taken.__contains__) == "a-no-clip-3"
    assert all(is_run_name(variant_name(base, key)) for base in ("a", long, "-") for key in VARIANTS)
