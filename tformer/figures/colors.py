"""Color maps shared by every figure: the pattern scale, a diverging scale, lookup tables."""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt
from plotly.colors import hex_to_rgb

# Attention weights are colored by weight ** PATTERN_GAMMA so that the small weights spread over
# hundreds of keys (1/512 ~ 0.002) remain visible; the colorbar still reads in true weights.
PATTERN_GAMMA = 0.5

# Sequential map for weights in [0, 1] (Viridis: perceptually uniform, colorblind-safe,
# dark at 0 so a thumbnail stands out from its transparent gaps).
_SEQUENTIAL_STOPS = (
    "#440154", "#482878", "#3e4989", "#31688e", "#26828e",
    "#1f9e89", "#35b779", "#6ece58", "#b5de2b", "#fde725",
)  # fmt: skip
# Diverging map for signed values (attn_scores, q, k, v, z): blue negative, white 0, red positive.
DIVERGING: list[list[float | str]] = [
    [0.0, "rgb(5,48,97)"],
    [0.1, "rgb(33,102,172)"],
    [0.2, "rgb(67,147,195)"],
    [0.3, "rgb(146,197,222)"],
    [0.4, "rgb(209,229,240)"],
    [0.5, "rgb(247,247,247)"],
    [0.6, "rgb(253,219,199)"],
    [0.7, "rgb(244,165,130)"],
    [0.8, "rgb(214,96,77)"],
    [0.9, "rgb(178,24,43)"],
    [1.0, "rgb(103,0,31)"],
]
# A plain sequential scale for unsigned metrics (no gamma).
SEQUENTIAL: list[list[float | str]] = [
    [i / (len(_SEQUENTIAL_STOPS) - 1), c] for i, c in enumerate(_SEQUENTIAL_STOPS)
]

HIGHLIGHT = "#ff4b4b"  # selection outline (Streamlit's primary red)


def _rgb(c: str) -> tuple[int, int, int]:
    """``"#rrggbb"`` or ``"rgb(r,g,b)"`` as three ints."""
    if c.startswith("#"):
        r, g, b = hex_to_rgb(c)
    else:
        r, g, b = (int(v) for v in c[c.index("(") + 1 : c.index(")")].split(","))
    return int(r), int(g), int(b)


def sequential_lut(n: int = 255) -> npt.NDArray[np.uint8]:
    """``n`` RGB uint8 colors of the sequential map, linearly interpolated: shape [n, 3]."""
    stops = np.array([_rgb(c) for c in _SEQUENTIAL_STOPS], dtype=np.float64)
    at = np.linspace(0.0, 1.0, len(stops))
    t = np.linspace(0.0, 1.0, n)
    lut = np.stack([np.interp(t, at, stops[:, ch]) for ch in range(3)], axis=1)
    return np.rint(lut).astype(np.uint8)


@functools.lru_cache(maxsize=8)
def _pattern_colorscale(gamma: float, n_stops: int) -> tuple[tuple[float, str], ...]:
    lut = sequential_lut(256)
    stops = []
    for i in range(n_stops):
        u = i / (n_stops - 1)  # position along the color map
        r, g, b = lut[int(round(u * 255))]
        at = 0.0 if i == 0 else 1.0 if i == n_stops - 1 else u ** (1.0 / gamma)
        stops.append((at, f"rgb({r},{g},{b})"))
    return tuple(stops)


def pattern_colorscale(gamma: float = PATTERN_GAMMA, n_stops: int = 33) -> list[list[float | str]]:
    """Colorscale for weights on zmin=0 / zmax=1 whose color at weight w is ``map(w ** gamma)``.

    The same mapping the overview mosaic uses, so a head looks alike in both figures, while the
    colorbar and hover still show true weights.
    """
    return [list(stop) for stop in _pattern_colorscale(float(gamma), int(n_stops))]


def symmetric_range(values: npt.NDArray[np.floating]) -> float:
    """Largest finite magnitude (1.0 when nothing finite or all zero): for zmin=-m, zmax=m."""
    finite = values[np.isfinite(values)]
    m = float(np.abs(finite).max()) if finite.size else 0.0
    return m if m > 0 else 1.0
