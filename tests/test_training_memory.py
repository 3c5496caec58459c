"""Activation checkpointing and gradient accumulation: the same gradients, less memory."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tformer.i18n import tr as english  # the notes' templates, filled in English
from tformer.model.encoder import Encoder
from tformer.training.memory import (
    SweepSetup,
    accumulated_gradients,
    accumulation_sweep,
    checkpoint_sweep,
    checkpointed,
    step_cost,
    step_work,
)
from tformer.training.recipe import model_config
from tformer.training.tasks import TaskSpec, make_batch

SPEC = TaskSpec("reverse", length=32)


def _model(n_layers: int = 3, dropout: float = 0.0) -> Encoder:
    torch.manual_seed(0)
    return Encoder(model_config(SPEC, n_layers=n_layers, d_model=32, dropout=dropout)).train()


def _batch(n: int, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    x, y = make_batch(SPEC, np.random.default_rng(seed), n)
    return torch.from_numpy(x.astype(np.int64)), torch.from_numpy(y.astype(np.int64))


def _max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k] - b[k]).abs().max()) for k in a)


@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_checkpointed_blocks_give_the_plain_gradients(dropout: float) -> None:
    model, batch = _model(dropout=dropout), [_batch(8)]
    torch.manual_seed(5)
    plain = accumulated_gradients(model, batch, smoothing=0.1)
    torch.manual_seed(5)  # the same dropout masks: checkpoint replays the RNG in its recompute
    with checkpointed(model):
        again = accumulated_gradients(model, batch, smoothing=0.1)
    assert _max_diff(plain, again) <= 1e-6
    assert max(float(g.abs().max()) for g in plain.values()) > 1e-3  # the gradients are not all 0


def test_checkpointing_ends_with_the_block() -> None:
    model = _model()
    with checkpointed(model):
        assert all("forward" in vars(block) for block in model.blocks)
    assert not any("forward" in vars(block) for block in model.blocks)
    with pytest.raises(RuntimeError, match="inside"), checkpointed(model):
        raise RuntimeError("inside")
    assert not any("forward" in vars(block) for block in model.blocks)


@pytest.mark.parametrize("sizes", [(4, 4, 4, 4), (5, 11)])
def test_micro_batches_accumulate_to_the_whole_batch_gradient(sizes: tuple[int, ...]) -> None:
    model = _model()
    x, y = _batch(sum(sizes))
    whole = accumulated_gradients(model, [(x, y)])
    parts = accumulated_gradients(model, list(zip(x.split(list(sizes)), y.split(list(sizes)), strict=True)))
    scale = max(float(g.abs().max()) for g in whole.values())
    assert _max_diff(whole, parts) <= 1e-5 * scale


def test_accumulation_needs_a_batch() -> None:
    with pytest.raises(ValueError, match="at least one micro-batch"):
        accumulated_gradients(_model(), [])


def test_checkpointing_and_micro_batches_hold_less_memory() -> None:
    model = _model(n_layers=4)
    x, y = _batch(32)
    plain = step_cost(model, [(x, y)], max_seconds=0.05)
    saved = step_cost(model, [(x, y)], checkpoint_blocks=True, max_seconds=0.05)
    micro = step_cost(model, list(zip(x.chunk(4), y.chunk(4), strict=True)), max_seconds=0.05)
    assert plain.memory_method == "profiler"
    assert plain.peak_bytes is not None
    assert saved.peak_bytes is not None
    assert micro.peak_bytes is not None
    assert saved.peak_bytes < 0.7 * plain.peak_bytes, (saved.peak_bytes, plain.peak_bytes)
    assert micro.peak_bytes < 0.7 * plain.peak_bytes, (micro.peak_bytes, plain.peak_bytes)
    assert plain.timing.n >= 1
    assert plain.timing.median > 0


def test_sweeps_give_two_rows_per_shape_and_refuse_what_the_budget_cannot_hold() -> None:
    rows = checkpoint_sweep([16], [1, 2], SweepSetup(2**30, d_model=32, max_seconds=0.02), batch=8)
    assert [(r.layers, r.checkpoint) for r in rows] == [(1, False), (1, True), (2, False), (2, True)]
    assert all(r.cost is not None and r.skipped is None for r in rows)
    refused = accumulation_sweep([8, 16], SweepSetup(1, d_model=32), micro=4, length=16, layers=1)
    assert [(r.batch, r.micro) for r in refused] == [(8, 1), (8, 4), (16, 1), (16, 4)]
    assert all(r.cost is None for r in refused)
    assert all(r.skipped is not None and "over the budget" in r.skipped.render(english) for r in refused)


def test_a_sweep_measures_each_shape_once_in_increasing_order() -> None:
    setup = SweepSetup(2**30, d_model=16, max_seconds=0.01)
    rows = checkpoint_sweep([32, 16, 32], [2, 1, 2], setup, batch=4)
    assert [(r.length, r.layers, r.checkpoint) for r in rows] == [
        (n, layers, ck) for n in (16, 32) for layers in (1, 2) for ck in (False, True)
    ]
    assert all(r.cost is not None for r in rows)


def test_a_sweep_starts_no_row_it_predicts_past_its_time() -> None:
    """The first row always runs; every later one is predicted from the row measured before it
    (its time per step scaled by `step_work`) and refused when it would end past the budget."""
    setup = SweepSetup(2**30, d_model=16, max_seconds=0.01, total_seconds=1e-6)
    first, *rest = checkpoint_sweep([16], [1, 2], setup, batch=4)
    assert first.cost is not None
    assert first.skipped is None
    assert [r.cost for r in rest] == [None] * 3
    for r in rest:
        assert r.skipped is not None
        said = r.skipped.render(english)
        assert said.startswith("not run: about")
        assert "past the sweep's 0 s" in said
    roomy = SweepSetup(2**30, d_model=16, max_seconds=0.01, total_seconds=600.0)
    assert all(r.cost is not None for r in checkpoint_sweep([16], [1, 2], roomy, batch=4))


def test_step_work_grows_with_every_dimension_of_the_step() -> None:
    base = step_work(2, 64, 32, 64)
    assert step_work(4, 64, 32, 64) == 2 * base  # layers and batch: linear
    assert step_work(2, 64, 64, 64) == 2 * base
    # length: linear in the projections and the FFN, quadratic in attention's two products
    assert 2 * base < step_work(2, 128, 32, 64) < 4 * base


def test_accumulation_sweep_wants_equal_micro_batches() -> None:
    with pytest.raises(ValueError, match=r"\[10\] do not split into 4"):
        accumulation_sweep([8, 10], SweepSetup(2**30), micro=4)
