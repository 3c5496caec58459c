"""Recycled memory for large capture arrays (`tformer.model.buffers`): a buffer is lent again
only once its array and every view of it are gone, idle memory is bounded, small arrays and a
process that did not ask are left to numpy, and a capture's numbers do not depend on it."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from tformer.model import buffers
from tformer.model.buffers import MIN_BYTES, BufferPool

BIG = (MIN_BYTES // 4,)  # float32: exactly MIN_BYTES


def address(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


def test_a_dropped_array_lends_its_memory_to_the_next_one():
    pool = BufferPool(4 * MIN_BYTES)
    a = pool.empty(BIG, np.float32)
    a[:3] = (1, 2, 3)
    where = address(a)
    del a
    gc.collect()
    assert pool.idle_bytes >= MIN_BYTES
    b = pool.empty((2, MIN_BYTES // 8), np.float32)  # the same bytes in another shape
    assert address(b) == where
    assert (pool.made, pool.reused) == (1, 1)
    assert b.shape == (2, MIN_BYTES // 8)
    assert b.flags.c_contiguous
    assert b.flags.writeable
    assert pool.idle_bytes == 0


def test_a_view_keeps_the_buffer_lent():
    pool = BufferPool(4 * MIN_BYTES)
    a = pool.empty(BIG, np.float32)
    a[:] = 7.0
    row = a.reshape(4, -1)[2]  # a slice of a reshape: numpy's base chain ends at the owner
    row.flags.writeable = False
    where = address(a)
    del a
    gc.collect()
    assert pool.idle_bytes == 0  # the slice still reads it
    b = pool.empty(BIG, np.float32)
    assert address(b) != where
    b[:] = 0.0
    assert (row == 7.0).all()  # nobody else wrote into the slice's memory
    del row
    gc.collect()
    assert pool.idle_bytes >= MIN_BYTES


def test_idle_memory_is_bounded_and_sizes_must_be_close():
    pool = BufferPool(MIN_BYTES)  # room for one idle buffer
    arrays = [pool.empty(BIG, np.float32) for _ in range(3)]
    del arrays
    gc.collect()
    assert pool.idle_bytes == MIN_BYTES  # the other two were let go
    small = pool.empty((MIN_BYTES // 16,), np.float32)  # a quarter of the idle buffer: too small to take it
    assert pool.reused == 0
    assert pool.idle_bytes == MIN_BYTES
    del small
    with pytest.raises(ValueError, match="max_idle_bytes"):
        BufferPool(-1)


def test_small_arrays_and_a_process_that_did_not_ask_get_numpys_arrays(monkeypatch):
    monkeypatch.setattr(buffers, "_POOL", [])
    a = buffers.empty(BIG)
    assert a.flags.owndata  # numpy's own
    assert buffers.pool() is None
    pool = buffers.recycle_large_arrays(2 * MIN_BYTES)
    assert buffers.pool() is pool
    assert buffers.empty((10, 10)).flags.owndata  # small: numpy's
    big = buffers.empty(BIG)
    assert not big.flags.owndata
    assert pool.made == 1
    assert buffers.recycle_large_arrays(3 * MIN_BYTES) is pool
    assert pool.max_idle_bytes == 3 * MIN_BYTES


def test_a_capture_in_recycled_memory_holds_the_same_numbers(monkeypatch):
    """Captures long enough to use the pool, made twice so the second reuses the first's
    memory, equal a capture in numpy's own arrays."""
    import torch

    from tformer.model.capture import capture_ids
    from tformer.model.config import EncoderConfig
    from tformer.model.encoder import Encoder
    from tformer.model.tokenizer import Encoded

    torch.manual_seed(0)
    cfg = EncoderConfig(vocab_size=50, max_len=1100, d_model=16, n_heads=8, n_layers=1)
    model = Encoder(cfg).eval()
    n = 1030  # 8 heads x 1030^2 floats: just over MIN_BYTES per pattern
    ids = [int(i) for i in torch.randint(0, 50, (n,))]
    enc = Encoded(ids, [str(i) for i in ids], [str(i) for i in ids], [(0, 0)] * n, [False] * n, False, n)
    monkeypatch.setattr(buffers, "_POOL", [])
    plain = capture_ids(model, enc, ["pattern", "attn_scores"])
    pool = buffers.recycle_large_arrays(4 * 8 * n * n * 4)
    first = capture_ids(model, enc, ["pattern", "attn_scores"])
    assert pool.made == 2
    del first
    gc.collect()
    again = capture_ids(model, enc, ["pattern", "attn_scores"])
    assert pool.reused == 2
    for name in ("pattern", "attn_scores"):
        assert np.array_equal(again[name], plain[name])
        assert not again[name].flags.writeable
