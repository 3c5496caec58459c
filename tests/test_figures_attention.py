"""Figure builders for attention: data, axes, escaping, payload and shape errors (no browser)."""

from __future__ import annotations

import base64
import itertools
import json
import re
import struct
import zlib

import numpy as np
import pytest

from tformer.figures import (
    ablation_effect_figure,
    attention_heatmap,
    grid_selection,
    head_grid_data,
    head_metrics_figure,
    head_output_heatmap,
    head_similarity_heatmap,
    heads_side_by_side,
    mosaic_png,
    qkv_figure,
    safe_label,
)
from tformer.figures.labels import LABEL_ALL, text_px, tick_label_px
from tformer.figures.overview import GAP_PX, N_LEVELS, default_cell_px, mosaic_palette
from tformer.figures.pooling import max_pool_2d

HOSTILE = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "$x$", "a&b", "<b>B</b>"]


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------
def softmax_pattern(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Softmax of random scores plus a strong diagonal: [..., n, n] float32 rows summing to 1."""
    rng = np.random.default_rng(seed)
    n = shape[-1]
    s = rng.normal(size=shape) + 6.0 * np.eye(n)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)).astype(np.float32)


def decode_png_rgba(png: bytes) -> np.ndarray:
    """Minimal decoder for 8-bit palette PNGs using filters 0 and 2: uint8 [h, w, 4]."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, palette, alpha = 8, b"", None, b""
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, data = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", png[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + data) & 0xFFFFFFFF, kind
        if kind == b"IHDR":
            w, h, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", data)
            assert (depth, color, interlace) == (8, 3, 0)
        elif kind == b"PLTE":
            palette = np.frombuffer(data, np.uint8).reshape(-1, 3)
        elif kind == b"tRNS":
            alpha = data
        elif kind == b"IDAT":
            idat += data
        pos += 12 + length
    raw = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, w + 1)
    rows = np.zeros((h, w), np.uint8)
    for y in range(h):
        f = raw[y, 0]
        if f == 0:
            rows[y] = raw[y, 1:]
        elif f == 2:
            prev = rows[y - 1] if y else np.zeros(w, np.uint8)
            rows[y] = (raw[y, 1:].astype(np.int32) + prev) % 256
        else:
            raise AssertionError(f"unexpected filter {f}")
    a = np.full(len(palette), 255, np.uint8)
    a[: len(alpha)] = np.frombuffer(alpha, np.uint8)
    return np.concatenate([palette[rows], a[rows][..., None]], axis=-1)


def png_of(grid: dict) -> bytes:
    return base64.b64decode(grid["png"], validate=True)


