"""Sinusoidal positional encoding: the table, its waves, and why offsets are rotations."""

import streamlit as st

from tformer import ui
from tformer.analysis.metrics import offset_similarity
from tformer.figures.colors import ROBUST_PERCENTILE
from tformer.figures.positional import (
    attention_diff_figure,
    pe_matrix_heatmap,
    pe_offset_figure,
    pe_similarity_heatmap,
    pe_waves,
    shift_matrix_figure,
)
from tformer.i18n import tr

with ui.page_context(__file__) as ctx:
    from tformer.ui.views import positional as view  # after the frame: a view loads torch

    cfg = ctx.model.cfg
    sections = {
        "table": "The sinusoid table",
        "offsets": "Similarity depends on the offset",
        "rotation": "A shift is a rotation",
        **({"learned": "This model's learned positions"} if cfg.pos_encoding == "learned" else {}),
        "without": "Attention without positions",
    }
    part = ui.section("positional.section", sections)  # English: ui.section translates
    d = cfg.d_model if cfg.d_model % 2 == 0 else cfg.d_model - 1

    if part in ("table", "offsets", "learned"):
        n_pos = st.slider(
            tr("positions shown"),
            8,
            2 * cfg.max_len,
            **ui.bind("positional.n_pos", range(8, 2 * cfg.max_len + 1), clamp=True),
        )
        pe = view.sinusoids(n_pos, d)  # [pos, d_model]

    if part == "table":
        ui.formula("sinusoidal_encoding")
        all_dims = list(range(d))
        # wavelengths spread from ~6 positions to tens of thousands
        default_dims = [i for i in (0, 1, d // 8, d // 4, d // 2, d - 2) if 0 <= i < d]
        dims = st.multiselect(
            tr("dimensions to plot"),
            all_dims,
            max_selections=12,
            **ui.bind("positional.dims", all_dims, fallback=list(dict.fromkeys(default_dims))),
        )
        ui.chart(ui.shared_figure(pe_matrix_heatmap, pe, max_len=cfg.max_len), key="pe_matrix")
        if n_pos > cfg.max_len:
            caption = tr(
                "Sinusoidal encoding for d_model = {d}: one row per position, one column per dimension. "
                "Left columns (small i) change fast with the position, right columns slowly: together "
                "they give every position its own fingerprint. The dashed line marks max_len = {max_len}: "
                "sinusoids go on past it, but this model reads at most {max_len} tokens.",
                d=d,
                max_len=cfg.max_len,
            )
        else:
            caption = tr(
                "Sinusoidal encoding for d_model = {d}: one row per position, one column per dimension. "
                "Left columns (small i) change fast with the position, right columns slowly: together "
                "they give every position its own fingerprint.",
                d=d,
            )
        st.caption(caption)
        if dims:
            ui.chart(ui.shared_figure(pe_waves, pe, tuple(dims)), key="pe_waves")

    elif part == "offsets":
        ui.formula(offset_similarity)
        a, b = st.columns(2)
        ui.chart_in(a, ui.shared_figure(pe_similarity_heatmap, pe), key="pe_sim")
        a.caption(
            tr(
                "PE_p · PE_q for every pair of positions: constant along every diagonal, so the dot "
                "product depends on how far apart two positions are, not where they are."
            )
        )
        ui.chart_in(b, ui.shared_figure(pe_offset_figure, *offset_similarity(pe)), key="pe_offset")
        b.caption(tr("Mean and spread of PE_p · PE_(p+k) over all p, for each offset k: the spread is ~0."))

    elif part == "rotation":
        ui.formula("pe_shift_matrix")
        c3, c4 = st.columns(2)
        pos = c3.number_input("pos", **ui.bind_number("positional.pos"))
        k = c4.number_input("k", **ui.bind_number("positional.k"))
        shift = view.shift_check(int(pos), int(k), d)
        st.dataframe(
            shift["table"],
            hide_index=True,
            column_config={"dim": st.column_config.NumberColumn(tr("dimension"))},
        )
        st.caption(
            tr(
                "Largest difference over all {d} dimensions: {error:.2e} (float64). "
                "M_k is the same matrix for every pos.",
                d=d,
                error=shift["max_error"],
            )
        )
        ui.chart(ui.shared_figure(shift_matrix_figure, shift["matrix"][:32, :32], k=int(k)), key="pe_shift")
        st.caption(tr("The first 16 (sin, cos) pairs of M_k: one 2x2 rotation each, zero elsewhere."))

    elif part == "learned":
        learned = ui.shared_figure(pe_matrix_heatmap, view.model_positions(ctx.choice, n_pos))
        ui.chart(learned, key="pe_learned")
        color = learned.layout.meta.get("color") or {}
        if color.get("clipped"):
            caption = tr(
                "This model learned its position vectors in training instead of using sinusoids; it has "
                "none past {max_len}. Colors stop at ±{limit:.3g}, the {pct:g}th percentile of |value|: "
                "larger values get the end colors (the hover shows the true value).",
                max_len=cfg.max_len,
                limit=color["limit"],
                pct=ROBUST_PERCENTILE,
            )
        else:
            caption = tr(
                "This model learned its position vectors in training instead of using sinusoids; it has "
                "none past {max_len}.",
                max_len=cfg.max_len,
            )
        st.caption(caption)

    else:
        layer, head = ui.layer_head(ctx)
        if cfg.pos_encoding == "none":
            st.info(tr("This model has no positional encoding: choose sinusoidal or learned in the sidebar."))
        else:
            without = view.patterns_without_pe(ctx.choice, ctx.text)
            ui.chart(
                attention_diff_figure(ctx.capture.pattern[layer, head], without[layer, head], ctx.labels),
                key="pe_diff",
            )
            st.caption(
                tr(
                    "Same weights and text, positions set to zero. Without positions the model sees a bag "
                    "of tokens: repeated words get identical rows, and order-based heads lose their pattern."
                )
            )
