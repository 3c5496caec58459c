"""Cached numbers behind the precision page: the model's copies in each number format (one per
model and format, shared by every session), the comparison on a text (per model, text and
device), and one layer's patterns of a chosen format (per model, text, format and layer).

The float32 reference is the app's own capture of "pattern" (`get_capture`), so the page's
capture and this comparison share one forward pass.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import streamlit as st

from ..efficiency.precision import (
    BUDGET_S,
    REFERENCE,
    REL_SPREAD,
    VARIANTS,
    PrecisionReport,
    Variant,
    VariantResult,
    float_format,
    make_variant,
    precision_report,
    variant_pattern,
)
from ..i18n import tr
from ..model.capture import capture_nbytes
from .caches import MAX_CAPTURE_BYTES, CaptureTooLarge, ModelChoice, device, get_capture, get_model
from .timing_view import busy_method, load_note, spread_ms

NAMES = ("pattern",)
MB = 2**20


def variant_label(name: str) -> str:
    """A variant's name on screen."""
    labels = {
        "float32": tr("float32 (the reference)"),
        "bfloat16": "bfloat16",
        "float16": "float16",
        "int8": tr("INT8, scale per matrix"),
        "int8_channel": tr("INT8, scale per row"),
    }
    return labels.get(name, name)


def float_formats() -> dict[str, dict[str, float | int]]:
    """Exponent and mantissa bits, eps and the largest value of each float variant (torch.finfo)."""
    return {name: float_format(name) for name in ("float32", "bfloat16", "float16")}


def precision_choices(report: PrecisionReport) -> list[str]:
    """The variants that ran, other than the float32 reference (the page's choices)."""
    return [r.name for r in report.results if r.problem is None and r.name != REFERENCE]


def precision_table(report: PrecisionReport) -> tuple[list[dict[str, object]], dict[str, object]]:
    """The report as table rows (one per variant, column names translated; None where a
    variant could not run) and Streamlit column formats for them."""
    cols = {
        "variant": tr("variant"),
        "dtype": tr("weights stored as"),
        "device": tr("device"),
        "ms": tr("forward (ms)"),
        "spread": tr("quartiles (ms)"),
        "ratio": tr("time / float32's"),
        "runs": tr("timed runs"),
        "mb": tr("weights (MB)"),
        "linear": tr("Linear weights (MB)"),
        "pmax": tr("max |Δ pattern|"),
        "pmean": tr("mean |Δ pattern|"),
        "omax": tr("max |Δ output|"),
        "omean": tr("mean |Δ output|"),
        "changed": tr("rows whose top key changed"),
    }
    ref_ms = next((r.forward_ms for r in report.results if r.name == REFERENCE), None)
    rows: list[dict[str, object]] = []
    for r in report.results:
        d = r.diff
        ratio = r.forward_ms / ref_ms if r.forward_ms is not None and ref_ms else None
        rows.append(
            {
                cols["variant"]: variant_label(r.name),
                cols["dtype"]: r.dtype if r.problem is None else tr("not available"),
                cols["device"]: r.device,
                cols["ms"]: r.forward_ms,
                cols["spread"]: None if r.timing is None else spread_ms(r.timing),
                cols["ratio"]: ratio,
                cols["runs"]: r.runs if r.problem is None else None,
                cols["mb"]: None if r.weight_bytes is None else r.weight_bytes / MB,
                cols["linear"]: None if r.linear_bytes is None else r.linear_bytes / MB,
                cols["pmax"]: None if d is None else d.pattern_max,
                cols["pmean"]: None if d is None else d.pattern_mean,
                cols["omax"]: None if d is None else d.output_max,
                cols["omean"]: None if d is None else d.output_mean,
                cols["changed"]: None if d is None else 100 * d.changed,
            }
        )
    fmt = {
        "ms": "%.1f", "ratio": "%.2f×", "mb": "%.1f", "linear": "%.1f", "pmax": "%.2e", "pmean": "%.2e",
        "omax": "%.2e", "omean": "%.2e", "changed": "%.1f %%",
    }  # fmt: skip
    config: dict[str, object] = {
        cols[k]: st.column_config.NumberColumn(cols[k], format=f) for k, f in fmt.items()
    }
    return rows, config