def walk_numbers(obj, path=""):
    """Yield (path, length) of every plain JSON list of numbers (not binary encoded)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from walk_numbers(v, f"{path}.{k}")
    elif isinstance(obj, list):
        flat = obj
        while flat and isinstance(flat[0], list):
            flat = [x for row in flat for x in row]
        if flat and all(isinstance(x, (int, float)) for x in flat):
            yield path, len(flat)
        for i, v in enumerate(obj):
            if isinstance(v, (dict, list)):
                yield from walk_numbers(v, f"{path}[{i}]")


def bdata_dtypes(obj):
    if isinstance(obj, dict):
        if "bdata" in obj:
            yield obj["dtype"]
        for v in obj.values():
            yield from bdata_dtypes(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from bdata_dtypes(v)


TOKENS = ["[CLS]", "the", "cat", "sat", "on", "the", "mat", "[SEP]"]


# --------------------------------------------------------------------------------------------
# safe_label
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", HOSTILE)
def test_safe_label_leaves_no_markup(text):
    out = safe_label(text)
    assert "<" not in out
    assert ">" not in out
    assert "$" not in out
    assert safe_label(text) == out  # deterministic


def test_safe_label_exact_forms():
    assert safe_label("<script>") == "&lt;script&gt;"
    assert safe_label("$x$") == "&#36;x&#36;"
    # an entity typed by a user is shown literally, not decoded
    assert safe_label("&lt;") == "&amp;lt;"
    assert safe_label("a\nb") == "a\u21b5b"
    assert safe_label("abcdefgh", max_chars=4) == "abc\u2026"
    # cutting happens before escaping: an entity is never cut in half
    assert safe_label("<<<<<<", max_chars=3) == "&lt;&lt;\u2026"


def test_hostile_tokens_are_escaped_in_every_text_of_the_figure():
    tokens = [*HOSTILE, "ok"]
    n = len(tokens)
    fig = attention_heatmap(softmax_pattern((n, n)), tokens)
    text = fig.to_json()
    for bad in ("<script", "<img", "$x$", "<b>"):
        assert bad not in text
    heat = fig.data[-1]
    assert heat.x[0] == "0: &lt;script&gt;alert(1)&lt;/script&gt;"
    assert fig.layout.xaxis.ticktext[2] == "&#36;x&#36;"


# --------------------------------------------------------------------------------------------
# attention_heatmap
# --------------------------------------------------------------------------------------------
def test_pattern_heatmap_data_axes_and_scale():
    n = len(TOKENS)
    p = softmax_pattern((n, n))
    fig = attention_heatmap(p, TOKENS, title="layer 0 head 1")
    heat = fig.data[-1]
    assert heat.z.dtype == np.float32
    np.testing.assert_array_equal(heat.z, p)
    assert (heat.zmin, heat.zmax) == (0.0, 1.0)
    # repeated "the" at 1 and 5 stays two distinct categories
    assert heat.x[1] == "1: the"
    assert heat.x[5] == "5: the"
    assert len(set(heat.x)) == n
    assert list(heat.x) == list(heat.y)
    ax, ay = fig.layout.xaxis, fig.layout.yaxis
    assert list(ax.tickvals) == list(range(n))
    assert list(ax.ticktext) == TOKENS
    assert ay.autorange == "reversed"
    assert ay.scaleanchor == "x"
    assert ax.title.text == "key token (column)"
    assert ay.title.text == "query token (row)"
    assert "query token %{y}" in heat.hovertemplate
    assert "%{z:.4g}" in heat.hovertemplate


def test_many_tokens_thin_the_ticks_but_keep_every_hover_label():
    n = 200
    tokens = [f"t{i}" for i in range(n)]
    fig = attention_heatmap(softmax_pattern((n, n)), tokens)
    ticks = list(fig.layout.xaxis.tickvals)
    assert n > LABEL_ALL
    assert len(ticks) < n
    assert ticks[0] == 0
    step = fig.layout.meta["tick_step"]
    assert step >= 2
    assert ticks == list(range(0, n, step))
    shown = [t.replace("<br>", "").strip("\u2002") for t in fig.layout.xaxis.ticktext[:2]]
    assert shown == ["t0", f"t{step}"]
    assert len(fig.data[-1].x) == n


def test_attn_scores_masked_entries_are_gaps_with_a_masked_hover_layer():
    n = 5
    rng = np.random.default_rng(1)
    s = rng.normal(size=(n, n)).astype(np.float32)
    s[0, 0] = -7.5  # largest magnitude
    s[np.triu_indices(n, 1)] = -np.inf
    fig = attention_heatmap(s, TOKENS[:n], kind="attn_scores")
    assert fig.layout.meta["kind"] == "attn_scores"
    assert len(fig.data) == 2
    mask_layer, heat = fig.data
    assert np.isnan(heat.z[0, 1])
    assert heat.z[1, 0] == s[1, 0]
    assert np.array_equal(np.isnan(heat.z), np.triu(np.ones((n, n), bool), 1))
    assert heat.zmin == -7.5
    assert heat.zmax == 7.5
    assert heat.zmid == 0.0
    assert heat.hoverongaps is False
    assert mask_layer.z.dtype == np.uint8
    np.testing.assert_array_equal(mask_layer.z, np.triu(np.ones((n, n), np.uint8), 1))
    assert "masked" in mask_layer.hovertemplate


def test_attn_scores_without_mask_have_one_trace():
    s = np.array([[1.0, -2.0], [0.5, 0.0]], np.float32)
    fig = attention_heatmap(s, ["a", "b"], kind="attn_scores")
    assert len(fig.data) == 1
    assert fig.data[0].zmax == 2.0


def test_long_input_is_max_pooled_and_keeps_the_diagonal():
    n = 300
    p = np.eye(n, dtype=np.float32) * 0.9
    fig = attention_heatmap(p, [str(i) for i in range(n)])
    z = fig.data[-1].z
    assert z.shape == (150, 150)
    assert fig.layout.meta["block"] == 2
    np.testing.assert_allclose(np.diag(z), 0.9)  # a 1-cell diagonal is still at full strength
    assert z[0, 1] == 0.0
    assert fig.data[-1].x[1] == "2\u20133: 2 \u2026 3"
    assert "max weight" in fig.data[-1].hovertemplate
    full = attention_heatmap(p, [str(i) for i in range(n)], max_side=None)
    assert full.data[-1].z.shape == (n, n)


def test_max_pool_2d_matches_a_reference():
    rng = np.random.default_rng(2)
    a = rng.random((2, 7, 7), dtype=np.float32)
    a[0, 0, 0] = np.nan  # ignored unless a whole block is NaN
    out = max_pool_2d(a, 3)
    assert out.shape == (2, 3, 3)
    for b in range(2):
        for i in range(3):
            for j in range(3):
                assert out[b, i, j] == np.nanmax(a[b, 3 * i : 3 * i + 3, 3 * j : 3 * j + 3])


@pytest.mark.parametrize(
    ("matrix", "tokens", "needle"),
    [
        (np.zeros((5, 6)), ["a"] * 5, "(5, 6)"),
        (np.zeros((4, 4)), ["a"] * 5, "5 tokens"),
        (np.zeros(5), ["a"] * 5, "2-D"),
    ],
)
def test_attention_heatmap_shape_errors(matrix, tokens, needle):
    with pytest.raises(ValueError, match=re.escape(needle)):
        attention_heatmap(matrix, tokens)


@pytest.mark.parametrize("kind", ["weights", "scores"])
def test_unknown_kind_is_rejected(kind):
    with pytest.raises(ValueError, match="kind must be 'pattern' or 'attn_scores'"):
        attention_heatmap(np.zeros((2, 2)), ["a", "b"], kind=kind)
    with pytest.raises(ValueError, match="kind must be 'pattern' or 'attn_scores'"):
        qkv_figure(
            np.zeros((2, 1)), np.zeros((2, 1)), np.zeros((2, 1)), np.zeros((2, 2)), ["a", "b"], kind=kind
        )


def test_payload_at_512_tokens_stays_small_and_binary():
    n = 512
    p = softmax_pattern((n, n))
    fig = attention_heatmap(p, [f"w{i}" for i in range(n)])
    spec = json.loads(fig.to_json())
    assert set(bdata_dtypes(spec)) == {"f4"}
    assert len(fig.to_json()) < 450_000  # 256x256 float32 + labels; full res would be 1.4 MB


def test_same_input_gives_identical_json():
    p = softmax_pattern((6, 6))
    assert attention_heatmap(p, TOKENS[:6]).to_json() == attention_heatmap(p, TOKENS[:6]).to_json()
    pattern = softmax_pattern((2, 3, 6, 6))
    assert json.dumps(head_grid_data(pattern)) == json.dumps(head_grid_data(pattern))


# --------------------------------------------------------------------------------------------
# head_grid_data / mosaic_png
# --------------------------------------------------------------------------------------------
def test_mosaic_png_decodes_to_the_expected_size_and_gaps():
    n_layers, n_heads, n = 2, 3, 16
    cell = default_cell_px(n)
    assert cell == 64
    rgba = decode_png_rgba(mosaic_png(softmax_pattern((n_layers, n_heads, n, n)), cell))
    pitch = cell + GAP_PX
    assert rgba.shape == (n_layers * pitch - GAP_PX, n_heads * pitch - GAP_PX, 4)
    assert (rgba[:, cell : cell + GAP_PX, 3] == 0).all()  # vertical gap is transparent
    assert (rgba[cell : cell + GAP_PX, :, 3] == 0).all()  # horizontal gap is transparent
    assert (rgba[:cell, :cell, 3] == 255).all()


def test_mosaic_colors_follow_the_weights():
    # every head a constant weight, increasing with (layer, head): the palette index must too
    n_layers, n_heads, n, cell = 2, 4, 8, 16
    values = np.linspace(0.0, 1.0, n_layers * n_heads, dtype=np.float32)
    pattern = np.broadcast_to(values.reshape(n_layers, n_heads, 1, 1), (n_layers, n_heads, n, n))
    rgba = decode_png_rgba(mosaic_png(np.ascontiguousarray(pattern), cell))
    palette, _ = mosaic_palette()
    pitch = cell + GAP_PX
    seen = []
    for layer in range(n_layers):
        for h in range(n_heads):
            px = rgba[layer * pitch + cell // 2, h * pitch + cell // 2, :3]
            seen.append(int(np.flatnonzero((palette[:N_LEVELS] == px).all(1))[0]))
    assert seen[0] == 0
    assert seen[-1] == N_LEVELS - 1
    assert all(a < b for a, b in itertools.pairwise(seen))


def test_mosaic_max_pooling_keeps_a_thin_diagonal():
    n, cell = 512, 64
    pattern = np.eye(n, dtype=np.float32)[None, None] * np.ones((1, 2, 1, 1), np.float32)
    rgba = decode_png_rgba(mosaic_png(pattern, cell))
    palette, _ = mosaic_palette()
    top, bottom = palette[N_LEVELS - 1], palette[0]
    thumb = rgba[:cell, :cell, :3]
    assert (thumb[np.arange(cell), np.arange(cell)] == top).all()
    assert (thumb[0, cell - 1] == bottom).all()


def test_head_grid_data_describes_the_mosaic():
    n_layers, n_heads, n = 2, 3, 10
    pattern = softmax_pattern((n_layers, n_heads, n, n))
    grid = head_grid_data(pattern)
    cell = default_cell_px(n)
    assert {k: grid[k] for k in ("rows", "cols", "cell", "gap", "n_pos")} == {
        "rows": n_layers,
        "cols": n_heads,
        "cell": cell,
        "gap": GAP_PX,
        "n_pos": n,
    }
    assert "selected" not in grid
    png = png_of(grid)
    assert png == mosaic_png(pattern)
    pitch = cell + GAP_PX
    assert decode_png_rgba(png).shape[:2] == (n_layers * pitch - GAP_PX, n_heads * pitch - GAP_PX)
    # the digest follows the image: same patterns, same rev; other patterns, another rev
    assert grid["rev"] == head_grid_data(pattern.copy())["rev"]
    assert grid["rev"] != head_grid_data(softmax_pattern((n_layers, n_heads, n, n), seed=1))["rev"]
    json.dumps(grid)  # what Streamlit sends must be plain JSON


def test_grid_selection_outlines_one_head_and_keeps_the_image():
    grid = head_grid_data(softmax_pattern((2, 3, 10, 10)))
    chosen = grid_selection(grid, 1, 2)
    assert chosen["selected"] == [1, 2]
    assert {k: v for k, v in chosen.items() if k != "selected"} == grid
    assert "selected" not in grid  # a copy: the cached dict is untouched
    for bad in ((2, 0), (0, 3), (-1, 0)):
        with pytest.raises(ValueError, match="outside 2 layers x 3 heads"):
            grid_selection(grid, *bad)


def test_head_grid_data_shape_errors():
    with pytest.raises(ValueError, match=r"\(2, 3, 4, 5\)"):
        head_grid_data(np.zeros((2, 3, 4, 5), np.float32))
    with pytest.raises(ValueError, match="4-D"):
        head_grid_data(np.zeros((3, 4, 4), np.float32))


# --------------------------------------------------------------------------------------------
# qkv
# --------------------------------------------------------------------------------------------
def test_qkv_figure_panels():
    n, d_head = 6, 4
    rng = np.random.default_rng(3)
    q, k, v = (rng.normal(size=(n, d_head)).astype(np.float32) for _ in range(3))
    attn_scores = (q @ k.T / np.sqrt(d_head)).astype(np.float32)
    fig = qkv_figure(q, k, v, attn_scores, TOKENS[:n])  # kind="attn_scores" by default
    assert fig.layout.meta["kind"] == "attn_scores"
    titles = [a.text for a in fig.layout.annotations]
    assert titles[:3] == ["Q = XW<sub>Q</sub>", "K = XW<sub>K</sub>", "V = XW<sub>V</sub>"]
    assert titles[3].startswith("attn_scores")
    assert titles[4] == "dimension of the head (d_head = 4)"
    heat_q, heat_k, heat_v, heat_s = fig.data
    for tr, a in zip((heat_q, heat_k, heat_v), (q, k, v), strict=True):
        np.testing.assert_array_equal(tr.z, a)
        assert tr.coloraxis == "coloraxis"
        assert list(tr.y) == list(heat_s.y)
    np.testing.assert_array_equal(heat_s.z, attn_scores)
    assert heat_s.coloraxis == "coloraxis2"
    m = float(max(np.abs(q).max(), np.abs(k).max(), np.abs(v).max()))
    axis = fig.layout.coloraxis
    assert axis.cmax == pytest.approx(m)
    assert axis.cmin == -axis.cmax
    assert list(fig.layout.yaxis.ticktext) == TOKENS[:n]
    pat = qkv_figure(q, k, v, softmax_pattern((n, n)), TOKENS[:n], kind="pattern")
    assert (pat.layout.coloraxis2.cmin, pat.layout.coloraxis2.cmax) == (0.0, 1.0)
    assert pat.layout.annotations[3].text.startswith("pattern")


def test_qkv_figure_shape_errors():
    q = np.zeros((5, 4), np.float32)
    with pytest.raises(ValueError, match="6 tokens"):
        qkv_figure(q, q, q, np.zeros((5, 5)), TOKENS[:6])
    with pytest.raises(ValueError, match="share one shape"):
        qkv_figure(q, q, np.zeros((5, 3)), np.zeros((5, 5)), TOKENS[:5])
    with pytest.raises(ValueError, match=r"\(5, 4\)"):
        qkv_figure(q, q, q, np.zeros((5, 4)), TOKENS[:5])


def test_qkv_figure_too_narrow_names_the_width():
    # 200 tokens, d_head 64: the panels and colorbars take most of a 500 px column (plotly
    # itself used to fail here with a negative height or a domain past 1)
    n, d_head = 200, 64
    rng = np.random.default_rng(4)
    q, k, v = (rng.normal(size=(n, d_head)).astype(np.float32) for _ in range(3))
    labels = [f"t{i}" for i in range(n)]
    scores = rng.normal(size=(n, n)).astype(np.float32)
    with pytest.raises(ValueError, match=r"width=500 px is too narrow .* 200 tokens and d_head=64"):
        qkv_figure(q, q, q, scores, labels, width=500)
    fig = qkv_figure(q, k, v, scores, labels)  # the app's full-width column draws it
    assert fig.layout.meta["plot_px"] >= 120


def test_head_output_heatmap():
    z = np.arange(12, dtype=np.float32).reshape(3, 4) - 6
    fig = head_output_heatmap(z, ["a", "a", "<b>"])
    np.testing.assert_array_equal(fig.data[0].z, z)
    assert list(fig.data[0].y) == ["0: a", "1: a", "2: &lt;b&gt;"]
    assert fig.data[0].zmax == 6.0
    assert fig.data[0].zmin == -6.0  # no outliers: the largest |z|
    assert fig.layout.meta["color"]["clipped"] is False
    with pytest.raises(ValueError, match="2 tokens"):
        head_output_heatmap(z, ["a", "b"])


# --------------------------------------------------------------------------------------------
# heads
# --------------------------------------------------------------------------------------------
def test_heads_side_by_side_shared_and_separate_scales():
    n = 5
    pattern = softmax_pattern((3, n, n)) * np.array([1.0, 0.5, 0.25], np.float32)[:, None, None]
    fig = heads_side_by_side(pattern, ["L0H0", "L0H1", "L1H2"], TOKENS[:n])
    assert len(fig.data) == 3
    assert all(tr.coloraxis == "coloraxis" for tr in fig.data)
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.0, 1.0)
    np.testing.assert_array_equal(fig.data[1].z, pattern[1])
    assert [a.text for a in fig.layout.annotations] == ["L0H0", "L0H1", "L1H2"]
    sep = heads_side_by_side(pattern, ["a", "b", "c"], TOKENS[:n], shared_scale=False)
    assert [tr.zmax for tr in sep.data] == pytest.approx([float(p.max()) for p in pattern])
    assert all(tr.coloraxis is None and tr.showscale is False for tr in sep.data)


def test_heads_side_by_side_errors():
    p = softmax_pattern((13, 4, 4))
    with pytest.raises(ValueError, match=r"1\.\.12"):
        heads_side_by_side(p, [str(i) for i in range(13)], TOKENS[:4])
    with pytest.raises(ValueError, match="2 titles"):
        heads_side_by_side(p[:3], ["a", "b"], TOKENS[:4])
    with pytest.raises(ValueError, match="5 tokens"):
        heads_side_by_side(p[:3], ["a", "b", "c"], TOKENS[:5])


def test_head_metrics_figure():
    ent = np.arange(6, dtype=np.float32).reshape(2, 3)
    fig = head_metrics_figure({"entropy": ent, "other": -ent}, "entropy")
    (heat,) = fig.data  # one heatmap: nothing on top that looks clickable
    np.testing.assert_array_equal(heat.z, ent)
    assert (heat.zmin, heat.zmax) == (0.0, 5.0)
    # the heatmap answers the hover itself: layer (y), head (x) and the value
    assert heat.hoverinfo is None
    assert heat.hovertemplate == "layer %{y}, head %{x}<br>entropy %{z:.4g}<extra></extra>"
    # 3 heads in 370 px: cells wide enough for their values (2 significant digits)
    assert heat.texttemplate == "%{text}"
    assert fig.layout.meta["values_shown"] is True
    assert [list(r) for r in heat.text] == [["0", "1.0", "2.0"], ["3.0", "4.0", "5.0"]]
    div = head_metrics_figure({"other": ent - 2}, "other")
    assert div.data[0].zmid == 0.0
    assert div.data[0].zmax == 3.0
    with pytest.raises(ValueError, match="'nope' is not one of"):
        head_metrics_figure({"entropy": ent}, "nope")


def test_head_similarity_heatmap():
    sim = np.array([[0.0, 0.2, 0.7], [0.2, 0.0, 0.1], [0.7, 0.1, 0.0]], np.float32)
    fig = head_similarity_heatmap(sim, ["L0H0", "L0H0", "L1H1"])
    heat = fig.data[0]
    np.testing.assert_array_equal(heat.z, sim)
    assert (heat.zmin, heat.zmax) == (0.0, 1.0)  # JS divergence: sequential, 0 = identical
    assert len(set(heat.x)) == 3  # duplicate labels stay separate
    with pytest.raises(ValueError, match="2 labels"):
        head_similarity_heatmap(sim, ["a", "b"])


def test_ablation_effect_figure():
    d = np.array([0.0, 2.5, -1.0], np.float32)
    fig = ablation_effect_figure(d, ["a", "<i>b</i>", "a"], "ablate L0H1")
    bar = fig.data[0]
    np.testing.assert_array_equal(bar.y, d)
    assert list(bar.x) == ["0: a", "1: &lt;i&gt;b&lt;/i&gt;", "2: a"]
    assert bar.marker.color[2] != bar.marker.color[1]  # negative bar drawn differently
    assert fig.layout.title.text == "ablate L0H1"
    with pytest.raises(ValueError, match="4 tokens"):
        ablation_effect_figure(d, ["a", "b", "c", "d"], "x")


def test_pattern_colorscale_matches_the_mosaic_gamma():
    from tformer.figures.colors import PATTERN_GAMMA, pattern_colorscale, sequential_lut

    scale = pattern_colorscale()
    positions = [p for p, _ in scale]
    assert positions[0] == 0.0
    assert positions[-1] == 1.0
    assert all(a < b for a, b in itertools.pairwise(positions))
    # halfway along the color map sits at weight 0.5 ** (1 / gamma): 0.25 for gamma 0.5
    mid = len(scale) // 2
    assert positions[mid] == pytest.approx(0.5 ** (1 / PATTERN_GAMMA))
    r, g, b = sequential_lut(256)[128]
    assert scale[mid][1] == f"rgb({r},{g},{b})"


def test_side_by_side_pools_each_panel_to_its_share_of_the_budget():
    from tformer.figures.heads import panel_max_side

    n = 300
    pattern = np.broadcast_to(np.eye(n, dtype=np.float32), (12, n, n))
    fig = heads_side_by_side(pattern, [str(i) for i in range(12)], [str(i) for i in range(n)])
    side = panel_max_side(12)
    assert side == 73
    assert all(tr.z.shape[0] <= side for tr in fig.data)
    assert sum(tr.z.size for tr in fig.data) <= 256 * 256
    np.testing.assert_array_equal(np.diag(fig.data[0].z), 1.0)


# --- margins reserved up front (no second plotly layout pass) --------------------------------


def test_text_px_counts_wide_characters_and_entities():
    assert text_px("\u4e2d\u6587", 12) == pytest.approx(24.0)  # East Asian wide: 1 em each
    assert text_px("ab", 12) < text_px("AB", 12) < text_px("\u4e2d\u6587", 12)
    # tick texts are escaped for plotly; "&amp;" is drawn as one character
    assert tick_label_px({"ticktext": ["&amp;"]}) == pytest.approx(text_px("&"))
    assert tick_label_px({"ticktext": ["a"], "tickfont": {"size": 10}}) < text_px("a", 12)


def test_heatmap_margins_follow_the_longest_label():
    short = attention_heatmap(np.eye(3, dtype=np.float32), ["a", "b", "c"])
    long_ = attention_heatmap(np.eye(3, dtype=np.float32), ["a", "extraordinary", "c"])
    ms, ml = short.layout.margin, long_.layout.margin
    assert ml.l > ms.l
    assert ml.b >= ms.b
    assert ml.l >= 10 * 0.62 * 12  # a tick label cut to 10 characters, at 12 px at least
    # the square plot fills the width left by the margins, and the height follows
    for fig in (short, long_):
        m, side = fig.layout.margin, fig.layout.meta["plot_px"]
        assert m.l + side + m.r == fig.layout.meta["width"]
        assert fig.layout.height - m.t - m.b == side
