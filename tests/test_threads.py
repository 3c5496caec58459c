"""One shared model, many threads capturing at once: each gets exactly its own result."""

import threading
from concurrent.futures import ThreadPoolExecutor

import torch

from tformer import Encoder
from tformer.model.hooks import _ACTIVE

from ._models import tiny


def test_concurrent_captures_and_ablations_do_not_mix():
    model = Encoder(tiny(n_layers=3, d_model=32, n_heads=4)).eval()
    inputs = [
        torch.randint(0, 60, (1, 5 + i % 7), generator=torch.Generator().manual_seed(i)) for i in range(24)
    ]
    expected = []
    for ids in inputs:
        _, cache = model.run_with_cache(ids)
        expected.append({k: v.clone() for k, v in cache.items()})

    def ablate_head(i):
        return lambda z, hook: z.index_fill(2, torch.tensor([i % 4]), 0.0)

    expected_ablated = [
        model.run_with_hooks(ids, fwd_hooks=[("blocks.1.attn.hook_z", ablate_head(i))]).clone()
        for i, ids in enumerate(inputs)
    ]
    barrier = threading.Barrier(8)

    def work(i):
        if i < 8:
            barrier.wait()  # make the first wave truly overlap
        ids = inputs[i]
        results = []
        for _ in range(3):
            _, cache = model.run_with_cache(ids)
            ablated = model.run_with_hooks(ids, fwd_hooks=[("blocks.1.attn.hook_z", ablate_head(i))])
            results.append((cache, ablated))
        return results

    with ThreadPoolExecutor(max_workers=8) as pool:
        all_results = list(pool.map(work, range(len(inputs))))

    for i, results in enumerate(all_results):
        for cache, ablated in results:
            assert set(cache) == set(expected[i])
            for name, tensor in expected[i].items():
                assert torch.equal(cache[name], tensor), (i, name)
            assert torch.equal(ablated, expected_ablated[i])
    assert _ACTIVE.get() is None


def test_a_thread_does_not_see_another_threads_hooks():
    model = Encoder(tiny()).eval()
    ids = torch.randint(0, 60, (1, 6))
    inside, release = threading.Event(), threading.Event()
    seen_by_other = []

    def slow_hook(t, hook):
        inside.set()
        release.wait(5)

    t = threading.Thread(target=lambda: model.run_with_hooks(ids, fwd_hooks=[("hook_embed", slow_hook)]))
    t.start()
    assert inside.wait(5)
    # While the first thread is parked inside its hook, this thread's run is unhooked.
    _, cache = model.run_with_cache(ids, names_filter="blocks.0.attn.hook_pattern")
    seen_by_other.append(list(cache))
    release.set()
    t.join(5)
    assert seen_by_other == [["blocks.0.attn.hook_pattern"]]
    assert _ACTIVE.get() is None


def test_numpy_can_be_told_not_to_advise_huge_pages():
    from tformer.ui.process import plain_pages_for_arrays

    try:
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:
        from numpy.core.multiarray import _set_madvise_hugepage
    before = _set_madvise_hugepage(True)  # returns the previous setting
    try:
        assert plain_pages_for_arrays() is True
        assert _set_madvise_hugepage(False) is False  # it was off
    finally:
        _set_madvise_hugepage(before)


def test_numpys_blas_can_be_held_to_the_apps_threads():
    """blas_threads sets numpy's OpenBLAS thread count (read back through the library's own
    getter) and says how many libraries it set."""
    import ctypes
    import sys

    import numpy as np
    import pytest

    from tformer.ui.process import blas_threads

    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc/self/maps")
    np.ones((64, 64)) @ np.ones((64, 64))  # BLAS loaded and used
    with open("/proc/self/maps") as maps:
        paths = sorted({line.split()[-1] for line in maps if "openblas" in line.lower() and ".so" in line})
    getters = (
        "openblas_get_num_threads",
        "scipy_openblas_get_num_threads64_",
        "scipy_openblas_get_num_threads",
    )
    libs = [ctypes.CDLL(p) for p in paths]
    read = [
        next(getattr(lib, g) for g in getters if hasattr(lib, g))
        for lib in libs
        if any(hasattr(lib, g) for g in getters)
    ]
    if not read:
        pytest.skip("numpy here is not built on OpenBLAS")
    before = [int(f()) for f in read]
    try:
        assert blas_threads(1) == len(read)
        assert [int(f()) for f in read] == [1] * len(read)
    finally:
        blas_threads(before[0])  # the libraries of one process start with one default
