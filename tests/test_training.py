"""Training core: schedule, clipping, label smoothing, accumulation, divergence, a real tiny run."""

from __future__ import annotations

import math
from dataclasses import fields

import numpy as np
import pytest
import torch

from tformer import Encoder
from tformer.training.recipe import Recipe, model_config, noam_lr, recipe_help, schedule_curve
from tformer.training.tasks import TaskSpec, is_held_out, task_tokenizer
from tformer.training.trainer import Trainer, label_smoothed_loss, training_memory_bytes

from ._models import model_and_ids

SPEC = TaskSpec("copy", length=8, vocab=8)


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def small_trainer(**recipe: object) -> Trainer:
    cfg = model_config(SPEC, n_layers=1, n_heads=2, d_model=16)
    return Trainer(cfg, SPEC, Recipe(**recipe), n_held_out=64)  # type: ignore[arg-type]


# --- the schedule -------------------------------------------------------------------------------


def test_noam_peaks_at_warmup_then_decays_as_inverse_sqrt():
    peak, w = 3e-3, 100
    assert noam_lr(0, peak=peak, warmup=w) == 0.0
    assert noam_lr(w, peak=peak, warmup=w) == pytest.approx(peak)
    assert noam_lr(w // 4, peak=peak, warmup=w) == pytest.approx(peak / 4)  # linear warm-up
    assert noam_lr(4 * w, peak=peak, warmup=w) == pytest.approx(peak / 2)  # 1/sqrt(4)
    assert noam_lr(100 * w, peak=peak, warmup=w) == pytest.approx(peak / 10)
    # The paper's formula, d_model^-0.5 * min(s^-0.5, s * w^-1.5), times one constant factor.
    d_model = 512
    for s in (1, 7, 99, 100, 101, 1000, 12345):
        paper = d_model**-0.5 * min(s**-0.5, s * w**-1.5)
        assert noam_lr(s, peak=peak, warmup=w) == pytest.approx(paper * peak * math.sqrt(d_model * w))


def test_schedule_curve_follows_the_recipe():
    steps, lrs = schedule_curve(Recipe(lr=1e-3, warmup=50, steps=400))
    assert steps[0] == 1
    assert steps[-1] == 400
    assert lrs.shape == (400,)
    assert steps[int(np.argmax(lrs))] == 50
    assert lrs.max() == pytest.approx(1e-3)
    assert np.all(np.diff(lrs[:50]) > 0)
    assert np.all(np.diff(lrs[50:]) < 0)
    _, const = schedule_curve(Recipe(lr=1e-3, schedule="constant", warmup=10, steps=30))
    assert const[4] == pytest.approx(5e-4)
    assert np.allclose(const[9:], 1e-3)
    _, flat = schedule_curve(Recipe(lr=1e-3, schedule="constant", warmup=0, steps=5))
    assert np.allclose(flat, 1e-3)


def test_trainer_uses_the_schedule():
    tr = small_trainer(lr=1e-2, warmup=4)
    lrs = [tr.step().lr for _ in range(8)]
    assert lrs == pytest.approx([noam_lr(s, peak=1e-2, warmup=4) for s in range(1, 9)])
    assert tr.optimizer.param_groups[0]["lr"] == pytest.approx(lrs[-1])


# --- clipping, label smoothing, accumulation ----------------------------------------------------


def global_grad_norm(model: torch.nn.Module) -> float:
    return float(torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters()])))


