r"""The encoder's architecture drawn as boxes and arrows, after the paper's Figure 1.

:func:`architecture_figure` draws the encoder bottom to top with plotly shapes and annotations:
tokens, embeddings, the repeated block in an "N ×" frame with its residual connections, and the
output. Beside each box, the tensor shape it outputs for the current text and its parameter
count. Post-norm blocks draw "add & norm" after each sublayer, pre-norm blocks a LayerNorm
before it:

.. math::
    x' = \mathrm{LayerNorm}(x + \mathrm{SubLayer}(x))\ \text{(post-norm)},\qquad
    x' = x + \mathrm{SubLayer}(\mathrm{LayerNorm}(x))\ \text{(pre-norm)}

The diagram reads a ``tformer.analysis.architecture.ArchitectureSpec``, named for the type
checker only, so drawing it loads no core module. The per-layer figures of :mod:`.ffn`,
:mod:`.sublayers` and :mod:`.layernorm` draw the same parts in the same hues (the palette's
``PART_FILL`` here, ``PART_LINE`` there).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go

from ..i18n import tr
from .colors import FAINT, INK, MUTED_INK, NOTE_INK, PART_FILL
from .labels import text_px
from .layout import FULL_WIDTH, TOP_TITLE_PX, base_layout

if TYPE_CHECKING:
    from ..analysis.architecture import ArchitectureSpec

# The parts' colours (the palette's PART_FILL); text in INK and MUTED_INK, box edges in NOTE_INK.
FILL = PART_FILL
EDGE = NOTE_INK
MUTED = MUTED_INK


def compact(n: int) -> str:
    """A parameter count in at most 3 significant digits: 768, 148 K, 1.18 M, 22.7 M."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1e3:.3g} K"
    if n < 1_000_000_000:
        return f"{n / 1e6:.3g} M"
    return f"{n / 1e9:.3g} B"


@dataclass(frozen=True)
class _Row:
    """One box of the diagram and the text beside it."""

    key: str  # the part's key in ``counts`` (or tokens / output / add1 / add2)
    name: str
    detail: str
    shape: str  # the tensor it outputs for the current text, e.g. "[16 × 384]"
    fill: str
    shape_note: str = ""
    in_block: bool = False
    count: int | None = None  # parameters in all layers; None: the part has none
    per_layer: int | None = None  # block parts: parameters in one layer


# Fonts (px): box name and detail, the shape and parameter columns and their small second
# lines. Tried in this order until the diagram fits its width; 12 px is the floor.
_FONT_SETS = ((15, 13, 14, 12), (14, 12, 13, 12), (13, 12, 12, 12))
_LINE = 1.25  # line height, em
_BOLD = 1.08  # bold text is this much wider than text_px's estimate
_BOX_PAD_X = 12
_BOX_PAD_Y = 7
_MIN_BOX_W = 200
_GAP = 18  # between two boxes: the arrow
_FRAME_PAD = 10  # between the N x frame and the first residual branch / the boxes outside it
_BRANCH = 9  # residual branch point, px below the sublayer's (or its LayerNorm's) box
_LANE = 24  # from the box's right edge to the residual line
_COL_GAP = 26
_TOTAL_PX = 46  # the total's two lines and the rule above them
_FRAME_RIGHT = 14  # from the residual line to the frame's right edge
_SIDE = 8
_N_FONT = 17  # the "N x" label


def _count(spec: ArchitectureSpec, key: str) -> int | None:
    """Parameters of part ``key`` in all layers; None when the part has none."""
    return int(spec.counts[key]) if key in spec.counts else None


def _resid(spec: ArchitectureSpec) -> str:
    """The residual stream's shape for the current text: "[pos × d_model]"."""
    return f"[{spec.n_pos} \u00d7 {spec.d_model}]"


def _architecture_rows(spec: ArchitectureSpec) -> list[_Row]:
    """The boxes, bottom to top, in the order the model runs them."""
    return [*_embedding_rows(spec), *_block_rows(spec), *_output_rows(spec)]


