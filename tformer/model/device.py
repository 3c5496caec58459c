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
