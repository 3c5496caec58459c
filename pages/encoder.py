"""The whole encoder: the model drawn with its real shapes and parameter counts; the FFN, the
residual stream and LayerNorm on the user's text, layer by layer."""

import streamlit as st

from tformer import ui
from tformer.figures.architecture import architecture_figure
from tformer.figures.encoder import ffn_activations_figure, layernorm_figure, sublayer_norms_figure
from tformer.layer_stats import ffn_sparsity, layernorm_stats, sublayer_norms

SECTIONS = {
    "architecture": "The architecture",
    "ffn": "Feed-forward network",
    "residual": "Residual stream",
    "layernorm": "LayerNorm",
}
LN_NAMES = {"ln1": "the first (around attention)", "ln2": "the second (around the FFN)"}
LN_WINDOW = 32  # tokens of box plots on one screen

with ui.page_context(__file__, ui.STATS_NAMES) as ctx:
    cap, cfg = ctx.capture, ctx.capture.cfg
    part = ui.section("encoder.section", SECTIONS)

    if part == "architecture":
        spec = ui.architecture_of(ctx.choice, cap.n_pos)
        st.plotly_chart(architecture_figure(spec, title=ctx.choice.label), key="architecture")
        st.caption(
            f"The model in use, read from the bottom: shapes are for this text ({cap.n_pos} tokens), "
            f"parameter counts are the model's own and add up to {spec.total:,}. Change layers, heads, "
            "d_model or d_ff in the sidebar (from-scratch encoder) and the drawing follows."
        )
    else:
        c1, c2 = st.columns([1, 3])
        layers = range(cap.n_layers)
        layer = int(c1.selectbox("layer", layers, **ui.bind("layer", layers, clamp=True)))
        with c2:
            query = ui.query_token(ctx)

        if part == "ffn":
            ui.formula(ffn_sparsity, code=False)
            stats = ui.ffn_stats(ctx.choice, ctx.text)
            st.plotly_chart(
                ffn_activations_figure(
                    cap["mlp_pre"][layer],
                    cap["mlp_post"][layer],
                    ctx.labels,
                    highlight=query,
                    activation=cfg.activation,
                    zero_share=float(stats.zero_per_token[layer].mean()),
                    near_zero_share=float(stats.near_zero_per_token[layer].mean()),
                ),
                key="ffn",
            )
            per_layer = stats.near_zero_per_layer
            shares = ", ".join(f"{s:.0%}" for s in per_layer) if per_layer is not None else ""
            st.caption(
                f"Each token goes through the same two Linear layers on its own: {cfg.d_model} → {cfg.d_mlp} "
                f"→ {cfg.d_model}. Left, the {cfg.d_mlp} hidden values before the {cfg.activation.upper()}; "
                "right, after it. The share of (near) zeros after it, |a| < 0.01, layer by layer: "
                f"{shares}. A unit at zero passes nothing on for that token."
            )
            ui.source("MLP.forward", label="The code of the FFN")

        elif part == "residual":
            ui.formula(sublayer_norms, code=False)
            norms = ui.residual_norms(ctx.choice, ctx.text)
            st.plotly_chart(sublayer_norms_figure(norms, ctx.labels, layer=layer), key="residual")
            st.caption(
                "Each sublayer adds to the residual stream x instead of replacing it: x + SubLayer(x). "
                "Left, for this layer, how long each token's vector is (L2 norm) and how long attention's "
                "and the FFN's additions are; right, their ratio to ‖x‖ averaged over the tokens, layer by "
                "layer. A ratio well below 1 means the layer nudges the token rather than rewriting it."
            )

        else:
            ui.formula(layernorm_stats, code=False)
            which = st.radio(
                "LayerNorm", list(LN_NAMES), horizontal=True, format_func=LN_NAMES.__getitem__,
                **ui.bind("encoder.norm", list(LN_NAMES)),
            )  # fmt: skip
            x, normalized, ln = ui.layernorm_io(ctx.choice, ctx.text, layer, which)
            rows = ui.window(cap.n_pos, query, LN_WINDOW)
            sl = slice(rows.start, rows.stop)
            st.plotly_chart(
                layernorm_figure(
                    x[sl], normalized[sl], ln.mean[sl], ln.sigma[sl], ctx.labels[sl],
                    highlight=query - rows.start if query in rows else None,
                ),
                key="layernorm",
            )  # fmt: skip
            where = f"tokens {rows.start}–{rows.stop - 1} of {cap.n_pos}; " if len(rows) < cap.n_pos else ""
            st.caption(
                f"{where}μ and σ are each token's own mean and spread over its {cfg.d_model} values. After "
                "subtracting μ and dividing by σ every token has mean 0 and spread 1, whatever it was "
                f"before; γ and β (learned, one per dimension) then rescale. For the query: μ = "
                f"{ln.mean[query]:.3g}, σ = {ln.sigma[query]:.3g}."
            )
            ui.source("LayerNorm.forward", label="The code of LayerNorm")
