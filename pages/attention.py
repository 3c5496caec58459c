"""One head in detail, and every head of every layer at a glance."""

import streamlit as st

from tformer import scaled_dot_product_attention, ui
from tformer.figures.attention import attention_heatmap

with ui.page_context(__file__) as ctx:
    ui.formula(scaled_dot_product_attention, code=False)
    cap = ctx.capture

    left, right = st.columns([11, 9], gap="medium")
    with left:
        layer, head = ui.layer_head(ctx)
        kind = ui.matrix_kind("show", "attention.kind")
        st.plotly_chart(
            attention_heatmap(
                cap[kind][layer, head], ctx.labels, kind=kind, title=f"layer {layer}, head {head}"
            ),
            key="detail",
        )
        st.caption(
            "Row = the query token, column = the key it looks at; each row of weights sums to 1. "
            "Look for heads that attend to the previous token (a diagonal just below the main one), "
            "to the first or last token (a bright column), or from a pronoun to the noun it stands for."
        )
    with right:
        st.subheader("Every layer x every head")
        ui.overview(ctx, (layer, head))
        st.caption(
            f"{cap.n_layers} layers x {cap.n_heads} heads, {cap.n_pos} tokens. Click a head to open it on "
            "the left. Early layers often look locally; later ones link related words."
        )
