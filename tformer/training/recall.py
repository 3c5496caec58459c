r"""Long-range recall, trained: a task whose answer sits a given distance back, learned by a GRU
and by a one-layer attention model (the project's `Encoder`) under the same budget.

The task (`RecallSpec`): a sequence of ``d + 1`` tokens at distance d: the first token, a
symbol; d − 1 distractor symbols; then the blank ``_`` that asks "which symbol came first?".
The answer is the first token, d positions back. Every sequence is padded with ``[PAD]`` to the longest
distance's length, so one batch mixes distances (drawn uniformly from ``distances``). Ids are
the synthetic tasks' (`tformer.training.tasks`): 0 ``[PAD]``, 2 ``_``, 3.. the symbols, so
`tformer.training.tasks.as_text` writes a sequence out.

Held-out split, as the other tasks': a sequence is held out when `tasks.hash_unit` of its
(padded) ids, seeded by ``spec.seed``, falls below ``held_out``. `recall_batch` redraws every
held-out sequence it draws, so training never sees one; `recall_held_out` keeps only held-out
ones. Evaluation is on those, per distance.

Training (`train_recall`): the same data (one generator seeded by ``settings.seed``), the same
steps, batch, optimizer and learning-rate schedule for both models, and parameter counts
matched (the GRU's width is chosen to come closest to the attention model's count). The loss
is read at the blank only. A run stops after ``steps`` updates, or earlier at
``time_limit_s`` (then its numbers depend on the machine's speed and `RecallResult.stopped`
says "time"). The same settings and seed give the same numbers (on one machine and thread
count). The attention model's pattern is captured with its hooks (``blocks.0.attn.hook_pattern``)
to show its head looking back from the blank to the first token.

Nothing here changes torch's global state: the GRU's initial weights come from a forked RNG.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F
from torch import nn

from ..model.config import EncoderConfig
from ..model.encoder import Encoder
from ..model.hooks import act_name
from ..timing import activity
from .recipe import Recipe
from .tasks import BLANK_ID, FIRST_SYMBOL_ID, SYMBOLS, hash_unit

__all__ = [
    "MODELS",
    "PAD_ID",
    "PROTOCOLS",
    "LookBack",
    "RecallRecurrent",
    "RecallResult",
    "RecallSettings",
    "RecallSpec",
    "build_model",
    "recall_batch",
    "recall_held_out",
    "recall_is_held_out",
    "recall_targets",
    "recurrent_width",
    "train_recall",
]

IntArray = npt.NDArray[np.int64]
MODELS = ("rnn", "gru", "attention")  # a tanh RNN, a GRU, the one-layer encoder
RECURRENT = ("rnn", "gru")
PAD_ID = 0
MAX_DISTANCE = 511  # a sequence is d + 1 tokens, the encoder's limit is 512
MIN_SEQUENCES = 1000  # at the shortest distance: the held-out split needs room on both sides
MAX_EVAL = 2000


@dataclass(frozen=True)
class RecallSpec:
    """The recall task: ``distances`` (increasing, 2..511) between the first token and the
    blank, ``vocab`` symbols (2..52) for the first token and the distractors, ``held_out`` the fraction of
    sequences kept for evaluation, ``seed`` the held-out hash's."""

    distances: tuple[int, ...] = (4, 8, 16, 32, 64, 128)
    vocab: int = 8
    held_out: float = 0.2
    seed: int = 0

    def __post_init__(self) -> None:
        d = self.distances
        if not isinstance(d, tuple) or not d or any(not isinstance(v, int) or isinstance(v, bool) for v in d):
            raise ValueError(f"distances={d!r} must be a non-empty tuple of integers")
        if list(d) != sorted(set(d)) or d[0] < 2 or d[-1] > MAX_DISTANCE:
            raise ValueError(f"distances={d!r} must increase, each in [2, {MAX_DISTANCE}]")
        if not isinstance(self.vocab, int) or not 2 <= self.vocab <= len(SYMBOLS):
            raise ValueError(f"vocab={self.vocab!r} must be an integer in [2, {len(SYMBOLS)}]")
        if self.vocab ** d[0] < MIN_SEQUENCES:
            raise ValueError(
                f"vocab={self.vocab} symbols at distance {d[0]} make only {self.vocab ** d[0]} sequences: "
                f"need at least {MIN_SEQUENCES} to hold some out (raise vocab or the shortest distance)"
            )
        if not 0.01 <= float(self.held_out) <= 0.9:
            raise ValueError(f"held_out={self.held_out!r} must be a fraction in [0.01, 0.9]")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed={self.seed!r} must be a non-negative integer")

    @property
    def length(self) -> int:
        """Every sequence's padded length: the longest distance + 1."""
        return self.distances[-1] + 1

    @property
    def n_ids(self) -> int:
        """The id space (specials, blank, symbols): the models' vocabulary and output size."""
        return FIRST_SYMBOL_ID + self.vocab

    @property
    def chance(self) -> float:
        """The accuracy of a guess: one symbol of ``vocab``."""
        return 1.0 / self.vocab


