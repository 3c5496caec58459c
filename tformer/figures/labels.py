"""Token text on a figure: safe labels, token axes planned for the pixels they get, label margins.

Token axes are *category* axes whose category names are unique ``"pos: token"`` strings, so
the hover shows the token and its position at a cost of ``n`` short strings instead of the
``n * n`` strings (or customdata) a per-cell hover text would need. Tick marks sit at integer
positions (category index) with ``tickvals``/``ticktext``, so repeated tokens never merge and
shapes can be drawn at integer positions.

How a token axis is labelled (:func:`token_axes`, one plan for every token axis of a figure):

- up to :data:`LABEL_ALL` tokens every token is labelled; beyond that every ``step``-th
  position (a "nice" step: 2, 4, 5, 8, 10, 16, ...), the same step on every token axis of the
  figure, the smallest one whose labels fit the pixels the axis has. The hover names every
  position either way.
- tick fonts are 14, 13 or 12 px (never smaller: the figures are projected), the largest that
  fits.
- x labels are written flat (horizontal) when they fit side by side, else flat in two rows
  (every other label one line lower; up to four rows for Chinese), else rotated by -90 degrees
  (reading upwards), in two staggered columns when even that is too tight. Labels that are
  mostly Chinese, Japanese or Korean characters prefer flat rows over rotation, so the
  characters stay upright.
- y labels are always flat; when rows are tighter than a line of text, every other label
  moves one column further out.

Staggering uses plain text, no extra axes: a leading ``<br>`` moves a flat x label one line
down; trailing en spaces (U+2002, half an em in the usual fonts) move a rotated x label or a y
label away from the axis.
"""

from __future__ import annotations

import functools
import html
import math
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Up to this many tokens every one is labelled; above it every step-th one (hover has all).
LABEL_ALL = 64
# Tick text longer than this is cut (the hover keeps the full token).
MAX_TICK_CHARS = 10
# Tick label sizes tried, largest first; 12 px is the smallest that reads when projected.
TICK_FONTS = (14, 13, 12)
TICK_FONT_PX = TICK_FONTS[-1]
AXIS_TITLE_FONT_PX = 15
TITLE_STANDOFF_PX = 6
# An axis title's band: standoff + one line of the title font + a little air.
AXIS_TITLE_PX = TITLE_STANDOFF_PX + math.ceil(AXIS_TITLE_FONT_PX * 1.3) + 2
# Between the axis line and its tick labels (plotly's tick label padding, no tick marks).
TICK_PAD_PX = 6
# Steps tried beyond LABEL_ALL tokens: every k-th position is labelled.
NICE_STEPS = (2, 4, 5, 8, 10, 16, 20, 25, 32, 40, 50, 64, 80, 100, 128, 200, 256, 500, 512, 1000)

# With ``edges=False`` (panels side by side) an end label may reach this far past its axis's
# end: less than half the gap between two panels.
EDGE_OVERHANG_PX = 12
# Thinned labels (beyond LABEL_ALL tokens) get this much more room than the tightest fit:
# with every token no longer shown, a calm axis is worth more than a few more labels.
THIN_ROOM = 1.5
EN_SPACE = "\u2002"  # half an em wide; plotly keeps it (no whitespace collapsing)
# Minimum distance between neighbouring labels, in em of the tick font.
_GAP_EM = 0.35  # flat labels side by side
_ROTATED_EM = 0.9  # rotated labels: one line of Latin text (ascender to descender)
_ROW_EM = {False: 0.8, True: 1.0}  # y labels, without / with wide (CJK) characters
_LINE_EM = 1.3  # plotly's line height for <br>-separated lines


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
    return _escape(_visible(str(s), max_chars))


def _visible(text: str, max_chars: int | None = None) -> str:
    if max_chars is not None and len(text) > max_chars:
        text = text[: max(1, max_chars - 1)] + "\u2026"
    return text.replace("\n", "\u21b5").replace("\r", "\u21b5").replace("\t", "\u21e5")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("$", "&#36;")


def token_labels(labels: Sequence[object]) -> list[str]:
    """Unique hover/category names ``"pos: token"`` (escaped): repeated tokens stay apart."""
    return [f"{i}: {safe_label(t)}" for i, t in enumerate(labels)]


