"""One encoder layer on the user's text, step by step: every formula with the live numbers and the
code that computed them; one score dimension by dimension; the seeds' two layouts of attention."""

import streamlit as st

from tformer import ui
from tformer.analysis.walkthrough import neuron_view
from tformer.figures.walkthrough import neuron_figure
from tformer.i18n import tr
from tformer.ui.views import steps as view

SECTIONS = {
    "walk": "Walk through a layer",
    "neuron": "One score, dimension by dimension",
    "layouts": "Two ways to write attention",
}

with ui.page_context(__file__, view.WALK_NAMES, one_layer=True) as ctx:
    cap, cfg = ctx.capture, ctx.capture.cfg
    part = ui.section("steps.section", SECTIONS)
    layer, head, query = ui.layer_head_query(ctx)

    if part == "walk":
        with st.spinner(tr("Walking the layer...")):
            walk = view.walk(ctx.choice, ctx.text, layer, head)
        index = view.step_bar(walk)
        c1, c2 = st.columns([2, 1])
        zooms = {z: tr(label, w=view.WINDOW) for z, label in view.ZOOMS.items()}
        zoom = c1.radio(
            tr("show"),
            list(zooms),
            horizontal=True,
            format_func=zooms.__getitem__,
            **ui.bind("steps.zoom", list(view.ZOOMS)),
        )
        width = walk.steps[index].value.shape[1]
        dim = 0
        if zoom == "window" and walk.steps[index].axes[1] != "key_pos" and width > view.WINDOW:
            dims = range(0, width - view.WINDOW + 1)
            dim = c2.number_input(
                tr("first dimension shown"),
                0,
                width - view.WINDOW,
                step=view.WINDOW,
                **ui.bind("steps.dim", dims, clamp=True),
            )
        facts = view.step_facts(cfg, walk, layer, head, query, ctx.labels)
        view.show_step(walk, index, ctx.labels, query, facts, zoom=zoom, dim=int(dim))

    elif part == "neuron":
        ui.formula(neuron_view, code=False)
        row = cap.at("pattern", layer)[head, query]
        n = cap.n_pos
        key = st.selectbox(
            tr("key token"),
            range(n),
            format_func=lambda i: f"{i} · {ctx.labels[i]}",
            **ui.bind("steps.key", range(n), clamp=True, fallback=int(row.argmax())),
        )
        nv = view.neuron(ctx.choice, ctx.text, layer, head, query, int(key))
        ui.chart(neuron_figure(nv.q, nv.k, nv.products), key="neuron")
        model_score = float(cap.at("attn_scores", layer)[head, query, key])
        m1, m2, m3, m4 = st.columns(4)
        masked = tr("−∞ (masked)")
        m1.metric("Σ_d q_d·k_d", f"{nv.raw:.4f}")
        m2.metric(f"÷ √{cfg.d_head}", masked if nv.scaled == float("-inf") else f"{nv.scaled:.4f}")
        m3.metric(tr("the model's score"), masked if model_score == float("-inf") else f"{model_score:.4f}")
        m4.metric(tr("share after softmax"), f"{nv.share:.1%}")
        st.caption(
            tr(
                "The score is a sum of {d_head} products, one per dimension of the head: dimensions "
                "where q and k share a sign push it up, the others pull it down. The softmax then "
                "compares it with every other key of the row (the key chosen by default is the one "
                "this query weights most). Checked against the model's `{hook}`.",
                d_head=cfg.d_head,
                hook=f"blocks.{layer}.attn.hook_attn_scores",
            )
        )
        ui.source(neuron_view)

    else:
        st.markdown(
            tr(
                "The two seed documents write multi-head attention in two layouts. The classic one "
                "keeps W_Q, W_K and W_V as three Linear layers; the fused one stacks them in one "
                "Linear of 3 × d_model outputs, splits the result in three, and takes a mask. They "
                "compute the same thing: below, both are built from this layer's own weights and "
                "run on its input."
            )
        )
        left, right = st.columns(2)
        with left:
            st.markdown(f"**{tr('Separate W_Q, W_K, W_V')}**")
            st.code(ui.source_text("SeparateQKV"), language="python", wrap_lines=True)
        with right:
            st.markdown(f"**{tr('One fused Linear, with a mask')}**")
            st.code(ui.source_text("FusedQKV"), language="python", wrap_lines=True)
        with st.spinner(tr("Running both layouts...")):
            agree = view.layouts_agree(ctx.choice, ctx.text, layer)
        m1, m2, m3 = st.columns(3)
        m1.metric(tr("largest |separate − fused|"), f"{agree['separate_vs_fused']:.1e}")
        m2.metric(tr("largest |fused − the model|"), f"{agree['fused_vs_model']:.1e}")
        m3.metric(tr("largest |output|"), f"{agree['max_abs_output']:.3g}")
        st.caption(
            tr(
                "On this text at layer {layer}: the fused weights split into three ({d_model} rows "
                "each) give the separate layout's W_Q, W_K and W_V, so the outputs agree to float32 "
                "rounding.",
                layer=layer,
                d_model=cfg.d_model,
            )
        )
        ui.source(
            "analysis.layouts.attend",
            label="Steps 2-6, shared by both: score, scale, mask, softmax, weight the values",
        )
        ui.source("split_fused", label="How the fused weights split into the separate ones")