# --- the data ---------------------------------------------------------------------------------------


def recall_targets(ids: npt.ArrayLike) -> IntArray:
    """The answer of each sequence [batch, length]: its first token. [batch]"""
    x = np.asarray(ids, dtype=np.int64)
    if x.ndim != 2 or x.shape[1] < 3:
        raise ValueError(f"ids must be [batch, length >= 3], got shape {x.shape}")
    return np.copy(x[:, 0], order="C")  # x[:, 0].copy(), typed (see tasks._copy)


def recall_is_held_out(spec: RecallSpec, ids: npt.ArrayLike) -> npt.NDArray[np.bool_]:
    """[batch] True for the sequences [batch, spec.length] of the held-out split."""
    x = np.asarray(ids, dtype=np.int64)
    if x.ndim != 2 or x.shape[1] != spec.length:
        raise ValueError(f"ids must be [batch, {spec.length}], got shape {x.shape}")
    return hash_unit(x, spec.seed) < spec.held_out


def _draw(spec: RecallSpec, rng: np.random.Generator, distance: IntArray) -> IntArray:
    """Sequences [batch, length] at the given distances [batch]: first token, distractors,
    blank, pads."""
    b, n = distance.shape[0], spec.length
    x = rng.integers(0, spec.vocab, size=(b, n), dtype=np.int64) + FIRST_SYMBOL_ID
    pos = np.arange(n)[None, :]  # [1, pos]
    x[pos == distance[:, None]] = BLANK_ID
    x[pos > distance[:, None]] = PAD_ID
    return x


def recall_batch(spec: RecallSpec, rng: np.random.Generator, batch: int) -> tuple[IntArray, IntArray]:
    """A training batch: (ids [batch, length], distance [batch]), never a held-out sequence.
    Distances are drawn uniformly from ``spec.distances``; a held-out draw is redrawn at the
    same distance. The answer of row b is ``ids[b, 0]``, asked at position ``distance[b]``."""
    if not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch={batch!r} must be a positive integer")
    distance = rng.choice(np.asarray(spec.distances, dtype=np.int64), size=batch)
    x = _draw(spec, rng, distance)
    bad = np.flatnonzero(recall_is_held_out(spec, x))
    while bad.size:
        x[bad] = _draw(spec, rng, distance[bad])
        bad = bad[recall_is_held_out(spec, x[bad])]
    return x, distance


@functools.lru_cache(maxsize=64)
def _held_out(spec: RecallSpec, distance: int, n: int) -> IntArray:
    rng = np.random.default_rng([spec.seed, distance, 0x5EED])
    found: list[IntArray] = []
    seen: set[bytes] = set()
    for _ in range(1000):
        x = _draw(spec, rng, np.full(max(64, int(2 * (n - len(found)) / spec.held_out)), distance))
        for row in x[recall_is_held_out(spec, x)]:
            key = row.tobytes()
            if key not in seen and len(found) < n:
                seen.add(key)
                found.append(row)
        if len(found) == n:
            out = np.stack(found)
            out.flags.writeable = False  # cached and shared
            return out
    raise ValueError(f"could not find {n} distinct held-out sequences at distance {distance} for {spec}")


