"""What a page shows a reader, as text, and the English words left in it (for the 中文 test).

`visible_strings` walks an AppTest tree and returns every string a reader sees: headers,
markdown, captions, alerts, widget labels, options and help, tab and expander labels, metric
labels, and in each plotly chart the titles, axis titles, annotations, legend and colorbar
titles, trace names and the words of the hover boxes. Left out: formulas (st.latex, $...$),
code (st.code, `...`), and the text box's own value. `english_words` then strips what may stay
in Latin letters: identifiers (with a digit or an underscore: d_model, W_O, L0H3, float32),
token text of the current sentence, and a short list of names and symbols (MiniLM, softmax,
GRU, CPU...).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from typing import Any

from google.protobuf.json_format import MessageToDict

# Names, units and symbols that stay as they are in a Chinese interface.
KEPT = {
    w.lower()
    for w in """
    tformer Transformer MiniLM BERT softmax LayerNorm RMSNorm GELU ReLU FFN MLP RNN GRU LSTM Adam AdamW
    Noam SGD PCA AttentionViz Abnar Zuidema Vaswani FlashAttention Flash SDPA CLS SEP PAD UNK MASK QK OV
    QKV KV PE LN CPU GPU CUDA MPS PyTorch torch numpy NumPy Streamlit plotly Plotly kaleido safetensors
    JSON CSV NPZ PNG SVG HTML URL ID IDs API Ctrl Enter Shift Chromium Chrome max min exp log sin cos
    tanh erf argmax diag Concat concat ms MB KB GB MiB GiB KiB fp bf INT pos dim TransformerLens nanoGPT
    BertViz Jupyter pip TFORMER Python NaN cuDNN
    """.split()
}
_SKIP_KEYS = {"id", "formId", "key", "type", "dtype", "bdata", "shape", "url", "pageScriptHash", "icon"}
_TEXT_KEYS = {"body", "label", "help", "options", "placeholder", "caption", "text", "title", "name"}
_PLOT_TEXT = {"text", "title"}  # an annotation's or shape's "name" is an id plotly never draws
_LATEX = re.compile(r"\$\$.*?\$\$|\$[^$]*\$", re.S)
_CODE = re.compile(r"```.*?```|`[^`]*`", re.S)
_HOVER_VALUE = re.compile(r"%\{[^}]*\}")
_TAG = re.compile(r"<[^>]*>")  # plotly's <b>, <sub>, <span style=...> markup
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'’]*")


def _nodes(node: Any) -> Iterator[Any]:
    yield node
    children = getattr(node, "children", None)
    if isinstance(children, dict):
        for child in children.values():
            yield from _nodes(child)


def _strings(value: Any, keys: set[str], key: str = "") -> Iterator[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            if k not in _SKIP_KEYS:
                yield from _strings(v, keys, k)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v, keys, key)
    elif isinstance(value, str) and key in keys:
        yield value


def _plot_strings(spec: dict) -> Iterator[str]:
    layout = spec.get("layout", {})
    for k, v in layout.items():
        if k.startswith(("xaxis", "yaxis", "coloraxis", "legend")) or k in ("title", "annotations"):
            if k.startswith(("xaxis", "yaxis")) and isinstance(v, dict):
                v = {"title": v.get("title")}  # tick labels are token text
            yield from _strings(v, _PLOT_TEXT)
    for trace in spec.get("data", []):
        if trace.get("showlegend", True) and isinstance(trace.get("name"), str):
            yield trace["name"]
        hover = trace.get("hovertemplate")
        for h in hover if isinstance(hover, list) else [hover]:
            if isinstance(h, str):  # the words of the hover box; %{...} are the values
                yield _HOVER_VALUE.sub(" ", h).replace("<extra></extra>", " ")
        bar = trace.get("colorbar") or (trace.get("marker") or {}).get("colorbar")
        if isinstance(bar, dict):
            yield from _strings(bar.get("title"), _PLOT_TEXT, "title")


def visible_strings(at: Any) -> list[str]:
    """Every string a reader of the page ``at`` (an AppTest after run) sees, formulas and code
    removed."""
    out: list[str] = []
    # TFORMER_I18N_MAIN_ONLY=1: the page's own body only (while the shared sidebar is translated)
    roots = (at.main,) if os.environ.get("TFORMER_I18N_MAIN_ONLY") else (at.main, at.sidebar)
    for root in roots:
        for node in _nodes(root):
            proto = getattr(node, "proto", None)
            kind = getattr(node, "type", "")
            if proto is None or kind in ("code", "latex"):
                continue
            if kind == "plotly_chart":
                out.extend(_plot_strings(json.loads(proto.spec)))
                continue
            data = MessageToDict(proto, preserving_proto_field_name=False)
            if kind == "text_area":
                data.pop("value", None)
                data.pop("default", None)
            out.extend(_strings(data, _TEXT_KEYS))
    return [_TAG.sub(" ", _CODE.sub(" ", _LATEX.sub(" ", s))) for s in out]


def english_words(strings: Iterable[str], tokens: Iterable[str] = ()) -> dict[str, str]:
    """English words left in ``strings``: word -> the first string it was found in."""
    kept = KEPT | {t.lower().strip("#") for t in tokens}
    found: dict[str, str] = {}
    for s in strings:
        for m in _WORD.finditer(s):
            w = m.group(0)
            if len(w) < 2 or any(c.isdigit() or c == "_" for c in w) or w.lower().strip("'’") in kept:
                continue
            found.setdefault(w, s[:120])
    return found
