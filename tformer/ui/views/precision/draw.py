"""How the Precision page draws: the numbers part (the table, the times, the format facts and a
caption per variant), which polls while the server's worker still computes some of them, and
the heads part (which heads move, one head in float32 beside the chosen variant)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from ....efficiency.precision import PrecisionReport, VariantResult
from ....figures.heads import heads_side_by_side
from ....figures.precision import cost_bars, head_change_map, pattern_difference
from ....i18n import tr
from ...binding import bind
from ...charts import chart
from ...context import PageContext, layer_head
from ...tables import fitted_table
from .compute import (
    POLL_S,
    PrecisionRun,
    float_formats,
    precision_choices,
    precision_compared,
    precision_dropped,
    precision_layer,
    precision_result,
    precision_run,
    precision_table,
    precision_time_caption,
    precision_timing_notes,
    precision_waiting_note,
    variant_label,
)
from .jobs import Failed

METRICS = {
    "changed": "% of query rows whose most attended key changed",
    "max_diff": "largest |Δ weight| of the head",
}
SHORT = {"changed": "rows changed (%)", "max_diff": "max |Δ weight|"}


def intro(report: PrecisionReport) -> None:
    st.markdown(
        tr(
            "The same model on the same {n} tokens, copied into lower-precision number formats. Each "
            "copy's attention weights come from its own hooks, computed in its own format, and are "
            "compared with float32's.",
            n=report.n_pos,
        )
    )


def numbers_part(ctx: PageContext, run: PrecisionRun) -> None:
    """The table, the times and the notes: the numbers the server's worker may still be computing
    (the timings of a new length band, the comparisons that did not fit this run). While any is,
    this part looks again every POLL_S seconds, drawing what has arrived, and runs the whole page
    once more (which stops the polling) when all has, or when an ask was dropped."""
    first_pass = [True]

    @st.fragment(run_every=POLL_S if run.pending else None)
    def numbers() -> None:
        shown = run
        if run.pending and not first_pass[0]:
            shown = precision_run(ctx.choice, ctx.text, compute=False)
            if not shown.pending or precision_dropped(shown):
                st.rerun()
        first_pass[0] = False
        _numbers(shown)

    numbers()


def _numbers(shown: PrecisionRun) -> None:
    report = shown.report
    waiting = precision_waiting_note(shown)
    if waiting:
        st.info(waiting)
    for what, why in shown.failures:
        st.warning(tr("{what} failed: {why}", what=what, why=why))
    rows, config = precision_table(report)
    fitted_table(rows, column_config=config, key="precision_table")  # turned when too wide
    for r in report.results:
        if r.problem is not None:
            st.warning(
                tr("{variant} is not available here: {why}", variant=variant_label(r.name), why=r.problem)
            )
    ran = [r for r in report.results if r.problem is None]
    _cost_chart(shown, ran)
    _format_facts()
    ref = precision_result(report, "float32")
    for r in ran:
        if r.diff is not None and r.name != "float32":
            _variant_caption(r, ref)
    _int8_notes(report, ran, ref)


def _cost_chart(shown: PrecisionRun, ran: list[VariantResult]) -> None:
    """Forward time and weight size of every variant timed so far, with the timing notes."""
    busy, unsettled = precision_timing_notes(shown.report)
    if busy:
        st.warning(busy)
    timed = [r for r in ran if r.timing is not None]
    if not timed:
        return
    chart(
        cost_bars(
            [variant_label(r.name) for r in timed],
            [r.forward_ms for r in timed if r.forward_ms is not None],  # set with its timing
            [r.weight_bytes / 2**20 for r in timed if r.weight_bytes is not None],  # every run row's
            quartiles_ms=[(1e3 * r.timing.q1, 1e3 * r.timing.q3) for r in timed if r.timing is not None],
        ),
        key="precision_costs",
    )
    if unsettled:
        st.info(unsettled)
    st.caption(precision_time_caption(shown))


def _format_facts() -> None:
    """The three float formats' exponent and mantissa bits, range and step."""
    formats = float_formats()
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