def recall_held_out(spec: RecallSpec, distance: int, n: int) -> IntArray:
    """``n`` distinct held-out sequences at ``distance`` (one of ``spec.distances``):
    [n, length], the same for the same (spec, distance, n)."""
    if distance not in spec.distances:
        raise ValueError(f"distance={distance!r} is not one of {spec.distances}")
    if not isinstance(n, int) or not 1 <= n <= MAX_EVAL:
        raise ValueError(f"n={n!r} must be an integer in [1, {MAX_EVAL}]")
    return np.copy(_held_out(spec, distance, n), order="C")  # a writeable copy of the cached one


# --- the models -------------------------------------------------------------------------------------


class RecallRecurrent(nn.Module):
    """Embedding -> one recurrent layer (``cell``: "gru", or "rnn" for a tanh RNN) -> Linear:
    scores [batch, pos, n_ids] at every position (the loss reads the blank's). It reads left
    to right, so the pads after the blank never reach it."""

    def __init__(self, n_ids: int, d_embed: int, d_hidden: int, cell: str = "gru") -> None:
        super().__init__()
        if cell not in RECURRENT:
            raise ValueError(f"cell={cell!r} is not one of {RECURRENT}")
        self.embed = nn.Embedding(n_ids, d_embed)
        layer = nn.GRU if cell == "gru" else nn.RNN
        self.recurrent = layer(d_embed, d_hidden, batch_first=True)
        self.head = nn.Linear(d_hidden, n_ids)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        states, _ = self.recurrent(self.embed(ids))  # [batch, pos, d_hidden]
        scores: torch.Tensor = self.head(states)  # [batch, pos, n_ids]
        return scores


