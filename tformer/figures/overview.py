"""Every head of every layer at a glance: one PNG mosaic, drawn by the head grid in the app.

Why one image: one heatmap subplot per head (72 for MiniLM) takes the browser seconds to draw
and megabytes of JSON at a hundred tokens; one palette PNG of the same ``pattern`` is a small
fraction of that. Why not a Plotly chart of that image: Streamlit mounts a new Plotly chart
whenever its figure changes and draws it twice (newPlot, then a Plotly.react of a re-themed
copy), which blocks the browser's main thread on every text edit for what is only an image and
a click target. The app's head grid (``tformer/ui/head_grid.py``) shows the same PNG in an
``<img>`` under one button per head, and only swaps the image source when the text changes.

Mosaic layout: layers are rows, heads are columns, ``GAP_PX`` transparent pixels between
thumbnails. Each thumbnail is ``cell_px`` square: inputs longer than that are max-pooled (a
thin diagonal stays visible), shorter ones are repeated pixel by pixel. Colors are the
sequential map of ``weight ** PATTERN_GAMMA`` (the detail heatmap uses the same mapping).
"""

from __future__ import annotations

import base64
import hashlib
import math
import struct
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..i18n import tr
from .checks import Float32Array, as_float32
from .colors import HIGHLIGHT, PATTERN_GAMMA, sequential_lut
from .pooling import max_pool_2d

UInt8Array = npt.NDArray[np.uint8]

GAP_PX = 2
# Color levels from weight 0 to 1 (palette indices 0..N_LEVELS-1). 64, not 255: the PNG of real
# MiniLM patterns at 512 tokens is markedly smaller, and the steps are not visible in
# thumbnails (with gamma 0.5 the first step is at weight (1/63)^2 ~ 0.00025).
N_LEVELS = 64
# Palette index of the transparent gap.
GAP_INDEX = N_LEVELS
# Thumbnails are at most this many pixels a side when cell_px is not given.
MAX_CELL_PX = 96
# Short inputs are repeated up to at least this many pixels a side.
MIN_CELL_PX = 64
# On-screen thumbnail side (CSS px) while the grid fits its column; it shrinks to fit otherwise.
DISPLAY_PX = 128


def default_cell_px(n_pos: int) -> int:
    """Thumbnail side for ``n_pos`` positions: an integer multiple of n_pos in [64, 128) when
    short, n_pos itself up to 96, and n_pos / ceil(n_pos / 96) (48..96) when long."""
    if n_pos <= 0:
        raise ValueError(f"n_pos must be positive, got {n_pos}")
    if n_pos < MIN_CELL_PX:
        return n_pos * math.ceil(MIN_CELL_PX / n_pos)
    if n_pos <= MAX_CELL_PX:
        return n_pos
    return math.ceil(n_pos / math.ceil(n_pos / MAX_CELL_PX))


def _check_pattern(pattern: npt.ArrayLike) -> Float32Array:
    p = as_float32(pattern, 4, "pattern", "[layer, head_index, query_pos, key_pos]")
    _n_layers, _n_heads, nq, nk = p.shape
    if nq != nk:
        raise ValueError(
            f"pattern has shape {tuple(p.shape)} [layer, head_index, query_pos, key_pos]: "
            f"query_pos={nq} and key_pos={nk} must agree (self-attention over {nk} tokens)"
        )
    if min(p.shape) == 0:
        raise ValueError(f"pattern has an empty axis: shape {tuple(p.shape)}")
    return p


def resample_max(p: npt.NDArray[np.floating], cell_px: int) -> npt.NDArray[np.floating]:
    """[..., n, n] -> [..., cell_px, cell_px]: max-pool in blocks of ceil(n / cell_px), then
    repeat pixels (nearest) up to ``cell_px``; NaN is ignored unless a block is all NaN."""
    pooled = max_pool_2d(p, math.ceil(p.shape[-1] / cell_px))
    m = pooled.shape[-1]
    if m == cell_px:
        return pooled
    idx = (np.arange(cell_px) * m) // cell_px  # nearest source cell of each pixel
    return pooled[..., idx][..., idx, :]