def block_labels(labels: Sequence[object], block: int) -> list[str]:
    """Category names for pooled positions: ``"a-b: tok_a ... tok_b"`` (unique).

    ``block`` positions per cell (from :func:`tformer.figures.pooling.pool_plan`); 1 gives
    :func:`token_labels`.
    """
    if block == 1:
        return token_labels(labels)
    n = len(labels)
    out = []
    for a in range(0, n, block):
        b = min(a + block, n) - 1
        if a == b:
            out.append(f"{a}: {safe_label(labels[a])}")
        else:
            out.append(f"{a}\u2013{b}: {safe_label(labels[a])} \u2026 {safe_label(labels[b])}")
    return out


# ---------------------------------------------------------------------------------------------
# Text widths (no browser: estimated from the characters)
# ---------------------------------------------------------------------------------------------
def is_wide(ch: str) -> bool:
    """East Asian wide or full-width character (CJK ideographs, kana, hangul, full-width forms)."""
    return unicodedata.east_asian_width(ch) in "WF"


@functools.lru_cache(maxsize=4096)
def _char_em(ch: str) -> float:
    if is_wide(ch):
        return 1.0
    if ch == EN_SPACE:
        return 0.5
    if ch.isupper() or ch in "mwMW@%#&":
        return 0.78
    return 0.62


@functools.lru_cache(maxsize=8192)
def text_px(text: str, size: float = TICK_FONT_PX) -> float:
    """Upper estimate of the drawn width of ``text`` (plain, unescaped) at font ``size`` px.

    Proportional sans-serif fonts average ~0.5 em a character; this errs wide (0.62 em, 0.78
    em for capitals and wide letters, 1 em for East Asian wide characters, 0.5 em for an en
    space) because too wide costs a little whitespace and too narrow costs a second layout pass.
    """
    return sum(_char_em(ch) for ch in text) * size


def tick_label_px(axis: Mapping[str, Any]) -> float:
    """Longest line of the tick labels of an axis dict (``ticktext``, escaped, ``<br>`` lines),
    in px, at its tick font size."""
    size = (axis.get("tickfont") or {}).get("size", TICK_FONT_PX)
    texts = axis.get("ticktext") or []
    return max(
        (text_px(html.unescape(line), size) for t in texts for line in str(t).split("<br>")),
        default=0.0,
    )


def numeric_axis_margin(longest: str, *, title: bool = True, font: int = TICK_FONT_PX) -> int:
    """Margin for plain numeric ticks: beside a y axis (``longest`` label wide) or under an x
    axis (one line; pass the same ``longest``, its width does not matter there)."""
    return math.ceil(TICK_PAD_PX + text_px(longest, font) + (AXIS_TITLE_PX if title else 4))


def x_numeric_margin(*, title: bool = True, font: int = TICK_FONT_PX) -> int:
    """Bottom margin of an x axis with one line of flat numeric tick labels."""
    return math.ceil(TICK_PAD_PX + _LINE_EM * font + (AXIS_TITLE_PX if title else 4))


def axis_title(text: str) -> dict[str, Any]:
    """An axis title in the shared size, close to its tick labels."""
    return {"text": text, "font": {"size": AXIS_TITLE_FONT_PX}, "standoff": TITLE_STANDOFF_PX}


# ---------------------------------------------------------------------------------------------
# Token axes planned for their pixels
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TokenAxis:
    """A planned token axis: plotly properties and the margin its labels and title need."""

    props: dict[str, Any]  # plotly axis properties (category axis, tickvals/ticktext, font...)
    margin: int  # px on the axis's side (below an x axis, left of a y axis)
    step: int  # every step-th position is labelled
    font: int  # tick font size, px
    angle: int  # tick angle: 0 (flat) or -90
    rows: int  # flat x labels: lines used; rotated x or y labels: columns used (1 or 2)


@dataclass(frozen=True)
class _Layout:
    angle: int
    rows: int
    font: int


def _wide_share(texts: Sequence[str]) -> float:
    if not texts:
        return 0.0
    return sum(_has_wide(t) for t in texts) / len(texts)


@functools.lru_cache(maxsize=8192)
def _has_wide(text: str) -> bool:
    return any(is_wide(c) for c in text)


