"""The numbers behind the precision page: the model's copies in each number format (one per
model and format, shared by every session), each copy compared with float32 on a text (per
model, text, device and variant), the forwards timed (per model, device and length band), and
one layer's patterns of a chosen format (per model, text, format and layer).

A text edit compares float32 (the app's own capture of "pattern", `get_capture`, against
itself) and the session's chosen variant in the page run, and the other variants there too
while their foreseen cost is small; the rest, and the timings of a length band not timed yet,
go to the server's worker (`tformer.ui.views.precision.jobs`), and the page polls until they arrive.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import streamlit as st
import torch

from ....efficiency.precision import (
    BUDGET_S,
    REFERENCE,
    REL_SPREAD,
    VARIANTS,
    PrecisionReport,
    Variant,
    VariantResult,
    band_ids,
    band_length,
    float_format,
    make_variant,
    time_variant,
    variant_diff,
    variant_pattern,
    variant_row,
    with_timing,
)
from ....i18n import tr
from ....model.capture import TextCapture, capture_nbytes
from ....model.encoder import Encoder
from ....timing import Load, Timing, activity, watch
from ...binding import view
from ...caches import MAX_CAPTURE_BYTES, CaptureTooLarge, ModelChoice, device, get_capture, get_model
from ...singletons import shared
from ...timing_view import busy_method, load_note, spread_ms
from .jobs import Failed, precision_jobs

NAMES = ("pattern",)
MB = 2**20
# A page run compares a variant other than float32 and the chosen one itself only while the
# comparisons it foresees (from the variant's last one, scaled by length) fit this many seconds;
# the server's worker compares the others, and times every variant once per length band.
FOREGROUND_S = 0.15
POLL_S = 0.25  # how often a page waiting for the worker looks again


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
                cols["runs"]: r.runs if r.timing is not None else None,
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


def precision_time_caption(run: PrecisionRun) -> str:
    """How the forwards were timed, and how a busy machine is recognised."""
    report = run.report
    return " ".join(
        [
            tr(
                "Forward time: the median of plain forwards (no hooks, so attention takes the fused "
                "kernel) under `torch.inference_mode` on {band} tokens (this text's ids repeated: a "
                "forward costs the same for any ids of one length, so each model, device and length band "
                "up to {band} is timed once, in the background), after one warm-up forward, repeated "
                "until their interquartile range is under {share:.0%} of the median, or up to {runs} "
                "forwards or {seconds:g} s per variant; the error bars span the quartiles. CPU threads: "
                "{threads}; torch's CPU kernels here use {cap}. A lower precision is faster only where "
                "the device has fast kernels for it. Weights: every tensor of each copy's "
                "`state_dict()`, in bytes as stored.",
                band=run.band,
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


@dataclass(frozen=True)
class BandTiming:
    """Every variant's forwards timed at one band length (`band_length`), and what else ran."""

    timings: dict[str, Timing | None]  # None: the variant is not available
    load: Load
    threads: int
    cpu_capability: str
    engine: str


@dataclass(frozen=True)
class PrecisionRun:
    """What the page shows for one text: the report as far as it is done (rows without a
    ``diff`` are still being compared, rows without a ``timing`` still being timed), the
    variants still comparing, whether the band is still being timed, and the job keys."""

    report: PrecisionReport
    band: int  # the length the forwards are timed at
    comparing: tuple[str, ...]
    timing: bool
    keys: tuple[Hashable, ...]  # every job this view waits for
    failures: tuple[tuple[str, str], ...] = ()  # (what, error) of jobs that raised

    @property
    def pending(self) -> bool:
        return bool(self.comparing) or self.timing


def precision_variant_of() -> str | None:
    """The variant this session compares with float32 (its view state), read before its
    widget is drawn so that the page compares it first."""
    value = view().get("precision.variant")
    return value if isinstance(value, str) else None


@st.cache_resource(max_entries=40, show_spinner=False)
def _row(choice: ModelChoice, name: str) -> VariantResult:
    return variant_row(precision_variant(choice, name))


def _costs() -> dict[str, tuple[int, float]]:
    """The latest comparison of each variant: (tokens, seconds), to foresee the next one's."""
    return shared("precision.costs", dict)


def _foreseen(name: str, n_pos: int) -> float | None:
    seen = _costs().get(name)
    if seen is None:
        return None
    n0, t0 = seen
    return t0 * (n_pos / n0) ** (2 if n_pos > n0 else 1)  # attention's n^2 when it grows


def _compare_job(
    row: VariantResult, variant: Variant, reference: TextCapture, model: Encoder
) -> Callable[[], VariantResult]:
    """``row`` (the variant's cached `variant_row`) with its difference on the reference's text."""

    def job() -> VariantResult:
        t0 = time.perf_counter()
        with activity("precision comparison"):
            diff = variant_diff(variant, reference.encoded, reference, reference_model=model)
        if variant.model is not model:
            _costs()[variant.name] = (len(reference.encoded.ids), time.perf_counter() - t0)
        return row if diff is None else replace(row, diff=diff)

    return job


