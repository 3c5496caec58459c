"""A fresh server's first page: the browser loads its chart code while the server loads torch.

On the first run of a server process, importing torch takes most of a second, and the browser
only starts fetching and compiling Plotly's code (4.6 MB) when the first chart arrives: the two
waits add up. `charts_prefetched` sends an invisible one-point chart before torch is imported, so
they overlap; the page removes it at the end of the run. Later runs (torch already imported) send
nothing. This module must not import torch, directly or through tformer.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

KEY = "tf-prefetch"  # its element carries the CSS class st-key-tf-prefetch
_INVISIBLE = {
    "data": [
        {
            "type": "scatter",
            "x": [0],
            "y": [0],
            "mode": "markers",
            "marker": {"opacity": 0},
            "hoverinfo": "skip",
        }
    ],
    "layout": {
        "height": 10,  # plotly's least
        "margin": {"l": 0, "r": 0, "t": 0, "b": 0},
        "xaxis": {"visible": False},
        "yaxis": {"visible": False},
        "showlegend": False,
    },
}


@contextmanager
def charts_prefetched() -> Iterator[None]:
    """On a server's first run (torch not yet imported), an invisible chart for the length of
    the ``with`` body, removed at its end (also when the page stops early); else nothing."""
    slot = None
    if "torch" not in sys.modules:
        slot = st.empty()
        slot.plotly_chart(_INVISIBLE, key=KEY, config={"staticPlot": True, "displayModeBar": False})
    try:
        yield
    finally:
        if slot is not None:
            slot.empty()
