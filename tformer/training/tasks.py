"""Synthetic sequence tasks for training a small encoder: one output token per input position.

Every task reads a sequence of ``length`` symbols drawn uniformly from ``vocab`` symbols and asks
for one symbol per position (`TASKS` says which). Inputs and targets share one id space, the task
tokenizer's (`task_tokenizer`): a model reads the input ids and its output head scores every id.

Ids, the same for every task and size, so `as_text` needs no spec:

- 0 ``[PAD]``, 1 ``[UNK]``: the tokenizer's specials (never drawn);
- 2 ``_``: the blank, an output only ("no earlier occurrence" in ``lookup``);
- 3.. the symbols ``a`` .. ``z`` then ``A`` .. ``Z`` (``vocab <= 52``).

Held-out split: a sequence is held out when a hash of its symbols (seeded by ``spec.seed``)
falls below ``held_out`` (`is_held_out`). The split is a property of the sequence itself, not of
the order of draws: `make_batch` redraws every held-out sequence it happens to draw, so training
never sees one, and `held_out_set` keeps only held-out ones. About ``held_out`` of all sequences
are held out.

`TASKS`' descriptions are English catalog templates (a page shows ``tr(TASKS[name])``);
`TaskSpec`'s errors are worded in the current language (`tformer.i18n.tr`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import numpy.typing as npt
import tokenizers
from tokenizers import models, pre_tokenizers

from ..i18n import tr
from ..model.tokenizer import Tokenizer

__all__ = [
    "BLANK",
    "BLANK_ID",
    "FIRST_SYMBOL_ID",
    "SYMBOLS",
    "TASKS",
    "TaskSpec",
    "as_text",
    "example_texts",
    "hash_unit",
    "held_out_set",
    "is_held_out",
    "make_batch",
    "task_targets",
    "task_tokenizer",
]

IntArray = npt.NDArray[np.int64]

TASKS: Mapping[str, str] = MappingProxyType(
    {
        "copy": "Output the input unchanged: position i gives token i.",
        "reverse": "Output the input backwards: position i gives token length-1-i.",
        "sort": "Output the input's tokens in alphabetical order (a < b < ... < z < A ...).",
        "shift": "Rotate right by k: position i gives token (i - k) mod length.",
        "lookup": "Give the token that followed the previous occurrence of this token, or _ if none.",
    }
)

SYMBOLS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
PAD, UNK, BLANK = "[PAD]", "[UNK]", "_"
BLANK_ID = 2
FIRST_SYMBOL_ID = 3  # id of "a"
_TOKENS = (PAD, UNK, BLANK, *SYMBOLS)  # id -> token
MAX_LENGTH = 512
MIN_SEQUENCES = 1000  # the held-out split needs room on both sides


@dataclass(frozen=True)
class TaskSpec:
    """One task and its sizes. Frozen so it hashes: a cache keys on it.

    ``vocab``: how many symbols the inputs draw from (``a`` .. , at most 52); ``shift``: the k of
    the ``shift`` task; ``held_out``: the fraction of all sequences kept for evaluation;
    ``seed``: seeds the held-out hash and the held-out set.
    """

    name: str = "copy"
    length: int = 16
    vocab: int = 16
    shift: int = 1  # only the "shift" task reads it
    held_out: float = 0.2
    seed: int = 0

    def __post_init__(self) -> None:
        if self.name not in TASKS:
            raise ValueError(tr("task {name!r} is not one of {names}", name=self.name, names=list(TASKS)))
        for field_name, low, high in (("length", 2, MAX_LENGTH), ("vocab", 2, len(SYMBOLS))):
            value = getattr(self, field_name)
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise ValueError(
                    tr(
                        "{name}={value!r} must be an integer in [{low}, {high}]",
                        name=field_name,
                        value=value,
                        low=low,
                        high=high,
                    )
                )
        if not isinstance(self.shift, int) or not 1 <= self.shift < self.length:
            raise ValueError(
                tr(
                    "shift={value!r} must be an integer in [1, length-1={top}]",
                    value=self.shift,
                    top=self.length - 1,
                )
            )
        if not 0.01 <= float(self.held_out) <= 0.9:
            raise ValueError(tr("held_out={value!r} must be a fraction in [0.01, 0.9]", value=self.held_out))
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(tr("seed={value!r} must be a non-negative integer", value=self.seed))
        if self.vocab**self.length < MIN_SEQUENCES:
            raise ValueError(
                tr(
                    "vocab={vocab} symbols and length={length} make only {n} sequences: need at least "
                    "{least} to hold some out",
                    vocab=self.vocab,
                    length=self.length,
                    n=self.vocab**self.length,
                    least=MIN_SEQUENCES,
                )
            )

    @property
    def n_ids(self) -> int:
        """Size of the id space (specials, blank, symbols): the model's vocab_size and n_outputs."""
        return FIRST_SYMBOL_ID + self.vocab