def prefers_upright(texts: Sequence[str]) -> bool:
    """True when at least half of the labels hold CJK (wide) characters: keep them flat."""
    return _wide_share(texts) >= 0.5


@dataclass(frozen=True)
class _Flat:
    """Flat x labels: how far each reaches left and right of its tick, and how far the first
    and last ones move (px, + = right) to make room."""

    left: list[float]
    right: list[float]
    first_shift: float
    last_shift: float


def _flat_extents(
    widths: Sequence[float], font: int, rows: int, pitch: float, ends: tuple[float, float], edges: bool
) -> _Flat:
    """Extents of flat labels ``pitch`` px apart, in ``rows`` staggered rows.

    ``edges=True``: the first label may move left and the last one right (into the margin,
    where nothing else is) until it ends or starts at its tick, so a long ``[CLS]`` does not
    force a second row of labels. ``edges=False`` (panels side by side, whose end labels would
    meet): an end label may reach past the axis's end (``ends``: px from the end ticks to the
    axis's ends) by :data:`EDGE_OVERHANG_PX` at most, and moves inwards when it would reach
    further.
    """
    half = [w / 2 for w in widths]
    first = last = 0.0
    n = len(widths)
    if n > 1:
        gap, room = _GAP_EM * font, rows * pitch
        if edges and n > rows:  # the neighbour in the same row is `rows` labels away
            first = -min(half[0], max(0.0, half[0] + half[rows] + gap - room))
            last = min(half[-1], max(0.0, half[-1] + half[-1 - rows] + gap - room))
        elif not edges:
            first = max(0.0, half[0] - ends[0] - EDGE_OVERHANG_PX)
            last = -max(0.0, half[-1] - ends[1] - EDGE_OVERHANG_PX)
    left, right = list(half), list(half)
    if n > 1:
        left[0], right[0] = half[0] - first, half[0] + first
        left[-1], right[-1] = half[-1] - last, half[-1] + last
    return _Flat(left, right, first, last)


def _flat_fits(flat: _Flat, rows: int, room: float, gap: float) -> bool:
    """Labels ``rows`` apart in the shown order (the same row) never overlap in ``room`` px."""
    n = len(flat.left)
    return all(flat.right[i] + flat.left[i + rows] + gap <= room for i in range(n - rows))


def _fits(
    texts: Sequence[str],
    pitch: float,
    side: str,
    angle: int,
    rows: int,
    font: int,
    edges: bool = True,
    ends: tuple[float, float] = (0.0, 0.0),
) -> bool:
    """Whether labels ``pitch`` px apart fit in this layout (``edges``, ``ends``: see
    :func:`_flat_extents`)."""
    if side == "x" and angle == 0:
        widths = [text_px(t, font) for t in texts]
        flat = _flat_extents(widths, font, rows, pitch, ends, edges)
        return _flat_fits(flat, rows, rows * pitch, _GAP_EM * font)
    em = _ROTATED_EM if side == "x" else _ROW_EM[_wide_share(texts) > 0]
    return rows * pitch >= em * font


def _shift_text(text: str, shift: float, font: int) -> str:
    """``text`` moved ``shift`` px (+ = right) by en spaces on the other side: plotly centres
    each label on its tick, so n spaces move the visible text by n quarter ems."""
    if abs(shift) < 0.5:
        return text
    count = math.ceil(abs(shift) / (0.25 * font))
    return EN_SPACE * count + text if shift > 0 else text + EN_SPACE * count


def _plan(
    texts: Sequence[str], pitch: float, side: str, edges: bool = True, ends: tuple[float, float] = (0.0, 0.0)
) -> _Layout:
    """The most readable layout that fits: preferred arrangement first, then the largest font."""
    arrangements = _x_layouts(prefers_upright(texts)) if side == "x" else [(0, 1), (0, 2)]
    for angle, rows in arrangements:
        for font in TICK_FONTS:
            if _fits(texts, pitch, side, angle, rows, font, edges, ends):
                return _Layout(angle, rows, font)
    angle, rows = arrangements[-1]
    return _Layout(angle, rows, TICK_FONT_PX)


