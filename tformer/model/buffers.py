"""Memory for large capture arrays, recycled once the arrays are gone.

A capture of a long text holds arrays of tens of megabytes (every head's pattern at 512 tokens
is 75 MB). Fresh memory of that size is mapped from the kernel and filled page by page on first
touch, which costs several times the copy itself (docs/performance.md has the figures), and
glibc unmaps such blocks again when they are freed, so every capture paid it anew. With
`recycle_large_arrays` on, `empty` hands out arrays of at least `MIN_BYTES` from idle buffers
that earlier arrays left behind: a buffer goes back to the pool only when its array, and every
view or slice of it, is gone (weakref.finalize on the array that owns the view chain), so no
buffer is ever lent twice. Smaller arrays come from numpy as usual (glibc's heap reuses them).

Off unless a process asks for it (the app does, once per server): a notebook keeps numpy's
behaviour and no idle memory.
"""

from __future__ import annotations

import math
import mmap
import threading
import weakref
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["MIN_BYTES", "BufferPool", "empty", "pool", "recycle_large_arrays"]

# glibc's largest mmap threshold on 64-bit: blocks under it come from the heap, which keeps
# and reuses freed memory by itself (`tformer.ui.process.keep_freed_memory`).
MIN_BYTES = 32 * 2**20
# A buffer serves a request between its size / SLACK and its size: texts of nearby lengths
# reuse each other's buffers, and no request takes a buffer much larger than it needs.
SLACK = 1.5


class BufferPool:
    """Idle buffers (anonymous mmaps) waiting to back a new large array, at most
    ``max_idle_bytes`` of them; beyond that the oldest are let go (unmapped)."""

    def __init__(self, max_idle_bytes: int) -> None:
        if max_idle_bytes < 0:
            raise ValueError(f"max_idle_bytes={max_idle_bytes} must be >= 0")
        self.max_idle_bytes = max_idle_bytes
        # Re-entrant: a collection inside `empty` may finalize an old array, which recycles here.
        self._lock = threading.RLock()
        self._idle: list[mmap.mmap] = []  # oldest first
        self.reused = 0  # arrays served from an idle buffer (for tests and benchmarks)
        self.made = 0  # buffers mapped fresh

    @property
    def idle_bytes(self) -> int:
        with self._lock:
            return sum(len(b) for b in self._idle)

    def empty(self, shape: Sequence[int], dtype: npt.DTypeLike) -> npt.NDArray[np.generic]:
        """An uninitialised C-contiguous array, its memory from an idle buffer when one fits."""
        dt = np.dtype(dtype)
        count = math.prod(shape)
        nbytes = count * dt.itemsize
        buf = self._take(nbytes)
        if buf is None:
            buf = mmap.mmap(-1, max(nbytes, 1))
            with self._lock:
                self.made += 1
        owner = np.frombuffer(buf, dtype=dt, count=count)  # its base is the buffer, not an array
        # Every view of `owner` keeps `owner` alive (numpy stops its base chain at it), so this
        # runs only once no array can read or write the buffer any more.
        weakref.finalize(owner, self._give_back, buf)
        return owner.reshape(shape)

    def _take(self, nbytes: int) -> mmap.mmap | None:
        with self._lock:
            fits = [b for b in self._idle if nbytes <= len(b) <= nbytes * SLACK]
            if not fits:
                return None
            buf = min(fits, key=len)
            self._idle.remove(buf)
            self.reused += 1
            return buf

    def _give_back(self, buf: mmap.mmap) -> None:
        with self._lock:
            self._idle.append(buf)
            while self._idle and sum(len(b) for b in self._idle) > self.max_idle_bytes:
                self._idle.pop(0)  # unmapped once its last reference (the memoryview) is gone


_POOL: list[BufferPool] = []  # the process's pool, once `recycle_large_arrays` was called


def recycle_large_arrays(max_idle_bytes: int) -> BufferPool:
    """Turn recycling on for this process (once; a second call changes the bound) and return
    the pool."""
    if not _POOL:
        _POOL.append(BufferPool(max_idle_bytes))
    _POOL[0].max_idle_bytes = max_idle_bytes
    return _POOL[0]


def pool() -> BufferPool | None:
    """The process's pool, or None while recycling is off."""
    return _POOL[0] if _POOL else None


def empty(shape: Sequence[int], dtype: npt.DTypeLike = np.float32) -> npt.NDArray[np.generic]:
    """``np.empty(shape, dtype)``, from the pool for arrays of at least MIN_BYTES when recycling
    is on."""
    dt = np.dtype(dtype)
    if _POOL and math.prod(shape) * dt.itemsize >= MIN_BYTES:
        return _POOL[0].empty(shape, dt)
    return np.empty(shape, dt)
