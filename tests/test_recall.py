"""The long-range recall task (tformer.training.recall): its sequences, a held-out split that
training never draws, models of matched size, reproducible training, the attention model's
pattern captured looking back, and the bounds that stop a run."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from tformer.training.recall import (
    MODELS,
    PAD_ID,
    RecallSettings,
    RecallSpec,
    build_model,
    recall_batch,
    recall_held_out,
    recall_is_held_out,
    recall_targets,
    recurrent_width,
    train_recall,
)
from tformer.training.recipe import Recipe
from tformer.training.tasks import BLANK_ID, FIRST_SYMBOL_ID, as_text, hash_unit

SPEC = RecallSpec(distances=(4, 8, 16), vocab=8)


def tiny(protocol: str = "separate", steps: int = 40, seed: int = 0, **changes) -> RecallSettings:
    recipe = Recipe(lr=5e-3, warmup=5, schedule="constant", steps=steps, batch=16, seed=seed)
    fields = {"spec": RecallSpec(distances=(4, 8), vocab=8), "protocol": protocol, "recipe": recipe}
    fields |= {"d_model": 16, "n_heads": 2, "n_eval": 32, "n_eval_during": 16, "eval_every": 10}
    fields |= changes
    return RecallSettings(**fields)


# --- the sequences --------------------------------------------------------------------------------


def test_a_batch_holds_the_first_token_distractors_the_blank_and_pads():
    x, d = recall_batch(SPEC, np.random.default_rng(0), 256)
    assert x.shape == (256, SPEC.length) == (256, 17)
    assert set(d.tolist()) == set(SPEC.distances)
    for row, dist in zip(x, d, strict=True):
        assert row[dist] == BLANK_ID
        symbols = row[:dist]
        assert ((symbols >= FIRST_SYMBOL_ID) & (symbols < SPEC.n_ids)).all()
        assert (row[dist + 1 :] == PAD_ID).all()
    np.testing.assert_array_equal(recall_targets(x), x[:, 0])
    assert as_text(x[0][: d[0] + 1]).split()[-1] == "_"


def test_training_never_draws_a_held_out_sequence_and_the_held_out_set_is_all_held_out():
    rng = np.random.default_rng(1)
    for _ in range(20):
        x, _ = recall_batch(SPEC, rng, 128)
        assert not recall_is_held_out(SPEC, x).any()
    for d in SPEC.distances:
        held = recall_held_out(SPEC, d, 100)
        assert recall_is_held_out(SPEC, held).all()
        assert len({r.tobytes() for r in held}) == 100  # distinct
        assert (held[:, d] == BLANK_ID).all()
        assert (held[:, d + 1 :] == PAD_ID).all()


def test_the_split_is_the_tasks_hash_holds_out_about_the_fraction_and_moves_with_the_seed():
    x, _ = recall_batch(replace(SPEC, held_out=0.01), np.random.default_rng(2), 20000)
    frac = recall_is_held_out(SPEC, x).mean()
    assert abs(frac - SPEC.held_out) < 0.02
    np.testing.assert_array_equal(recall_is_held_out(SPEC, x), hash_unit(x, SPEC.seed) < SPEC.held_out)
    assert (recall_is_held_out(replace(SPEC, seed=1), x) != recall_is_held_out(SPEC, x)).any()


def test_the_held_out_set_is_the_same_for_the_same_arguments():
    a = recall_held_out(SPEC, 8, 50)
    np.testing.assert_array_equal(a, recall_held_out(SPEC, 8, 50))
    a[0, 0] = 99  # a copy: the cached set is untouched
    assert recall_held_out(SPEC, 8, 50)[0, 0] != 99


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"distances": ()}, "non-empty"),
        ({"distances": (8, 4)}, "increase"),
        ({"distances": (1, 4)}, "increase"),
        ({"distances": (4, 600)}, "511"),
        ({"vocab": 1}, "vocab"),
        ({"vocab": 2, "distances": (4, 8)}, "hold some out"),
        ({"held_out": 0.95}, "held_out"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_specs_raise_clear_errors(changes, message):
    with pytest.raises(ValueError, match=message):
        RecallSpec(**changes)


def test_bad_settings_and_arguments_raise_clear_errors():
    with pytest.raises(ValueError, match="protocol"):
        RecallSettings(protocol="both")
    with pytest.raises(ValueError, match="time_limit_s"):
        RecallSettings(time_limit_s=0)
    with pytest.raises(ValueError, match="n_heads"):
        RecallSettings(d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="distance"):
        recall_held_out(SPEC, 5, 10)
    with pytest.raises(ValueError, match="kind"):
        train_recall(tiny(), "lstm")


# --- the models -------------------------------------------------------------------------------------


def test_every_model_has_about_the_attention_models_parameter_count():
    s = RecallSettings()
    counts = {k: sum(p.numel() for p in build_model(s, k).parameters()) for k in MODELS}
    assert abs(counts["gru"] - counts["attention"]) / counts["attention"] < 0.02, counts
    assert abs(counts["rnn"] - counts["attention"]) / counts["attention"] < 0.02, counts
    assert recurrent_width("gru", 11, 32, counts["attention"]) < recurrent_width(
        "rnn", 11, 32, counts["attention"]
    )


def test_building_a_model_leaves_the_global_seed_alone():
    torch.manual_seed(5)
    state = torch.random.get_rng_state()
    build_model(tiny(), "gru")
    build_model(tiny(), "attention")
    assert torch.equal(torch.random.get_rng_state(), state)


# --- training ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained():
    threads = torch.get_num_threads()
    out = {k: train_recall(tiny(), k, threads=1) for k in MODELS}
    torch.set_num_threads(threads)
    return out


def test_the_same_seed_gives_the_same_numbers(trained):
    again = train_recall(tiny(), "gru", threads=1)
    first = trained["gru"]
    np.testing.assert_array_equal(again.losses, first.losses)
    np.testing.assert_array_equal(again.accuracy, first.accuracy)
    np.testing.assert_array_equal(again.curve_accuracy, first.curve_accuracy)
    other = train_recall(tiny(seed=1), "gru", threads=1)
    assert not np.array_equal(other.losses, first.losses)


def test_a_result_reports_accuracy_per_distance_steps_time_and_the_curve(trained):
    for kind, r in trained.items():
        assert r.kind == kind
        assert r.stopped == "steps"
        assert r.distances.tolist() == [4, 8]
        assert r.accuracy.shape == (2,)
        assert ((r.accuracy >= 0) & (r.accuracy <= 1)).all()
        assert r.steps.tolist() == [40, 40]  # one model per distance
        assert r.losses.shape == (2, 40)
        assert np.isfinite(r.losses).all()
        assert r.seconds > 0
        assert r.n_params.shape == (2,)
        assert r.curve_steps.tolist() == [10, 20, 30, 40]
        assert r.curve_accuracy.shape == (4, 2)
        assert r.chance == 1 / 8


def test_training_learns_the_short_distances(trained):
    r = trained["attention"]
    assert r.accuracy.min() > 2 * r.chance, r.accuracy
    assert r.losses[:, -5:].mean() < r.losses[:, :5].mean()


def test_the_attention_models_pattern_is_captured_looking_back(trained):
    look = trained["attention"].look_back
    assert look is not None
    assert trained["gru"].look_back is None
    assert trained["rnn"].look_back is None
    assert look.weight_on_first.shape == (2, 2)  # [distance, head_index]
    assert look.probe_ids.shape == (2, 9)
    assert look.probe_pattern.shape == (2, 2, 9)
    for i, d in enumerate((4, 8)):
        row = look.probe_pattern[i]  # [head_index, key_pos]
        np.testing.assert_allclose(row[:, : d + 1].sum(-1), 1.0, atol=1e-5)  # over the real tokens
        assert (row[:, d + 1 :] == 0).all()  # nothing on the pads
        assert look.probe_ids[i, d] == BLANK_ID
        np.testing.assert_allclose(look.probe_pattern[i, look.heads[i], 0], row[look.heads[i], 0])
        assert look.heads[i] == int(look.weight_on_first[i].argmax())


def test_mixed_training_is_one_model_over_every_distance():
    r = train_recall(tiny("mixed", steps=20), "attention", threads=1)
    assert r.steps.tolist() == [20]
    assert r.losses.shape == (1, 20)
    assert r.accuracy.shape == (2,)
    assert r.curve_accuracy.shape == (2, 2)
    assert r.look_back is not None
    assert r.look_back.probe_pattern.shape == (2, 2, 9)


def test_the_time_limit_and_stop_end_a_run_and_say_so():
    r = train_recall(tiny(steps=10_000, time_limit_s=0.2), "gru", threads=1)
    assert r.stopped == "time"
    assert r.steps.sum() < 2 * 10_000
    asked = []
    r = train_recall(
        tiny(), "attention", stop=lambda: len(asked) >= 3, on_step=lambda s, loss: asked.append(s)
    )
    assert r.stopped == "stopped"
    assert r.steps.tolist() == [3, 0]
    assert np.isnan(r.losses[0, 3:]).all()
    assert np.isnan(r.losses[1]).all()