def _timing_job(variants: dict[str, Variant], ids: list[int]) -> Callable[[], BandTiming]:
    def job() -> BandTiming:
        with activity("precision timing"), watch() as w:
            timings = {name: time_variant(v, ids) for name, v in variants.items()}
        return BandTiming(
            timings=timings,
            load=w.load,
            threads=torch.get_num_threads(),
            cpu_capability=torch.backends.cpu.get_cpu_capability(),
            engine=torch.backends.quantized.engine,
        )

    return job


def precision_run(choice: ModelChoice, text: str, *, compute: bool = True) -> PrecisionRun:
    """Every variant on ``text``: float32 and the session's chosen variant compared in this run,
    the others too (cheapest first) while their foreseen cost fits `FOREGROUND_S`, the rest and
    the band's timings by the server's worker (`precision_jobs`); rows not done yet come without
    numbers. ``compute=False``: only what is done already (a waiting view looking again)."""
    n = check_size(choice, text)
    dev = str(device()[0])
    model, _ = get_model(choice)
    reference = get_capture(choice, text, NAMES)
    variants = {name: precision_variant(choice, name) for name in VARIANTS}
    jobs = precision_jobs()
    chosen = precision_variant_of()
    first = [REFERENCE] + (
        [chosen] if chosen is not None and chosen in VARIANTS and chosen != REFERENCE else []
    )
    keys = {name: ("compare", choice, text, dev, name) for name in VARIANTS}
    rows = {name: _row(choice, name) for name in VARIANTS}

    def job(name: str) -> Callable[[], VariantResult]:
        return _compare_job(rows[name], variants[name], reference, model)

    done: dict[str, Any] = {}
    spent = 0.0
    foreseen = {name: _foreseen(name, n) for name in VARIANTS}
    others = sorted((v for v in VARIANTS if v not in first), key=lambda v: foreseen[v] or float("inf"))
    for name in [*first, *others]:
        got = jobs.get(keys[name])
        cost = foreseen[name]
        if compute and got is None and (name in first or (cost is not None and spent + cost <= FOREGROUND_S)):
            t0 = time.perf_counter()
            got = jobs.run_here(keys[name], job(name))
            spent += time.perf_counter() - t0
        if got is not None:
            done[name] = got
    band = band_length(n, model.cfg.max_len)
    time_key = ("time", choice, dev, band)
    band_timing = jobs.get(time_key)
    comparing = tuple(name for name in VARIANTS if name not in done)
    if compute:
        timing_job = _timing_job(variants, band_ids(reference.encoded.ids, band))
        jobs.submit(
            [(keys[name], job(name)) for name in comparing] + [(time_key, timing_job)] * (band_timing is None)
        )
    failures = [(variant_label(k), v.message) for k, v in done.items() if isinstance(v, Failed)]
    if isinstance(band_timing, Failed):
        failures.append((tr("timing the forwards"), band_timing.message))
    timed = band_timing if isinstance(band_timing, BandTiming) else None
    results = []
    for name in VARIANTS:
        row = done.get(name)
        if not isinstance(row, VariantResult):
            row = rows[name]
        results.append(with_timing(row, timed.timings.get(name) if timed is not None else None))
    report = PrecisionReport(
        n_pos=n,
        results=tuple(results),
        threads=timed.threads if timed else torch.get_num_threads(),
        cpu_capability=timed.cpu_capability if timed else torch.backends.cpu.get_cpu_capability(),
        engine=timed.engine if timed else torch.backends.quantized.engine,
        load=timed.load if timed else Load(),
    )
    return PrecisionRun(
        report=report,
        band=band,
        comparing=comparing,
        timing=band_timing is None,
        keys=(*(keys[name] for name in comparing), *([time_key] if band_timing is None else [])),
        failures=tuple(failures),
    )


def precision_dropped(run: PrecisionRun) -> bool:
    """A job this view waits for is neither done nor queued (the bounded queue dropped it): a
    new page run asks again."""
    jobs = precision_jobs()
    return any(jobs.get(k) is None and not jobs.waiting(k) for k in run.keys)


def precision_waiting_note(run: PrecisionRun) -> str | None:
    """What is still running for this view, in one sentence; None when nothing is."""
    parts = []
    if run.comparing:
        parts.append(
            tr(
                "comparing {variants} with float32 on this text",
                variants=", ".join(variant_label(v) for v in run.comparing),
            )
        )
    if run.timing:
        parts.append(
            tr(
                "timing the {k} formats at {band} tokens (once per model, device and length band)",
                k=len(VARIANTS),
                band=run.band,
            )
        )
    if not parts:
        return None
    return tr(
        "Still working in the background: {what}. Their numbers appear here when done.", what="; ".join(parts)
    )


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
