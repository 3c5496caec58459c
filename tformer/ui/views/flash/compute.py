"""The FlashAttention page's helpers: the whole tiled loop cached per head, text and tile sizes,
the step bar and the tile pickers, and the wording of sizes and labels."""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

from ....analysis.masks import causal_mask
from ....efficiency.flash import MAX_AUTO_STEPS, TILE_SIDES, Footprint, auto_tile, flash_attention
from ....i18n import tr
from ...binding import bind
from ...stepper import step_slider

BLOCKS = (0, *TILE_SIDES)  # 0: sized for the text (auto_tile)
NUMBERS = 16  # tiles and outputs up to this many rows and columns show every number


@st.cache_data(max_entries=16, show_spinner=False)
def full_run(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool, block_q: int, block_k: int
) -> tuple[np.ndarray, Footprint]:
    """The whole loop (no records kept), once per head, text and tile sizes."""
    attn_mask = causal_mask(len(q)) if causal else None
    flash = flash_attention(q, k, v, block_q=block_q, block_k=block_k, attn_mask=attn_mask, record=False)
    return flash.out, flash.footprint


def size_text(nbytes: int) -> str:
    for unit, scale in (("MB", 2**20), ("KB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"


def step_bar(n_steps: int) -> int:
    """Back / a slider / next over the loop's steps; the step shown, counted from 1."""
    return step_slider(
        "flash.step", n_steps, single="One tile holds the whole text: the loop has a single step."
    )


def without_docstring(source: str) -> str:
    """A function's source with its docstring cut (the formulas are shown above the loop)."""
    lines = source.splitlines(keepends=True)
    first = next((i for i, line in enumerate(lines) if line.strip().startswith(('r"""', '"""'))), None)
    if first is None:
        return source
    rest = lines[first].split('"""', 1)[1]
    last = first if '"""' in rest else next(i for i in range(first + 1, len(lines)) if '"""' in lines[i])
    return "".join(lines[:first] + lines[last + 1 :])


def tile_picker(column: Any, label: str, key: str, n: int) -> int:
    """A tile side: "auto" (sized for the text's length, the default) or one of TILE_SIDES."""
    auto = auto_tile(n)
    names = {b: str(b) for b in TILE_SIDES} | {0: tr("auto: {side}", side=auto)}
    picked = column.selectbox(
        tr(label),
        BLOCKS,
        format_func=names.__getitem__,
        help=tr(
            "auto: the smallest tiles (4 rows or more) with which this text takes at most {steps} "
            "steps; {side} rows for these {n} tokens. Smaller tiles: more steps, each easier to read.",
            steps=MAX_AUTO_STEPS,
            side=auto,
            n=n,
        ),
        **bind(key, BLOCKS),
    )
    return auto if not picked else int(picked)


def labels_of(labels: list[str], lo: int, hi: int) -> list[str]:
    return [f"{p} {labels[p]}" for p in range(lo, hi)]
