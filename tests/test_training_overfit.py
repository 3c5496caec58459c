"""Heads and overfitting: the grid's bookkeeping (disjoint sets, scores and gaps on a hand-checked
case, seeds, order), its budgets checked before anything is built, and the sentence it says,
including when it shows no overfitting."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch

from tformer.training import overfit
from tformer.training.overfit import (
    Cell,
    GridSettings,
    Scores,
    gap,
    grid_refusal,
    predicted_seconds,
    run_grid,
    score,
    summarize,
    train_cell,
    training_set,
    verdict,
)
from tformer.training.tasks import held_out_set, is_held_out

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

TINY = GridSettings(
    length=6,
    vocab=4,
    sizes=(8, 16),
    head_counts=(1, 2),
    seeds=1,
    d_model=8,
    updates=5,
    batch=4,
    n_held_out=16,
)


def test_training_and_held_out_sequences_are_disjoint():
    settings = GridSettings(sizes=(64, 1024))
    held_x, _ = held_out_set(settings.spec, settings.n_held_out)
    held = {row.tobytes() for row in held_x}
    for seed in range(3):
        x, _ = training_set(settings, seed)
        assert x.shape == (1024, settings.length)
        assert not is_held_out(settings.spec, x).any()
        assert not held & {row.tobytes() for row in x}
    assert is_held_out(settings.spec, held_x).all()
    assert not np.array_equal(training_set(settings, 0)[0], training_set(settings, 1)[0])  # seeds differ


class _Table(torch.nn.Module):
    """A 'model' whose logits for an input id are a fixed row of log-probabilities."""

    def __init__(self, probs: list[list[float]]) -> None:
        super().__init__()
        self.table = torch.log(torch.tensor(probs, dtype=torch.float32))

    def logits(self, ids: torch.Tensor) -> torch.Tensor:
        return self.table[ids]  # [batch, pos, 3]


@pytest.mark.parametrize("chunk", [1, 512])
def test_scores_and_gap_on_a_hand_checked_case(monkeypatch, chunk):
    monkeypatch.setattr(overfit, "EVAL_CHUNK", chunk)
    model = _Table([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.5, 0.25, 0.25], [0.1, 0.1, 0.8]]).train()
    # training set: right, right, wrong (p = 1/4), right (p = 0.8)
    train = score(model, torch.tensor([[0, 1], [2, 3]]), torch.tensor([[0, 1], [2, 2]]))
    # held out: wrong (1/4), wrong (1/4), wrong (1/4), right (1/2)
    held = score(model, torch.tensor([[2, 2], [0, 1]]), torch.tensor([[2, 1], [1, 1]]))
    assert model.training  # scored in eval mode, then put back
    ln2 = math.log(2)
    assert train == Scores(0.75, pytest.approx((4 * ln2 - math.log(0.8)) / 4))
    assert held == Scores(0.25, pytest.approx(7 * ln2 / 4))
    d_acc, d_loss = gap(train, held)
    assert d_acc == 0.5
    assert d_loss == pytest.approx((3 * ln2 + math.log(0.8)) / 4)


def test_a_cell_is_reproducible_and_its_seed_matters():
    a = train_cell(TINY, 0, 8, 2)
    b = train_cell(TINY, 0, 8, 2)
    c = train_cell(TINY, 1, 8, 2)
    assert a is not None
    assert b is not None
    assert c is not None
    assert (a.train, a.held_out) == (b.train, b.held_out)
    assert (a.train, a.held_out) != (c.train, c.held_out)
    assert a.gap_accuracy == a.train.accuracy - a.held_out.accuracy
    assert a.n_params == train_cell(TINY, 0, 8, 1).n_params  # same weights for every head count


def test_the_grid_runs_seed_by_seed_and_skips_what_is_done():
    settings = GridSettings(**{**TINY.__dict__, "seeds": 2})
    order = list(settings.cells())
    assert order == [(s, n, h) for s in (0, 1) for n in (8, 16) for h in (1, 2)]
    started, trained, plans = [], [], []
    first = train_cell(settings, 0, 8, 1)
    assert first is not None
    refusal = run_grid(
        settings,
        budget_bytes=2**30,
        budget_s=600,
        done={(0, 8, 1): first},
        on_plan=plans.append,
        on_cell=lambda i, key: started.append((i, key)),
        on_done=trained.append,
    )
    assert refusal is None
    assert [key for _, key in started] == order[1:]
    assert [i for i, _ in started] == list(range(2, 9))
    assert [(c.seed, c.size, c.n_heads) for c in trained] == order[1:]
    [plan] = plans
    assert plan > 0


def test_the_grid_refuses_before_building_anything(monkeypatch):
    def no(*_args, **_kwargs):
        raise AssertionError("a model was built")

    monkeypatch.setattr(overfit, "Trainer", no)
    note = run_grid(TINY, budget_bytes=2**20, budget_s=600)
    assert note is not None
    assert "over the budget of 1 MiB" in note.template.format(**dict(note.values))
    # the time budget: every update at 10 s, predicted before a cell trains
    monkeypatch.setattr(overfit, "cell_costs", lambda s: dict.fromkeys(s.head_counts, (2.0, 10.0)))
    note = run_grid(TINY, budget_bytes=2**30, budget_s=60)
    assert note is not None
    values = dict(note.values)
    assert values["minutes"] == pytest.approx(4 * (2.0 + 5 * 10.0) / 60)  # 4 cells: 2 s + 5 updates x 10 s
    assert values["cells"] == 4


def test_predicted_time_counts_each_cells_head_count():
    costs = {1: (0.5, 0.01), 2: (0.7, 0.03)}
    assert predicted_seconds(TINY, costs) == pytest.approx((0.5 + 0.7 + 5 * (0.01 + 0.03)) * 2)  # 2 sizes
    assert predicted_seconds(TINY, costs, [(0, 8, 2)]) == pytest.approx(0.7 + 5 * 0.03)
    assert grid_refusal(TINY, budget_bytes=2**30, budget_s=1.0, seconds=0.5) is None


def test_settings_are_checked():
    with pytest.raises(ValueError, match="not divisible by heads"):
        GridSettings(d_model=24, head_counts=(1, 16))
    with pytest.raises(ValueError, match="seeds=0"):
        GridSettings(seeds=0)
    with pytest.raises(ValueError, match="must increase"):
        GridSettings(sizes=(256, 64))


# --- the sentence --------------------------------------------------------------------------------


def _cell(seed: int, size: int, n_heads: int, gap_acc: float, train_acc: float = 1.0) -> Cell:
    return Cell(seed, size, n_heads, Scores(train_acc, 0.1), Scores(train_acc - gap_acc, 1.0), 100, 1.0)


def _grid(
    gaps: dict[tuple[int, int], list[float]], train_acc: float = 1.0
) -> tuple[GridSettings, list[Cell]]:
    seeds = len(next(iter(gaps.values())))
    settings = GridSettings(sizes=(64, 256), head_counts=(1, 16), seeds=seeds)
    cells = [_cell(s, n, h, g, train_acc) for (n, h), values in gaps.items() for s, g in enumerate(values)]
    return settings, cells


def _said(notes) -> list[str]:
    return [n.template for n in notes]


def test_summary_takes_mean_and_range_over_seeds():
    _, cells = _grid({(64, 1): [0.1, 0.3, 0.2], (64, 16): [0.5, 0.5, 0.8]})
    s = summarize(cells)
    assert s[64, 1].gap == pytest.approx(0.2)
    assert (s[64, 1].gap_min, s[64, 1].gap_max, s[64, 1].seeds) == (pytest.approx(0.1), pytest.approx(0.3), 3)
    assert s[64, 16].spread == pytest.approx(0.3)
    assert s[64, 16].gap_loss == pytest.approx(0.9)


def test_more_heads_overfitting_is_said_with_the_spread():
    settings, cells = _grid(
        {(64, 1): [0.10, 0.12], (64, 16): [0.70, 0.75], (256, 1): [0.0, 0.01], (256, 16): [0.05, 0.03]}
    )
    head, data = verdict(settings, cells)
    assert head.template.startswith("More heads overfit more here")
    values = dict(head.values)
    assert values["size"] == 64
    assert (values["lo"], values["hi"], values["spread"]) == pytest.approx((0.11, 0.725, 0.05))
    assert dict(values["many"].values) == {"h": 16}
    assert data.template.startswith("More data narrows the gap")


def test_no_growth_with_heads_is_said_when_the_seeds_overlap():
    settings, cells = _grid(
        {(64, 1): [0.50, 0.60], (64, 16): [0.55, 0.58], (256, 1): [0.0, 0.01], (256, 16): [0.01, 0.0]}
    )
    head, data = verdict(settings, cells)
    assert head.template.startswith("The gap does not grow with the number of heads")
    assert data.template.startswith("More data closes the gap")


def test_fewer_heads_overfitting_is_said_too():
    settings, cells = _grid(
        {(64, 1): [0.80, 0.82], (64, 16): [0.20, 0.25], (256, 1): [0.3, 0.3], (256, 16): [0.3, 0.31]}
    )
    head, data = verdict(settings, cells)
    assert head.template.startswith("Fewer heads overfit more here")
    assert data.template.startswith("More data narrows the gap")


def test_no_overfitting_at_all_is_said_plainly():
    settings, cells = _grid(
        {(64, 1): [0.01, 0.0], (64, 16): [0.02, 0.01], (256, 1): [0.0, 0.0], (256, 16): [0.0, 0.0]}
    )
    [only] = verdict(settings, cells)  # nothing about data or heads: there is no gap to explain
    assert only.template.startswith("No overfitting shows")
    assert dict(only.values)["gap"] == pytest.approx(0.015)


def test_underfitting_and_a_single_seed_are_named():
    settings, cells = _grid(
        {(64, 1): [0.5], (64, 16): [0.05], (256, 1): [0.0], (256, 16): [0.0]}, train_acc=0.6
    )
    said = _said(verdict(settings, cells))
    assert any(t.startswith("{n} of the {total} cells did not fit") for t in said)
    assert any(t.startswith("One seed only") for t in said)
    assert said[0].startswith("Fewer heads overfit more")  # one seed: a difference over twice the bar


def test_the_sentence_waits_for_a_complete_grid():
    settings, cells = _grid({(64, 1): [0.5], (64, 16): [0.05], (256, 1): [0.0]})
    with pytest.raises(ValueError, match="not complete"):
        verdict(settings, cells)


def test_every_sentence_the_grid_can_say_is_in_chinese():
    from tformer.i18n import catalog, tr, use_language

    grids = [
        {(64, 1): [0.10, 0.12], (64, 16): [0.70, 0.75], (256, 1): [0.0, 0.01], (256, 16): [0.05, 0.03]},
        {(64, 1): [0.50, 0.60], (64, 16): [0.55, 0.58], (256, 1): [0.0, 0.01], (256, 16): [0.01, 0.0]},
        {(64, 1): [0.80, 0.82], (64, 16): [0.20, 0.25], (256, 1): [0.3, 0.3], (256, 16): [0.3, 0.31]},
        {(64, 1): [0.01, 0.0], (64, 16): [0.02, 0.01], (256, 1): [0.0, 0.0], (256, 16): [0.0, 0.0]},
        {(64, 1): [0.5], (64, 16): [0.45], (256, 1): [0.5], (256, 16): [0.45]},
    ]
    notes = [n for g in grids for n in verdict(*_grid(g, train_acc=0.6 if len(g[64, 1]) == 1 else 1.0))]
    notes += [
        grid_refusal(TINY, budget_bytes=1),
        grid_refusal(TINY, budget_bytes=2**30, budget_s=1.0, seconds=60.0),
    ]
    templates = {n.template for n in notes if n is not None}
    assert len(templates) == 11  # 3 head sentences, no gap, 3 data sentences, 2 caveats, 2 refusals
    zh = catalog("zh")
    assert not [t for t in templates if t not in zh]
    with use_language("zh"):
        for n in notes:
            assert n is not None
            assert not re.search(r"[A-Za-z]{2,}", n.render(tr).replace("MiB", "")), n.render(tr)


def test_a_grid_with_one_seed_so_far_says_its_spread_is_unmeasured():
    settings, cells = _grid({(64, 1): [0.1, 0.12], (64, 16): [0.7], (256, 1): [0.0], (256, 16): [0.0]})
    assert settings.seeds == 2
    assert any(t.startswith("One seed only") for t in _said(verdict(settings, cells)))


def test_a_cells_cost_is_measured_on_throwaway_models():
    costs = overfit.cell_costs(TINY, max_seconds=0.01)
    assert set(costs) == {1, 2}
    for fixed, update in costs.values():
        assert fixed >= 0.0
        assert 0.0 < update < 1.0
