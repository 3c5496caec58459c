"""Mixed-precision training: autocast really computes in 16 bits, float32 is the plain trainer's
step, the gradient scaler scales, unscales, skips and adjusts, and the comparison measures every
precision within its budgets."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tformer.training import precision_train
from tformer.training.precision_train import (
    MixedPrecisionTrainer,
    PrecisionSettings,
    affordable_updates,
    compare_precisions,
    precision_memory_bytes,
    precisions_for,
)
from tformer.training.recipe import Recipe, model_config
from tformer.training.tasks import TaskSpec, make_batch
from tformer.training.trainer import Trainer, training_memory_bytes

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

SPEC = TaskSpec("reverse", length=8, vocab=8)
CFG = model_config(SPEC, n_layers=2, n_heads=2, d_model=16)


def _batch(n: int = 16, seed: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    x, y = make_batch(SPEC, np.random.default_rng(seed), n)
    return torch.from_numpy(x), torch.from_numpy(y)


def _outputs_of(module: torch.nn.Module, run) -> list[torch.dtype]:
    seen: list[torch.dtype] = []
    handle = module.register_forward_hook(lambda _m, _i, out: seen.append(out.dtype))
    try:
        run()
    finally:
        handle.remove()
    return seen


def test_autocast_step_computes_its_products_in_bfloat16_and_keeps_float32_weights():
    trainer = MixedPrecisionTrainer(CFG, SPEC, Recipe(batch=16), precision="bfloat16", n_held_out=8)
    inner = trainer.model.blocks[0].attn.qkv  # a Linear inside the first block
    assert _outputs_of(inner, trainer.step) == [torch.bfloat16]
    assert _outputs_of(trainer.model.head, trainer.evaluate) == [torch.bfloat16]  # evaluation too
    for name, p in trainer.model.named_parameters():
        assert p.dtype == torch.float32, name  # the master weights
        assert p.grad is not None, name
        assert p.grad.dtype == torch.float32, name
    with trainer.autocast():
        from tformer.training.trainer import label_smoothed_loss

        x, y = _batch()
        assert label_smoothed_loss(trainer.model.logits(x), y, 0.0).dtype == torch.float32
    plain = MixedPrecisionTrainer(CFG, SPEC, Recipe(batch=16), precision="float32", n_held_out=8)
    assert _outputs_of(plain.model.blocks[0].attn.qkv, plain.step) == [torch.float32]


@pytest.mark.parametrize(
    "recipe", [Recipe(batch=8), Recipe(batch=8, accum=2, dropout=0.1, label_smoothing=0.1)]
)
def test_the_float32_path_is_the_plain_trainers_step(recipe):
    plain = Trainer(CFG, SPEC, recipe, n_held_out=8)
    mixed = MixedPrecisionTrainer(CFG, SPEC, recipe, precision="float32", n_held_out=8)
    for _ in range(6):  # its own batches: the same generator, the same draws
        a, b = plain.step(), mixed.step()
        assert (a.step, a.loss, a.lr, a.grad_norm) == (b.step, b.loss, b.lr, b.grad_norm)
    for (name, p), q in zip(plain.model.named_parameters(), mixed.model.parameters(), strict=True):
        assert torch.equal(p, q), name
    assert mixed.skipped_steps == 0
    assert not mixed.scaler.is_enabled()


def test_the_scaler_scales_the_loss_and_unscales_before_clipping():
    recipe = Recipe(batch=16, clip=0.0)  # no clipping: the norm is the gradient's own
    batch = [_batch()]
    reference = MixedPrecisionTrainer(CFG, SPEC, recipe, precision="float16", n_held_out=8, init_scale=1.0)
    scaled = MixedPrecisionTrainer(CFG, SPEC, recipe, precision="float16", n_held_out=8, init_scale=2.0**10)
    backward_seen: list[float] = []
    original = torch.Tensor.backward

    def spy(self, *args, **kwargs):
        backward_seen.append(float(self.detach()))
        return original(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(torch.Tensor, "backward", spy)
        a = reference.step(batch)
        b = scaled.step(batch)
    assert backward_seen[1] == pytest.approx(2.0**10 * backward_seen[0], rel=1e-3)  # S·L went backward
    assert b.grad_norm == pytest.approx(a.grad_norm, rel=1e-2)  # ... and the norm is of g, not S·g
    for p, q in zip(reference.model.parameters(), scaled.model.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, rtol=2e-2, atol=1e-4)  # the .grad left are g
    assert a.grad_norm > 1e-3


def test_the_scaler_skips_an_update_whose_gradient_overflows_and_halves_its_scale():
    trainer = MixedPrecisionTrainer(
        CFG, SPEC, Recipe(batch=16), precision="float16", n_held_out=8, init_scale=2.0**40
    )
    before = [p.detach().clone() for p in trainer.model.parameters()]
    stats = trainer.step([_batch()])
    assert trainer.skipped_last
    assert trainer.skipped_steps == 1
    assert trainer.scaler.get_scale() == 2.0**39
    assert math.isfinite(stats.loss)
    assert not math.isfinite(stats.grad_norm)  # what overflowed
    assert all(torch.equal(p, q) for p, q in zip(before, trainer.model.parameters(), strict=True))
    assert trainer.divergence(stats) is None  # the scaler at work, not a blow-up
    assert trainer.initial_loss is None  # a skipped update is not the run's starting point
    plain = Trainer(CFG, SPEC, Recipe(batch=16), n_held_out=8)
    assert plain.divergence(stats) is not None  # the same numbers from a plain step would be one


def test_the_scaler_grows_after_clean_updates_and_training_goes_on():
    trainer = MixedPrecisionTrainer(
        CFG, SPEC, Recipe(batch=16), precision="float16", n_held_out=8, init_scale=2.0**8, growth_interval=3
    )
    first = [p.detach().clone() for p in trainer.model.parameters()]
    for _ in range(3):
        trainer.step()
    assert trainer.skipped_steps == 0
    assert trainer.scaler.get_scale() == 2.0**9
    assert not all(torch.equal(p, q) for p, q in zip(first, trainer.model.parameters(), strict=True))


def test_an_unknown_precision_is_refused():
    with pytest.raises(ValueError, match="float8"):
        MixedPrecisionTrainer(CFG, SPEC, precision="float8")
    with pytest.raises(ValueError, match="at most once"):
        PrecisionSettings(precisions=("float32", "float32"))


def test_a_cpu_compares_float32_with_bfloat16():
    assert precisions_for("cpu") == ("float32", "bfloat16")


TINY = PrecisionSettings(length=8, n_layers=1, n_heads=2, d_model=16, batch=8, steps=12, time_s=0.05)


def test_the_comparison_trains_every_precision_from_the_same_start():
    result = compare_precisions(TINY)
    assert result is not None
    assert [r.precision for r in result.runs] == ["float32", "bfloat16"]
    assert result.updates == 12
    assert not result.notes
    for run in result.runs:
        assert run.updates == 12
        assert run.memory_method == "profiler"
        assert run.peak_bytes is not None
        assert run.peak_bytes > 0
        assert run.timing.n >= 1
        assert 0.0 <= run.accuracy <= 1.0
        assert run.scale is None  # no scaler on a CPU's bfloat16
    plain = Trainer(TINY.config, TINY.spec, TINY.recipe, n_held_out=8)
    assert list(result.run("float32").losses) == [plain.step().loss for _ in range(12)]
    assert result.run("bfloat16").losses != result.run("float32").losses  # computed otherwise
    assert result.run("bfloat16").losses[0] == pytest.approx(result.run("float32").losses[0], rel=0.05)


def test_the_comparison_refuses_before_building_anything(monkeypatch):
    def no(*_args, **_kwargs):
        raise AssertionError("a trainer was built")

    monkeypatch.setattr(precision_train, "MixedPrecisionTrainer", no)
    settings = PrecisionSettings(budget_bytes=2**20)
    with pytest.raises(ValueError, match="over the budget of 1 MiB"):
        compare_precisions(settings)
    assert precision_memory_bytes(settings) == training_memory_bytes(settings.config, settings.recipe) + 2 * (
        settings.config.n_params()
    )


def test_the_budget_cuts_every_precision_to_the_same_updates():
    # 0.01 s and 0.1 s an update, 10 done each, 5 s left: (5 + 0.1 + 1.0) / 0.11 = 55.45
    assert affordable_updates([0.01, 0.1], [10, 10], 150, 5.0) == 55
    assert affordable_updates([0.01, 0.1], [10, 10], 40, 5.0) == 40  # it all fits
    assert affordable_updates([0.01, 0.1], [10, 12], 150, 0.0) == 12  # never below what is done
    # the probes train at most 2 + 1 + 25 updates: a budget of ~0 stops there, short of 60
    result = compare_precisions(PrecisionSettings(**{**TINY.__dict__, "steps": 60, "budget_s": 1e-6}))
    assert result is not None
    assert result.updates <= 28
    assert {r.updates for r in result.runs} == {result.updates}
    [note] = result.notes
    assert "over the budget" in note.template


def test_a_stop_ends_the_comparison_without_a_result():
    assert compare_precisions(TINY, stop=lambda: True) is None


@pytest.mark.slow  # a fresh interpreter imports torch
def test_peak_memory_from_several_threads_at_once_does_not_crash_the_process():
    # two CPU profilers at once in one process crash it; peak_memory takes one at a time
    code = (
        "import threading, torch\n"
        "from tformer.efficiency.measure import peak_memory\n"
        "dev = torch.device('cpu')\n"
        "out = []\n"
        "def work():\n"
        "    for _ in range(10):\n"
        "        out.append(peak_memory(lambda: torch.ones(128, 128) @ torch.ones(128, 128), dev))\n"
        "ts = [threading.Thread(target=work) for _ in range(3)]\n"
        "[t.start() for t in ts]; [t.join() for t in ts]\n"
        "assert len(out) == 30 and all(p >= 128 * 128 * 4 for p in out), out\n"
    )
    root = Path(__file__).resolve().parents[1]  # this tree's tformer
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=root)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.gpu
def test_float16_with_the_scaler_trains_on_cuda():
    trainer = MixedPrecisionTrainer(CFG, SPEC, Recipe(batch=32), "cuda", precision="float16", n_held_out=64)
    assert trainer.scaler.is_enabled()
    assert _outputs_of(trainer.model.blocks[0].attn.qkv, trainer.step) == [torch.float16]
    losses = [trainer.step().loss for _ in range(60)]
    assert losses[-1] < losses[0]
    settings = PrecisionSettings(**{**TINY.__dict__, "device": "cuda", "precisions": precisions_for("cuda")})
    result = compare_precisions(settings)
    assert result is not None
    assert {r.memory_method for r in result.runs} == {"cuda"}
    assert result.run("float16").scale is not None


def _run(precision: str, ms: tuple[float, float, float], mib: float, acc: float, scale=None, skipped=0):
    from tformer.timing import Timing

    q1, med, q3 = (m / 1e3 for m in ms)
    timing = Timing(med, q1, q3, q1, q3, 9, True)
    return precision_train.PrecisionRun(
        precision, timing, int(mib * 2**20), "profiler", (2.0, 1.0), acc, skipped, scale
    )


def _said(*runs) -> list[tuple[str, dict]]:
    result = precision_train.PrecisionComparison(TINY, runs, 150, 10.0)
    return [(n.template, dict(n.values)) for n in precision_train.describe(result)]


def test_the_sentences_say_slower_with_the_numbers():
    said = _said(_run("float32", (21, 22, 23), 8.0, 1.0), _run("bfloat16", (340, 350, 360), 5.0, 0.99))
    (time_t, time_v), (mem_t, mem_v), (acc_t, acc_v) = said
    assert time_t.startswith("{p} was slower, not faster, here")
    assert mem_t.startswith("{p} held {share:.0%} of {base}'s peak memory")
    assert acc_t.startswith("After {n} updates {p} reached {acc:.1%} held-out accuracy")
    assert time_v["ratio"] == pytest.approx(350 / 22)
    assert (time_v["ms"], time_v["base_ms"]) == pytest.approx((350, 22))
    assert mem_v["share"] == pytest.approx(5 / 8)
    assert (acc_v["acc"], acc_v["base_acc"], acc_v["n"]) == (0.99, 1.0, 150)


def test_the_sentences_say_faster_or_the_same_and_name_the_scaler():
    faster = _said(_run("float32", (21, 22, 23), 8.0, 1.0), _run("float16", (9, 10, 11), 5.0, 1.0, 1024.0, 3))
    assert faster[0][0].startswith("{p} was faster here")
    assert faster[0][1]["ratio"] == pytest.approx(10 / 22)
    assert faster[-1][1] == {"k": 3, "n": 2, "scale": 1024.0}
    same = _said(_run("float32", (20, 22, 24), 8.0, 1.0), _run("bfloat16", (21, 23, 25), 8.0, 1.0))
    assert same[0][0].startswith("{p} took about as long per update as {base}")  # quartiles overlap


def test_the_cpus_bfloat16_instructions_are_read_from_its_flags():
    info = (
        "processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512_bf16\n\nprocessor\t: 1\nflags\t\t: fpu avx2\n"
    )
    assert precision_train.cpu_bf16_flags(info) == ("avx512_bf16",)
    assert precision_train.cpu_bf16_flags("flags : fpu avx2 fma") == ()
    assert precision_train.cpu_bf16_flags("flags : amx_bf16 amx_tile avx512_bf16") == (
        "avx512_bf16",
        "amx_bf16",
    )


def test_every_sentence_the_comparison_can_say_is_in_chinese():
    from tformer.i18n import catalog, tr, use_language

    base = _run("float32", (21, 22, 23), 8.0, 1.0)
    notes = [
        *precision_train.describe(
            precision_train.PrecisionComparison(
                TINY,
                (
                    base,
                    _run("bfloat16", (340, 350, 360), 5.0, 0.99),
                    _run("float16", (9, 10, 11), 5.0, 1.0, 8.0, 1),
                ),
                150,
                10.0,
            )
        ),
        *precision_train.describe(
            precision_train.PrecisionComparison(
                TINY, (base, _run("bfloat16", (20, 22, 24), 8, 1.0)), 150, 1.0
            )
        ),
        precision_train.precision_refusal(PrecisionSettings(budget_bytes=1)),
    ]
    cut = compare_precisions(PrecisionSettings(**{**TINY.__dict__, "steps": 60, "budget_s": 1e-6}))
    assert cut is not None
    notes += list(cut.notes)
    templates = {n.template for n in notes if n is not None}
    assert len(templates) == 8  # slower, faster, same, memory, accuracy, scaler, refusal, budget cut
    zh = catalog("zh")
    assert not [t for t in templates if t not in zh]
    with use_language("zh"):
        rendered = [n.render(tr) for n in notes if n is not None]
    assert not [r for r in rendered if re.search(r"[A-Za-z]{2,}", re.sub(r"b?float\d+|MiB", "", r))], rendered
