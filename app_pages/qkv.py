"""Q, K and V of one head, beside the scores they produce and the output they mix."""

import inspect

import streamlit as st

from tformer import attention_scores, ui
from tformer.figures.qkv import head_output_heatmap, qkv_figure

st.header("Q, K, V: where the scores come from")
st.latex(r"Q = XW_Q,\quad K = XW_K,\quad V = XW_V,\qquad "
         r"\text{head} = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V")
ctx = ui.page_context()
cap = ctx.capture
layer, head = ui.layer_head(ctx)
kind = st.radio("beside Q, K, V show", ["scores", "pattern"], key="qkv_kind", horizontal=True,
                format_func={"scores": "scaled scores", "pattern": "softmax weights"}.get)
matrix = cap.scores[layer, head] if kind == "scores" else cap.patterns[layer, head]
q, k, v = (a[layer, :, head, :] for a in (cap.q, cap.k, cap.v))  # [pos, d_head]
st.plotly_chart(qkv_figure(q, k, v, matrix, ctx.labels, kind=kind), key="qkv")
st.caption(
    f"Each row of Q, K and V is one token's {q.shape[1]}-number vector for this head (d_head = "
    f"{q.shape[1]}). Score[i, j] is the dot product of Q row i with K row j, divided by "
    f"√{q.shape[1]}: a query and key that point the same way give a high score."
)
st.subheader("What the head outputs")
st.latex(r"z_i = \sum_j \mathrm{weight}_{ij}\, V_j")
st.plotly_chart(head_output_heatmap(cap.z[layer, :, head, :], ctx.labels), key="z")
st.caption("Each output row is a weighted average of the V rows, with this head's weights. "
           "All heads' outputs are concatenated and multiplied by W_O.")
with st.expander("The code that computed the scores"):
    st.code(inspect.getsource(attention_scores), language="python")