def _embedding_rows(spec: ArchitectureSpec) -> list[_Row]:
    """The tokens and what turns them into vectors: the token embedding, the positions (when
    the model adds any), the segment embedding and the embeddings' LayerNorm (when it has them)."""
    n, d, resid, embed = spec.n_pos, spec.d_model, _resid(spec), FILL["embed"]
    rows = [
        _Row("tokens", tr("tokens"), tr("this text, tokenized"), tr("[{n}] token ids", n=n), FILL["io"]),
        _Row(
            "embed",
            tr("token embedding"),
            tr("a {vocab} \u00d7 {d_model} table", vocab=f"{spec.vocab_size:,}", d_model=d),
            resid,
            embed,
            count=_count(spec, "embed"),
        ),
    ]
    positions = tr("+ positional encoding")
    if spec.pos_encoding == "sinusoidal":
        rows.append(_Row("pos_embed", positions, tr("sin / cos, fixed"), resid, embed))
    elif spec.pos_encoding == "learned":
        learned = tr("learned, {max_len} \u00d7 {d_model}", max_len=spec.max_len, d_model=d)
        rows.append(_Row("pos_embed", positions, learned, resid, embed, count=_count(spec, "pos_embed")))
    if spec.type_vocab_size > 0:
        segments = tr("{n} segment types", n=spec.type_vocab_size)
        rows.append(
            _Row(
                "token_type_embed",
                tr("+ segment embedding"),
                segments,
                resid,
                embed,
                count=_count(spec, "token_type_embed"),
            )
        )
    if spec.embed_norm:
        rows.append(
            _Row(
                "embed_ln",
                "LayerNorm",
                tr("of the embeddings"),
                resid,
                FILL["norm"],
                count=_count(spec, "embed_ln"),
            )
        )
    return rows


def _block_part(spec: ArchitectureSpec, key: str, name: str, detail: str, fill: str, note: str = "") -> _Row:
    """A box inside the N × frame: its parameters in all layers and in one."""
    layer0 = spec.per_layer[0] if spec.per_layer else {}
    per = int(layer0[key]) if key in layer0 else None
    return _Row(key, name, detail, _resid(spec), fill, note, True, _count(spec, key), per)


def _block_rows(spec: ArchitectureSpec) -> list[_Row]:
    """The repeated block: attention and the FFN with their residual adds and LayerNorms, in
    the order the block's ``norm`` ("pre" or "post") runs them; pre-norm adds a final LayerNorm."""
    n, d, f, resid, norm = spec.n_pos, spec.d_model, spec.d_ff, _resid(spec), FILL["norm"]
    attn = _block_part(
        spec,
        "attn",
        tr("multi-head attention"),
        tr("{heads} heads \u00d7 d_head {d_head}", heads=spec.n_heads, d_head=spec.d_head),
        FILL["attn"],
        tr("weights: {heads} \u00d7 [{n} \u00d7 {n}]", heads=spec.n_heads, n=n),
    )
    act = {"relu": "ReLU", "gelu": "GELU"}.get(spec.activation, spec.activation)
    mlp = _block_part(
        spec,
        "mlp",
        tr("feed-forward"),
        f"{d} \u2192 {f} \u2192 {d}, {act}",
        FILL["mlp"],
        tr("inside: [{n} \u00d7 {d_ff}]", n=n, d_ff=f),
    )
    if spec.norm == "pre":
        return [
            _block_part(spec, "ln1", "LayerNorm", tr("before attention"), norm),
            attn,
            _Row("add1", tr("add"), tr("x + attention"), resid, norm, in_block=True),
            _block_part(spec, "ln2", "LayerNorm", tr("before the FFN"), norm),
            mlp,
            _Row("add2", tr("add"), "x + FFN", resid, norm, in_block=True),
            _Row("ln_final", tr("final LayerNorm"), "", resid, norm, count=_count(spec, "ln_final")),
        ]
    return [
        attn,
        _block_part(spec, "ln1", tr("add & norm"), tr("LayerNorm(x + attention)"), norm),
        mlp,
        _block_part(spec, "ln2", tr("add & norm"), "LayerNorm(x + FFN)", norm),
    ]


