"""The Train page's "Mixed precision" section: the same model trained in float32 and with
autocast (bfloat16 on a CPU; float16 with a gradient scaler on CUDA), measured on this server
(`tformer.training.precision_train`): time per update, peak memory, the loss of every update and
the accuracy reached, side by side, with the sentence the numbers say.

Measured on request, in the background (`jobs.manager`): on a CPU without bfloat16 instructions
an autocast update takes many times longer than a float32 one, and the comparison trains each
precision for the same number of updates within `BUDGET_S`. The result goes into a process-wide
`Board` keyed by the settings (the device included): one measurement per device for every
visitor. Every string goes through `tformer.i18n.tr`.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from ....efficiency.measure import device_name
from ....figures.mixed_precision import loss_curves_figure
from ....figures.precision import cost_bars
from ....i18n import tr
from ....timing import Load
from ....training.precision_train import (
    PrecisionComparison,
    PrecisionSettings,
    compare_precisions,
    cpu_bf16_flags,
    describe,
    precision_refusal,
    precisions_for,
)
from ....training.runs import Run, RunHandle
from ...caches import device
from ...charts import chart
from ...context import formula, source
from ...singletons import shared
from ...timing_view import busy_method, load_note, spread_ms
from .board import Board, experiment

BUDGET_S = 90.0  # the training of every precision together, predicted before it starts
BUDGET_BYTES = 1 << 30
METHODS = {"profiler": "the torch profiler's memory events", "cuda": "the CUDA allocator's peak"}


def board() -> Board[PrecisionSettings, PrecisionComparison]:
    """The process's comparisons (a singleton: no cache clear forgets a measurement)."""
    return shared("train.precision", Board)


def precision_settings() -> PrecisionSettings:
    """The page's comparison on the app's device: the Train page's default model on reverse."""
    dev = device()[0]
    return PrecisionSettings(
        device=str(dev), precisions=precisions_for(dev), budget_s=BUDGET_S, budget_bytes=BUDGET_BYTES
    )


def _job(settings: PrecisionSettings) -> Callable[[RunHandle], None]:
    def job(handle: RunHandle) -> None:
        def progress(precision: str, done: int, total: int) -> None:
            handle.set_message(
                "training in {precision}: update {done} of {total}",
                precision=precision,
                done=done,
                total=total,
            )

        result = compare_precisions(settings, stop=handle.should_stop, progress=progress)
        if result is not None:
            board().update(settings, lambda _old: result)
            handle.set_message("every precision measured")

    return job


def start_comparison(settings: PrecisionSettings) -> Run:
    """The comparison's run (the one still going, or a new one); ValueError (worded for the
    reader) when the manager's queue is full."""
    return board().start(settings, f"mixed precision: {', '.join(settings.precisions)}", _job(settings))


# --- the section ---------------------------------------------------------------------------------


def _intro(settings: PrecisionSettings) -> None:
    st.markdown(
        tr(
            "Mixed precision trains with 16-bit numbers where they are safe. Under **autocast** (`torch.autocast`) the matrix "
            "products run in 16 bits, while the weights, their gradients and Adam's moments stay float32 (the "
            "master weights), and the loss is computed in float32. **bfloat16** keeps float32's 8 exponent "
            "bits (the same range) and 7 of its 23 mantissa bits (about 3 significant digits). **float16** has "
            "5 exponent bits and 10 mantissa bits: gradients below about 6·10⁻⁸ become 0. A **gradient "
            "scaler** multiplies the loss by S so the gradients stay in range, divides them by S before they "
            "are clipped and applied, and skips an update whose gradient overflowed:"
        )
    )
    formula("training.precision_train.MixedPrecisionTrainer.step", code=False)
    flags = cpu_bf16_flags() if settings.device == "cpu" else None
    if flags:
        st.caption(tr("This server's CPU has bfloat16 instructions: {flags}.", flags=", ".join(flags)))
    elif flags is not None:
        st.caption(
            tr(
                "This server's CPU lists no bfloat16 instructions (avx512_bf16, amx_bf16 in /proc/cpuinfo): "
                "torch computes its bfloat16 products without them."
            )
        )


