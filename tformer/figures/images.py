"""Figures as PNG or SVG bytes, drawn by kaleido, which drives a headless Chromium.

The first image starts one browser that is kept for the process (``kaleido.start_sync_server``),
so only the first figure pays for starting it, not every image (docs/performance.md).
"""

from __future__ import annotations

import os
import shutil
import threading
import warnings
from typing import Any

IMAGE_TYPES = {"png": "image/png", "svg": "image/svg+xml"}
CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")

_server_lock = threading.Lock()
_server_started = False


class ExportUnavailable(RuntimeError):
    """Images cannot be drawn here (kaleido or a Chromium is missing); the message says which."""


def browser_path() -> str | None:
    """The Chromium kaleido will use: $BROWSER_PATH, else a system Chromium, else None."""
    given = os.environ.get("BROWSER_PATH")
    if given:
        return given if os.path.exists(given) else None
    for path in CHROMIUM:
        if os.path.exists(path):
            return path
    found = shutil.which("chromium") or shutil.which("google-chrome")
    return found


def image_export_problem() -> str | None:
    """Why figures cannot be exported as images here, or None when they can."""
    try:
        import kaleido  # noqa: F401
    except ImportError:
        return "the kaleido package is not installed (pip install kaleido)"
    if browser_path() is None:
        return "no Chromium was found (sudo apt-get install chromium, or set BROWSER_PATH)"
    return None


def _start_server() -> None:
    global _server_started
    with _server_lock:
        if _server_started:
            return
        problem = image_export_problem()
        if problem:
            raise ExportUnavailable(problem)
        import kaleido

        os.environ.setdefault("BROWSER_PATH", browser_path() or "")
        kaleido.start_sync_server(silence_warnings=True)
        _server_started = True


def figure_image(fig: Any, fmt: str, *, scale: float = 2.0) -> bytes:
    """``fig`` (a plotly Figure) as PNG or SVG bytes, at the size its layout sets. PNGs are drawn
    at ``scale`` × that size (sharp on a projector); SVG is vector and needs none."""
    if fmt not in IMAGE_TYPES:
        raise ValueError(f"format must be one of {sorted(IMAGE_TYPES)}, got {fmt!r}")
    import plotly.io as pio

    _start_server()
    with warnings.catch_warnings():  # plotly passes browser options that a running server ignores
        warnings.simplefilter("ignore", UserWarning)
        return bytes(pio.to_image(fig, format=fmt, scale=scale if fmt == "png" else 1))
