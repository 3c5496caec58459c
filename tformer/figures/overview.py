"""Every head of every layer at a glance: one PNG mosaic plus one clickable scatter.

Why one image: 72 heatmap subplots take the browser 10-12 s to draw and 13 MB of JSON at 128
tokens; one palette PNG of the same patterns is tens to hundreds of KB and draws as fast as an
empty page. Heatmap cells cannot be clicked from Streamlit (its selection event is empty for
heatmaps), so a scatter of transparent square markers, one per head at each thumbnail centre,
carries ``customdata = [layer, head_index]`` for ``st.plotly_chart(on_select=...)``.

Mosaic layout: layers are rows, heads are columns, ``GAP_PX`` transparent pixels between
thumbnails. Each thumbnail is ``cell_px`` square: inputs longer than that are max-pooled (a
thin diagonal stays visible), shorter ones are repeated pixel by pixel. Colors are the
sequential map of ``weight ** PATTERN_GAMMA`` (the detail heatmap uses the same mapping).
"""

from __future__ import annotations

import base64
import math
import struct
import zlib
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ._common import (
    HIGHLIGHT,
    PATTERN_GAMMA,
    as_float32,
    axis_margin,
    max_pool_2d,
    safe_label,
    sequential_lut,
)

GAP_PX = 2
# Color levels from weight 0 to 1 (palette indices 0..N_LEVELS-1). 64, not 255: the PNG of real
# MiniLM patterns at 512 tokens is 241 KB instead of 372 KB, and the steps are not visible in
# thumbnails (with gamma 0.5 the first step is at weight 0.00025).
N_LEVELS = 64
# Palette index of the transparent gap.
GAP_INDEX = N_LEVELS
# Thumbnails are at most this many pixels a side when cell_px is not given.
MAX_CELL_PX = 96
# Short inputs are repeated up to at least this many pixels a side.
MIN_CELL_PX = 64


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


def _check_patterns(patterns: np.ndarray) -> np.ndarray:
    p = as_float32(patterns, 4, "patterns", "[layer, head_index, query_pos, key_pos]")
    n_layers, n_heads, nq, nk = p.shape
    if nq != nk:
        raise ValueError(
            f"patterns has shape {tuple(p.shape)} [layer, head_index, query_pos, key_pos]: "
            f"query_pos={nq} and key_pos={nk} must agree (self-attention over {nk} tokens)"
        )
    if min(p.shape) == 0:
        raise ValueError(f"patterns has an empty axis: shape {tuple(p.shape)}")
    return p


def resample_max(p: np.ndarray, cell_px: int) -> np.ndarray:
    """[..., n, n] -> [..., cell_px, cell_px]: max-pool in blocks of ceil(n / cell_px), then
    repeat pixels (nearest) up to ``cell_px``; NaN is ignored unless a block is all NaN."""
    pooled = max_pool_2d(p, math.ceil(p.shape[-1] / cell_px))
    m = pooled.shape[-1]
    if m == cell_px:
        return pooled
    idx = (np.arange(cell_px) * m) // cell_px  # nearest source cell of each pixel
    return pooled[..., idx][..., idx, :]


def mosaic_indices(patterns: np.ndarray, cell_px: int, gap_px: int = GAP_PX) -> np.ndarray:
    """Palette indices of the mosaic, uint8 [height_px, width_px] (``GAP_INDEX`` in gaps)."""
    p = _check_patterns(patterns)
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
        struct.pack(">I", len(data))
        + kind
        + data
        + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def encode_png_palette(
    indices: np.ndarray, palette: np.ndarray, alpha: Sequence[int] = ()
) -> bytes:
    """A palette (color type 3, 8 bit) PNG of ``indices`` uint8 [height, width].

    ``palette`` uint8 [n_colors, 3]; ``alpha`` the tRNS alphas of the first entries.
    A row equal to the one above uses filter 2 (Up: all zeros), every other row filter 0
    (None); deflate runs with the Z_RLE strategy. Measured on real MiniLM patterns this is both
    the smallest and the fastest of None/Sub/Up x default/RLE x levels 1-6 (512 tokens:
    239 KB in 4 ms vs 242 KB in 36-56 ms for plain level 6); upsampled short inputs become
    runs and zero rows (16 tokens: 21 KB).
    """
    if indices.dtype != np.uint8 or indices.ndim != 2:
        raise ValueError(
            f"indices must be uint8 [height, width], got {indices.dtype} {indices.shape}"
        )
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