def _output_rows(spec: ArchitectureSpec) -> list[_Row]:
    """Parameters no part names (none in a tformer Encoder), the output head when the model has
    one, and the encoder's output."""
    n, d, io = spec.n_pos, spec.d_model, FILL["io"]
    rows = []
    if "other" in spec.counts:
        rows.append(_Row("other", tr("other parameters"), "", "", io, count=_count(spec, "other")))
    if spec.n_outputs > 0:
        rows.append(
            _Row(
                "head",
                tr("output Linear + softmax"),
                f"{d} \u2192 {spec.n_outputs}",
                f"[{n} \u00d7 {spec.n_outputs}]",
                FILL["head"],
                count=_count(spec, "head"),
            )
        )
    out_shape = f"[{n} \u00d7 {spec.n_outputs or d}]"
    detail = tr("probabilities per token") if spec.n_outputs else tr("one vector per token")
    rows.append(_Row("output", tr("encoder output"), detail, out_shape, io))
    return rows


def _params_lines(row: _Row, n_layers: int, narrow: bool) -> tuple[str, str]:
    """(main line, small line) of the parameter column."""
    if row.count is None:
        return (tr("no parameters"), "") if row.key not in ("tokens", "output") else ("", "")
    if row.in_block and row.per_layer is not None:
        if narrow:
            return f"{compact(row.per_layer)} \u00d7 {n_layers}", ""
        return tr("{count} per layer", count=compact(row.per_layer)), f"\u00d7 {n_layers} = {row.count:,}"
    if narrow or row.count < 1000:
        return compact(row.count), ""
    return compact(row.count), f"{row.count:,}"


def _hover(row: _Row, n_layers: int) -> str:
    text = f"<b>{row.name}</b>"
    if row.detail:
        text += f"<br>{row.detail}"
    if row.shape:
        text += "<br>" + tr("output {shape}", shape=row.shape)
    if row.count is not None and row.in_block and row.per_layer is not None:
        text += "<br>" + tr(
            "{per_layer} parameters per layer, {count} in {n_layers} layers",
            per_layer=f"{row.per_layer:,}",
            count=f"{row.count:,}",
            n_layers=n_layers,
        )
    elif row.count is not None:
        text += "<br>" + tr("{count} parameters", count=f"{row.count:,}")
    return text


@dataclass(frozen=True)
class _Geometry:
    """The diagram's columns for one choice of fonts, left to right: the "N ×" label, the
    boxes, the residual lane, the shape column and the parameter column (or shape over
    parameters in one column when ``narrow``)."""

    fonts: tuple[int, int, int, int]  # name, detail, column, column note (px)
    narrow: bool
    label_w: float
    box_x0: float
    box_w: float
    shape_x: float  # left edge of the shape column
    params_x1: float  # right edge of the parameter column
    need: float  # px wide the diagram needs

    @property
    def cx(self) -> float:
        """The boxes' centre line, where the flow arrows run."""
        return self.box_x0 + self.box_w / 2

    @property
    def lane_x(self) -> float:
        """The residual connections' vertical line, right of the boxes."""
        return self.box_x0 + self.box_w + _LANE


def _plan_geometry(rows: list[_Row], spec: ArchitectureSpec, width: int) -> _Geometry:
    """Column positions for the largest fonts that fit ``width``: three columns (boxes, shapes,
    parameters) first, then shape over parameters in one column."""
    plans = []
    n_label = f"{spec.n_layers} \u00d7"
    label_w = max(text_px(n_label, _N_FONT) * _BOLD, text_px(tr("layers"), 13)) + 10
    for narrow in (False, True):
        gap = _COL_GAP if not narrow else _COL_GAP // 2
        for fonts in _FONT_SETS:
            name_px, detail_px, info_px, note_px = fonts
            box_w = max(
                _MIN_BOX_W,
                max(
                    max(text_px(r.name, name_px) * _BOLD, text_px(r.detail, detail_px)) + 2 * _BOX_PAD_X
                    for r in rows
                ),
            )
            box_x0 = label_w + 12
            shape_x = box_x0 + box_w + _LANE + _FRAME_RIGHT + gap
            params = [_params_lines(r, spec.n_layers, narrow) for r in rows]
            total, exact = _total_lines(spec.total)
            params_w = max(
                [text_px(total, info_px) * _BOLD, text_px(exact, note_px)]
                + [max(text_px(a, info_px), text_px(b, note_px)) for a, b in params]
                + [text_px(h, _HEADER_FONT) * _BOLD for h in _headers(narrow)[1:]]
            )
            shape_w = max(
                [
                    max(text_px(r.shape, info_px), 0 if narrow else text_px(r.shape_note, note_px))
                    for r in rows
                ]
                + [text_px(_headers(narrow)[0], _HEADER_FONT) * _BOLD]
            )
            # one column (narrow): shape over parameters
            params_x1 = shape_x + max(shape_w, params_w) if narrow else shape_x + shape_w + gap + params_w
            plan = _Geometry(fonts, narrow, label_w, box_x0, box_w, shape_x, params_x1, params_x1 + _SIDE)
            if plan.need <= width:
                return plan
            plans.append(plan)
    return plans[-1]


