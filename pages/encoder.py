"""The whole encoder: the model drawn with its real shapes and parameter counts; the FFN, the
residual stream and LayerNorm on the user's text, layer by layer."""

import streamlit as st

from tformer import ui
from tformer.analysis.layer_stats import ffn_sparsity, layernorm_stats, sublayer_norms
from tformer.figures.architecture import architecture_figure
from tformer.figures.ffn import ffn_activations_figure
from tformer.figures.layernorm import layernorm_figure
from tformer.figures.sublayers import sublayer_norms_figure
from tformer.i18n import tr
from tformer.ui.views import steps

SECTIONS = {
    "architecture": "The architecture",
    "ffn": "Feed-forward network",
    "residual": "Residual stream",
    "layernorm": "LayerNorm",
}
LN_NAMES = {"ln1": "the first (around attention)", "ln2": "the second (around the FFN)"}
LN_WINDOW = 32  # tokens of box plots on one screen

with ui.page_context(__file__, steps.STATS_NAMES) as ctx:
    from tformer.ui.views import encoder as view  # after the frame: a view loads torch

    cfg = ctx.cfg
    part = ui.section("encoder.section", SECTIONS)

    if part == "architecture":  # drawn from the shapes alone: no forward pass on a text edit
        spec = view.architecture_of(ctx.choice, ctx.n_pos)
        ui.chart(architecture_figure(spec, title=ctx.choice.label), key="architecture")
        st.caption(
            tr(
                "The model in use, read from the bottom: shapes are for this text ({n} tokens), "
                "parameter counts are the model's own and add up to {total}. Change layers, heads, "
                "d_model or d_ff in the sidebar (from-scratch encoder) and the drawing follows.",
                n=ctx.n_pos,
                total=f"{spec.total:,}",
            )
        )
    else:
        cap = ctx.capture
        c1, c2 = st.columns([1, 3])
        layers = range(cap.n_layers)
        layer = int(
            c1.selectbox(
                tr("layer"), layers, **ui.bind("layer", layers, clamp=True, fallback=ctx.chosen()[0])
            )
        )
        with c2:
            query = ui.query_token(ctx)

        if part == "ffn":
            ui.formula(ffn_sparsity, code=False)
            stats = view.ffn_stats(ctx.choice, ctx.text)
            ui.chart(
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
                tr(
                    "Each token goes through the same two Linear layers on its own: {d_model} → {d_ff} "
                    "→ {d_model}. Left, the {d_ff} hidden values before the {act}; right, after it. The "
                    "share of (near) zeros after it, |a| < 0.01, layer by layer: {shares}. A unit at "
                    "zero passes nothing on for that token.",
                    d_model=cfg.d_model,
                    d_ff=cfg.d_mlp,
                    act=cfg.activation.upper(),
                    shares=shares,
                )
            )
            ui.source("MLP.forward", label="The code of the FFN")

        elif part == "residual":
            ui.formula(sublayer_norms, code=False)
            norms = view.residual_norms(ctx.choice, ctx.text)
            ui.chart(sublayer_norms_figure(norms, ctx.labels, layer=layer), key="residual")
            st.caption(
                tr(
                    "Each sublayer adds to the residual stream x instead of replacing it: "
                    "$x + \\mathrm{SubLayer}(x)$. Above, for this layer, how long each token's vector "
                    "is (L2 norm) and how long attention's and the FFN's additions are; below, their "
                    "ratio to ‖x‖ averaged over the tokens, layer by layer. A ratio well below 1 means "
                    "the layer nudges the token rather than rewriting it."
                )
            )

        else:
            ui.formula(layernorm_stats, code=False)
            ln_names = {k: tr(v) for k, v in LN_NAMES.items()}
            which = st.radio(
                "LayerNorm", list(ln_names), horizontal=True, format_func=ln_names.__getitem__,
                **ui.bind("encoder.norm", list(LN_NAMES)),
            )  # fmt: skip
            x, normalized, ln = view.layernorm_io(ctx.choice, ctx.text, layer, which)
            rows = steps.window(cap.n_pos, query, LN_WINDOW)
            sl = slice(rows.start, rows.stop)
            ui.chart(
                layernorm_figure(
                    x[sl], normalized[sl], ln.mean[sl], ln.sigma[sl], ctx.labels[sl],
                    highlight=query - rows.start if query in rows else None,
                ),
                key="layernorm",
            )  # fmt: skip
            about = tr(
                "μ and σ are each token's own mean and spread over its {d_model} values. After "
                "subtracting μ and dividing by σ every token has mean 0 and spread 1, whatever it was "
                "before; γ and β (learned, one per dimension) then rescale. For the query: μ = {mu}, "
                "σ = {sigma}.",
                d_model=cfg.d_model,
                mu=f"{ln.mean[query]:.3g}",
                sigma=f"{ln.sigma[query]:.3g}",
            )
            if len(rows) < cap.n_pos:
                about = tr(
                    "Tokens {first}–{last} of {n}. {about}",
                    first=rows.start,
                    last=rows.stop - 1,
                    n=cap.n_pos,
                    about=about,
                )
            st.caption(about)
            ui.source("LayerNorm.forward", label="The code of LayerNorm")
