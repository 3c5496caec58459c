"""Color maps shared by every figure: the pattern scale, a diverging scale, lookup tables."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from plotly.colors import hex_to_rgb

from ..i18n import tr

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

# --- the palette: every colour a figure draws with, named by its role ------------------------
# Figures import these names and write no colour of their own, so that the same part, series or
# mark looks the same on every page.

# Series: Okabe and Ito's colours, told apart under every common colour-vision deficiency.
BLUE = "#0072b2"
VERMILLION = "#d55e00"
BLUISH_GREEN = "#009e73"
REDDISH_PURPLE = "#cc79a7"
ORANGE = "#e69f00"
SKY_BLUE = "#56b4e9"
BLACK = "#000000"
SERIES = (BLUE, VERMILLION, BLUISH_GREEN, REDDISH_PURPLE, ORANGE, SKY_BLUE, BLACK)
DARK_PURPLE = "#8e4585"  # darker than REDDISH_PURPLE, for thin spiky lines
SPREAD = "#8e6bbf"  # a spread (sigma) beside a mean in MARK_INK tones

# Ink and grays, darkest first.
ROW_INK = "#1f2937"  # a selected row's dashed outline: dark, so red cells stand out on it
INK = "#222222"  # text and outlines
MARK_INK = "#444444"  # markers, zero lines, references that cross dense series
NOTE_INK = "#555555"  # notes, tick labels, box edges, a mean
MUTED_INK = "#666666"  # secondary text
RESIDUAL = "#7f7f7f"  # the residual stream
GUIDE = "#888888"  # reference curves: bounds, chance, formulas
FAINT = "#999999"  # faint connectors and the last of many series
PAST = "#9e9e9e"  # what an update replaced
RULE = "#bbbbbb"  # zero lines on light plots
GRID = "#e6e6e6"
EMPTY = "#eeeeee"  # not computed yet, input and output boxes, grid lines
WHITE = "#ffffff"

# Signs: the ends of the diverging scale above.
NEGATIVE = "#2166ac"
POSITIVE = "#b2182b"

# Attention weights' blue-violet (a Viridis stop), the amber that singles out one bar or tile
# beside it, and Streamlit's primary red for the selected cell or panel.
WEIGHT = "#3e4989"
FOCUS = "#f0a202"
FOCUS_EDGE = "#c77c00"
HIGHLIGHT = "#ff4b4b"

# Queries and keys: purple and orange, darker where they are text on a light plot.
QUERY = "#6a51a3"
KEY = "#e08214"
QUERY_TEXT = "#3f2a80"
KEY_TEXT = "#8a4a00"

# The parts of an encoder, after the paper's Figure 1: the architecture diagram fills its boxes
# with PART_FILL, and the per-layer figures draw a part's lines in PART_LINE, its hue darker.
PART_FILL = {
    "io": EMPTY,
    "embed": "#f9d0d0",
    "norm": "#f3efb0",
    "attn": "#fbd9ae",
    "mlp": "#cfe6f5",
    "head": "#d5ebcb",
}
PART_LINE = {"resid": RESIDUAL, "attn": KEY, "mlp": "#2c7fb8"}

# FlashAttention's tiles: not reached, being read, done, the current one.
TILE_STATES = ("#f2f2f2", "#9ecae1", "#b4b4b4", FOCUS)
# A live class's answers: one colour before the reveal, right and wrong after it.
ANSWER = BLUE
ANSWER_RIGHT = BLUISH_GREEN
ANSWER_WRONG = VERMILLION

# Two bars compared (float32 and a lower precision).
PAIR = ("#4c78a8", "#f58518")


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
        r, g, b = lut[round(u * 255)]
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


# Robust color limits: a few outliers (a learned position table's first rows, the massive
# activations of some q/k dimensions) would stretch a symmetric scale until everything else
# is white. When the largest magnitude is more than OUTLIER_RATIO times the ROBUST_PERCENTILE-th
# percentile of the magnitudes, colors stop at that percentile instead (the hover still shows
# the true value, and the colorbar's end labels say "<=" and ">=").
ROBUST_PERCENTILE = 99.0
OUTLIER_RATIO = 1.5
ROBUST_SAMPLE = 1 << 15


@dataclass(frozen=True)
class SymmetricScale:
    """A diverging color range ``-limit .. limit`` centred at 0."""

    limit: float
    clipped: bool  # True: limit is the robust percentile and larger magnitudes saturate
    largest: float  # the largest finite magnitude

    @property
    def rule(self) -> str:
        """The limit in words, for a caption or ``layout.meta`` (translated)."""
        if self.clipped:
            return tr(
                "\u00b1{percentile:g}th percentile of |value| (largest |value| {largest:.3g})",
                percentile=ROBUST_PERCENTILE,
                largest=self.largest,
            )
        return tr("\u00b1largest |value|")

    def colors(self, prefix: str = "z") -> dict[str, Any]:
        """``zmin``/``zmax``/``zmid`` (or ``cmin``... with ``prefix="c"``) and the diverging scale."""
        return {
            f"{prefix}min": -self.limit,
            f"{prefix}max": self.limit,
            f"{prefix}mid": 0.0,
            "colorscale": DIVERGING,
        }

    def colorbar_ticks(self) -> dict[str, Any]:
        """Round ticks inside ``-limit .. limit``, and the ends when no round tick is near them;
        when clipped the ends are ticks reading "\u2264 -limit" and "\u2265 limit"."""
        m = self.limit
        step = nice_step(m / 2.5)
        k = int(np.floor(m / step + 1e-9))
        vals = [i * step for i in range(-k, k + 1)]
        if self.clipped or k * step < 0.75 * m:  # the ends get a label too
            vals = [v for v in vals if abs(v) < 0.75 * m]
            vals = [-m, *vals, m]
        text = [format_value(v) for v in vals]
        if self.clipped:
            text[0] = "\u2264" + text[0]
            text[-1] = "\u2265" + text[-1]
        return {"tickmode": "array", "tickvals": vals, "ticktext": text}

    def meta(self) -> dict[str, Any]:
        """What a page caption needs: the limit, whether colors are clipped, the rule."""
        return {"limit": self.limit, "clipped": self.clipped, "rule": self.rule}


def robust_symmetric(values: npt.ArrayLike) -> SymmetricScale:
    """The symmetric range for ``values`` (NaN and infinities ignored): the largest magnitude,
    or the 99th percentile of the magnitudes when outliers exceed it by more than 1.5x."""
    a = np.abs(np.asarray(values, dtype=np.float32))
    finite = a[np.isfinite(a)]
    if not finite.size:
        return SymmetricScale(1.0, False, 0.0)
    largest = float(finite.max())
    if largest <= 0:
        return SymmetricScale(1.0, False, 0.0)
    # a strided sample is plenty for a percentile and keeps a 512 x 512 matrix cheap
    sample = finite[:: max(1, finite.size // ROBUST_SAMPLE)]
    robust = float(np.percentile(sample, ROBUST_PERCENTILE))
    if robust > 0 and largest > OUTLIER_RATIO * robust:
        return SymmetricScale(robust, True, largest)
    return SymmetricScale(largest, False, largest)


def nice_step(x: float) -> float:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is at least ``x`` (``x`` > 0)."""
    if not x > 0:
        return 1.0
    p = 10.0 ** np.floor(np.log10(x))
    return float(min(f * p for f in (1.0, 2.0, 2.5, 5.0, 10.0) if f * p >= x * (1 - 1e-9)))


