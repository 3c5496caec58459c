"""The model in float32, bfloat16, float16 and with INT8 Linear layers on the user's text: forward
time, weight size, how far the attention weights and the output move, which heads' top keys
change; one head in float32 beside the chosen variant, with their difference."""

import streamlit as st

from tformer import ui
from tformer.figures.heads import heads_side_by_side
from tformer.figures.precision import cost_bars, head_change_map, pattern_difference
from tformer.i18n import tr

METRICS = {
    "changed": "% of query rows whose most attended key changed",
    "max_diff": "largest |Δ weight| of the head",
}
SHORT = {"changed": "rows changed (%)", "max_diff": "max |Δ weight|"}

with ui.page_context(__file__, ["pattern"]) as ctx:
    from tformer.ui.views import precision as view  # after the frame: a view loads torch

    run = view.precision_run(ctx.choice, ctx.text)
    report = run.report
    ref = view.precision_result(report, "float32")
    st.markdown(
        tr(
            "The same model on the same {n} tokens, copied into lower-precision number formats. Each "
            "copy's attention weights come from its own hooks, computed in its own format, and are "
            "compared with float32's.",
            n=report.n_pos,
        )
    )

    # The table, the times and the notes: the numbers the server's worker may still be computing
    # (the timings of a new length band, the comparisons that did not fit this run). While any
    # is, this part looks again every POLL_S seconds, drawing what has arrived, and runs the
    # whole page once more (which stops the polling) when all has, or when an ask was dropped.
    first_pass = [True]

    @st.fragment(run_every=view.POLL_S if run.pending else None)
    def numbers() -> None:
        shown = run
        if run.pending and not first_pass[0]:
            shown = view.precision_run(ctx.choice, ctx.text, compute=False)
            if not shown.pending or view.precision_dropped(shown):
                st.rerun()
        first_pass[0] = False
        report = shown.report
        waiting = view.precision_waiting_note(shown)
        if waiting:
            st.info(waiting)
        for what, why in shown.failures:
            st.warning(tr("{what} failed: {why}", what=what, why=why))
        rows, config = view.precision_table(report)
        ui.fitted_table(rows, column_config=config, key="precision_table")  # turned when too wide
        for r in report.results:
            if r.problem is not None:
                st.warning(
                    tr(
                        "{variant} is not available here: {why}",
                        variant=view.variant_label(r.name),
                        why=r.problem,
                    )
                )
        ran = [r for r in report.results if r.problem is None]
        busy, unsettled = view.precision_timing_notes(report)
        if busy:
            st.warning(busy)
        timed = [r for r in ran if r.timing is not None]
        if timed:
            ui.chart(
                cost_bars(
                    [view.variant_label(r.name) for r in timed],
                    [r.forward_ms for r in timed if r.forward_ms is not None],  # set with its timing
                    [r.weight_bytes / 2**20 for r in timed if r.weight_bytes is not None],  # every run row's
                    quartiles_ms=[
                        (1e3 * r.timing.q1, 1e3 * r.timing.q3) for r in timed if r.timing is not None
                    ],
                ),
                key="precision_costs",
            )
            if unsettled:
                st.info(unsettled)
            st.caption(view.precision_time_caption(shown))

        formats = view.float_formats()
        f32, bf, fp = formats["float32"], formats["bfloat16"], formats["float16"]
        st.caption(
            tr(
                "float32 has {e32} exponent bits and {m32} mantissa bits. bfloat16 keeps float32's {ebf} "
                "exponent bits, so the same range (up to {maxbf:.1e}), but only {mbf} mantissa bits: "
                "neighbouring numbers are {epsbf:.4f} apart (relative). float16 keeps {mfp} mantissa bits "
                "(a step of {epsfp:.5f}) but only {efp} exponent bits: nothing above {maxfp:.0f}.",
                e32=f32["exponent"],
                m32=f32["mantissa"],
                ebf=bf["exponent"],
                maxbf=bf["max"],
                mbf=bf["mantissa"],
                epsbf=bf["eps"],
                mfp=fp["mantissa"],
                epsfp=fp["eps"],
                efp=fp["exponent"],
                maxfp=fp["max"],
            )
        )
        for r in ran:
            if r.diff is None or r.name == "float32":
                continue
            d = r.diff
            said = dict(
                variant=view.variant_label(r.name),
                pmax=d.pattern_max,
                pmean=d.pattern_mean,
                share=d.changed,
                k=d.rows_changed,
                rows=d.rows,
                omax=d.output_max,
            )
            if r.name.startswith("int8"):
                ratio = (
                    r.linear_bytes / ref.linear_bytes if ref and ref.linear_bytes and r.linear_bytes else 0.0
                )
                if r.scales == 1:
                    how = tr("one scale for each whole weight matrix")
                    how += tr(
                        " ($W_Q$, $W_K$ and $W_V$ count as three matrices, as torch quantizes a model "
                        "with separate query, key and value layers)"
                    )
                else:
                    how = tr("one scale per output row ({k} in the first Linear layer)", k=r.scales)
                st.caption(
                    tr(
                        "{variant}: each Linear layer's weights are stored as int8 with {how}; each input to "
                        "a Linear layer is quantized on the fly to 8 bits, with one scale computed from that "
                        "input's own range at every call, so its largest value sets the step for all the "
                        "others. The Linear weights shrink to {ratio:.0%} of float32's ({lin:.1f} MB); the "
                        "embeddings and LayerNorms stay float32. On this text the attention weights move by at most "
                        "{pmax:.3f} (mean {pmean:.1e}), the output by at most {omax:.3f}, and {k} of {rows} "
                        "query rows ({share:.1%}) change their most attended key.",
                        how=how,
                        ratio=ratio,
                        lin=(r.linear_bytes or 0) / 2**20,
                        **said,
                    )
                )
            else:
                st.caption(
                    tr(
                        "{variant}: on this text the attention weights move by at most {pmax:.2e} (mean "
                        "{pmean:.1e}), the output by at most {omax:.3f}, and {k} of {rows} query rows "
                        "({share:.1%}) change their most attended key.",
                        **said,
                    )
                )
        notes = [r for r in ran if r.name.startswith("int8")]
        if notes and notes[0].deprecated:
            st.caption(
                tr(
                    "INT8 here comes from `torch.ao.quantization.quantize_dynamic` with the quantized "
                    "engine {engine}. It works in this torch, which warns that the API is deprecated "
                    "(the `torchao` package replaces it).",
                    engine=report.engine,
                )
            )
        if ref is not None and any(r.device != ref.device for r in notes):
            st.info(
                tr(
                    "Dynamic INT8 quantization runs on the CPU only: its rows ran on the CPU while float32 "
                    "ran on {device}, so their times do not compare.",
                    device=ref.device,
                )
            )

    numbers()

    choices = view.precision_choices(report)
    if not choices:
        st.info(tr("No lower-precision variant could run here: there is nothing to compare."))
        st.stop()
    st.subheader(tr("Which heads move"))
    c1, c2 = st.columns(2)
    variant = c1.selectbox(
        tr("variant compared with float32"),
        choices,
        format_func=view.variant_label,
        **ui.bind("precision.variant", choices),
    )
    metric = c2.radio(
        tr("color each head by"),
        list(METRICS),
        format_func=lambda k: tr(METRICS[k]),
        **ui.bind("precision.metric", list(METRICS)),
    )
    layer, head = ui.layer_head(ctx)
    chosen = view.precision_result(report, variant)
    # the report compares every variant offered
    assert chosen is not None
    assert chosen.diff is not None
    changed = metric == "changed"
    values = 100 * chosen.diff.head_changed if changed else chosen.diff.head_max
    ui.chart(
        head_change_map(
            values, tr(METRICS[metric]), selected=(layer, head), percent=changed, bar_title=tr(SHORT[metric])
        ),
        key="precision_heads",
    )
    base = ctx.capture.pattern[layer, head]
    low = view.precision_layer(ctx.choice, ctx.text, variant, layer)[head]
    label = view.variant_label(variant)
    ui.chart(
        heads_side_by_side([base, low], ["float32", label], ctx.labels),
        key="precision_pair",
    )
    delta = low - base
    ui.chart(
        pattern_difference(delta, ctx.labels, title=tr("{variant} minus float32", variant=label)),
        key="precision_diff",
    )
    q, k = divmod(int(abs(delta).argmax()), delta.shape[1])
    moved = int((base.argmax(-1) != low.argmax(-1)).sum())
    st.caption(
        tr(
            "Layer {layer}, head {head}: the largest change is {d:+.2e}, at query {q} ({qt}) and key "
            "{k} ({kt}); {moved} of {n} query rows change their most attended key.",
            layer=layer,
            head=head,
            d=float(delta[q, k]),
            q=q,
            qt=ctx.labels[q],
            k=k,
            kt=ctx.labels[k],
            moved=moved,
            n=len(ctx.labels),
        )
    )