def _n_params(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _recurrent_params(cell: str, n_ids: int, d_embed: int, h: int) -> int:
    gates = 3 if cell == "gru" else 1
    return n_ids * d_embed + gates * (d_embed * h + h * h + 2 * h) + h * n_ids + n_ids


def recurrent_width(cell: str, n_ids: int, d_embed: int, n_params: int) -> int:
    """The width of a `RecallRecurrent` ``cell`` model whose parameter count comes closest to
    ``n_params``."""
    if cell not in RECURRENT:
        raise ValueError(f"cell={cell!r} is not one of {RECURRENT}")
    return min(range(1, 2049), key=lambda h: abs(_recurrent_params(cell, n_ids, d_embed, h) - n_params))


PROTOCOLS = ("separate", "mixed")


@dataclass(frozen=True)
class RecallSettings:
    """How every model is trained. ``protocol``: "separate" trains one model per distance, on
    that distance alone (can a model learn a dependency d steps long?); "mixed" trains one
    model on every distance at once (drawn uniformly, so the short ones teach the long ones).
    ``recipe``: optimizer, schedule, clip, batch, steps (per model) and the seed (of the
    weights and the batches), the same for every kind; ``d_model``: the attention model's
    width and every model's embedding width; ``n_heads``: its heads; ``pos_encoding``: its
    positions; ``time_limit_s``: a kind's training stops there even if steps remain (its
    models' training time summed, the evaluations left out); ``n_eval``: held-out sequences
    per distance at the end; ``eval_every`` and ``n_eval_during``: the accuracy along the way."""

    spec: RecallSpec = field(default_factory=RecallSpec)
    protocol: str = "separate"
    recipe: Recipe = field(
        default_factory=lambda: Recipe(
            lr=3e-3, warmup=30, schedule="constant", steps=200, batch=32, weight_decay=0.01, clip=1.0
        )
    )
    d_model: int = 32
    n_heads: int = 4
    pos_encoding: str = "learned"
    time_limit_s: float = 60.0  # a cap, well above what the defaults take (docs/performance.md)
    n_eval: int = 200
    eval_every: int = 25
    n_eval_during: int = 64

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol={self.protocol!r} is not one of {PROTOCOLS}")
        if not (math.isfinite(self.time_limit_s) and 0 < self.time_limit_s <= 600):
            raise ValueError(f"time_limit_s={self.time_limit_s!r} must be in (0, 600]")
        if not isinstance(self.n_eval, int) or not 1 <= self.n_eval <= MAX_EVAL:
            raise ValueError(f"n_eval={self.n_eval!r} must be an integer in [1, {MAX_EVAL}]")
        if not isinstance(self.eval_every, int) or self.eval_every < 1:
            raise ValueError(f"eval_every={self.eval_every!r} must be a positive integer")
        if not isinstance(self.n_eval_during, int) or not 1 <= self.n_eval_during <= MAX_EVAL:
            raise ValueError(f"n_eval_during={self.n_eval_during!r} must be an integer in [1, {MAX_EVAL}]")
        if not isinstance(self.d_model, int) or not 1 <= self.d_model <= 512:
            raise ValueError(f"d_model={self.d_model!r} must be an integer in [1, 512]")
        self.encoder_config()  # validates d_model, n_heads and pos_encoding
        self.tasks()  # validates each distance's own task (separate)

    def tasks(self) -> tuple[RecallSpec, ...]:
        """The task each model trains on: one per distance ("separate"), or the whole spec."""
        if self.protocol == "mixed":
            return (self.spec,)
        return tuple(replace(self.spec, distances=(d,)) for d in self.spec.distances)

    def encoder_config(self, spec: RecallSpec | None = None) -> EncoderConfig:
        """The attention model for ``spec`` (default: the whole task): the project's Encoder,
        one layer, pre-norm, an output head over the task's ids."""
        spec = self.spec if spec is None else spec
        return EncoderConfig(
            vocab_size=spec.n_ids,
            max_len=spec.length,
            d_model=self.d_model,
            n_heads=self.n_heads,
            n_layers=1,
            pos_encoding=self.pos_encoding,
            norm="pre",
            n_outputs=spec.n_ids,
            seed=self.recipe.seed,
        )


def build_model(settings: RecallSettings, kind: str, spec: RecallSpec | None = None) -> nn.Module:
    """The untrained model ``kind`` (one of `MODELS`) for ``spec`` (default: the whole task),
    its weights a function of the settings (the seed is the recipe's). A recurrent model's
    width matches the attention model's parameter count (`recurrent_width`)."""
    if kind not in MODELS:
        raise ValueError(f"kind={kind!r} is not one of {MODELS}")
    spec = settings.spec if spec is None else spec
    encoder = Encoder(settings.encoder_config(spec))
    if kind == "attention":
        return encoder
    width = recurrent_width(kind, spec.n_ids, settings.d_model, _n_params(encoder))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(settings.recipe.seed)
        return RecallRecurrent(spec.n_ids, settings.d_model, width, kind)


def _scores(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """Scores [batch, pos, n_ids]; the encoder is told where the pads are."""
    if isinstance(model, Encoder):
        return model.logits(ids, attention_mask=(ids != PAD_ID).long())
    out: torch.Tensor = model(ids)
    return out


def _at_blank(scores: torch.Tensor, distance: torch.Tensor) -> torch.Tensor:
    return scores[torch.arange(scores.shape[0]), distance]  # [batch, n_ids]


# --- training ---------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class LookBack:
    """Where the attention model's blank looks, per distance (the model trained at it, or the
    one model of "mixed"). ``weight_on_first`` [distance, head_index]: the mean weight from the
    blank to the first token (position 0) over the held-out sequences; ``heads`` [distance]: the head
    with the most of it; ``probe_ids`` [distance, length]: one held-out sequence per distance
    (padded with ``[PAD]`` to the longest); ``probe_pattern`` [distance, head_index, key_pos]:
    the blank's row of the pattern on it (0 on the pads)."""

    weight_on_first: npt.NDArray[np.float64]
    heads: IntArray
    probe_ids: IntArray
    probe_pattern: npt.NDArray[np.float32]


@dataclass(frozen=True, eq=False)
class RecallResult:
    """One kind of model trained. ``accuracy`` [distance]: held-out accuracy at each of
    ``distances``; ``losses`` [model, step]: each update's training loss, one row per model
    (NaN after a model stopped early); ``steps`` [model]: updates each model ran; ``stopped``:
    "steps" (all done), "time" (``time_limit_s`` reached: the numbers depend on the machine's
    speed) or "stopped" (asked to); ``seconds``: training time summed over the models (the
    evaluations excluded); ``n_params`` [model]; ``look_back``: the attention model's (None
    for the others); ``curve_accuracy`` [checkpoint, distance]: the accuracy along the way,
    after ``curve_steps`` [checkpoint] updates (on the first ``n_eval_during`` held-out
    sequences)."""

    kind: str
    settings: RecallSettings
    distances: IntArray
    accuracy: npt.NDArray[np.float64]
    losses: npt.NDArray[np.float64]
    steps: IntArray
    seconds: float
    stopped: str
    n_params: IntArray
    look_back: LookBack | None
    curve_steps: IntArray
    curve_accuracy: npt.NDArray[np.float64]

    @property
    def chance(self) -> float:
        return self.settings.spec.chance


@dataclass
class _Look:
    on_first: npt.NDArray[np.float64]  # [head_index]
    probe: IntArray  # [pos]
    row: npt.NDArray[np.float32]  # [head_index, key_pos]


@torch.inference_mode()
def _evaluate(
    model: nn.Module, settings: RecallSettings, spec: RecallSpec, n: int, look: bool
) -> tuple[list[float], list[_Look]]:
    """Held-out accuracy at each of ``spec.distances`` on the first ``n`` held-out sequences;
    with ``look`` (the attention model), where its blank looks, captured by its hook."""
    was_training = model.training
    model.eval()
    acc: list[float] = []
    looks: list[_Look] = []
    name = act_name("pattern", 0)
    captured: dict[str, torch.Tensor] = {}

    def keep(t: torch.Tensor, hook: object) -> None:
        captured["pattern"] = t.detach()

    try:
        for d in spec.distances:
            ids = torch.from_numpy(recall_held_out(spec, d, settings.n_eval)[:n])
            dist = torch.full((ids.shape[0],), d, dtype=torch.long)
            if look and isinstance(model, Encoder):
                with model.hooks([(name, keep)]):
                    scores = _scores(model, ids)
                blank = captured["pattern"][:, :, d, :]  # [batch, head_index, key_pos]
                looks.append(
                    _Look(
                        blank[:, :, 0].double().mean(dim=0).numpy(), ids[0].numpy(), blank[0].float().numpy()
                    )
                )
            else:
                scores = _scores(model, ids)
            acc.append(float((_at_blank(scores, dist).argmax(dim=-1) == ids[:, 0]).double().mean()))
    finally:
        model.train(was_training)
    return acc, looks


@dataclass
class _Run:
    """One model's training: its losses, the accuracy along the way, its time."""

    losses: list[float] = field(default_factory=list)
    curve: list[list[float]] = field(default_factory=list)
    seconds: float = 0.0
    stopped: str = "steps"


def _train_one(
    model: nn.Module,
    settings: RecallSettings,
    spec: RecallSpec,
    rng: np.random.Generator,
    left_s: float,
    stop: Callable[[], bool],
    on_step: Callable[[int, float], object] | None,
) -> _Run:
    r = settings.recipe
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": r.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=r.lr,
        betas=r.betas,
        eps=r.eps,
    )
    run = _Run()
    n_during = min(settings.n_eval_during, settings.n_eval)
    for step in range(1, r.steps + 1):
        if stop():
            run.stopped = "stopped"
            break
        if run.seconds > left_s:
            run.stopped = "time"
            break
        start = time.perf_counter()
        x, d = recall_batch(spec, rng, r.batch)
        ids, dist = torch.from_numpy(x), torch.from_numpy(d)
        loss = F.cross_entropy(_at_blank(_scores(model, ids), dist), ids[:, 0])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if r.clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), r.clip)
        for group in opt.param_groups:
            group["lr"] = r.lr_at(step)
        opt.step()
        run.losses.append(float(loss.detach()))
        run.seconds += time.perf_counter() - start
        if on_step is not None:
            on_step(step, run.losses[-1])
        if step % settings.eval_every == 0:
            run.curve.append(_evaluate(model, settings, spec, n_during, look=False)[0])
    return run


