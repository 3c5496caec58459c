"""What attention costs, measured on this device: the n² wall (explicit attention, each SDPA
backend, our tiled loop), attention against a GRU, and sparse and local masks."""

import streamlit as st

from tformer import ui
from tformer.figures.heads import heads_side_by_side
from tformer.i18n import tr

with ui.frame(__file__) as fr:
    from tformer.ui.views import costs as view  # after the frame: a view loads torch

    part = ui.section("costs.section", view.COST_SECTIONS)
    settings = view.cost_controls(part)

    if part == "wall":
        st.markdown(
            tr(
                "Self-attention compares every token with every other: n tokens make an n × n matrix "
                "of scores per head, so time and memory grow like n². Below, one attention call "
                "(batch 1) is timed at n = 64, 128, 256, ... until a budget stops it, for the explicit "
                "attention that builds the whole matrix, PyTorch's `F.scaled_dot_product_attention` "
                "(SDPA) under each backend this device offers, and our tiled loop, which never builds it."
            )
        )
        ui.formula("efficiency.tiled.tiled_attention", label="Our tiled loop: the code that ran")
    elif part == "rnn":
        st.markdown(
            tr(
                "An RNN reads a sequence one position at a time: step t needs the state of step t − 1, "
                "so n positions take n steps that cannot run side by side, and a signal from the first "
                "token reaches the last through n − 1 steps. Self-attention computes every position at "
                "once and connects any two tokens in one step, at the price of n² scores. Below, a GRU "
                "and one self-attention layer of the same width are timed on the same input."
            )
        )
        ui.source("efficiency.rnn.SelfAttentionLayer", label="The self-attention layer that is timed")
    else:
        st.markdown(
            tr(
                "Most of the n² scores carry little weight. Sparse attention lets each query see only "
                "some keys: a local window ($|i - j| \\le w$) or the strided pattern of the Sparse "
                "Transformer (Child et al. 2019, `arXiv:1904.10509`): $|i - j| < s$ or $j \\equiv i \\pmod s$, "
                "a band and every s-th key; here in both directions, as in an encoder. First the two masks "
                "on your text, through the encoder's own mask argument in every layer; then the time of "
                "implementations that compute only the allowed scores."
            )
        )
        on_text = view.sparse_on_text(fr.choice, fr.text)
        if on_text is not None:
            h = on_text["head"]
            shares = on_text["shares"]
            titles = [
                tr("no mask"),
                tr(
                    "local, w = {w}: {share:.0%} of the cells",
                    w=on_text["window"],
                    share=shares["local"],
                ),
                tr(
                    "strided, s = {s}: {share:.0%} of the cells", s=on_text["stride"], share=shares["strided"]
                ),
            ]
            panels = [on_text["none"][h], on_text["local"][h], on_text["strided"][h]]
            ui.chart(heads_side_by_side(panels, titles, on_text["labels"]), key="sparse_patterns")
            st.caption(
                tr(
                    "Layer {layer}, head {head}: the weights without a mask and with each mask applied in "
                    "every layer. A masked cell gets weight 0 and each row's other weights grow to sum to 1.",
                    layer=on_text["layer"],
                    head=h,
                )
                + (
                    " " + tr("This model is causal already: its mask is combined with these (AND).")
                    if on_text["causal"]
                    else ""
                )
            )
        st.subheader(tr("Time at long lengths"))
        st.caption(
            tr(
                "The timing uses w = 64 and, at each length n, the power of two nearest √n as s (the paper's "
                "choice: about n√n scores in all). The dense runs get the same mask as a bool n × n tensor, "
                "made before the call and not counted in their memory."
            )
        )

    if settings is None:
        st.stop()
    sweep = view.run_cost_sweep(part, settings)
    st.caption(view.cost_device_line(sweep))
    if sweep is None:
        st.stop()

    busy = view.cost_load_note(sweep)
    if busy:
        st.warning(busy)
    figs = view.cost_figures(sweep)
    if "time" in figs:
        ui.chart(figs["time"], key="costs_time")
    noisy = view.cost_fit_note(sweep)
    if noisy:
        st.info(noisy)
    if part == "wall":
        line = view.cost_summary(sweep)
        if line:
            st.markdown(line)
        if "memory" in figs:
            ui.chart(figs["memory"], key="costs_memory")
        st.caption(
            tr(
                "A slope of 2 on these axes is the n² wall: double n, four times the cost. Small lengths "
                "are dominated by fixed costs (launching the call), so the exponent is fitted over the "
                "longer ones. The dashed line is a formula, drawn for reference; every other point is "
                "measured."
            )
        )
        missing = view.cost_unavailable(sweep)
        if missing:
            st.caption(missing)
    elif part == "rnn":
        ui.chart(figs["path"], key="costs_path")
        st.caption(
            tr(
                "The GRU's time grows like n because it must take n steps in order, each a small matrix "
                "product that leaves most of the hardware idle. The attention layer's work grows like n², "
                "but it runs as a few large matrix products over all positions at once: on a GPU that "
                "parallelism wins by far, on a few CPU cores the n² work catches up at long lengths."
            )
        )
    else:
        if "memory" in figs:
            ui.chart(figs["memory"], key="costs_memory")
        ui.fitted_table(view.sparse_cost_table(sweep), key="costs_sparse_table")  # turned when too wide
        ui.source("efficiency.sparse.local_attention", label="The local window, only its blocks: the code")
        ui.source(
            "efficiency.sparse.strided_attention", label="The strided pattern, only its blocks: the code"
        )

    st.markdown(tr("**Where each method stopped**"))
    st.markdown("\n".join(view.cost_stops(sweep)))
    st.caption(view.cost_budget_line(sweep) + " " + ui.busy_method())
    with st.expander(tr("Every measured point")):
        st.dataframe(view.cost_table(sweep), hide_index=True, width="stretch", key="costs_points")
