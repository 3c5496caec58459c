"""Heads side by side, a number for each head, how alike heads are, and what removing one does."""

import streamlit as st

from tformer import ui
from tformer.analysis import head_metrics, js_divergence_matrix, metrics_table
from tformer.figures.heads import (
    ablation_effect_figure,
    head_metrics_figure,
    head_similarity_heatmap,
    heads_side_by_side,
)

with ui.page_context(__file__) as ctx:
    cap = ctx.capture
    names = ui.head_names(cap.n_layers, cap.n_heads)
    layer = min(ctx.view.layer, cap.n_layers - 1)
    first_heads = [f"L{layer}H{h}" for h in range(min(4, cap.n_heads))]
    chosen = st.multiselect(
        "heads to compare (one color scale)",
        names,
        max_selections=12,
        **ui.bind("heads.compare", names, fallback=first_heads),
    )
    if chosen:
        idx = [names.index(h) for h in chosen]
        pats = [cap.pattern[i // cap.n_heads, i % cap.n_heads] for i in idx]
        st.plotly_chart(heads_side_by_side(pats, chosen, ctx.labels), key="side_by_side")
        st.caption("The same color means the same weight in every panel.")

    st.subheader("A number for every head")
    ui.formula(head_metrics)
    metrics = ui.head_stats(ctx.choice, ctx.text)
    m1, m2 = st.columns([2, 3])
    metric = m1.selectbox("metric", list(metrics), **ui.bind("heads.metric", list(metrics)))
    m1.plotly_chart(head_metrics_figure(metrics, metric), key="metric_map")
    m2.dataframe(metrics_table(metrics), hide_index=True, height=420)
    st.caption(
        "Entropy: low = the head focuses on few tokens. Mean distance: how far it looks. "
        "self / prev / first / cls / sep: share of weight on that token. Click a column to sort."
    )

    st.subheader("How alike are the heads?")
    ui.formula(js_divergence_matrix)
    st.plotly_chart(head_similarity_heatmap(ui.head_similarity(ctx.choice, ctx.text), names), key="js")
    st.caption(
        "Jensen-Shannon divergence between two heads' patterns, averaged over query rows: "
        "0 = identical, 1 = no overlap. Dark blocks are groups of heads doing the same job."
    )

    st.subheader("Ablation: switch heads off")
    ablate = st.multiselect("heads to zero", names, **ui.bind("heads.ablate", names, fallback=chosen[:1]))
    if ablate:
        heads = tuple((names.index(h) // cap.n_heads, names.index(h) % cap.n_heads) for h in ablate)
        change = ui.ablation_change(ctx.choice, ctx.text, heads)
        st.plotly_chart(
            ablation_effect_figure(change, ctx.labels, f"zeroing {', '.join(ablate)}"), key="ablation"
        )
        st.caption(
            "Each bar: how much that token's final hidden state moves (relative L2 change) when the "
            "chosen heads' outputs are set to zero before W_O."
        )
