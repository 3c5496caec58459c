"""Where the model runs: cuda, then mps, then cpu; TFORMER_DEVICE overrides."""

from __future__ import annotations

import os

import torch


def pick_device() -> torch.device:
    """The best available device, or the one named by the environment variable TFORMER_DEVICE.

    An override that this machine cannot honour raises ValueError (a silent fallback would
    hide a misconfiguration).
    """
    wanted = os.environ.get("TFORMER_DEVICE", "").strip().lower()
    if wanted:
        try:
            device = torch.device(wanted)
        except RuntimeError as err:
            raise ValueError(f"TFORMER_DEVICE={wanted!r} is not a device name ({err})") from None
        if not device_available(device):
            raise ValueError(f"TFORMER_DEVICE={wanted!r} is not available on this machine")
        return device
    if torch.cuda.is_available():
        return torch.device("cuda")
    if _mps_available():
        return torch.device("mps")
    return torch.device("cpu")


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def device_available(device: torch.device) -> bool:
    if device.type == "cpu":
        return True
    if device.type == "cuda":
        index = device.index or 0
        return torch.cuda.is_available() and index < torch.cuda.device_count()
    if device.type == "mps":
        return _mps_available()
    return False


def keep_freed_memory() -> bool:
    """Ask glibc to keep freed activation buffers for reuse instead of returning them to the OS.

    A full capture at 512 tokens allocates ~150 MB of fresh tensors per run; by default glibc
    unmaps big blocks on free, so every run pays tens of thousands of page faults again
    (measured: 128 and 512 tokens ~25% slower). Process-wide, so only the app and the
    benchmarks call it, never `import tformer`. Returns False where it does not apply.
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
    fight Chromium and Streamlit's own thread for the CPU (measured: the 16-token rerun's
    model step fell from 40-110 ms to 12-22 ms with one thread).
    """
    wanted = os.environ.get("TFORMER_THREADS", "").strip()
    if wanted:
        if not wanted.isdigit() or int(wanted) < 1:
            raise ValueError(f"TFORMER_THREADS={wanted!r} must be a positive integer")
        return int(wanted)
    return max(1, (os.cpu_count() or 2) // 2)
