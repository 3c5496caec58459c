r"""What a page shows a reader, as text, and the English words left in it (for the 中文 test).

`visible_strings` walks an AppTest tree and returns every string a reader sees: headers,
markdown, captions, alerts, widget labels, options and help (buttons, download buttons, page
links, segmented controls and pills included), tab and expander labels, metric labels, table
headers and text cells, the words the heads overview draws (its axis titles, image description and cell names), and in
each plotly chart the titles, axis titles, annotations, legend and colorbar titles, trace names
and the words of the hover boxes. Formulas (st.latex, $...$) count by their prose: the
``\text{...}`` parts at the formula's base level (``\text{masked scores} = -\infty``), while
symbols, operator names and text inside a sub- or superscript (``d_\text{head}``,
``m^{\text{new}}``) stay out, as do code (st.code, `...`) and the text box's own value.
`english_words` then strips what may stay in Latin letters: identifiers (with a digit or an
underscore: d_model, W_O, L0H3, float32, attn_scores; XW<sub>Q</sub> counts as XW_Q), file
paths, token text of the current sentence, and a short list of names and symbols (MiniLM,
softmax, GRU, CPU...). `cut_labels` finds labels that code shortened with an ellipsis.
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
    GPT RoBERTa XLM ELECTRA DistilBERT
    rollout
    """.split()
}  # rollout: the literature's term, glossed once beside 注意力展开 in a lesson
_SKIP_KEYS = {"id", "formId", "key", "type", "dtype", "bdata", "shape", "url", "pageScriptHash", "icon"}
# "content": a segmented control's or pills' option (ButtonGroup.options[].content)
_TEXT_KEYS = {
    "body",
    "label",
    "help",
    "options",
    "placeholder",
    "caption",
    "text",
    "title",
    "name",
    "content",
}
_PLOT_TEXT = {"text", "title"}  # an annotation's or shape's "name" is an id plotly never draws
_LATEX = re.compile(r"\$\$.*?\$\$|\$[^$]*\$", re.S)
_CODE = re.compile(r"```.*?```|`[^`]*`", re.S)
_HOVER_VALUE = re.compile(r"%\{[^}]*\}")
_TAG = re.compile(r"<[^>]*>")  # plotly's <b>, <sub>, <span style=...> markup
_SCRIPT = re.compile(r"<su[bp]>(.*?)</su[bp]>")  # XW<sub>Q</sub> is a symbol, as XW_Q is
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'’]*")
_PATH = re.compile(r"(?<![\w/])(?:~|\.{1,2})?(?:/[\w.+@-]+)+/?")  # a file's path is a name


_TEXT_MACRO = re.compile(r"\\(?:text|textrm|textit|textbf|textsf|mbox)\s*\{")
_LATEX_ESCAPE = re.compile(r"\\([_%&#$ ,;:!{}])")