def test_clipping_bounds_the_global_norm_and_reports_the_norm_before():
    clipped = small_trainer(clip=1e-3)
    free = small_trainer(clip=0.0)
    batch = clipped.draw()
    a, b = clipped.step([batch]), free.step([batch])
    assert a.grad_norm == pytest.approx(b.grad_norm, rel=1e-5)  # reported before clipping
    assert a.grad_norm > 1e-3
    assert global_grad_norm(clipped.model) <= 1e-3 * (1 + 1e-4)
    assert global_grad_norm(free.model) == pytest.approx(b.grad_norm, rel=1e-5)


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.5, 0.9])
def test_label_smoothing_of_a_uniform_prediction_is_log_v(smoothing):
    V = 7
    logits = torch.zeros(2, 3, V)
    targets = torch.tensor([[0, 3, 6], [1, 1, 2]])
    loss = label_smoothed_loss(logits, targets, smoothing)
    assert float(loss) == pytest.approx(math.log(V), rel=1e-6)


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
def test_label_smoothing_of_a_near_one_hot_prediction(smoothing):
    V, M = 5, 10.0  # logit M on the target, 0 elsewhere
    logits = torch.zeros(1, 1, V, dtype=torch.float64)  # the loss is tiny: float32 rounds it
    logits[0, 0, 2] = M
    loss = float(label_smoothed_loss(logits, torch.tensor([[2]]), smoothing))
    # -sum_c q_c log p_c with q_y = 1 - eps + eps/V, q_c = eps/V, log p_c = x_c - log Z
    log_z = math.log(math.exp(M) + V - 1)
    expected = log_z - (1 - smoothing + smoothing / V) * M
    assert loss == pytest.approx(expected, rel=1e-5)
    if smoothing == 0.1:
        assert loss == pytest.approx(0.8002, abs=1e-4)


def test_two_half_batches_accumulate_to_the_full_batch_gradient():
    full = small_trainer(batch=8, accum=1, clip=0.0)
    halves = small_trainer(batch=4, accum=2, clip=0.0)
    x, y = full.draw()
    a = full.step([(x, y)])
    b = halves.step([(x[:4], y[:4]), (x[4:], y[4:])])
    assert a.loss == pytest.approx(b.loss, rel=1e-5)
    assert a.grad_norm == pytest.approx(b.grad_norm, rel=1e-5)
    for (name, p), q in zip(full.model.named_parameters(), halves.model.parameters(), strict=True):
        assert torch.allclose(p.grad, q.grad, atol=1e-6, rtol=1e-5), name


def test_step_draws_accum_micro_batches():
    tr = small_trainer(batch=4, accum=3)
    sizes = []
    original = tr.draw

    def counting():
        batch = original()
        sizes.append(batch[0].shape[0])
        return batch

    tr.draw = counting  # type: ignore[method-assign]
    tr.step()
    assert sizes == [4, 4, 4]


# --- a real run -----------------------------------------------------------------------------------


def test_a_tiny_copy_run_generalises():
    spec = TaskSpec("copy", length=8, vocab=8)
    tr = Trainer(model_config(spec), spec, Recipe(steps=300, eval_every=10), n_held_out=256)
    evals: list[tuple[int, float]] = []
    summary = tr.run(until_acc=0.95, on_eval=lambda s, a: evals.append((s, a)))
    assert summary.reason == "target", summary
    assert summary.accuracy is not None
    assert summary.accuracy >= 0.95
    assert evals[-1] == (summary.steps, summary.accuracy)
    assert tr.evaluate() == pytest.approx(summary.accuracy)
    # it answers held-out inputs it never trained on
    x, y = tr.held_out
    assert is_held_out(spec, x.numpy()).all()
    assert (tr.predict(x[0].numpy()) == y[0].numpy()).mean() >= 0.75


def test_run_snapshots_evaluates_and_honours_stop():
    tr = small_trainer(steps=20, eval_every=4, snapshot_every=5)
    snaps: list[int] = []
    evals: list[int] = []
    steps: list[int] = []
    summary = tr.run(
        stop=lambda: len(steps) >= 12,
        on_step=lambda s: steps.append(s.step),
        on_eval=lambda n, a: evals.append(n),
        on_snapshot=lambda n, p: snaps.append(n),
    )
    assert summary.reason == "stopped"
    assert summary.steps == 12
    assert steps == list(range(1, 13))
    assert snaps == [0, 5, 10, 12]
    assert evals == [4, 8, 12]  # 12: the step it stopped on
    more = tr.run(on_snapshot=lambda n, p: snaps.append(n))  # carries on to recipe.steps
    assert more.reason == "steps"
    assert more.steps == 20
    assert more.accuracy is not None
    assert snaps[4:] == [15, 20]