# --- targets ----------------------------------------------------------------------------------


# np.copy(x, order="C") is x.copy(), typed: for python_version 3.10 numpy's stubs make x.copy() Any.
def _copy(x: IntArray, spec: TaskSpec) -> IntArray:
    return np.copy(x, order="C")


def _reverse(x: IntArray, spec: TaskSpec) -> IntArray:
    return np.copy(x[:, ::-1], order="C")


def _sort(x: IntArray, spec: TaskSpec) -> IntArray:
    return np.sort(x, axis=1)  # ids are in symbol order, so sorting ids sorts the symbols


def _shift(x: IntArray, spec: TaskSpec) -> IntArray:
    return np.roll(x, spec.shift, axis=1)  # out[i] = x[(i - k) mod length]


def _lookup(x: IntArray, spec: TaskSpec) -> IntArray:
    """out[i] = x[j + 1] for the largest j < i with x[j] == x[i]; BLANK_ID when there is none.

    The induction-head task: one head finds the previous occurrence, another reads what came
    after it.
    """
    _B, T = x.shape
    same = x[:, :, None] == x[:, None, :]  # [batch, query_pos, key_pos]
    earlier = np.tri(T, T, -1, dtype=bool)  # key_pos < query_pos
    # 1 + the latest earlier match (0: none), so argmax over "latest" is a max over positions.
    latest = ((same & earlier) * np.arange(1, T + 1)).max(axis=2)  # [batch, pos]
    follower = np.minimum(latest, T - 1)  # j + 1 where a match j = latest - 1 exists
    out = np.take_along_axis(x, follower, axis=1)
    return np.where(latest > 0, out, BLANK_ID).astype(np.int64)


_TARGETS: dict[str, Callable[[IntArray, TaskSpec], IntArray]] = {
    "copy": _copy,
    "reverse": _reverse,
    "sort": _sort,
    "shift": _shift,
    "lookup": _lookup,
}


def task_targets(spec: TaskSpec, inputs: npt.ArrayLike) -> IntArray:
    """The right output ids for input ids [batch, length] or [length] (same shape back)."""
    x = np.asarray(inputs, dtype=np.int64)
    one = x.ndim == 1
    x2 = x[None] if one else x
    if x2.ndim != 2:
        raise ValueError(f"inputs must be [batch, length] or [length], got shape {x.shape}")
    out = _TARGETS[spec.name](x2, spec)
    return out[0] if one else out


# --- the held-out split -------------------------------------------------------------------------

_MUL = np.uint64(0x9E3779B97F4A7C15)  # golden-ratio constant (splitmix64)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _mix(h: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """splitmix64's finaliser: every input bit affects every output bit."""
    h = (h ^ (h >> np.uint64(30))) * _MIX1
    h = (h ^ (h >> np.uint64(27))) * _MIX2
    out: npt.NDArray[np.uint64] = h ^ (h >> np.uint64(31))  # uint64 op uint64 stays uint64
    return out


def hash_unit(inputs: npt.ArrayLike, seed: int) -> npt.NDArray[np.float64]:
    """[batch] a number in [0, 1) for each id sequence [batch, length]: a seeded 64-bit hash of
    its ids. It depends only on the ids and ``seed``; every held-out split of the training
    tasks (this module's, `tformer.training.recall`'s) compares it with a fraction."""
    x = np.asarray(inputs, dtype=np.int64)
    if x.ndim != 2:
        raise ValueError(f"inputs must be [batch, length], got shape {x.shape}")
    # uint64 arrays wrap silently: that is the hash. Each (position, id) pair is mixed on its
    # own, the sum mixed again with the seed: one pass over the array, no loop over positions.
    pos = np.arange(x.shape[1], dtype=np.uint64) * _MIX1  # [pos]
    terms = _mix((x.astype(np.uint64) + np.uint64(1)) * _MUL + pos)  # [batch, pos]
    mixed_seed = _mix(np.full(1, seed, dtype=np.uint64) + _MUL)  # [1]
    h = _mix(terms.sum(axis=1, dtype=np.uint64) ^ mixed_seed)  # [batch]
    top: npt.NDArray[np.uint64] = h >> np.uint64(11)  # the top 53 bits: a float64's mantissa
    return top.astype(np.float64) / float(2**53)  # [batch] in [0, 1)