def format_value(v: float) -> str:
    """A short label for a color-scale value: 2 significant digits, whole numbers from 10,
    a real minus sign."""
    a = abs(v)
    if a == 0:
        text = "0"
    elif a >= 10:
        text = f"{a:.0f}"
    elif a >= 1:
        text = f"{a:.1f}".rstrip("0").rstrip(".")
    else:
        text = f"{a:.2g}"
        if "e" in text:
            text = f"{a:.1e}"
    return ("\u2212" + text) if v < 0 and text != "0" else text


# --- weight scales: how attention weights become colors ---------------------------------------
# "linear": weights on the fixed 0..1 scale (colored by weight ** PATTERN_GAMMA, above);
# "log": log10 of the weight from LOG_FLOOR to 1, so that a diffuse head's 1/512 differs from
#   its 1/50 (on 0..1 both are the darkest color);
# "row": each row divided by its largest weight, so every query's favourite key is bright
#   however spread the row is (rows are no longer comparable with each other).
WEIGHT_SCALES = ("linear", "log", "row")
LOG_FLOOR = 1e-4  # weights at or below it take the darkest color of the log scale
# What each scale is called in the interface, and on its colorbar (English templates).
WEIGHT_SCALE_NAMES = {"linear": "0 to 1", "log": "log", "row": "per row"}
WEIGHT_SCALE_TITLES = {"linear": "weight", "log": "weight (log scale)", "row": "weight ÷ row's largest"}


