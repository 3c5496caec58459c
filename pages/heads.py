"""Heads side by side, a number for each head, how alike heads are, and what removing one does."""

import streamlit as st

from tformer import ui
from tformer.analysis.metrics import head_metrics, js_divergence_matrix, metrics_table
from tformer.figures.heads import (
    ablation_effect_figure,
    head_metrics_figure,
    head_similarity_heatmap,
    heads_side_by_side,
    metric_name,
)
from tformer.i18n import tr

# English templates (ui.section translates them)
SECTIONS = {
    "compare": "Side by side",
    "numbers": "A number for every head",
    "likeness": "How alike are the heads?",
    "ablation": "Switch heads off",
}

with ui.page_context(__file__) as ctx:
    from tformer.ui.views import heads as view  # after the frame: a view loads torch

    cap = ctx.capture
    names = view.head_names(cap.n_layers, cap.n_heads)
    part = ui.section("heads.section", SECTIONS)

    if part == "compare":
        layer = ctx.chosen()[0]
        first_heads = [f"L{layer}H{h}" for h in range(min(4, cap.n_heads))]
        c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
        chosen = c1.multiselect(
            tr("heads to compare (one color scale)"),
            names,
            max_selections=12,
            **ui.bind("heads.compare", names, fallback=first_heads),
        )
        scale = ui.weight_scale(c2)
        if chosen:
            idx = [names.index(h) for h in chosen]
            pats = [cap.pattern[i // cap.n_heads, i % cap.n_heads] for i in idx]
            ui.chart(heads_side_by_side(pats, chosen, ctx.labels, weight_scale=scale), key="side_by_side")
            st.caption(
                tr("The same color means the same weight in every panel (0 to 1). LxHy = layer x, head y.")
                if scale == "linear"
                else tr(
                    "The same color means the same weight in every panel, on a log scale from 0.0001 to 1. "
                    "LxHy = layer x, head y."
                )
                if scale == "log"
                else tr(
                    "Each row of each panel is divided by its largest weight: the brightest cell of a row "
                    "is that query's favourite key, however spread the row is. LxHy = layer x, head y."
                )
            )

    elif part == "numbers":
        ui.formula(head_metrics)
        metrics = view.head_stats(ctx.choice, ctx.text)
        metric = st.selectbox(
            tr("metric"), list(metrics), format_func=metric_name, **ui.bind("heads.metric", list(metrics))
        )
        ui.chart(head_metrics_figure(metrics, metric, width=940), key="metric_map")
        st.caption(
            tr(
                "Entropy (bits): low = the head focuses on few tokens. Mean distance: how many positions "
                "away it looks. self / previous / first / cls / sep: the share of weight on that token "
                "(cls and sep are the tokenizer's first and last special tokens). Click a column to sort."
            )
        )
        columns = {"layer": tr("layer"), "head": tr("head")} | {m: metric_name(m) for m in metrics}
        table = [{columns[k]: v for k, v in row.items()} for row in metrics_table(metrics, decimals=3)]
        # every head's row on screen for up to 72 heads (MiniLM); a scroll beyond that
        st.dataframe(table, hide_index=True, height=35 * (min(len(table), 72) + 1) + 3, width="stretch")

    elif part == "likeness":
        ui.formula(js_divergence_matrix)
        sim = view.head_similarity(ctx.choice, ctx.text)
        order = sim["order"]
        ui.chart(head_similarity_heatmap(sim["divergence"], names, order=order), key="js")
        about = (
            "every query row"
            if sim["rows"] >= sim["n_rows"]
            else "{rows} evenly spaced query rows of {n_rows} (to bound the work)"
        )
        st.caption(
            tr(
                "Jensen-Shannon divergence between two heads' patterns, averaged over {rows}: 0 = the same "
                "pattern (dark), 1 = no overlap (light). Heads are ordered by average-linkage clustering of "
                "the divergence, so a dark block along the diagonal is a group of heads that attend alike.",
                rows=tr(about, rows=sim["rows"], n_rows=sim["n_rows"]),
            )
        )

    else:
        layer = ctx.chosen()[0]
        ablate = st.multiselect(
            tr("heads to zero"), names, **ui.bind("heads.ablate", names, fallback=[f"L{layer}H0"])
        )
        if ablate:
            heads = tuple((names.index(h) // cap.n_heads, names.index(h) % cap.n_heads) for h in ablate)
            change = view.ablation_change(ctx.choice, ctx.text, heads)
            title = tr("zeroing {heads}", heads=", ".join(ablate))
            ui.chart(ablation_effect_figure(change, ctx.labels, title), key="ablation")
            st.caption(
                tr(
                    "Each bar: how much that token's final hidden state moves (relative L2 change) when the "
                    "chosen heads' outputs are set to zero before W_O."
                )
            )