def precision_timing_notes(report: PrecisionReport) -> tuple[str | None, str | None]:
    """(the other work that ran while the variants were timed, or None; the variants whose
    forwards did not settle to a small spread, or None)."""
    loose = [variant_label(r.name) for r in report.results if r.timing is not None and not r.timing.settled]
    unsettled = (
        tr(
            "The forwards of {variants} varied by more than {share:.0%} of their median (interquartile "
            "range) up to the bound on runs or time: their times and ratios are rough.",
            variants=", ".join(loose),
            share=REL_SPREAD,
        )
        if loose
        else None
    )
    return load_note(report.load), unsettled


def precision_time_caption(report: PrecisionReport) -> str:
    """How the forwards were timed, and how a busy machine is recognised."""
    return " ".join(
        [
            tr(
                "Forward time: the median of plain forwards (no hooks, so attention takes the fused "
                "kernel) under `torch.inference_mode`, after the forward that captured the attention "
                "weights (the warm-up), repeated until their interquartile range is under {share:.0%} of "
                "the median, or up to {runs} forwards or {seconds:g} s per variant; the error bars span "
                "the quartiles. CPU threads: {threads}; torch's CPU kernels here use {cap}. A lower "
                "precision is faster only where the device has fast kernels for it. Weights: every "
                "tensor of each copy's `state_dict()`, in bytes as stored.",
                share=REL_SPREAD,
                runs=report.runs,
                seconds=BUDGET_S,
                threads=report.threads,
                cap=report.cpu_capability,
            ),
            busy_method(),
        ]
    )


def precision_result(report: PrecisionReport, name: str) -> VariantResult | None:
    """The row of ``name``, None when the report has no such variant."""
    return next((r for r in report.results if r.name == name), None)


@st.cache_resource(max_entries=8, show_spinner=False)
def precision_variant(choice: ModelChoice, name: str) -> Variant:
    """The shared model of ``choice`` copied into the format ``name`` (the shared model itself
    for float32), made once per server."""
    model, _ = get_model(choice)
    with st.spinner(tr("Converting the model to {name}...", name=name)):
        return make_variant(model, name)


def check_size(choice: ModelChoice, text: str) -> int:
    """The text's token count; CaptureTooLarge when the reference and one variant's patterns
    would not fit the capture budget together."""
    model, tokenizer = get_model(choice)
    n = len(tokenizer.encode(text).ids)
    need = 2 * capture_nbytes(model.cfg, n, NAMES)
    if need > MAX_CAPTURE_BYTES:
        raise CaptureTooLarge(
            tr(
                "Comparing the patterns of {n} tokens in two formats would take {size:.0f} MB; the "
                "limit is {limit:.0f} MB. Use a shorter text or a smaller model.",
                n=n,
                size=need / 2**20,
                limit=MAX_CAPTURE_BYTES / 2**20,
            )
        )
    return n


def precision_run(choice: ModelChoice, text: str) -> PrecisionReport:
    """Every variant on ``text``, cached per model, text and device."""
    n = check_size(choice, text)
    return _report(choice, text, str(device()[0]), n)


# cache_data: the report holds [layer, head_index] arrays and numbers only (a few KB).
@st.cache_data(max_entries=16, ttl=3600, show_spinner=False)
def _report(choice: ModelChoice, text: str, device_name: str, n_pos: int) -> PrecisionReport:
    model, tokenizer = get_model(choice)
    reference = get_capture(choice, text, NAMES)
    variants = {name: precision_variant(choice, name) for name in VARIANTS}
    with st.spinner(
        tr("Running and timing the model in {k} number formats on {n} tokens...", k=len(VARIANTS), n=n_pos)
    ):
        return precision_report(model, reference.encoded, VARIANTS, variants=variants, reference=reference)


@st.cache_resource(max_entries=8, ttl=3600, show_spinner=False)
def precision_layer(choice: ModelChoice, text: str, name: str, layer: int) -> npt.NDArray[np.float32]:
    """Layer ``layer``'s patterns [head_index, query_pos, key_pos] of the variant ``name`` on
    ``text`` (read-only; the float32 ones are the page's capture)."""
    reference = get_capture(choice, text, NAMES)
    if name == "float32":
        return reference.at("pattern", layer)
    with st.spinner(tr("Running the model in {name}...", name=name)):
        p = variant_pattern(precision_variant(choice, name), reference.encoded, layer)
    p.flags.writeable = False
    return p
