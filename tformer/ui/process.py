"""Process-wide tuning for a server shared by many sessions: the allocator and torch's threads.

Only the app and the benchmarks call these, never ``import tformer``: they change the whole
process.
"""

from __future__ import annotations

import os


def keep_freed_memory() -> bool:
    """Ask glibc to keep freed activation buffers for reuse instead of returning them to the OS.

    A long capture allocates large fresh tensors on every run; by default glibc unmaps big
    blocks on free, so every run pays its page faults again (docs/performance.md has the figures).
    Returns False where it does not apply.
    """
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:  # musl or another libc: leave the allocator alone
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3
    return bool(libc.mallopt(m_mmap_threshold, 32 * 2**20) and libc.mallopt(m_trim_threshold, 2**30))


def plain_pages_for_arrays() -> bool:
    """Stop numpy asking the kernel for transparent huge pages for its large arrays.

    numpy advises huge pages (madvise) for every large array it allocates. Where the kernel's
    THP defrag setting is "madvise" (Debian's default), each such allocation then compacts
    memory synchronously on its page faults, several times slower to fill a fresh capture
    array (docs/performance.md has the figures); the cached captures stay alive, so their
    memory is not reused. Returns False where this numpy has
    no such switch. numpy's own NUMPY_MADVISE_HUGEPAGE=0 does the same but only when set
    before numpy is imported, which the app does not control.
    """
    import importlib

    for module in ("numpy._core.multiarray", "numpy.core.multiarray"):  # numpy 2, numpy 1
        try:
            switch = importlib.import_module(module)._set_madvise_hugepage
        except (ImportError, AttributeError):
            continue
        switch(False)
        return True
    return False


# The OpenBLAS builds numpy ships and their C names for "use n threads" (numpy's wheels
# prefix them), found in the libraries this process has loaded.
_BLAS_SET_THREADS = (
    "openblas_set_num_threads",
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
)


def blas_threads(n: int) -> int:
    """numpy's BLAS (OpenBLAS) to ``n`` threads, as torch's; returns how many BLAS libraries it
    set (0 where none is loaded or this is not Linux).

    Its default is a thread per core, and after each call its helper threads spin, waiting for
    more, on the cores the browser and the other sessions need: on 2 cores that more than
    doubled the server CPU of a short edit on the step-by-step page (docs/performance.md).
    """
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return 0
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.lower() and ".so" in line}
    except OSError:
        return 0
    done = 0
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        setter = next((getattr(lib, name) for name in _BLAS_SET_THREADS if hasattr(lib, name)), None)
        if setter is not None:
            setter(ctypes.c_int(n))
            done += 1
    return done


# Idle memory the capture arrays may leave for the next capture: two 512-token captures of
# every head's pattern and scores (75 MB each array).
RECYCLE_IDLE_BYTES = 320 * 2**20


def recycle_capture_memory() -> None:
    """Capture arrays of 32 MB and more reuse the memory of dropped ones instead of fresh pages
    (`tformer.model.buffers`): a fresh array's page faults cost several times the copy that
    fills it (docs/performance.md has the figures)."""
    from ..model.buffers import recycle_large_arrays

    recycle_large_arrays(RECYCLE_IDLE_BYTES)


def app_threads() -> int:
    """Torch intra-op threads for the app: half the cores (at least 1), or TFORMER_THREADS.

    The browser and the other sessions need the rest: on a 2-core machine two torch threads
    fight the browser and Streamlit's own thread for the CPU.
    """
    wanted = os.environ.get("TFORMER_THREADS", "").strip()
    if wanted:
        if not wanted.isdigit() or int(wanted) < 1:
            raise ValueError(f"TFORMER_THREADS={wanted!r} must be a positive integer")
        return int(wanted)
    return max(1, (os.cpu_count() or 2) // 2)
