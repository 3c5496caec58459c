"""One head in detail, and every head of every layer at a glance."""

import streamlit as st

from tformer import ui
from tformer.figures.attention import attention_heatmap

st.header("Attention: who looks at whom")
st.latex(
    r"\mathrm{Attention}(Q,K,V)=\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V"
    r"\qquad \text{masked scores} = -\infty"
)
ctx = ui.page_context()
cap = ctx.capture

left, right = st.columns([11, 9], gap="medium")
with left:
    layer, head = ui.layer_head(ctx)
    kind = st.radio(
        "show", ["weights", "scores"], key="attn_kind", horizontal=True,
        format_func={"weights": "softmax weights", "scores": "scaled scores QKᵀ/√d_k"}.get,
    )
    matrix = cap.patterns[layer, head] if kind == "weights" else cap.scores[layer, head]
    st.plotly_chart(
        attention_heatmap(matrix, ctx.labels, kind="pattern" if kind == "weights" else "scores",
                          title=f"layer {layer}, head {head}"),
        key="detail",
    )
    st.caption(
        "Row = the query token, column = the key it looks at; each row of weights sums to 1. "
        "Look for heads that attend to the previous token (a diagonal just below the main one), "
        "to [CLS] or [SEP] (a bright column), or from a pronoun to the noun it stands for."
    )
with right:
    st.subheader("Every layer x every head")
    ui.overview(ctx, (layer, head))
    st.caption(
        f"{cap.n_layers} layers x {cap.n_heads} heads, {cap.n_pos} tokens. Click a head to open it on "
        "the left. Early layers often look locally; later ones link related words."
    )
