"""Synthetic tasks: targets on hand examples, the held-out split, the task tokenizer."""

from __future__ import annotations

import numpy as np
import pytest

from tformer.training.tasks import (
    BLANK_ID,
    TASKS,
    TaskSpec,
    as_text,
    example_texts,
    held_out_set,
    is_held_out,
    make_batch,
    task_targets,
    task_tokenizer,
)


def ids(text: str, spec: TaskSpec | None = None) -> np.ndarray:
    spec = spec or TaskSpec(length=len(text.split()))
    return np.array(task_tokenizer(spec).encode(text).ids, dtype=np.int64)


def answer(name: str, text: str, **kw: int) -> str:
    spec = TaskSpec(name, length=len(text.split()), **kw)
    return as_text(task_targets(spec, ids(text, spec)))


@pytest.mark.parametrize(
    ("name", "text", "expected", "kw"),
    [
        ("copy", "c a f b", "c a f b", {}),
        ("reverse", "c a f b", "b f a c", {}),
        ("reverse", "a b c d e", "e d c b a", {}),
        ("sort", "c a f b a", "a a b c f", {}),
        ("sort", "d c b a", "a b c d", {}),
        ("shift", "a b c d e", "e a b c d", {"shift": 1}),
        ("shift", "a b c d e", "d e a b c", {"shift": 2}),
        # lookup: the token after the latest earlier occurrence of the same token, else _
        ("lookup", "a b a c", "_ _ b _", {}),
        ("lookup", "a b a c a d", "_ _ b _ c _", {}),  # the latest occurrence wins
        ("lookup", "a a a b", "_ a a _", {}),  # the follower may be the token itself
        ("lookup", "c a f b e d", "_ _ _ _ _ _", {}),
        ("lookup", "b e c a d d e a", "_ _ _ _ _ d c d", {}),
    ],
)
def test_targets_on_hand_examples(name, text, expected, kw):
    assert answer(name, text, **kw) == expected


def test_every_task_has_targets_and_a_description():
    assert list(TASKS) == ["copy", "reverse", "sort", "shift", "lookup"]
    for name, description in TASKS.items():
        assert description
        assert "\n" not in description
        spec = TaskSpec(name)
        x, y = make_batch(spec, np.random.default_rng(0), 4)
        assert x.shape == y.shape == (4, 16)
        assert x.dtype == y.dtype == np.int64
        assert (y == task_targets(spec, x)).all()


def test_sort_orders_lowercase_before_uppercase():
    spec = TaskSpec("sort", length=4, vocab=30)
    assert answer("sort", "B a D c", vocab=30) == "a c B D"
    assert spec.n_ids == 33


def test_lookup_is_deterministic_and_matches_a_plain_loop():
    spec = TaskSpec("lookup", length=12, vocab=4)
    x, y = make_batch(spec, np.random.default_rng(3), 200)
    assert (task_targets(spec, x) == y).all()  # same inputs, same answer
    for row, out in zip(x, y, strict=True):
        expected = []
        for i, tok in enumerate(row):
            prev = [j for j in range(i) if row[j] == tok]
            expected.append(row[prev[-1] + 1] if prev else BLANK_ID)
        assert out.tolist() == expected
    # the same draw from the same seed
    x2, y2 = make_batch(spec, np.random.default_rng(3), 200)
    assert (x == x2).all()
    assert (y == y2).all()
    assert (y == BLANK_ID).any()
    assert (y != BLANK_ID).any()  # both cases occur


def test_held_out_never_overlaps_training_draws():
    spec = TaskSpec("copy", length=4, vocab=6)  # 1296 sequences: collisions would show
    held, _ = held_out_set(spec, 100)
    assert is_held_out(spec, held).all()
    held_keys = {row.tobytes() for row in held}
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(50):
        x, _ = make_batch(spec, rng, 128)
        assert not is_held_out(spec, x).any()
        seen |= {row.tobytes() for row in x}
    assert not seen & held_keys
    assert len(seen) > 900  # training still covers the rest of the space


def test_held_out_fraction_and_seed():
    spec = TaskSpec(held_out=0.2)
    x = np.random.default_rng(1).integers(3, 19, size=(20000, 16))
    frac = is_held_out(spec, x).mean()
    assert 0.18 < frac < 0.22
    other = is_held_out(TaskSpec(held_out=0.2, seed=1), x)
    assert (other != is_held_out(spec, x)).any()  # the seed moves the split


def test_held_out_set_is_fixed_distinct_and_prefix_stable():
    spec = TaskSpec("reverse")
    a, ya = held_out_set(spec, 64)
    b, _ = held_out_set(spec, 64)
    big, _ = held_out_set(spec, 128)
    assert (a == b).all()
    assert (a == big[:64]).all()
    assert len({row.tobytes() for row in big}) == 128
    assert (ya == a[:, ::-1]).all()
    a[0, 0] = 0  # a copy: the cached set is untouched
    assert held_out_set(spec, 64)[0][0, 0] != 0


def test_tokenizer_round_trip():
    spec = TaskSpec("copy", length=6, vocab=16)
    tok = task_tokenizer(spec)
    enc = tok.encode("c a f b")
    assert enc.ids == [5, 3, 8, 4]
    assert enc.labels == ["c", "a", "f", "b"]
    assert tok.cls_token is None
    assert tok.sep_token is None
    assert tok.n_special == 0
    assert tok.pad_id == 0
    assert tok.unk_id == 1
    assert tok.vocab_size == spec.n_ids == 19
    assert as_text(enc.ids) == "c a f b"
    assert tok.encode("c z q").ids == [5, 1, 1]  # z and q are not among 16 symbols
    assert len(tok.encode("a " * 10).ids) == 6  # truncated to the task length


def test_tokenizer_uses_uppercase_beyond_26_symbols():
    spec = TaskSpec(vocab=52)
    tok = task_tokenizer(spec)
    assert tok.encode("z A Z").ids == [28, 29, 54]
    assert as_text([0, 1, 2, 3]) == "[PAD] [UNK] _ a"
    with pytest.raises(ValueError, match="outside"):
        as_text([55])


def test_example_texts_are_held_out_inputs():
    spec = TaskSpec("sort")
    texts = example_texts(spec, 3)
    assert len(texts) == 3
    assert all(len(t.split()) == 16 for t in texts)
    x = np.array([task_tokenizer(spec).encode(t).ids for t in texts])
    assert is_held_out(spec, x).all()


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"name": "nope"}, "not one of"),
        ({"length": 1}, "length=1"),
        ({"vocab": 53}, "vocab=53"),
        ({"shift": 16}, "shift=16"),
        ({"shift": 0}, "shift=0"),
        ({"held_out": 0.0}, "held_out"),
        ({"length": 3, "vocab": 4}, "only 64 sequences"),
    ],
)
def test_spec_validation(kw, match):
    with pytest.raises(ValueError, match=match):
        TaskSpec(**kw)


def test_make_batch_validates_batch():
    with pytest.raises(ValueError, match="batch=0"):
        make_batch(TaskSpec(), np.random.default_rng(0), 0)