def is_held_out(spec: TaskSpec, inputs: npt.ArrayLike) -> npt.NDArray[np.bool_]:
    """[batch] True for the input sequences [batch, length] that belong to the held-out split.

    `hash_unit` of the ids (seeded by ``spec.seed``) compared with ``spec.held_out``: the split
    is fixed whatever the draw order.
    """
    return hash_unit(inputs, spec.seed) < spec.held_out


def _draw(spec: TaskSpec, rng: np.random.Generator, batch: int) -> IntArray:
    return rng.integers(0, spec.vocab, size=(batch, spec.length), dtype=np.int64) + FIRST_SYMBOL_ID


def make_batch(spec: TaskSpec, rng: np.random.Generator, batch: int) -> tuple[IntArray, IntArray]:
    """A training batch: (inputs, targets), each [batch, length] int64, never a held-out input.

    Held-out draws are redrawn until none is left (about ``held_out`` of the rows, each time).
    """
    if not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch={batch!r} must be a positive integer")
    x = _draw(spec, rng, batch)
    bad = np.flatnonzero(is_held_out(spec, x))
    while bad.size:
        x[bad] = _draw(spec, rng, bad.size)
        bad = bad[is_held_out(spec, x[bad])]
    return x, task_targets(spec, x)


@functools.lru_cache(maxsize=32)
def _held_out_inputs(spec: TaskSpec, n: int) -> IntArray:
    rng = np.random.default_rng([spec.seed, 0x5EED])
    found: list[IntArray] = []
    seen: set[bytes] = set()
    have, tries = 0, 0
    while have < n:
        tries += 1
        if tries > 1000:
            raise ValueError(f"could not find {n} distinct held-out sequences for {spec}")
        x = _draw(spec, rng, min(1 << 16, max(64, int(2 * (n - have) / spec.held_out))))
        for row in x[is_held_out(spec, x)]:
            key = row.tobytes()
            if key not in seen and have < n:
                seen.add(key)
                found.append(row)
                have += 1
    out = np.stack(found)
    out.flags.writeable = False  # cached and shared
    return out


def held_out_set(spec: TaskSpec, n: int) -> tuple[IntArray, IntArray]:
    """``n`` distinct held-out sequences and their targets, [n, length] each. The same for the
    same (spec, n); the first ``m`` rows of a larger set are the set of size ``m``."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n={n!r} must be a positive integer")
    x = _held_out_inputs(spec, n).copy()
    return x, task_targets(spec, x)


# --- text ---------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=32)
def task_tokenizer(spec: TaskSpec) -> Tokenizer:
    """A word-level tokenizer over the task's symbols: ``"c a f b"`` -> one id per symbol.

    Whitespace splits the words; anything that is not a symbol of this task becomes ``[UNK]``.
    No [CLS]/[SEP]: position i of a text is position i of the task. Ids as in the module
    docstring; ``max_len`` is ``spec.length``. Cached: encode is thread-safe.
    """
    vocab = {tok: i for i, tok in enumerate(_TOKENS[: spec.n_ids])}
    tok = tokenizers.Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.add_special_tokens([PAD, UNK])
    return Tokenizer(tok, max_len=spec.length)


def as_text(ids: npt.ArrayLike) -> str:
    """Ids [pos] as the text a person reads and types: symbols joined by spaces."""
    flat = np.asarray(ids, dtype=np.int64).reshape(-1)
    bad = [int(i) for i in flat if not 0 <= i < len(_TOKENS)]
    if bad:
        raise ValueError(f"ids {bad} are outside the task ids 0..{len(_TOKENS) - 1}")
    return " ".join(_TOKENS[i] for i in flat)


def example_texts(spec: TaskSpec, n: int) -> list[str]:
    """``n`` held-out inputs as text (for the app's example box): the model never trained on them."""
    inputs, _ = held_out_set(spec, n)
    return [as_text(row) for row in inputs]
