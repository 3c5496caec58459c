"""A self-contained HTML report of one text: the sentence, every head of every layer at a
glance, the chosen heads in detail and the per-head metrics, in one file that opens with the
network off.

Self-contained means no request leaves the file: no script, no stylesheet, no font from a host;
the overview is our own palette PNG (`tformer.figures.overview.mosaic_png`) and each chosen
head is kaleido's SVG of the app's own heatmap, both inlined as ``data:`` images (an SVG put in
an <img> cannot run scripts). Every piece of user text (the sentence, the tokens, the model's
label) is HTML-escaped. No JavaScript at all, which is also why it stays small: plotly.js alone
is 4.8 MB. At 128 tokens with MiniLM and three heads the file is ~0.4 MB.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from ..i18n import language, tr
from .attention import attention_heatmap
from .images import ExportUnavailable, figure_image
from .overview import GAP_PX, default_cell_px, mosaic_png

_CSS = """
body { font: 16px/1.5 system-ui, "Noto Sans CJK SC", "WenQuanYi Zen Hei", sans-serif; margin: 2rem auto;
       max-width: 1100px; padding: 0 1rem; color: #1b1f24; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 2rem; border-bottom: 1px solid #ddd; }
.text { white-space: pre-wrap; background: #f6f8fa; padding: .75rem 1rem; border-radius: 6px; }
.tokens span { display: inline-block; border: 1px solid #ccc; border-radius: 4px; padding: 0 .3rem;
               margin: .1rem; font-family: ui-monospace, monospace; font-size: .9rem; }
.grid { border-collapse: collapse; } .grid td, .grid th { padding: 2px 4px; text-align: center; font-size: .8rem; }
.mosaic { image-rendering: pixelated; display: block; }
table.metrics { border-collapse: collapse; font-size: .85rem; }
table.metrics th, table.metrics td { border: 1px solid #ddd; padding: 2px 6px; text-align: right; }
figure { margin: 1rem 0; } figcaption { color: #555; font-size: .9rem; }
.note { color: #555; font-size: .9rem; }
"""


def _img(data: bytes, mime: str, alt: str, **attrs: object) -> str:
    extra = "".join(f' {k}="{html.escape(str(v))}"' for k, v in attrs.items())
    src = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
    return f'<img src="{src}" alt="{html.escape(alt)}"{extra}>'


def _overview(pattern: Any) -> str:
    n_layers, n_heads, n_pos, _ = pattern.shape
    cell = default_cell_px(n_pos)
    png = mosaic_png(pattern, cell)
    scale = max(1, 64 // cell)  # thumbnails at least 64 px on screen
    width = (n_heads * (cell + GAP_PX) - GAP_PX) * scale
    image = _img(png, "image/png", tr("every head of every layer"), width=width, **{"class": "mosaic"})
    layer_labels = "<br>".join(
        f'<span style="display:inline-block;height:{(cell + GAP_PX) * scale}px">{layer}</span>'
        for layer in range(n_layers)
    )
    return (
        '<table class="grid"><tr><th></th>'
        f'<th colspan="{n_heads}">{html.escape(tr("head"))} 0 … {n_heads - 1}</th></tr>'
        f'<tr><td style="vertical-align:top;line-height:1">{layer_labels}</td>'
        f'<td colspan="{n_heads}">{image}</td></tr></table>'
        f'<p class="note">{html.escape(tr("Rows are layers (0 at the top), columns are heads; each square is one head’s softmax weights, queries down, keys across."))}</p>'
    )


def _head(capture: Any, layer: int, head: int) -> str:
    title = tr("layer {layer}, head {head}", layer=layer, head=head)
    pattern = capture.at("pattern", layer)[head]
    fig = attention_heatmap(pattern, capture.labels, title=title)
    try:
        body = _img(figure_image(fig, "svg"), "image/svg+xml", title)
    except ExportUnavailable as err:  # no Chromium: the same weights as a plain image
        cell = max(1, 512 // pattern.shape[0])
        body = _img(mosaic_png(pattern[None, None], cell), "image/png", title, **{"class": "mosaic"})
        body += f'<p class="note">{html.escape(tr("Drawn without axes: {why}.", why=str(err)))}</p>'
    return f"<figure>{body}<figcaption>{html.escape(title)}</figcaption></figure>"


def _metrics(rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return ""
    cols = list(rows[0])
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(f"<td>{'' if r[c] is None else html.escape(str(r[c]))}</td>" for c in cols) + "</tr>"
        for r in rows
    )
    return f'<table class="metrics"><tr>{head}</tr>{body}</table>'


def build_report(
    capture: Any,
    text: str,
    *,
    model_label: str,
    heads: Sequence[tuple[int, int]] = (),
    metrics: Sequence[Mapping[str, Any]] = (),
    when: datetime | None = None,
) -> str:
    """The report as one HTML string. ``capture`` must hold "pattern" for every layer; ``heads``
    are (layer, head) pairs drawn in detail; ``metrics`` are rows of `analysis.metrics_table`."""
    if "pattern" not in capture or capture.layers is not None:
        raise ValueError("the report needs the attention pattern of every layer")
    when = when or datetime.now(timezone.utc)
    e = html.escape
    n = capture.n_pos
    tokens = "".join(f"<span>{e(t)}</span>" for t in capture.labels)
    parts = [
        f'<!DOCTYPE html><html lang="{"zh-Hans" if language() == "zh" else "en"}"><head><meta charset="utf-8">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\">",
        f"<title>{e(tr('tformer report'))}</title><style>{_CSS}</style></head><body>",
        f"<h1>{e(tr('What attention computes on this text'))}</h1>",
        f'<p class="note">{e(tr("Model: {model}. {n} tokens. Made by tformer on {when}.", model=model_label, n=n, when=when.strftime("%Y-%m-%d %H:%M UTC")))}</p>',
        f'<h2>{e(tr("The text"))}</h2><div class="text">{e(text)}</div>',
        f'<h2>{e(tr("Its tokens"))}</h2><div class="tokens">{tokens}</div>',
        f"<h2>{e(tr('Every layer × every head'))}</h2>{_overview(capture.pattern)}",
    ]
    if heads:
        parts.append(f"<h2>{e(tr('Chosen heads'))}</h2>")
        parts.extend(_head(capture, layer, head) for layer, head in heads)
    if metrics:
        parts.append(f"<h2>{e(tr('A number for each head'))}</h2>")
        parts.append(
            f'<p class="note">{e(tr("entropy in bits; mean_distance in positions; self, previous, first, cls, sep: the mean weight on that key; max: the mean largest weight of a row."))}</p>'
        )
        parts.append(_metrics(metrics))
    parts.append("</body></html>")
    return "\n".join(parts)
