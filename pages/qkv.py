"""Q, K and V of one head, beside the scores they produce and the output they mix."""

import streamlit as st

from tformer import ui
from tformer.figures.qkv import head_output_heatmap, qkv_figure
from tformer.i18n import tr

with ui.page_context(__file__) as ctx:
    ui.formula("MultiHeadAttention.forward", label="The code of the attention layer")
    cap = ctx.capture
    layer, head = ui.layer_head(ctx)
    kind = ui.matrix_kind("beside Q, K, V show", "qkv.kind")
    q, k, v = (a[layer, :, head, :] for a in (cap.q, cap.k, cap.v))  # [pos, d_head]
    ui.chart(qkv_figure(q, k, v, cap[kind][layer, head], ctx.labels, kind=kind), key="qkv")
    st.caption(
        tr(
            "Each row of Q, K and V is one token's {d}-number vector for this head (d_head = {d}). "
            "Score[i, j] is the dot product of Q row i with K row j, divided by √{d}: a query and key "
            "that point the same way give a high score.",
            d=q.shape[1],
        )
    )
    ui.source("attention_scores", label="The code that computed the scores")

    st.subheader(tr("What the head outputs"))
    ui.formula("scaled_dot_product_attention")
    ui.chart(head_output_heatmap(cap.z[layer, :, head, :], ctx.labels), key="z")
    st.caption(
        tr(
            "Each output row is a weighted average of the V rows, with this head's weights. "
            "All heads' outputs are concatenated and multiplied by W_O."
        )
    )
