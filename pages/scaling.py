"""Why divide by √d_k: the chosen head's weights under a temperature and without the scaling,
beside a sweep over d_k computed from random queries and keys."""

import streamlit as st

from tformer import ui
from tformer.analysis.scaling import scaling_sweep, temperature_pattern
from tformer.figures.attention import attention_heatmap
from tformer.figures.scaling import row_stats_figure, sweep_figure
from tformer.i18n import tr

with ui.page_context(__file__) as ctx:
    from tformer.ui.views import scaling as view  # after the frame: a view loads torch

    cfg = ctx.capture.cfg
    ui.formula(temperature_pattern, code=False)
    layer, head = ui.layer_head(ctx)
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    tau = c1.select_slider(
        tr("temperature τ: the logits are divided by it (1 = the model as trained)"),
        ui.TAUS,
        **ui.bind("scaling.tau", ui.TAUS),
    )
    scaled = c2.toggle(tr("divide by √d_k = √{d_head}", d_head=cfg.d_head), **ui.bind("scaling.scaled"))
    t = view.tempered(ctx.choice, ctx.text, layer, head, float(tau), bool(scaled))
    own = view.tempered(ctx.choice, ctx.text, layer, head, 1.0, True)
    divisor = f"√{cfg.d_head} · {tau}" if scaled else f"{tau}"
    title = tr(
        "layer {layer}, head {head}: softmax(q·k / ({divisor}))", layer=layer, head=head, divisor=divisor
    )
    ui.chart(attention_heatmap(t["pattern"], ctx.labels, title=title), key="tempered", shows=(layer, head))
    ui.chart(row_stats_figure(t["entropy"], t["max"], ctx.labels), key="row_stats")
    st.caption(
        tr(
            "Each row's entropy (bits: 0 = all weight on one key) and largest weight. Mean entropy "
            "{entropy:.2f} bits and mean largest weight {top:.2f} here, against {own_entropy:.2f} and "
            "{own_top:.2f} for the model as trained (τ = 1, scaled). A small τ or dropping √d_k sharpens "
            "every row toward one key; a large τ flattens it.",
            entropy=t["entropy"].mean(),
            top=t["max"].mean(),
            own_entropy=own["entropy"].mean(),
            own_top=own["max"].mean(),
        )
    )

    st.subheader(tr("Why: what the scaling does as d_k grows"))
    ui.formula(scaling_sweep, code=False)
    ui.chart(sweep_figure(view.scaling_sweep_data(), mark_dk=cfg.d_head), key="sweep")
    st.caption(
        tr(
            "Computed on this server from random queries and keys with unit-variance entries (fixed "
            "seed; each point a mean over rows). Unscaled, the dot product's variance grows like d_k: the "
            "softmax saturates (its largest weight goes to 1) and its Jacobian, the gradient that trains "
            "Q and K, shrinks toward 0. At small d_k (up to about 32) the unscaled scores are still spread "
            "little and their Jacobian is even larger; the trouble starts as d_k grows. Divided by √d_k "
            "the variance stays 1 at every size. The dotted line marks this head's d_k = {d_head}.",
            d_head=cfg.d_head,
        )
    )
    ui.source(scaling_sweep)