def _basic_fit(
    texts: Sequence[str],
    pitch: float,
    side: str,
    edges: bool = True,
    ends: tuple[float, float] = (0.0, 0.0),
    upright_only: bool = True,
) -> bool:
    """Fits at the smallest font without staggered columns (what thinning aims for); CJK
    labels must stay flat (in up to two rows) unless ``upright_only`` is False."""
    if side == "y":
        return _fits(texts, pitch, "y", 0, 1, TICK_FONT_PX)
    upright = prefers_upright(texts)
    flat_rows = 2 if upright else 1
    flat = any(_fits(texts, pitch, "x", 0, r, TICK_FONT_PX, edges, ends) for r in range(1, flat_rows + 1))
    rotated_ok = not (upright and upright_only)
    return flat or (rotated_ok and _fits(texts, pitch, "x", -90, 1, TICK_FONT_PX))


def _x_layouts(upright: bool) -> list[tuple[int, int]]:
    """(tick angle, rows or columns) to try for x labels, most readable first."""
    flat = [(0, 1), (0, 2), (0, 3), (0, 4)] if upright else [(0, 1), (0, 2)]
    return [*flat, (-90, 1), (-90, 2)]


def _stagger_columns(texts: Sequence[str], font: int) -> list[str]:
    """Every other label padded with en spaces so that it sits clear of its two neighbours,
    one column further from the axis."""
    widths = [text_px(t, font) for t in texts]
    out = list(texts)
    for i in range(1, len(texts), 2):
        beside = max(widths[i - 1], widths[i + 1] if i + 1 < len(texts) else 0.0)
        out[i] = texts[i] + EN_SPACE * math.ceil((beside + _GAP_EM * font) / (0.5 * font))
    return out


