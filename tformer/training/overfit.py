r"""Heads and overfitting on a small data set (seed 004: more heads add capacity but overfit more
easily): a grid of training-set sizes × head counts, each trained a few times, scored on its own
training set and on held-out sequences it never saw.

One cell: a fixed training set of n sequences of a task (the first n of one draw per seed, so a
smaller set is part of every larger one), a model with h heads at one d_model, trained for a
fixed number of updates (each update draws ``batch`` sequences of the set at random, so a small
set is seen many times over), then scored. The gap between the two scores (`gap`) measures
overfitting: the model has learned its training sequences, not the task. Training sequences are drawn by
`tformer.training.tasks.make_batch` (never a held-out one) and the held-out ones by
`tformer.training.tasks.held_out_set`: the split is a hash of the sequence, so the two sets are
disjoint. At one d_model every head count has the same weights (W_Q, W_K, W_V and W_O are
d_model × d_model whatever h): more heads are more attention patterns per layer, each over a
smaller d_head = d_model / h.

The seed fixes the weights, the training set and the batches. `verdict` turns a finished grid
into the sentence the page shows, including when it shows no overfitting. No Streamlit here;
messages are `Note` templates the page translates.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F

from ..efficiency.measure import Note
from ..model.config import EncoderConfig
from ..model.encoder import Encoder
from .recipe import Recipe, model_config
from .tasks import TaskSpec, make_batch
from .trainer import Trainer, training_memory_bytes

__all__ = [
    "HEAD_COUNTS",
    "SIZES",
    "Cell",
    "CellCost",
    "CellKey",
    "GapStats",
    "GridSettings",
    "Scores",
    "cell_costs",
    "gap",
    "grid_memory_bytes",
    "grid_refusal",
    "predicted_seconds",
    "run_grid",
    "score",
    "summarize",
    "train_cell",
    "training_set",
    "verdict",
]

SIZES = (64, 128, 256, 512, 1024)
HEAD_COUNTS = (1, 2, 4, 8, 16)
MAX_SIZE = 4096
MAX_SEEDS = 5
EVAL_CHUNK = 512  # sequences scored per forward pass
# What the sentence calls a gap and a difference (token accuracy, 0..1): below this, none.
NO_GAP = 0.02
UNDERFIT = 0.9  # a cell whose training accuracy stays below this did not fit its own set
CellKey = tuple[int, int, int]  # (seed, size, n_heads)
CellCost = tuple[float, float]  # (seconds a cell takes besides its updates, seconds per update)


@dataclass(frozen=True)
class GridSettings:
    """The grid: the task (its ``length`` and ``vocab``), the training-set ``sizes`` and head
    counts ``head_counts``, how many ``seeds`` (0 .. seeds-1), the model (``n_layers``, ``d_model``),
    the ``updates`` and ``batch`` of every cell, the held-out sequences scored, the device.
    Frozen: it keys the page's results."""

    task: str = "reverse"
    length: int = 12
    vocab: int = 16
    sizes: tuple[int, ...] = SIZES
    head_counts: tuple[int, ...] = HEAD_COUNTS
    seeds: int = 3
    n_layers: int = 1
    d_model: int = 64
    updates: int = 300
    batch: int = 32
    n_held_out: int = 512
    device: str = "cpu"

    def __post_init__(self) -> None:
        TaskSpec(self.task, length=self.length, vocab=self.vocab)  # validates the task, length, vocab
        for name, values, top in (
            ("sizes", self.sizes, MAX_SIZE),
            ("head_counts", self.head_counts, self.d_model),
        ):
            if not values or list(values) != sorted(set(values)) or values[0] < 1 or values[-1] > top:
                raise ValueError(f"{name}={values!r} must increase, each in [1, {top}]")
        uneven = [h for h in self.head_counts if self.d_model % h]
        if uneven:
            raise ValueError(f"d_model={self.d_model} is not divisible by heads {uneven}")
        if not 1 <= self.seeds <= MAX_SEEDS:
            raise ValueError(f"seeds={self.seeds} must be in [1, {MAX_SEEDS}]")
        if self.updates < 1 or self.batch < 1 or self.n_held_out < 1:
            raise ValueError(
                f"updates={self.updates}, batch={self.batch}, n_held_out={self.n_held_out} must be >= 1"
            )

    @property
    def spec(self) -> TaskSpec:
        return TaskSpec(self.task, length=self.length, vocab=self.vocab)

    def config(self, n_heads: int) -> EncoderConfig:
        return model_config(self.spec, n_layers=self.n_layers, n_heads=n_heads, d_model=self.d_model)

    def recipe(self, seed: int) -> Recipe:
        """The Train page's default recipe with this grid's batch, updates and seed, and a
        warm-up of a tenth of the updates."""
        warmup = max(1, min(50, self.updates // 10))
        return Recipe(
            batch=self.batch,
            steps=self.updates,
            warmup=warmup,
            seed=seed,
            eval_every=self.updates,
            snapshot_every=self.updates,
        )

    def cells(self) -> Iterator[tuple[int, int, int]]:
        """Every (seed, size, n_heads) in the order they train: the whole grid of the first seed,
        then the next seed's, so a partial grid is a complete picture of fewer seeds."""
        for seed in range(self.seeds):
            for size in self.sizes:
                for n_heads in self.head_counts:
                    yield seed, size, n_heads

    @property
    def n_cells(self) -> int:
        return self.seeds * len(self.sizes) * len(self.head_counts)


@dataclass(frozen=True)
class Scores:
    """Token accuracy (0..1) and mean token cross-entropy of a model on a set of sequences."""

    accuracy: float
    loss: float


@dataclass(frozen=True)
class Cell:
    """One trained cell: its place in the grid, its scores on its training set and on the
    held-out set, the weights it had, and the seconds it took."""

    seed: int
    size: int
    n_heads: int
    train: Scores
    held_out: Scores
    n_params: int
    seconds: float

    @property
    def gap_accuracy(self) -> float:
        """Training accuracy minus held-out accuracy (> 0: better on what it trained on)."""
        return gap(self.train, self.held_out)[0]

    @property
    def gap_loss(self) -> float:
        """Held-out loss minus training loss (> 0: worse on what it never saw)."""
        return gap(self.train, self.held_out)[1]


def gap(train: Scores, held_out: Scores) -> tuple[float, float]:
    r"""The train / held-out gap in token accuracy and in mean token cross-entropy:

    .. math::
        \Delta_{\text{acc}} = \text{acc}_{\text{train}} - \text{acc}_{\text{held-out}},\qquad
        \Delta_{\mathcal{L}} = \mathcal{L}_{\text{held-out}} - \mathcal{L}_{\text{train}}

    Both are > 0 when the model does better on the sequences it trained on than on new ones."""
    return train.accuracy - held_out.accuracy, held_out.loss - train.loss


def training_set(settings: GridSettings, seed: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The seed's training sequences and targets, [max(sizes), length] each: the set of size n
    is the first n rows. None is held out (`make_batch` redraws those)."""
    return make_batch(settings.spec, np.random.default_rng([seed, 0x0F17]), settings.sizes[-1])


@torch.inference_mode()
def score(model: Encoder, inputs: torch.Tensor, targets: torch.Tensor) -> Scores:
    """``model``'s token accuracy and mean token cross-entropy on inputs and targets [batch, pos],
    without dropout, in chunks of `EVAL_CHUNK` sequences."""
    was_training = model.training
    model.eval()
    right, loss, n = 0, 0.0, 0
    try:
        for i in range(0, len(inputs), EVAL_CHUNK):
            x, y = inputs[i : i + EVAL_CHUNK], targets[i : i + EVAL_CHUNK]
            logits = model.logits(x)  # [batch, pos, n_outputs]
            right += int((logits.argmax(dim=-1) == y).sum())
            flat = logits.reshape(-1, logits.shape[-1]).double()
            loss += float(F.cross_entropy(flat, y.reshape(-1), reduction="sum"))
            n += y.numel()
    finally:
        model.train(was_training)
    return Scores(right / n, loss / n)


def train_cell(
    settings: GridSettings,
    seed: int,
    size: int,
    n_heads: int,
    *,
    data: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None = None,
    stop: Callable[[], bool] = lambda: False,
) -> Cell | None:
    """Train one cell: ``n_heads`` heads on the first ``size`` sequences of the seed's training set
    (``data``: `training_set`'s, to share it between cells) for ``settings.updates`` updates,
    then score it on that set and on the held-out set. None when ``stop()`` turned True."""
    start = time.perf_counter()
    x_all, y_all = training_set(settings, seed) if data is None else data
    if size > len(x_all):
        raise ValueError(f"size={size} is more than the {len(x_all)} training sequences given")
    trainer = Trainer(  # its weights come from the recipe's seed
        settings.config(n_heads),
        settings.spec,
        settings.recipe(seed),
        settings.device,
        n_held_out=settings.n_held_out,
    )
    x = torch.from_numpy(np.ascontiguousarray(x_all[:size])).to(trainer.device)
    y = torch.from_numpy(np.ascontiguousarray(y_all[:size])).to(trainer.device)
    rng = np.random.default_rng([seed, size, 0xBA7C])
    for _ in range(settings.updates):
        if stop():
            return None
        pick = torch.from_numpy(rng.integers(0, size, settings.batch)).to(trainer.device)
        trainer.step([(x[pick], y[pick])])
    train = score(trainer.model, x, y)
    held = score(trainer.model, *trainer.held_out)
    n_params = sum(p.numel() for p in trainer.model.parameters())
    return Cell(seed, size, n_heads, train, held, n_params, time.perf_counter() - start)


# --- budgets, checked before the grid starts -------------------------------------------------------


def grid_memory_bytes(settings: GridSettings) -> int:
    """An upper estimate of one cell's memory while it trains (`training_memory_bytes` of the
    largest head count: cells train one after another) plus the training set."""
    need = max(training_memory_bytes(settings.config(h), settings.recipe(0)) for h in settings.head_counts)
    return need + 2 * 8 * settings.sizes[-1] * settings.length


def predicted_seconds(
    settings: GridSettings, costs: Mapping[int, CellCost], cells: Sequence[CellKey] | None = None
) -> float:
    """The training time of ``cells`` (default: the whole grid): each cell's fixed cost and its
    updates at its head count's measured cost (``costs``: {n_heads: (fixed s, s per update)},
    `cell_costs`)."""
    keys = list(settings.cells()) if cells is None else cells
    return sum(costs[h][0] + costs[h][1] * settings.updates for _, _, h in keys)


def grid_refusal(
    settings: GridSettings,
    *,
    budget_bytes: int,
    budget_s: float | None = None,
    seconds: float | None = None,
    cells: int | None = None,
) -> Note | None:
    """Why the grid may not start, or None: one cell's memory estimate over ``budget_bytes``,
    or the predicted training time of its ``cells`` left (``seconds``, from `predicted_seconds`)
    over ``budget_s``. Computed from the settings and the timings alone: nothing is built."""
    need = grid_memory_bytes(settings)
    if need > budget_bytes:
        return Note.of(
            "One model of this grid would need about {need:,.0f} MiB while training, over the budget of "
            "{budget:,.0f} MiB.",
            need=need / 2**20,
            budget=budget_bytes / 2**20,
        )
    if budget_s is not None and seconds is not None and seconds > budget_s:
        return Note.of(
            "The grid would train for about {minutes:.1f} min here ({cells} models of {updates} updates), "
            "over the limit of {limit:.1f} min: choose fewer seeds.",
            minutes=seconds / 60,
            cells=settings.n_cells if cells is None else cells,
            updates=settings.updates,
            limit=budget_s / 60,
        )
    return None


# --- what the grid shows ---------------------------------------------------------------------------


@dataclass(frozen=True)
class GapStats:
    """The seeds of one (size, n_heads): the mean, the smallest and the largest accuracy gap, the
    mean loss gap, the mean training and held-out accuracy, and how many seeds."""

    size: int
    n_heads: int
    gap: float
    gap_min: float
    gap_max: float
    gap_loss: float
    train_accuracy: float
    held_out_accuracy: float
    seeds: int

    @property
    def spread(self) -> float:
        return self.gap_max - self.gap_min


def summarize(cells: Sequence[Cell]) -> dict[tuple[int, int], GapStats]:
    """{(size, n_heads): GapStats} over the seeds each (size, n_heads) has so far."""
    groups: dict[tuple[int, int], list[Cell]] = {}
    for c in cells:
        groups.setdefault((c.size, c.n_heads), []).append(c)
    out = {}
    for (size, n_heads), group in sorted(groups.items()):
        gaps = [c.gap_accuracy for c in group]
        out[size, n_heads] = GapStats(
            size,
            n_heads,
            float(np.mean(gaps)),
            min(gaps),
            max(gaps),
            float(np.mean([c.gap_loss for c in group])),
            float(np.mean([c.train.accuracy for c in group])),
            float(np.mean([c.held_out.accuracy for c in group])),
            len(group),
        )
    return out


@dataclass(frozen=True)
class _HeadEffect:
    """At one size: the fewest and the most heads' stats, and whether their seed ranges part."""

    few: GapStats
    many: GapStats

    @property
    def difference(self) -> float:
        return self.many.gap - self.few.gap

    @cached_property
    def apart(self) -> bool:
        """Beyond the seeds' spread: the two ranges of gaps do not overlap (one seed: the
        difference passes twice `NO_GAP`), and the difference passes `NO_GAP`."""
        if abs(self.difference) <= NO_GAP:
            return False
        if min(self.few.seeds, self.many.seeds) < 2:
            return abs(self.difference) > 2 * NO_GAP
        return self.many.gap_min > self.few.gap_max or self.few.gap_min > self.many.gap_max


def _heads_word(h: int) -> Note:
    return Note.of("1 head") if h == 1 else Note.of("{h} heads", h=h)


def verdict(settings: GridSettings, cells: Sequence[Cell]) -> list[Note]:
    """What a finished grid shows, in sentences (English templates and their values):

    1. whether the gap grows with the number of heads: at the size where the fewest and the
       most heads differ most, compared with the seeds' spread; or that no gap shows anywhere;
    2. what more data does to the largest gap;
    3. the cells that did not fit even their training set (a small gap there is underfitting);
    4. where a (size, n_heads) has one seed so far, that the spread between seeds is not measured.

    Raises ValueError when a (size, n_heads) of the grid has no cell yet."""
    stats = summarize(cells)
    missing = [(n, h) for n in settings.sizes for h in settings.head_counts if (n, h) not in stats]
    if missing:
        raise ValueError(f"the grid is not complete: no cell yet for (size, n_heads) {missing[:3]}")
    few, many = settings.head_counts[0], settings.head_counts[-1]
    notes = [_head_sentence(settings, stats, few, many)]
    if notes[0].template.startswith("No overfitting"):
        return [*notes, *_caveats(settings, stats)]
    notes.append(_data_sentence(settings, stats))
    return [*notes, *_caveats(settings, stats)]


def _head_sentence(
    settings: GridSettings, stats: Mapping[tuple[int, int], GapStats], few: int, many: int
) -> Note:
    largest = max(stats.values(), key=lambda s: s.gap)
    if largest.gap <= NO_GAP:
        return Note.of(
            "No overfitting shows: at every training-set size and head count, held-out accuracy is within "
            "{gap:.1%} of the training accuracy. The task is learned, not memorised, from {size} sequences "
            "already; fewer sequences or a harder task would be needed to see a gap.",
            gap=max(0.0, largest.gap),
            size=settings.sizes[0],
        )
    effects = [_HeadEffect(stats[n, few], stats[n, many]) for n in settings.sizes]
    at = max(effects, key=lambda e: abs(e.difference))
    values = {
        "size": at.few.size,
        "few": _heads_word(few),
        "many": _heads_word(many),
        "lo": at.few.gap,
        "hi": at.many.gap,
        "spread": max(at.few.spread, at.many.spread),
    }
    if at.apart and at.difference > 0:
        template = (
            "More heads overfit more here: with {size} training sequences, training accuracy passes held-out "
            "accuracy by {lo:.0%} with {few} and by {hi:.0%} with {many}, more than the seeds differ "
            "({spread:.0%})."
        )
    elif at.apart:
        template = (
            "Fewer heads overfit more here: with {size} training sequences, training accuracy passes held-out "
            "accuracy by {lo:.0%} with {few} and by {hi:.0%} with {many}, more than the seeds differ "
            "({spread:.0%})."
        )
    else:
        template = (
            "The gap does not grow with the number of heads here: where they differ most ({size} training "
            "sequences), training accuracy passes held-out accuracy by {lo:.0%} with {few} and by {hi:.0%} "
            "with {many}, within what the seeds differ ({spread:.0%}) or too little to count."
        )
    return Note.of(template, **values)


def _data_sentence(settings: GridSettings, stats: Mapping[tuple[int, int], GapStats]) -> Note:
    first = max((stats[settings.sizes[0], h] for h in settings.head_counts), key=lambda s: s.gap)
    last = max((stats[settings.sizes[-1], h] for h in settings.head_counts), key=lambda s: s.gap)
    values = {"n0": first.size, "g0": first.gap, "n1": last.size, "g1": last.gap, "h1": last.n_heads}
    if last.gap <= NO_GAP:
        return Note.of(
            "More data closes the gap: the largest gap is {g0:.0%} with {n0} sequences and at most {g1:.1%} with "
            "{n1}.",
            **values,
        )
    if last.gap < first.gap - NO_GAP:
        return Note.of(
            "More data narrows the gap: the largest gap is {g0:.0%} with {n0} sequences and {g1:.0%} with {n1} "
            "({h1} heads).",
            **values,
        )
    return Note.of(
        "More data does not close the gap here: the largest gap is {g0:.0%} with {n0} sequences and still "
        "{g1:.0%} with {n1} ({h1} heads).",
        **values,
    )


def _caveats(settings: GridSettings, stats: Mapping[tuple[int, int], GapStats]) -> list[Note]:
    notes = []
    unfit = [s for s in stats.values() if s.train_accuracy < UNDERFIT]
    if unfit:
        worst = min(unfit, key=lambda s: s.train_accuracy)
        notes.append(
            Note.of(
                "{n} of the {total} cells did not fit even their training set (training accuracy under {bar:.0%}; "
                "lowest: {heads} heads with {size} sequences, {acc:.0%}): a small gap there means the model "
                "learned little, not that it generalised.",
                n=len(unfit),
                total=len(stats),
                bar=UNDERFIT,
                heads=worst.n_heads,
                size=worst.size,
                acc=worst.train_accuracy,
            )
        )
    if min(s.seeds for s in stats.values()) < 2:  # one seed asked for, or only one trained so far
        notes.append(
            Note.of(
                "One seed only: how much the gaps vary between seeds is not measured, so a small difference "
                "may be chance. Run more seeds before trusting it."
            )
        )
    return notes


def cell_costs(settings: GridSettings, *, max_seconds: float = 0.5) -> dict[int, CellCost]:
    """Each head count's measured cost: the seconds a cell takes besides its updates (building
    the model, scoring the largest training set and the held-out set: one `train_cell` of a
    single update) and the seconds of one update (the median of updates after two warm-up ones,
    about ``max_seconds`` of them). What `predicted_seconds` needs; throwaway models, seed 0."""
    out = {}
    data = training_set(settings, 0)
    one = replace(settings, updates=1)
    train_cell(one, 0, settings.sizes[0], settings.head_counts[0], data=data)  # first-call costs, untimed
    for h in settings.head_counts:
        start = time.perf_counter()
        train_cell(one, 0, settings.sizes[-1], h, data=data)
        fixed = time.perf_counter() - start
        trainer = Trainer(
            settings.config(h), settings.spec, settings.recipe(0), settings.device, n_held_out=1
        )
        xb = torch.from_numpy(np.ascontiguousarray(data[0][: settings.batch])).to(trainer.device)
        yb = torch.from_numpy(np.ascontiguousarray(data[1][: settings.batch])).to(trainer.device)
        times = []
        for i in range(200):
            stats = trainer.step([(xb, yb)])
            if i >= 2:
                times.append(stats.seconds)
            if i >= 4 and sum(times) >= max_seconds:
                break
        update = float(np.median(times))
        out[h] = (max(0.0, fixed - update), update)
    return out


def run_grid(
    settings: GridSettings,
    *,
    budget_bytes: int,
    budget_s: float,
    done: Mapping[CellKey, Cell] | None = None,
    stop: Callable[[], bool] = lambda: False,
    on_plan: Callable[[float], object] | None = None,
    on_cell: Callable[[int, CellKey], object] | None = None,
    on_done: Callable[[Cell], object] | None = None,
) -> Note | None:
    """Train every cell of the grid not in ``done``, in `GridSettings.cells` order.

    Before anything is built, one cell's memory estimate is checked against ``budget_bytes``;
    then each head count's cell is timed (`cell_costs`) and the grid's predicted time
    (``on_plan(seconds)``) checked against ``budget_s``. Over either, nothing is trained and the
    refusal is returned. Then ``on_cell(i, (seed, size, n_heads))`` before the i-th cell (from 1)
    and ``on_done(cell)`` after it; returns None (also when ``stop()`` turned True)."""
    refusal = grid_refusal(settings, budget_bytes=budget_bytes)
    if refusal is not None:
        return refusal
    todo = [key for key in settings.cells() if key not in (done or {})]
    seconds = predicted_seconds(settings, cell_costs(settings), todo)
    if on_plan is not None:
        on_plan(seconds)
    refusal = grid_refusal(
        settings, budget_bytes=budget_bytes, budget_s=budget_s, seconds=seconds, cells=len(todo)
    )
    if refusal is not None:
        return refusal
    data: dict[int, tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]] = {}
    for i, key in enumerate(settings.cells(), start=1):
        if key in (done or {}):
            continue
        seed, size, n_heads = key
        if stop():
            return None
        if on_cell is not None:
            on_cell(i, key)
        if seed not in data:
            data = {seed: training_set(settings, seed)}  # one seed's set at a time
        cell = train_cell(settings, seed, size, n_heads, data=data[seed], stop=stop)
        if cell is None:
            return None
        if on_done is not None:
            on_done(cell)
    return None