def train_recall(
    settings: RecallSettings,
    kind: str,
    *,
    stop: Callable[[], bool] = lambda: False,
    on_step: Callable[[int, float], object] | None = None,
    threads: int | None = None,
) -> RecallResult:
    """Train model ``kind`` (one of `MODELS`) on the recall task by ``settings.protocol`` and
    evaluate it per distance on held-out sequences. ``stop()`` is asked before every update;
    ``on_step(step, loss)`` is called after it. Every ``eval_every`` updates the accuracy is
    measured on the first ``n_eval_during`` held-out sequences (`RecallResult.curve_accuracy`;
    not counted in the training time or its limit). ``threads`` calls ``torch.set_num_threads``
    (process-wide; on a busy 2-core machine 1 thread is several times faster than 2). The run
    is a `tformer.timing.activity`, so timings taken meanwhile say it ran."""
    if kind not in MODELS:
        raise ValueError(f"kind={kind!r} is not one of {MODELS}")
    if threads is not None:
        torch.set_num_threads(threads)
    r = settings.recipe
    runs: list[_Run] = []
    accuracy: list[float] = []
    looks: list[_Look] = []
    n_params: list[int] = []
    with activity("training run"):
        for spec in settings.tasks():
            model = build_model(settings, kind, spec).train()
            n_params.append(_n_params(model))
            # the same batches for every kind; per distance its own stream
            rng = np.random.default_rng([r.seed, 0xEC411, *spec.distances])
            left = settings.time_limit_s - sum(run.seconds for run in runs)
            runs.append(_train_one(model, settings, spec, rng, left, stop, on_step))
            acc, look = _evaluate(model, settings, spec, settings.n_eval, look=True)
            accuracy += acc
            looks += look
    return _result(kind, settings, runs, accuracy, looks, n_params)