def test_snapshot_is_the_probe_pattern():
    tr = small_trainer(dropout=0.3)
    pattern = tr.snapshot()
    assert pattern.shape == (1, 2, 8, 8)
    assert pattern.dtype == np.float32
    assert np.allclose(pattern.sum(-1), 1.0, atol=1e-5)
    assert np.array_equal(pattern, tr.snapshot())  # eval mode: no dropout
    assert tr.model.training  # back to training mode
    assert tr.probe_text == " ".join(task_tokenizer(SPEC).id_to_token(int(i)) or "" for i in tr.probe)


def test_divergence_is_detected_on_an_absurd_lr():
    tr = small_trainer(lr=1e3, schedule="constant", warmup=0, clip=0.0, steps=100)
    summary = tr.run()
    assert summary.reason == "diverged", summary
    assert "lower lr" in summary.message
    assert summary.steps < 100


def test_a_sane_run_is_not_flagged():
    tr = small_trainer(steps=60)
    for _ in range(60):
        assert tr.diverged(tr.step()) is None


def test_dropout_is_seeded_by_the_recipe_and_leaves_global_rng_alone():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    threads = torch.get_num_threads()
    runs = []
    for seed in (5, 5, 6):
        tr = small_trainer(dropout=0.2, seed=seed)
        runs.append([tr.step().loss for _ in range(3)])
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]
    assert torch.equal(torch.get_rng_state(), before)
    assert torch.get_num_threads() == threads


# --- recipe and config ----------------------------------------------------------------------------


def test_every_recipe_field_has_help():
    helps = recipe_help()
    assert list(helps) == [f.name for f in fields(Recipe)]
    for name, text in helps.items():
        assert text.strip(), name
        assert "\n" not in text, name
        assert len(text) < 100, name


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"optimizer": "sgd"}, "optimizer"),
        ({"schedule": "cosine"}, "schedule"),
        ({"lr": 0.0}, "lr"),
        ({"lr": float("nan")}, "lr"),
        ({"betas": (0.9, 1.0)}, "betas"),
        ({"clip": -1.0}, "clip"),
        ({"label_smoothing": 1.0}, "label_smoothing"),
        ({"accum": 0}, "accum"),
        ({"warmup": 0}, "warmup"),
    ],
)
def test_recipe_validation(kw, match):
    with pytest.raises(ValueError, match=match):
        Recipe(**kw)


def test_model_config_fits_the_task():
    spec = TaskSpec("sort", length=12, vocab=10)
    cfg = model_config(spec)
    assert cfg.vocab_size == cfg.n_outputs == task_tokenizer(spec).vocab_size == 13
    assert cfg.max_len == 12
    assert cfg.norm == "pre"
    assert (cfg.n_layers, cfg.n_heads, cfg.d_model) == (2, 4, 64)
    tr = Trainer(cfg, spec, Recipe(dropout=0.1, seed=3), n_held_out=8)
    assert tr.cfg.dropout == 0.1
    assert tr.cfg.seed == 3
    with pytest.raises(ValueError, match="model_config"):
        Trainer(model_config(TaskSpec("sort", vocab=8)), spec, Recipe())


# --- Encoder.logits ---------------------------------------------------------------------------------


def test_logits_are_the_log_of_forward_probabilities():
    model, ids = model_and_ids(n_outputs=11)
    probs = model(ids)
    logits = model.logits(ids)
    assert logits.shape == (2, 9, 11)
    assert torch.allclose(torch.log_softmax(logits, -1), torch.log(probs), atol=1e-5)
    assert torch.allclose(torch.softmax(logits, -1), probs, atol=1e-6)
    mask = torch.ones(2, 9, dtype=torch.long)
    mask[1, 6:] = 0
    assert torch.allclose(torch.softmax(model.logits(ids, mask), -1), model(ids, mask), atol=1e-6)