def latex_prose(latex: str) -> list[str]:
    """The ``\\text{...}`` words of a formula at its base level, escapes undone
    (``\\text{attn\\_scores}`` -> ``attn_scores``); text in a sub- or superscript is part of a
    symbol's name and left out."""
    out: list[str] = []
    script_depth: list[bool] = []  # one entry per open group: is it a sub/superscript?
    i = 0
    while i < len(latex):
        m = _TEXT_MACRO.match(latex, i)
        if m:
            start, depth, j = m.end(), 1, m.end()
            while j < len(latex) and depth:
                if latex[j] == "\\":
                    j += 2
                    continue
                depth += {"{": 1, "}": -1}.get(latex[j], 0)
                j += 1
            before = latex[:i].rstrip()
            in_script = before.endswith(("_", "^")) or any(script_depth)
            if not in_script:
                out.append(_LATEX_ESCAPE.sub(r"\1", latex[start : j - 1]))
            i = j
            continue
        c = latex[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            script_depth.append(latex[:i].rstrip().endswith(("_", "^")))
        elif c == "}" and script_depth:
            script_depth.pop()
        i += 1
    return out


def _prose_of_math(text: str) -> str:
    """``text`` with each $...$ span replaced by its formula's prose."""
    return _LATEX.sub(lambda m: " " + " ".join(latex_prose(m.group(0).strip("$"))) + " ", text)


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


def _component_strings(proto: Any) -> list[str]:
    """The words a custom component draws. The heads overview (``tformer_head_grid``) draws
    the words of its data's ``labels`` (axis titles, image description, cell names); a grid
    given none is one whose script writes its own English words, reported as such."""
    if proto.component_name != "tformer_head_grid":
        return []
    labels = json.loads(proto.json or "{}").get("labels")
    if not isinstance(labels, dict):
        return ["heads overview without labels: its JavaScript draws its own words"]
    # the browser fills each cell's name in with its numbers
    return [str(v).replace("{layer}", "0").replace("{head}", "0") for v in labels.values()]


def _table_strings(node: Any) -> list[str]:
    """A table's column headers (as configured) and its text cells."""
    frame = node.value
    config = json.loads(node.proto.columns or "{}")
    labels = {k: v.get("label") for k, v in config.items() if isinstance(v, dict)}
    out = [str(labels.get(str(c)) or c) for c in frame.columns if labels.get(str(c)) != ""]
    for c in frame.columns:
        if frame[c].dtype.kind in "OSU" or str(frame[c].dtype).startswith("string"):
            out.extend(str(v) for v in frame[c].dropna().unique())
    return out


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
            if proto is None or kind == "code":
                continue
            if kind == "latex":
                out.extend(latex_prose(proto.body))
                continue
            if kind == "plotly_chart":
                out.extend(_plot_strings(json.loads(proto.spec)))
                continue
            if kind == "bidi_component":
                out.extend(_component_strings(proto))
                continue
            if kind == "dataframe":
                out.extend(_table_strings(node))
                continue
            data = MessageToDict(proto, preserving_proto_field_name=False)
            if kind == "text_area":
                data.pop("value", None)
                data.pop("default", None)
            out.extend(_strings(data, _TEXT_KEYS))
    return [_TAG.sub(" ", _SCRIPT.sub(r"_\1", _CODE.sub(" ", _prose_of_math(s)))) for s in out]


def english_words(strings: Iterable[str], tokens: Iterable[str] = ()) -> dict[str, str]:
    """English words left in ``strings``: word -> the first string it was found in."""
    kept = KEPT | {t.lower().strip("#") for t in tokens}
    found: dict[str, str] = {}
    for s in strings:
        for m in _WORD.finditer(_PATH.sub(" ", s)):
            w = m.group(0)
            if len(w) < 2 or any(c.isdigit() or c == "_" for c in w) or w.lower().strip("'’") in kept:
                continue
            found.setdefault(w, s[:120])
    return found


def saved_run_words() -> list[str]:
    """The words of the saved runs' names (``copy-2L4H64-s10-...``): names of the reader's data,
    shown as they are in a picker, where the 中文 interface shows them too."""
    from tformer.training.checkpoints import list_runs

    return [w for info in list_runs() for w in _WORD.findall(info.name)]


_BUTTON_LIKE = ("button", "download_button", "page_link", "button_group", "tab", "expander")
_ELLIPSIS = ("…", "...", "⋯")


def cut_labels(at: Any) -> list[str]:
    """Labels of buttons, download buttons, page links, segmented controls and pills, tabs and
    expanders that end in an ellipsis: shortened by code, so the reader never sees them whole."""
    out: list[str] = []
    for root in (at.main, at.sidebar):
        for node in _nodes(root):
            proto = getattr(node, "proto", None)
            if proto is None or getattr(node, "type", "") not in _BUTTON_LIKE:
                continue
            data = MessageToDict(proto, preserving_proto_field_name=False)
            data.pop("help", None)
            out.extend(s for s in _strings(data, {"label", "content"}) if s.rstrip().endswith(_ELLIPSIS))
    return out