def _result(
    kind: str,
    settings: RecallSettings,
    runs: list[_Run],
    accuracy: list[float],
    looks: list[_Look],
    n_params: list[int],
) -> RecallResult:
    steps = settings.recipe.steps
    losses = np.full((len(runs), steps), np.nan)
    for i, run in enumerate(runs):
        losses[i, : len(run.losses)] = run.losses
    n_points = min(len(run.curve) for run in runs)
    # [checkpoint, distance]: "separate" puts each model's one distance side by side
    curve = np.array([[a for run in runs for a in run.curve[c]] for c in range(n_points)], dtype=np.float64)
    n_dist = len(settings.spec.distances)
    look_back = None
    if looks:
        length = settings.spec.length
        ids = np.full((len(looks), length), PAD_ID, dtype=np.int64)
        rows = np.zeros((len(looks), looks[0].row.shape[0], length), dtype=np.float32)
        for i, lk in enumerate(looks):
            ids[i, : lk.probe.shape[0]] = lk.probe
            rows[i, :, : lk.row.shape[1]] = lk.row
        weight = np.stack([lk.on_first for lk in looks])
        look_back = LookBack(weight, weight.argmax(axis=1).astype(np.int64), ids, rows)
    stopped = next((run.stopped for run in runs if run.stopped != "steps"), "steps")
    return RecallResult(
        kind=kind,
        settings=settings,
        distances=np.asarray(settings.spec.distances, dtype=np.int64),
        accuracy=np.asarray(accuracy, dtype=np.float64),
        losses=losses,
        steps=np.array([len(run.losses) for run in runs], dtype=np.int64),
        seconds=float(sum(run.seconds for run in runs)),
        stopped=stopped,
        n_params=np.asarray(n_params, dtype=np.int64),
        look_back=look_back,
        curve_steps=settings.eval_every * np.arange(1, n_points + 1, dtype=np.int64),
        curve_accuracy=curve if n_points else np.zeros((0, n_dist)),
    )