def _variant_caption(r: VariantResult, ref: VariantResult | None) -> None:
    """How far one variant's attention weights and output move from float32's on this text (for
    INT8, also how its weights are stored)."""
    d = r.diff
    assert d is not None  # the caller checked
    said: dict[str, Any] = dict(
        variant=variant_label(r.name),
        pmax=d.pattern_max,
        pmean=d.pattern_mean,
        share=d.changed,
        k=d.rows_changed,
        rows=d.rows,
        omax=d.output_max,
    )
    if not r.name.startswith("int8"):
        st.caption(
            tr(
                "{variant}: on this text the attention weights move by at most {pmax:.2e} (mean "
                "{pmean:.1e}), the output by at most {omax:.3f}, and {k} of {rows} query rows "
                "({share:.1%}) change their most attended key.",
                **said,
            )
        )
        return
    ratio = r.linear_bytes / ref.linear_bytes if ref and ref.linear_bytes and r.linear_bytes else 0.0
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


def _int8_notes(report: PrecisionReport, ran: list[VariantResult], ref: VariantResult | None) -> None:
    """Where INT8 comes from, and that it ran on the CPU when float32 did not."""
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


def heads_part(ctx: PageContext, report: PrecisionReport) -> None:
    """Which heads move (one variant against float32, coloured by the chosen measure), then one
    head in float32 beside the variant, with their difference."""
    choices = precision_choices(report)
    if not choices:
        st.info(tr("No lower-precision variant could run here: there is nothing to compare."))
        return
    st.subheader(tr("Which heads move"))
    c1, c2 = st.columns(2)
    variant = c1.selectbox(
        tr("variant compared with float32"),
        choices,
        format_func=variant_label,
        **bind("precision.variant", choices),
    )
    metric = c2.radio(
        tr("color each head by"),
        list(METRICS),
        format_func=lambda k: tr(METRICS[k]),
        **bind("precision.metric", list(METRICS)),
    )
    layer, head = layer_head(ctx)
    chosen = precision_result(report, variant)
    if chosen is None or chosen.diff is None:  # the worker compares it (too slow for the run)
        now = precision_compared(ctx.choice, ctx.text, variant)  # it may have finished since
        if now is None:
            note = tr(
                "Comparing {variant} with float32 on this text in the background...",
                variant=variant_label(variant),
            )
            _wait_then_rerun(note, lambda: precision_compared(ctx.choice, ctx.text, variant) is not None)
            _float32_head(ctx, layer, head)
            return
        if isinstance(now, Failed) or now.diff is None:
            return  # a comparison that failed is named with the table
        chosen = now
    assert chosen.diff is not None
    changed = metric == "changed"
    values = 100 * chosen.diff.head_changed if changed else chosen.diff.head_max
    chart(
        head_change_map(
            values, tr(METRICS[metric]), selected=(layer, head), percent=changed, bar_title=tr(SHORT[metric])
        ),
        key="precision_heads",
    )
    _one_head(ctx, variant, layer, head)


def _wait_then_rerun(note: str, ready: Callable[[], bool]) -> None:
    """``note`` shown while the server's worker computes what the rest of the view needs; looks
    again every POLL_S seconds and runs the page once more when ``ready()``."""

    @st.fragment(run_every=POLL_S)
    def waiting() -> None:
        if ready():
            st.rerun()
        st.info(note)

    waiting()


def _float32_head(ctx: PageContext, layer: int, head: int) -> None:
    """The chosen head in float32 alone, while its lower-precision twin is being computed."""
    chart(
        heads_side_by_side([ctx.capture.pattern[layer, head]], ["float32"], ctx.labels), key="precision_pair"
    )


def _one_head(ctx: PageContext, variant: str, layer: int, head: int) -> None:
    try:
        layer_pattern = precision_layer(ctx.choice, ctx.text, variant, layer)
    except RuntimeError as err:  # the worker's capture failed: said once, not asked again
        st.warning(tr("{what} failed: {why}", what=variant_label(variant), why=err))
        return
    label = variant_label(variant)
    if layer_pattern is None:
        _wait_then_rerun(
            tr("Running the model in {variant} on this text in the background...", variant=label),
            lambda: precision_layer(ctx.choice, ctx.text, variant, layer) is not None,
        )
        _float32_head(ctx, layer, head)
        return
    base = ctx.capture.pattern[layer, head]
    low = layer_pattern[head]
    chart(heads_side_by_side([base, low], ["float32", label], ctx.labels), key="precision_pair")
    delta = low - base
    chart(
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