def mosaic_indices(pattern: npt.ArrayLike, cell_px: int, gap_px: int = GAP_PX) -> UInt8Array:
    """Palette indices of the mosaic of ``pattern`` [layer, head_index, query_pos, key_pos]:
    uint8 [height_px, width_px] (``GAP_INDEX`` in gaps), thumbnails ``cell_px`` a side."""
    p = _check_pattern(pattern)
    n_layers, n_heads = p.shape[:2]
    if cell_px < 1:
        raise ValueError(f"cell_px must be >= 1, got {cell_px}")
    # NaN (a fully masked query row with plain softmax) is shown as weight 0
    thumbs = np.nan_to_num(resample_max(p, cell_px), nan=0.0)  # [layer, head, cell, cell]
    np.clip(thumbs, 0.0, 1.0, out=thumbs)
    level = np.rint(np.power(thumbs, PATTERN_GAMMA) * (N_LEVELS - 1)).astype(np.uint8)
    pitch = cell_px + gap_px
    # [layer, head, row, col] padded by the gap, then [layer, row, head, col] -> 2-D
    tiles = np.full((n_layers, n_heads, pitch, pitch), GAP_INDEX, dtype=np.uint8)
    tiles[:, :, :cell_px, :cell_px] = level
    out = tiles.transpose(0, 2, 1, 3).reshape(n_layers * pitch, n_heads * pitch)
    return np.ascontiguousarray(out[: n_layers * pitch - gap_px, : n_heads * pitch - gap_px])


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def encode_png_palette(indices: UInt8Array, palette: npt.ArrayLike, alpha: Sequence[int] = ()) -> bytes:
    """A palette (color type 3, 8 bit) PNG of ``indices`` uint8 [height, width].

    ``palette`` uint8 [n_colors, 3]; ``alpha`` the tRNS alphas of the first entries.
    A row equal to the one above uses filter 2 (Up: all zeros), every other row filter 0
    (None); deflate runs with the Z_RLE strategy. On real MiniLM patterns this was both the
    smallest and the fastest of None/Sub/Up x default/RLE x levels 1-6 (about as small as plain
    level 6, many times faster); upsampled short inputs become runs and zero rows.
    """
    if indices.dtype != np.uint8 or indices.ndim != 2:
        raise ValueError(f"indices must be uint8 [height, width], got {indices.dtype} {indices.shape}")
    h, w = indices.shape
    same = np.zeros(h, dtype=bool)
    same[1:] = (indices[1:] == indices[:-1]).all(axis=1)
    raw = np.empty((h, w + 1), dtype=np.uint8)
    raw[:, 0] = np.where(same, 2, 0)  # filter type per row: Up where it gives zeros, else None
    raw[:, 1:] = indices
    raw[same, 1:] = 0
    deflate = zlib.compressobj(6, zlib.DEFLATED, 15, 9, zlib.Z_RLE)
    idat = deflate.compress(raw.tobytes()) + deflate.flush()
    header = struct.pack(">IIBBBBB", w, h, 8, 3, 0, 0, 0)
    chunks = [
        _png_chunk(b"IHDR", header),
        _png_chunk(b"PLTE", np.ascontiguousarray(palette, dtype=np.uint8).tobytes()),
    ]
    if len(alpha):
        chunks.append(_png_chunk(b"tRNS", bytes(alpha)))
    chunks.append(_png_chunk(b"IDAT", idat))
    chunks.append(_png_chunk(b"IEND", b""))
    return b"\x89PNG\r\n\x1a\n" + b"".join(chunks)


def mosaic_palette() -> tuple[UInt8Array, list[int]]:
    """PLTE (uint8 [N_LEVELS + 1, 3]) and tRNS alphas: the color map, then the transparent gap."""
    palette = np.zeros((N_LEVELS + 1, 3), dtype=np.uint8)
    palette[:N_LEVELS] = sequential_lut(N_LEVELS)
    alpha = [255] * (N_LEVELS + 1)
    alpha[GAP_INDEX] = 0
    return palette, alpha


def mosaic_png(pattern: npt.ArrayLike, cell_px: int | None = None) -> bytes:
    """PNG bytes of the mosaic of ``pattern`` [layer, head_index, query_pos, key_pos].

    Image size: ``layer * (cell_px + GAP_PX) - GAP_PX`` rows by
    ``head_index * (cell_px + GAP_PX) - GAP_PX`` columns; ``cell_px`` defaults to
    :func:`default_cell_px` of the number of positions.
    """
    p = _check_pattern(pattern)
    cell = default_cell_px(p.shape[-1]) if cell_px is None else int(cell_px)
    palette, alpha = mosaic_palette()
    return encode_png_palette(mosaic_indices(p, cell), palette, alpha)


def head_grid_data(pattern: npt.ArrayLike, *, cell_px: int | None = None) -> dict[str, Any]:
    """What the head grid draws for ``pattern`` [layer, head_index, query_pos, key_pos].

    A JSON-ready dict: ``png`` (base64 of `mosaic_png`), ``rows`` (layers), ``cols`` (heads),
    ``cell`` and ``gap`` (image pixels per thumbnail and between thumbnails), ``n_pos``,
    ``display_px`` (on-screen thumbnail side before the grid shrinks to fit its column),
    ``highlight`` (outline color of the chosen head) and ``rev`` (a digest of the PNG: the
    browser decodes a new image only when it changes). No selection: add it with
    `grid_selection`, so the PNG can be cached per text while the chosen head moves.
    """
    p = _check_pattern(pattern)
    n_layers, n_heads, n_pos, _ = p.shape
    cell = default_cell_px(n_pos) if cell_px is None else int(cell_px)
    png = mosaic_png(p, cell)
    return {
        "png": base64.b64encode(png).decode("ascii"),
        "rows": int(n_layers),
        "cols": int(n_heads),
        "cell": cell,
        "gap": GAP_PX,
        "n_pos": int(n_pos),
        "display_px": DISPLAY_PX,
        "highlight": HIGHLIGHT,
        "rev": hashlib.blake2b(png, digest_size=8).hexdigest(),
    }


def grid_labels() -> dict[str, str]:
    """The words the head grid draws, in the interface's language: the axis titles (``x``
    over the head columns, ``y`` beside the layer rows), the image's description (``alt``) and
    each cell's name (``cell``, with ``{layer}`` and ``{head}`` filled in by the browser). Kept
    apart from `head_grid_data`, which is cached per text whatever the language."""
    return {
        "x": tr("head"),
        "y": tr("layer"),
        "alt": tr("attention pattern of every head: layers are rows, heads are columns"),
        "cell": tr("layer {layer}, head {head}", layer="{layer}", head="{head}"),
    }


def grid_selection(data: dict[str, Any], layer: int, head: int) -> dict[str, Any]:
    """A copy of `head_grid_data`'s dict with head (layer, head) outlined."""
    if not (0 <= layer < data["rows"] and 0 <= head < data["cols"]):
        raise ValueError(
            f"selected=({layer}, {head}) is outside {data['rows']} layers x {data['cols']} heads"
        )
    return {**data, "selected": [int(layer), int(head)]}
