"""Sinusoidal positional encoding: the table, its waves, and why offsets are rotations."""

import streamlit as st

from tformer import pe_shift_matrix, sinusoidal_encoding, ui
from tformer.analysis import offset_similarity
from tformer.figures.positional import (
    attention_diff_figure,
    pe_matrix_heatmap,
    pe_offset_figure,
    pe_similarity_heatmap,
    pe_waves,
    shift_matrix_figure,
)

with ui.page_context(__file__) as ctx:
    ui.formula(sinusoidal_encoding)
    cfg = ctx.model.cfg
    d = cfg.d_model if cfg.d_model % 2 == 0 else cfg.d_model - 1
    c1, c2 = st.columns(2)
    n_pos = c1.slider(
        "positions shown",
        8,
        2 * cfg.max_len,
        **ui.bind("positional.n_pos", range(8, 2 * cfg.max_len + 1), clamp=True),
    )
    all_dims = list(range(d))
    default_dims = [i for i in (0, 1, 6, 7, d - 2) if 0 <= i < d]
    dims = c2.multiselect(
        "dimensions to plot",
        all_dims,
        max_selections=12,
        **ui.bind("positional.dims", all_dims, fallback=default_dims),
    )
    pe = ui.sinusoids(n_pos, d)  # [pos, d_model]

    st.plotly_chart(ui.shared_figure(pe_matrix_heatmap, pe, max_len=cfg.max_len), key="pe_matrix")
    st.caption(
        f"Sinusoidal encoding for d_model = {d}. Left columns (small i) change fast with pos, "
        "right columns slowly: together they give every position a unique fingerprint. "
        f"The dashed line marks max_len = {cfg.max_len}: sinusoids continue past it, but this "
        f"model reads at most {cfg.max_len} tokens, and a learned table has no row beyond it."
    )
    if dims:
        st.plotly_chart(ui.shared_figure(pe_waves, pe, tuple(dims)), key="pe_waves")

    st.subheader("Similarity depends only on the offset")
    ui.formula(offset_similarity)
    a, b = st.columns(2)
    a.plotly_chart(ui.shared_figure(pe_similarity_heatmap, pe), key="pe_sim")
    a.caption(
        "Constant along every diagonal: the dot product of two positions does not depend on where "
        "they are, only how far apart."
    )
    b.plotly_chart(ui.shared_figure(pe_offset_figure, *offset_similarity(pe)), key="pe_offset")
    b.caption("Mean and spread of PE_p·PE_(p+k) over all p, per offset k: the spread is ~0.")

    st.subheader("Moving k positions is a rotation")
    ui.formula(pe_shift_matrix)
    c3, c4 = st.columns(2)
    pos = c3.number_input("pos", 0, 10_000, **ui.bind("positional.pos"))
    k = c4.number_input("k", -1000, 1000, **ui.bind("positional.k"))
    shift = ui.shift_check(int(pos), int(k), d)
    st.dataframe(shift["table"], hide_index=True)
    st.caption(
        f"Largest difference over all {d} dimensions: {shift['max_error']:.2e} (float64). "
        "M_k is the same matrix for every pos."
    )
    st.plotly_chart(
        ui.shared_figure(shift_matrix_figure, shift["matrix"][:32, :32], k=int(k)), key="pe_shift"
    )
    st.caption("The first 16 (sin, cos) pairs of M_k: one 2x2 rotation each, zero elsewhere.")

    if cfg.pos_encoding == "learned":
        st.subheader("This model's own positions (learned)")
        st.plotly_chart(
            ui.shared_figure(pe_matrix_heatmap, ui.model_positions(ctx.choice, n_pos)), key="pe_learned"
        )
        st.caption(
            f"MiniLM learned its position vectors instead of using sinusoids; it has none past {cfg.max_len}."
        )

    st.subheader("Attention with and without positions")
    layer, head = ui.layer_head(ctx)
    if cfg.pos_encoding == "none":
        st.info("This model has no positional encoding: choose sinusoidal or learned in the sidebar.")
    else:
        without = ui.patterns_without_pe(ctx.choice, ctx.text)
        st.plotly_chart(
            attention_diff_figure(ctx.capture.pattern[layer, head], without[layer, head], ctx.labels),
            key="pe_diff",
        )
        st.caption(
            "Same weights and text, positions set to zero. Without positions the model sees a bag "
            "of tokens: repeated words get identical rows, and order-based heads lose their pattern."
        )