def check_weight_scale(scale: str) -> None:
    """ValueError unless ``scale`` is one of `WEIGHT_SCALES`."""
    if scale not in WEIGHT_SCALES:
        raise ValueError(f"weight scale must be one of {WEIGHT_SCALES}, got {scale!r}")


def row_normalized(weights: npt.NDArray[np.floating]) -> npt.NDArray[np.float32]:
    """Each row [..., key_pos] divided by its largest entry (a row of zeros, a fully masked
    query, stays 0)."""
    w = np.asarray(weights, dtype=np.float32)
    top = w.max(axis=-1, keepdims=True) if w.shape[-1] else np.zeros((*w.shape[:-1], 1), np.float32)
    return np.divide(w, top, out=np.zeros_like(w), where=top > 0)


def log_weights(weights: npt.NDArray[np.floating]) -> npt.NDArray[np.float32]:
    """log10 of the weights, from log10(LOG_FLOOR) (0 and anything smaller) to 0 (weight 1)."""
    w = np.asarray(weights, dtype=np.float32)
    return np.log10(np.clip(w, LOG_FLOOR, 1.0)).astype(np.float32)


def weight_colors(scale: str, prefix: str = "z") -> dict[str, Any]:
    """``zmin``/``zmax`` (``cmin``/``cmax`` with ``prefix="c"``) and the colorscale of values
    on ``scale`` (the values: `row_normalized` for "row", `log_weights` for "log")."""
    check_weight_scale(scale)
    if scale == "log":
        return {f"{prefix}min": float(np.log10(LOG_FLOOR)), f"{prefix}max": 0.0, "colorscale": SEQUENTIAL}
    return {f"{prefix}min": 0.0, f"{prefix}max": 1.0, "colorscale": pattern_colorscale()}


def weight_scale_ticks(scale: str) -> dict[str, Any]:
    """Colorbar ticks of ``scale``: true weights (0, 0.25 ... 1; 0.0001 ... 1 on the log scale)
    or shares of the row's largest weight."""
    check_weight_scale(scale)
    if scale == "log":
        exponents = range(int(np.log10(LOG_FLOOR)), 1)
        text = [f"{10.0**e:g}" for e in exponents]
        text[0] = "\u2264" + text[0]
        return {"tickmode": "array", "tickvals": [float(e) for e in exponents], "ticktext": text}
    return {
        "tickmode": "array",
        "tickvals": [0.0, 0.25, 0.5, 0.75, 1.0],
        "ticktext": ["0", "0.25", "0.5", "0.75", "1"],
    }


def weight_scale_title(scale: str) -> str:
    """The colorbar title of ``scale``, translated: the chart says which scale it uses."""
    check_weight_scale(scale)
    return tr(WEIGHT_SCALE_TITLES[scale])