def _ends(n: int, positions: Sequence[int], block: int, axis_px: float) -> tuple[float, float]:
    """px from the first and last labelled tick to the axis's ends."""
    cells = max(1, math.ceil(n / block))
    cell = axis_px / cells
    if not positions:
        return (0.0, 0.0)
    return (cell * (positions[0] // block + 0.5), axis_px - cell * (positions[-1] // block + 0.5))


def tick_step(
    labels: Sequence[object],
    axes_px: Sequence[tuple[str, float]],
    *,
    block: int = 1,
    label_all: int = LABEL_ALL,
    edges: bool = True,
    max_chars: int = MAX_TICK_CHARS,
) -> int:
    """Every how many positions a label goes, the same for all of a figure's token axes.

    ``axes_px``: ``("x" | "y", length in px)`` of each token axis. Up to ``label_all`` tokens
    the step is 1 (``block`` when cells pool positions); beyond, the smallest of
    :data:`NICE_STEPS` (times ``block`` when cells pool positions) whose labels fit every axis
    at 12 px.
    """
    n = len(labels)
    if n <= label_all:
        return max(1, block)
    # steps in whole cells when positions are pooled: every cell, every 2nd cell, ...; only the
    # first position of a cell can then carry a label (1/block of the texts to make)
    steps = NICE_STEPS if block == 1 else tuple(block * s for s in (1, *NICE_STEPS))
    texts = [_visible(str(t), max_chars) if i % block == 0 else "" for i, t in enumerate(labels)]
    for upright_only in (True, False):  # rotate CJK labels only if nothing else fits
        for step in steps:
            shown = texts[::step]
            positions = range(0, n, step)
            if all(
                _basic_fit(
                    shown,
                    length * step / n / THIN_ROOM,
                    side,
                    edges,
                    _ends(n, positions, block, length),
                    upright_only,
                )
                for side, length in axes_px
            ):
                return step
    return steps[-1]


def token_axis(
    labels: Sequence[object],
    axis_px: float,
    side: str,
    *,
    step: int = 1,
    block: int = 1,
    title: str | None = None,
    max_margin: float | None = None,
    edges: bool = True,
    max_chars: int = MAX_TICK_CHARS,
) -> TokenAxis:
    """A token axis ``axis_px`` long, labelling every ``step``-th position (see the module
    docstring). Category axis over ``ceil(n / block)`` cells; ``title`` in plain words.

    ``max_margin``: px the labels and title may take at most (a y axis beside a plot that must
    keep its size); over it the tick font goes down to 12 px, then y labels go back to one
    column however tight, then labels are cut to 8 and 6 characters. ``edges=False`` keeps flat x labels within the axis's ends (panels side by
    side, whose end labels would meet). ``max_chars``: labels longer than this are cut (default
    :data:`MAX_TICK_CHARS`; a zoom window's "512 token" labels need more).
    """
    if side not in ("x", "y"):
        raise ValueError(f"side must be 'x' or 'y', got {side!r}")
    if step % block:
        raise ValueError(f"step={step} must be a multiple of block={block}")
    n = len(labels)
    positions = list(range(0, n, step))
    pitch = axis_px * step / max(n, 1)
    chars = max_chars
    texts = [_visible(str(labels[p]), chars) for p in positions]
    ends = _ends(n, positions, block, axis_px)
    lay = _plan(texts, pitch, side, edges, ends)
    ticktext, labels_px = _draw(texts, lay, side, pitch, edges, ends)
    title_px = AXIS_TITLE_PX if title is not None else 4
    # Over budget (a y axis beside a plot that must keep its size): smaller fonts, then one
    # column of labels however tight, then shorter labels.
    fallbacks = [(max_chars, lay.rows, f) for f in TICK_FONTS if f < lay.font]
    if side == "y" and lay.rows > 1:
        fallbacks.append((max_chars, 1, TICK_FONT_PX))
    fallbacks += [
        (c, 1 if side == "y" else lay.rows, TICK_FONT_PX) for c in (MAX_TICK_CHARS, 8, 6) if c < max_chars
    ]
    for chars, rows, font in fallbacks:
        if max_margin is None or labels_px + title_px <= max_margin:
            break
        texts = [_visible(str(labels[p]), chars) for p in positions]
        lay = _Layout(lay.angle, rows, font)
        ticktext, labels_px = _draw(texts, lay, side, pitch, edges, ends)
    props: dict[str, Any] = {
        "type": "category",
        "tickmode": "array",
        "tickvals": [p // block for p in positions],
        "ticktext": ticktext,
        "tickangle": lay.angle if side == "x" else 0,
        "tickfont": {"size": lay.font},
        "ticks": "",
        "showgrid": False,
        "zeroline": False,
        "automargin": True,  # a safety net only: the margin below already fits the labels
    }
    if title is not None:
        props["title"] = axis_title(title)
    return TokenAxis(props, labels_px + title_px, step, lay.font, lay.angle, lay.rows)


def _draw(
    texts: list[str], lay: _Layout, side: str, pitch: float, edges: bool, ends: tuple[float, float]
) -> tuple[list[str], int]:
    """Tick texts (escaped, staggered as planned) and the px they take away from the axis."""
    if side == "x" and lay.angle == 0:
        widths = [text_px(t, lay.font) for t in texts]
        flat = _flat_extents(widths, lay.font, lay.rows, pitch, ends, edges)
        shifted = list(texts)
        if len(shifted) > 1:
            shifted[0] = _shift_text(shifted[0], flat.first_shift, lay.font)
            shifted[-1] = _shift_text(shifted[-1], flat.last_shift, lay.font)
        ticktext = [("<br>" * (i % lay.rows)) + _escape(t) for i, t in enumerate(shifted)]
        return ticktext, math.ceil(TICK_PAD_PX + lay.rows * _LINE_EM * lay.font)
    plain = _stagger_columns(texts, lay.font) if lay.rows == 2 else list(texts)
    widest = max((text_px(t, lay.font) for t in plain), default=0.0)
    return [_escape(t) for t in plain], math.ceil(TICK_PAD_PX + widest)


def token_axes(
    labels: Sequence[object],
    x_px: float,
    y_px: float,
    *,
    block: int = 1,
    x_title: str | None = None,
    y_title: str | None = None,
    y_max_margin: float | None = None,
) -> tuple[TokenAxis, TokenAxis]:
    """The x and y token axes of a [query_pos, key_pos] heatmap: one step for both."""
    step = tick_step(labels, [("x", x_px), ("y", y_px)], block=block)
    return (
        token_axis(labels, x_px, "x", step=step, block=block, title=x_title),
        token_axis(labels, y_px, "y", step=step, block=block, title=y_title, max_margin=y_max_margin),
    )
