"""Process-wide tuning for a server shared by many sessions: the allocator and torch's threads.

Only the app and the benchmarks call these, never ``import tformer``: they change the whole
process.
"""

from __future__ import annotations

import os


def keep_freed_memory() -> bool:
    """Ask glibc to keep freed activation buffers for reuse instead of returning them to the OS.

    A long capture allocates large fresh tensors on every run; by default glibc unmaps big
    blocks on free, so every run pays its page faults again (the README has the figures).
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