def test_logits_fire_the_logits_hook_and_need_a_head():
    model, ids = model_and_ids(n_outputs=5)
    seen = []
    with model.hooks([("hook_logits", lambda t, hook: seen.append(t.clone()))]):
        out = model.logits(ids)
        model(ids)
    assert len(seen) == 2
    assert torch.allclose(seen[0], out)
    assert torch.allclose(seen[1], out)
    bare = Encoder(model_and_ids()[0].cfg)
    with pytest.raises(ValueError, match="n_outputs=0"):
        bare.logits(ids)


PEAK_SCRIPT = """
import json, sys
import torch
from tformer.ui.process import keep_freed_memory
from tformer.training.recipe import Recipe, model_config
from tformer.training.tasks import TaskSpec
from tformer.training.trainer import Trainer, training_memory_bytes

def status(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(field))

keep_freed_memory()  # as the app does: freed buffers stay in the heap
torch.set_num_threads(1)
layers, heads, d_model, d_ff, length, batch, dropout = json.loads(sys.argv[1])
spec = TaskSpec("copy", length=length, vocab=16)
cfg = model_config(spec, layers, heads, d_model, d_ff)
recipe = Recipe(batch=batch, dropout=dropout)
before = status("VmRSS")
trainer = Trainer(cfg, spec, recipe)
for _ in range(2):
    trainer.step()
trainer.evaluate(), trainer.snapshot()
print(json.dumps([status("VmHWM") - before, training_memory_bytes(cfg, recipe)]))
"""


@pytest.mark.parametrize(
    "shape",
    [
        (2, 4, 128, 512, 64, 256, 0.0),  # fused attention: activations per token
        (2, 8, 64, 256, 64, 256, 0.1),  # dropout: unfused, batch x heads x length² per layer
    ],
)
def test_the_memory_estimate_bounds_a_measured_training_step(shape):
    """In a fresh process, one Trainer's peak RSS over two steps, an evaluation and a
    snapshot stays under its estimate, and the estimate is not more than twice the peak."""
    import json
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", PEAK_SCRIPT, json.dumps(shape)], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    peak, estimate = json.loads(out.stdout)
    assert peak <= estimate <= 2 * peak + 300 * 2**20, (peak / 2**20, estimate / 2**20)


def test_the_memory_estimate_grows_with_what_the_backward_pass_keeps():
    cfg = model_config(SPEC, n_layers=2, n_heads=4, d_model=64)
    base = training_memory_bytes(cfg, Recipe(batch=64))
    assert training_memory_bytes(cfg, Recipe(batch=128)) > base
    assert training_memory_bytes(cfg, Recipe(batch=64, accum=8)) == base  # one micro-batch at a time
    assert (
        training_memory_bytes(model_config(SPEC, n_layers=4, n_heads=4, d_model=64), Recipe(batch=64)) > base
    )
    # heads count only when dropout makes attention unfused
    assert training_memory_bytes(model_config(SPEC, n_heads=8, d_model=64), Recipe(batch=64)) == base
    dropped = training_memory_bytes(cfg, Recipe(batch=64, dropout=0.1))
    more_heads = training_memory_bytes(
        model_config(SPEC, n_heads=8, d_model=64), Recipe(batch=64, dropout=0.1)
    )
    assert base < dropped < more_heads


@pytest.mark.gpu
def test_trainer_runs_on_cuda():
    spec = TaskSpec("copy", length=8, vocab=8)
    tr = Trainer(model_config(spec), spec, Recipe(steps=200, eval_every=10), device="cuda", n_held_out=64)
    assert next(tr.model.parameters()).is_cuda
    assert tr.held_out[0].is_cuda
    summary = tr.run(until_acc=0.95)
    assert summary.reason == "target", summary
    pattern = tr.snapshot()
    assert isinstance(pattern, np.ndarray)
    assert pattern.shape == (2, 4, 8, 8)
    assert tr.predict(tr.held_out[0][:2]).shape == (2, 8)