def precision_view() -> None:
    """The section: the lesson, the button that measures in the background, the results."""
    settings = precision_settings()
    _intro(settings)
    refusal = precision_refusal(settings)
    if refusal is not None:
        st.warning(refusal.render(tr))
    result = board().get(settings)
    busy = result is not None and _load(result).busy  # its note asks for a quieter measurement
    first = tr("▶ Train in {precisions} and measure", precisions=tr(" and ").join(settings.precisions))
    experiment(
        board(),
        settings,
        label=tr("▶ Measure again") if busy else first,
        button="train.precision.start",
        finished=result is not None and not busy,
        refused=refusal is not None,
        start=lambda: start_comparison(settings),
        status=lambda run: st.info(run.message),
        draw=lambda result, run: _draw(settings, result, run),
    )
    source(
        "training.precision_train.MixedPrecisionTrainer.step", label="One mixed-precision update: the code"
    )


def _draw(settings: PrecisionSettings, result: PrecisionComparison | None, run: Run | None) -> None:
    if result is not None:
        _results(result)
    elif run is None:
        st.info(
            tr(
                "Not measured yet on this server: press the button. The {n} precisions train the same model from "
                "the same seed on the same batches for {steps} updates each.",
                n=len(settings.precisions),
                steps=settings.steps,
            )
        )


def _results(result: PrecisionComparison) -> None:
    s = result.settings
    st.dataframe(_table(result), hide_index=True)
    st.markdown(" ".join(note.render(tr) for note in describe(result)))
    for note in result.notes:
        st.info(note.render(tr))
    runs = result.runs
    chart(
        cost_bars(
            [r.precision for r in runs],
            [r.timing.median * 1e3 for r in runs],
            [(r.peak_bytes or 0) / 2**20 for r in runs],
            quartiles_ms=[(r.timing.q1 * 1e3, r.timing.q3 * 1e3) for r in runs],
            titles=(tr("ms per update"), tr("peak memory of an update (MiB)")),
            title=tr("Time and memory of one training update"),
        ),
        key="precision_costs",
    )
    chart(
        loss_curves_figure({r.precision: r.losses for r in runs}, title=tr("Training loss of every update")),
        key="precision_losses",
    )
    method = runs[0].memory_method
    st.caption(
        tr(
            "Measured on {device}: task {task} ({length} tokens), {layers} layers × {heads} heads, d_model {d}, "
            "batch {batch}, the same seed and batches in every precision. Time: the median of updates repeated "
            "until the spread is small, quartiles in brackets (*: the spread did not settle within the "
            "timing's bound; `tformer.timing.measure`). Memory: the most an "
            "update held above what was held before it, by {method}. Accuracy: held-out token accuracy at the "
            "end, evaluated in the precision the model trained in.",
            device=device_name(device()[0]) if s.device == str(device()[0]) else s.device,
            task=tr(s.task),
            length=s.length,
            layers=s.n_layers,
            heads=s.n_heads,
            d=s.d_model,
            batch=s.batch,
            method=tr(METHODS.get(method, method)),
        )
        + " "
        + busy_method()
    )
    busy = load_note(_load(result))
    if busy:
        st.warning(busy)


def _load(result: PrecisionComparison) -> Load:
    """What else ran while any precision was timed."""
    load = Load()
    for r in result.runs:
        load = load.merge(r.timing.load)
    return load


def _table(result: PrecisionComparison) -> list[dict[str, str]]:
    rows = []
    for r in result.runs:
        t = r.timing
        rows.append(
            {
                tr("precision"): r.precision,
                tr("gradient scaler"): tr("yes") if r.scale is not None else tr("no"),
                tr("ms per update (quartiles)"): f"{t.median * 1e3:.3g} ({spread_ms(t)})"
                + ("" if t.settled else " *"),
                tr("peak memory (MiB)"): "–" if r.peak_bytes is None else f"{r.peak_bytes / 2**20:.1f}",
                tr("final loss"): f"{r.losses[-1]:.4f}",
                tr("held-out accuracy"): f"{r.accuracy:.1%}",
                tr("updates"): str(r.updates),
            }
        )
    return rows