_HEADER_FONT = 13


def _header_px(narrow: bool) -> int:
    """Height of the header band over the boxes: two lines over the one narrow column."""
    return 42 if narrow else 28


def _headers(narrow: bool) -> tuple[str, ...]:
    """Column headers: (shape, parameters), or the two lines over the one narrow column."""
    return (tr("tensor"), tr("parameters")) if narrow else (tr("tensor for this text"), tr("parameters"))


def _total_lines(total: int) -> tuple[str, str]:
    """(the total in 3 significant digits, the exact total: "" when the first says it all)."""
    if total >= 1000:
        return tr("total {count}", count=compact(total)), f"= {total:,}"
    return tr("total {count}", count=total), ""


def _text(
    text: str, x: float, y: float, size: int, *, anchor: str = "center", color: str = INK, **extra: Any
) -> dict[str, Any]:
    """A text annotation at (x, y) in the diagram's px coordinates, vertically centred."""
    return {
        "text": text,
        "x": x,
        "y": y,
        "xref": "x",
        "yref": "y",
        "xanchor": anchor,
        "yanchor": "middle",
        "showarrow": False,
        "font": {"size": size, "color": color},
        **extra,
    }


def _arrow(x0: float, y0: float, x1: float, y1: float, name: str) -> dict[str, Any]:
    """An arrow from (x0, y0) to (x1, y1), in the diagram's px coordinates."""
    return {
        "name": name,
        "text": "",
        "x": x1,
        "y": y1,
        "ax": x0,
        "ay": y0,
        "xref": "x",
        "yref": "y",
        "axref": "x",
        "ayref": "y",
        "showarrow": True,
        "arrowhead": 2,
        "arrowsize": 1.1,
        "arrowwidth": 1.6,
        "arrowcolor": EDGE,
        "standoff": 0,
    }


def _rounded(x0: float, y0: float, x1: float, y1: float, r: float) -> str:
    """SVG path of a rectangle with rounded corners (radius r)."""
    r = min(r, (x1 - x0) / 2, (y1 - y0) / 2)
    return (
        f"M {x0 + r:.1f},{y0:.1f} L {x1 - r:.1f},{y0:.1f} Q {x1:.1f},{y0:.1f} {x1:.1f},{y0 + r:.1f} "
        f"L {x1:.1f},{y1 - r:.1f} Q {x1:.1f},{y1:.1f} {x1 - r:.1f},{y1:.1f} "
        f"L {x0 + r:.1f},{y1:.1f} Q {x0:.1f},{y1:.1f} {x0:.1f},{y1 - r:.1f} "
        f"L {x0:.1f},{y0 + r:.1f} Q {x0:.1f},{y0:.1f} {x0 + r:.1f},{y0:.1f} Z"
    )


@dataclass
class _Marks:
    """The diagram's plotly shapes and annotations, appended in drawing order."""

    shapes: list[dict[str, Any]] = field(default_factory=list)
    annotations: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class _Stack:
    """The boxes stacked bottom up: each box's px rectangle, the N × frame's bottom and top."""

    boxes: dict[str, tuple[float, float, float, float]]  # key -> (x0, y0, x1, y1)
    frame: tuple[float, float]
    plot_h: float  # from the total's rule at the bottom to the column headers at the top


