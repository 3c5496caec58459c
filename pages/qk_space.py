"""The chosen head's queries and keys as points in one plane: a query attends to keys whose
dot product with it is large."""

import streamlit as st

from tformer import ui
from tformer.analysis.rollout import project_2d, top_pairs
from tformer.figures.layers import qk_space_figure
from tformer.i18n import tr

with ui.page_context(__file__) as ctx:
    from tformer.ui.views import qk_space as view  # after the frame: a view loads torch

    cap = ctx.capture
    layer, head = ui.layer_head(ctx)
    c1, c2 = st.columns(2, vertical_alignment="bottom")
    translate = c1.toggle(tr("move the keys onto the queries' mean"), **ui.bind("qk_space.translate"))
    n_pairs = c2.slider(
        tr("lines for the most attended (query, key) pairs"), **ui.bind_number("qk_space.pairs")
    )
    proj = view.qk_projection(ctx.choice, ctx.text, layer, head, bool(translate))
    pairs = top_pairs(cap.pattern[layer, head], int(n_pairs)) if n_pairs else []
    ui.chart(qk_space_figure(proj, ctx.labels, pairs=pairs), key="qk_space")
    share = sum(proj.explained[:2])
    st.caption(
        tr(
            "Queries and keys of layer {layer}, head {head} ({d_head} numbers each) projected together onto "
            "their two main directions (PCA; {share:.0%} of their spread). A query attends to the keys with "
            "the largest dot product: far from the center in its own direction. Lines join the pairs with "
            "the largest weights. Moving the keys onto the queries' mean removes a shift that the softmax "
            "ignores (adding the same vector to every key adds the same number to a query's every score), "
            "as AttentionViz does.",
            layer=layer,
            head=head,
            d_head=cap.cfg.d_head,
            share=share,
        )
    )
    ui.formula(project_2d, code=False)
