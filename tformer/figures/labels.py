"""Token text on a figure: safe labels, token axes, and the margins their tick labels need.

Token axes are *category* axes whose category names are unique ``"pos: token"`` strings, so
the hover shows the token and its position at a cost of ``n`` short strings instead of the
``n * n`` strings (or customdata) a per-cell hover text would need. Tick marks sit at integer
positions (category index) with ``tickvals``/``ticktext``, so repeated tokens never merge and
shapes can be drawn at integer positions.
"""

from __future__ import annotations

import html
import math
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

# Tick labels shown on a token axis at most (every k-th token; hover always has all of them).
MAX_TICKS = 60
# Tick text longer than this is cut (the hover keeps the full token).
MAX_TICK_CHARS = 14


def safe_label(s: object, max_chars: int | None = None) -> str:
    """Return ``s`` as text that plotly shows literally.

    Plotly renders a subset of HTML in every text field (``<b>``, ``<br>``, ``<a href>``) and
    typesets ``$...$`` as LaTeX when MathJax is present. Tokens are user text, so ``&``, ``<``
    and ``>`` become entities and every ``$`` becomes ``&#36;`` (plotly looks for TeX in the raw
    text, before it decodes entities, and its pattern matches a ``$`` pair anywhere, not only a
    leading one). Plotly decodes entities in a single pass, so ``"&lt;"`` typed by a user is
    shown as ``&lt;``, not as ``<``.

    ``max_chars`` cuts the text (before escaping, so an entity is never cut) and marks the cut
    with an ellipsis. Control characters (newline, tab) are shown as visible symbols.
    """
    text = str(s)
    if max_chars is not None and len(text) > max_chars:
        text = text[: max(1, max_chars - 1)] + "\u2026"
    text = text.replace("\n", "\u21b5").replace("\r", "\u21b5").replace("\t", "\u21e5")
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("$", "&#36;")


def token_labels(tokens: Sequence[object]) -> list[str]:
    """Unique hover/category names ``"pos: token"`` (escaped): repeated tokens stay apart."""
    return [f"{i}: {safe_label(t)}" for i, t in enumerate(tokens)]


def block_labels(tokens: Sequence[object], block: int) -> list[str]:
    """Category names for pooled positions: ``"a-b: tok_a ... tok_b"`` (unique).

    ``block`` positions per cell (from :func:`tformer.figures.pooling.pool_plan`); 1 gives
    :func:`token_labels`.
    """
    if block == 1:
        return token_labels(tokens)
    n = len(tokens)
    out = []
    for a in range(0, n, block):
        b = min(a + block, n) - 1
        if a == b:
            out.append(f"{a}: {safe_label(tokens[a])}")
        else:
            out.append(f"{a}\u2013{b}: {safe_label(tokens[a])} \u2026 {safe_label(tokens[b])}")
    return out


def tick_positions(n: int, max_ticks: int = MAX_TICKS) -> npt.NDArray[np.int64]:
    """Every k-th position of ``range(n)`` so that at most ``max_ticks`` labels are shown."""
    if n <= 0:
        return np.zeros(0, dtype=np.int64)
    step = max(1, math.ceil(n / max_ticks))
    return np.arange(0, n, step, dtype=np.int64)


def token_axis(tokens: Sequence[object], block: int = 1, *, max_ticks: int = MAX_TICKS) -> dict[str, Any]:
    """Axis properties for a token axis: category axis, ticks at integer (block) positions."""
    n_cells = math.ceil(len(tokens) / block) if len(tokens) else 0
    ticks = tick_positions(n_cells, max_ticks)
    axis: dict[str, Any] = {
        "type": "category",
        "tickmode": "array",
        "tickvals": ticks.tolist(),
        "ticktext": [safe_label(tokens[int(i) * block], MAX_TICK_CHARS) for i in ticks],
        "showgrid": False,
        "zeroline": False,
        "automargin": True,
    }
    if len(ticks) > 24:  # 60 labels of 10 px fit a 640 px axis
        axis["tickfont"] = {"size": 10}
    return axis


# ---------------------------------------------------------------------------------------------
# Margins that need no second layout pass
# ---------------------------------------------------------------------------------------------
# An axis with automargin (Streamlit's theme turns it on for every cartesian axis) measures its
# drawn tick labels and, when they need more room than layout.margin gives, makes plotly lay
# the whole figure out and draw it a second time. So builders reserve what the labels will
# need, estimated from their text, and keep automargin on only as a safety net for labels wider
# than the estimate.
TICK_FONT_PX = 12  # Streamlit's theme: tick labels at 0.75 rem
# Beyond the tick labels, in Streamlit's theme: axis title + standoff + pad.
AXIS_TITLE_PX = 64
AXIS_NO_TITLE_PX = 30


def text_px(text: str, size: float = TICK_FONT_PX) -> float:
    """Upper estimate of the drawn width of ``text`` (plain, unescaped) at font ``size`` px.

    Proportional sans-serif fonts average ~0.5 em a character; this errs wide (0.62 em, 0.78
    em for capitals and wide letters, 1 em for East Asian wide characters) because too wide
    costs a little whitespace and too narrow costs a second layout pass.
    """
    em = 0.0
    for ch in text:
        if unicodedata.east_asian_width(ch) in "WF":
            em += 1.0
        elif ch.isupper() or ch in "mwMW@%#&":
            em += 0.78
        else:
            em += 0.62
    return em * size


def tick_label_px(axis: Mapping[str, Any]) -> float:
    """Longest tick label of an axis dict (``ticktext``, escaped), in px, at its tick font size."""
    size = (axis.get("tickfont") or {}).get("size", TICK_FONT_PX)
    texts = axis.get("ticktext") or []
    return max((text_px(html.unescape(str(t)), size) for t in texts), default=0.0)


def axis_margin(axis: Mapping[str, Any], *, title: bool = True) -> int:
    """Margin (px) that an axis with these tick labels needs on its side (labels of an x axis
    may be drawn vertically, so their length counts there too)."""
    return math.ceil(tick_label_px(axis) + (AXIS_TITLE_PX if title else AXIS_NO_TITLE_PX))