def architecture_figure(
    spec: ArchitectureSpec, *, title: str | None = None, width: int = FULL_WIDTH
) -> go.Figure:
    """The encoder drawn bottom to top, as in the paper: tokens, embeddings, N × block, output.

    ``spec`` is ``tformer.analysis.architecture.architecture_spec(cfg, n_pos, parameter_counts(model))``.
    Each box names its part (bold) with a detail line; beside it, the tensor the part outputs
    for the current text ("[16 × 384]") and its parameter count (3 significant digits, the
    exact count on a small second line and in the box's hover; block parts per layer and
    times N). The counts shown add up to the total written under them. The repeated block sits
    in a frame labelled "N ×", with each sublayer's residual connection drawn on its right:
    post-norm blocks draw "add & norm" after each sublayer, pre-norm blocks a LayerNorm before
    it, an "add" after it and a final LayerNorm after the last block.

    Drawn in px coordinates for a column ``width`` px wide (default 940): fonts of 15/13 px
    (names/details) and 14/12 px (columns), smaller down to 12 px, then shape and parameters
    in one column, when that is what fits. ``layout.meta`` holds ``order`` (part keys, bottom
    to top), ``counts`` (parameters per part, all layers), ``total``, ``fonts``, ``narrow``,
    ``fits`` and each box's px rectangle (``boxes``). ``title`` is shown as given (escape user
    text with ``safe_label``).
    """
    _check_spec(spec)
    rows = _architecture_rows(spec)
    geo = _plan_geometry(rows, spec, width - _SIDE)
    stack = _stack_boxes(rows, geo)
    marks = _Marks()
    _draw_frame(marks, spec, geo, stack.frame)
    for row in rows:
        _draw_box(marks, row, spec.n_layers, geo, stack.boxes[row.key])
    _draw_arrows(marks, rows, spec.norm, geo, stack.boxes)
    _draw_headers_and_total(marks, spec.total, geo, stack.plot_h)
    meta = {
        "n_pos": spec.n_pos,
        "norm": spec.norm,
        "order": [r.key for r in rows],
        "counts": {k: int(v) for k, v in spec.counts.items()},
        "total": int(spec.total),
        "fonts": list(geo.fonts),
        "narrow": geo.narrow,
        "fits": geo.need <= width - _SIDE,
        "boxes": {k: [round(v, 1) for v in b] for k, b in stack.boxes.items()},
    }
    hidden = {"visible": False, "fixedrange": True, "showgrid": False, "zeroline": False}
    # a small left margin lines the title up with the diagram's edge
    layout = base_layout(
        math.ceil(stack.plot_h), width=width, left=_SIDE, right=0, top=TOP_TITLE_PX if title else 8,
        bottom=8, title=title, meta=meta,
        xaxis={**hidden, "range": [0, width - _SIDE]}, yaxis={**hidden, "range": [0, stack.plot_h]},
        shapes=marks.shapes, annotations=marks.annotations, plot_bgcolor="rgba(0,0,0,0)",
        showlegend=False, hovermode=False, dragmode=False,
    )  # fmt: skip
    return go.Figure({"data": [], "layout": layout})


def _check_spec(spec: ArchitectureSpec) -> None:
    """Raise unless there is a layer and a token, and the parts' counts add up to the total."""
    if spec.n_layers < 1 or spec.n_pos < 1:
        raise ValueError(f"n_layers={spec.n_layers} and n_pos={spec.n_pos} must be positive")
    shown = sum(int(v) for v in spec.counts.values())
    if shown != spec.total:
        raise ValueError(f"counts add up to {shown:,}, not to total={spec.total:,}")


def _stack_boxes(rows: list[_Row], geo: _Geometry) -> _Stack:
    """The boxes from the total's rule up (y grows upwards), an arrow's gap apart, with the
    N × frame around the block's boxes: it starts below the first residual branch, clear of
    the box below it, and ends above the last block box."""
    name_px, detail_px, _, _ = geo.fonts
    box_h = math.ceil((name_px + detail_px) * _LINE + 2 * _BOX_PAD_Y)
    one_line_h = math.ceil(name_px * _LINE + 2 * _BOX_PAD_Y)
    y = float(_TOTAL_PX)
    boxes: dict[str, tuple[float, float, float, float]] = {}
    frame: list[float] = []  # y of the frame's bottom and top
    prev_in_block = False
    for row in rows:
        if row.in_block and not prev_in_block:
            y += _FRAME_PAD
            frame.append(y - _BRANCH - _FRAME_PAD)
        elif prev_in_block and not row.in_block:
            top = y - _GAP  # the last block box's top edge
            frame.append(top + _FRAME_PAD)
            y = top + 2 * _FRAME_PAD + 4
        h = box_h if row.detail else one_line_h
        boxes[row.key] = (geo.box_x0, y, geo.box_x0 + geo.box_w, y + h)
        y += h + _GAP
        prev_in_block = row.in_block
    return _Stack(boxes, (frame[0], frame[1]), y - _GAP + _header_px(geo.narrow))