def mosaic_palette() -> tuple[np.ndarray, list[int]]:
    """PLTE (uint8 [N_LEVELS + 1, 3]) and tRNS alphas: the color map, then the transparent gap."""
    palette = np.zeros((N_LEVELS + 1, 3), dtype=np.uint8)
    palette[:N_LEVELS] = sequential_lut(N_LEVELS)
    alpha = [255] * (N_LEVELS + 1)
    alpha[GAP_INDEX] = 0
    return palette, alpha


def mosaic_png(patterns: np.ndarray, cell_px: int | None = None) -> bytes:
    """PNG bytes of the mosaic of ``patterns`` [layer, head_index, query_pos, key_pos].

    Image size: ``layer * (cell_px + GAP_PX) - GAP_PX`` rows by
    ``head_index * (cell_px + GAP_PX) - GAP_PX`` columns.
    """
    p = _check_patterns(patterns)
    cell = default_cell_px(p.shape[-1]) if cell_px is None else int(cell_px)
    palette, alpha = mosaic_palette()
    return encode_png_palette(mosaic_indices(p, cell), palette, alpha)


def model_view(
    patterns: np.ndarray,
    *,
    labels: tuple[Sequence[str], Sequence[str]] | None = None,
    selected: tuple[int, int] | None = None,
    cell_px: int | None = None,
) -> go.Figure:
    """All heads' patterns [layer, head_index, query_pos, key_pos] in one clickable figure.

    ``labels``: optional (row labels per layer, column labels per head); default
    ``"layer l"`` / ``"head h"``. ``selected=(layer, head_index)`` draws an outline around that
    head. Clicking a head selects its scatter point: ``customdata == [layer, head_index]``.

    In Streamlit (measured, 1.67): read the click from ``st.session_state[key].selection``
    *before* building this figure and pass it as ``selected``. Reading only the value that
    ``st.plotly_chart(..., on_select="rerun", key=key)`` returns loses every second click:
    the figure changes (the outline moves), and Streamlit resets the selection of a changed
    figure.
    """
    p = _check_patterns(patterns)
    n_layers, n_heads, n_pos, _ = p.shape
    cell = default_cell_px(n_pos) if cell_px is None else int(cell_px)
    if labels is None:
        row_labels = [f"layer {i}" for i in range(n_layers)]
        col_labels = [f"head {h}" for h in range(n_heads)]
    else:
        row_labels, col_labels = (list(v) for v in labels)
        if len(row_labels) != n_layers or len(col_labels) != n_heads:
            raise ValueError(
                f"labels give {len(row_labels)} layer and {len(col_labels)} head names for "
                f"patterns of shape {tuple(p.shape)} ({n_layers} layers, {n_heads} heads)"
            )
    png = mosaic_png(p, cell)
    pitch = cell + GAP_PX
    width_px = n_heads * pitch - GAP_PX
    height_px = n_layers * pitch - GAP_PX
    centre = (cell - 1) / 2
    col_c = [h * pitch + centre for h in range(n_heads)]
    row_c = [layer * pitch + centre for layer in range(n_layers)]

    # Display size: thumbnails ~64 px on screen whatever cell_px is; the width follows the
    # container and the image keeps its aspect, so this sets the height only.
    disp = 64
    scale = disp / cell
    xs, ys, custom, hover = [], [], [], []
    for layer in range(n_layers):
        for h in range(n_heads):
            xs.append(col_c[h])
            ys.append(row_c[layer])
            custom.append([layer, h])
            hover.append(f"{safe_label(row_labels[layer])}, {safe_label(col_labels[h])}")
    image = {
        "type": "image",
        "name": "patterns",
        "source": "data:image/png;base64," + base64.b64encode(png).decode("ascii"),
        "x0": 0,
        "y0": 0,
        "dx": 1,
        "dy": 1,
        "hoverinfo": "skip",
    }
    points = {
        "type": "scatter",
        "name": "heads",
        "x": xs,
        "y": ys,
        "mode": "markers",
        # Small markers plus hoverdistance=-1 below: a click anywhere picks the nearest
        # thumbnail centre, i.e. the thumbnail under the pointer, at any display scale.
        # (Markers as big as a thumbnail overlap once the image is shrunk to fit its column,
        # and a click then lands on a neighbouring head.)
        "marker": {"symbol": "square", "size": 6, "color": "rgba(0,0,0,0)",
                   "line": {"width": 0}},
        "customdata": custom,
        "hovertext": hover,
        "hovertemplate": "%{hovertext}<extra></extra>",
        "showlegend": False,
        # Selection must not dim anything: the markers are invisible anyway.
        "selected": {"marker": {"opacity": 1}},
        "unselected": {"marker": {"opacity": 1}},
    }
    xaxis = {
        "range": [-0.5, width_px - 0.5],
        "tickmode": "array",
        "tickvals": col_c,
        "ticktext": [safe_label(c) for c in col_labels],
        "side": "top",
        "showgrid": False,
        "zeroline": False,
        "constrain": "domain",
    }
    yaxis = {
        "range": [height_px - 0.5, -0.5],
        "tickmode": "array",
        "tickvals": row_c,
        "ticktext": [safe_label(r) for r in row_labels],
        "showgrid": False,
        "zeroline": False,
        "scaleanchor": "x",
        "constrain": "domain",
    }
    # Room for the labels from the start: an axis that pushes the margin (Streamlit's theme
    # turns automargin on) makes plotly draw the whole figure twice.
    margin = {"l": axis_margin(yaxis, title=False), "r": 10,
              "t": axis_margin(xaxis, title=False), "b": 10}
    layout = {
        "height": int(height_px * scale) + margin["t"] + margin["b"],
        "margin": margin,
        "xaxis": xaxis,
        "yaxis": yaxis,
        "hovermode": "closest",
        "hoverdistance": -1,
        "meta": {"cell_px": cell, "gap_px": GAP_PX, "n_pos": n_pos,
                 "n_layers": n_layers, "n_heads": n_heads},
    }
    fig = go.Figure({"data": [image, points], "layout": layout})
    return fig if selected is None else highlight_head(fig, *selected)


def highlight_head(fig: go.Figure, layer: int, head: int) -> go.Figure:
    """Outline head (layer, head) on a `model_view` figure, in place; returns it.

    Separate from `model_view` so an app can cache the figure (the PNG is the costly part)
    and move the outline on every head change without encoding the image again.
    """
    meta = fig.layout.meta
    if not (0 <= layer < meta["n_layers"] and 0 <= head < meta["n_heads"]):
        raise ValueError(
            f"selected=({layer}, {head}) is outside {meta['n_layers']} layers x {meta['n_heads']} heads"
        )
    pitch = meta["cell_px"] + meta["gap_px"]
    fig.layout.shapes = [
        {
            "type": "rect",
            "xref": "x",
            "yref": "y",
            "x0": head * pitch - 1.5,
            "x1": head * pitch + meta["cell_px"] + 0.5,
            "y0": layer * pitch - 1.5,
            "y1": layer * pitch + meta["cell_px"] + 0.5,
            "line": {"color": HIGHLIGHT, "width": 3},
        }
    ]
    return fig