def _draw_frame(marks: _Marks, spec: ArchitectureSpec, geo: _Geometry, frame: tuple[float, float]) -> None:
    """The rounded frame around the repeated block and its "N × layers" label on the left."""
    f0, f1 = frame
    fx0, fx1 = geo.box_x0 - 12, geo.lane_x + _FRAME_RIGHT
    marks.shapes.append(
        {
            "type": "path",
            "name": "block",
            "path": _rounded(fx0, f0, fx1, f1, 10),
            "xref": "x",
            "yref": "y",
            "fillcolor": "rgba(0,0,0,0.045)",
            "line": {"color": FAINT, "width": 1.2},
            "layer": "below",
        }
    )
    label_x = fx0 - 8
    mid = (f0 + f1) / 2
    marks.annotations.append(
        _text(f"<b>{spec.n_layers} \u00d7</b>", label_x, mid + 9, _N_FONT, anchor="right", name="n_layers")
    )
    marks.annotations.append(
        _text(tr("layers"), label_x, mid - 11, 13, anchor="right", color=MUTED, name="n_layers.note")
    )


def _draw_box(
    marks: _Marks, row: _Row, n_layers: int, geo: _Geometry, box: tuple[float, float, float, float]
) -> None:
    """One part's box with its name (and detail line), and its shape and parameters beside it;
    the box's text and columns share its hover."""
    x0, y0, x1, y1 = box
    c = (y0 + y1) / 2
    name_px, detail_px, info_px, note_px = geo.fonts
    marks.shapes.append(
        {
            "type": "path",
            "name": row.key,
            "path": _rounded(x0, y0, x1, y1, 6),
            "xref": "x",
            "yref": "y",
            "fillcolor": row.fill,
            "line": {"color": EDGE, "width": 1.2},
            "layer": "above",
        }
    )
    hover = _hover(row, n_layers)
    name = f"<b>{row.name}</b>"
    if row.detail:
        marks.annotations += [
            _text(name, geo.cx, c + detail_px * _LINE / 2, name_px, name=f"{row.key}.name", hovertext=hover),
            _text(
                row.detail,
                geo.cx,
                c - name_px * _LINE / 2,
                detail_px,
                color=MUTED,
                name=f"{row.key}.detail",
                hovertext=hover,
            ),
        ]
    else:
        marks.annotations.append(_text(name, geo.cx, c, name_px, name=f"{row.key}.name", hovertext=hover))
    main, small = _params_lines(row, n_layers, geo.narrow)
    params = (main, info_px, MUTED if row.count is None else INK, "params")
    if geo.narrow:  # shape over parameters, one column
        _column(
            marks.annotations,
            row.key,
            [(row.shape, info_px, INK, "shape"), params],
            geo.shape_x,
            c,
            "left",
            hover,
        )
        return
    shape = [(row.shape, info_px, INK, "shape")]
    if row.shape_note:
        shape.append((row.shape_note, note_px, MUTED, "shape_note"))
    _column(marks.annotations, row.key, shape, geo.shape_x, c, "left", hover)
    plines = [params] + ([(small, note_px, MUTED, "params_note")] if small else [])
    _column(marks.annotations, row.key, plines, geo.params_x1, c, "right", hover)


def _draw_arrows(
    marks: _Marks,
    rows: list[_Row],
    norm: str,
    geo: _Geometry,
    boxes: dict[str, tuple[float, float, float, float]],
) -> None:
    """An arrow between each two consecutive boxes, then each sublayer's residual connection:
    from a branch point below it, up the lane on the right, into the box that adds it."""
    cx, lane_x = geo.cx, geo.lane_x
    for below, above in itertools.pairwise(rows):
        marks.annotations.append(
            _arrow(cx, boxes[below.key][3], cx, boxes[above.key][1], f"flow.{below.key}")
        )
    pairs = (("ln1", "add1"), ("ln2", "add2")) if norm == "pre" else (("attn", "ln1"), ("mlp", "ln2"))
    for start, end in pairs:
        yb = boxes[start][1] - _BRANCH
        ya = (boxes[end][1] + boxes[end][3]) / 2
        marks.shapes.append(
            {
                "type": "path",
                "name": f"residual.{end}",
                "path": f"M {cx:.1f},{yb:.1f} L {lane_x:.1f},{yb:.1f} L {lane_x:.1f},{ya:.1f}",
                "xref": "x",
                "yref": "y",
                "line": {"color": EDGE, "width": 1.6},
            }
        )
        marks.shapes.append(
            {
                "type": "circle",
                "name": f"branch.{end}",
                "x0": cx - 3,
                "x1": cx + 3,
                "y0": yb - 3,
                "y1": yb + 3,
                "xref": "x",
                "yref": "y",
                "fillcolor": EDGE,
                "line": {"width": 0},
            }
        )
        marks.annotations.append(_arrow(lane_x, ya, geo.box_x0 + geo.box_w, ya, f"residual.{end}"))


def _draw_headers_and_total(marks: _Marks, total_count: int, geo: _Geometry, plot_h: float) -> None:
    """The line over the boxes ("reads bottom to top"), the column headers beside it, and the
    total under the parameter column (under the one column when narrow) with a rule above it."""
    _, _, info_px, note_px = geo.fonts
    top = plot_h - _header_px(geo.narrow) / 2
    marks.annotations.append(
        _text(
            f"<b>{tr('reads bottom to top')}</b>", geo.cx, top, _HEADER_FONT, color=MUTED, name="header.flow"
        )
    )
    shape_head, params_head = _headers(geo.narrow)
    total, exact = _total_lines(total_count)
    total_col = [(f"<b>{total}</b>", info_px, INK, "total"), (exact, note_px, INK, "exact")]
    total_y = (_TOTAL_PX - 8) / 2
    if geo.narrow:
        heads = [
            (f"<b>{shape_head}</b>", _HEADER_FONT, MUTED, "shape"),
            (f"<b>{params_head}</b>", _HEADER_FONT, MUTED, "params"),
        ]
        _column(marks.annotations, "header", heads, geo.shape_x, top, "left", "")
        _column(marks.annotations, "total", total_col, geo.shape_x, total_y, "left", "")
        rule_x0 = geo.shape_x
    else:
        for text, x, anchor, key in (
            (shape_head, geo.shape_x, "left", "header.shape"),
            (params_head, geo.params_x1, "right", "header.params"),
        ):
            marks.annotations.append(
                _text(f"<b>{text}</b>", x, top, _HEADER_FONT, anchor=anchor, color=MUTED, name=key)
            )
        _column(marks.annotations, "total", total_col, geo.params_x1, total_y, "right", "")
        rule_x0 = geo.params_x1 - max(text_px(total, info_px) * _BOLD, text_px(exact, note_px))
    marks.shapes.append(
        {
            "type": "line",
            "name": "total.rule",
            "x0": rule_x0,
            "x1": geo.params_x1,
            "y0": _TOTAL_PX - 6,
            "y1": _TOTAL_PX - 6,
            "xref": "x",
            "yref": "y",
            "line": {"color": MUTED, "width": 1},
        }
    )


def _column(
    annotations: list[dict[str, Any]],
    key: str,
    lines: list[tuple[str, int, str, str]],
    x: float,
    c: float,
    anchor: str,
    hover: str,
) -> None:
    """Lines of text stacked around height ``c``, left- or right-aligned at ``x``."""
    lines = [ln for ln in lines if ln[0]]
    heights = [size * _LINE for _, size, _, _ in lines]
    y = c + sum(heights) / 2
    for (text, size, color, part), h in zip(lines, heights, strict=True):
        y -= h / 2
        extra = {"hovertext": hover} if hover else {}
        annotations.append(_text(text, x, y, size, anchor=anchor, color=color, name=f"{key}.{part}", **extra))
        y -= h / 2
