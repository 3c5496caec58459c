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

import threading
import time
from collections import OrderedDict
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
    compare,
    float_format,
    identical,
    make_variant,
    time_variant,
    variant_capture,
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
# A page run compares a variant (the chosen one first) only while the comparisons it foresees
# (from the variant's last one, scaled by length) fit this many seconds: what a 16-token edit's
# budget (150 ms in the browser) leaves after the page's own run. The server's worker compares
# the others, and times every variant once per length band. A variant never compared yet is
# compared in the run on a text of at most FIRST_TOKENS tokens (the smallest length band), so
# its cost becomes known; on a longer one the worker compares it first.
FOREGROUND_S = 0.05
FIRST_TOKENS = 16
KEEP_CAPTURES = 3  # variant captures kept for the one-head view (75 MB each at 512 tokens)
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
    """The latest comparison of each variant: (tokens, CPU seconds of the thread that ran it),
    to foresee the next one's. CPU time, not wall time: other programs on a busy machine would
    otherwise send every comparison to the worker."""
    return shared("precision.costs", dict)


def _foreseen(name: str, n_pos: int) -> float | None:
    seen = _costs().get(name)
    if seen is None:
        return None
    n0, t0 = seen
    return t0 * (n_pos / n0) ** (2 if n_pos > n0 else 1)  # attention's n^2 when it grows


def _fits(name: str, n_pos: int, spent: float) -> bool:
    """Whether comparing ``name`` on ``n_pos`` tokens fits what is left of the page run's
    `FOREGROUND_S`: by its foreseen cost, or, before its first comparison, when the text is
    short (`FIRST_TOKENS`), so that its cost becomes known."""
    cost = _foreseen(name, n_pos)
    if cost is None:
        return n_pos <= FIRST_TOKENS and spent == 0.0
    return spent + cost <= FOREGROUND_S


class CaptureStore:
    """The latest variant captures of "pattern" that a page shows a head of (the chosen
    variant's), at most ``size``, so that its one-head view reads the comparison's capture
    instead of running the variant again. Shared by the page runs and the worker."""

    def __init__(self, size: int = KEEP_CAPTURES) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._caps: OrderedDict[Hashable, TextCapture] = OrderedDict()

    def get(self, key: Hashable) -> TextCapture | None:
        with self._lock:
            cap = self._caps.get(key)
            if cap is not None:
                self._caps.move_to_end(key)
            return cap

    def put(self, key: Hashable, cap: TextCapture) -> None:
        with self._lock:
            self._caps[key] = cap
            self._caps.move_to_end(key)
            while len(self._caps) > self.size:
                self._caps.popitem(last=False)


def _captures() -> CaptureStore:
    return shared("precision.captures", CaptureStore)


def _capture_key(choice: ModelChoice, text: str, dev: str, name: str) -> Hashable:
    return ("capture", choice, text, dev, name)


def _compare_job(
    row: VariantResult, variant: Variant, reference: TextCapture, model: Encoder, keep: Hashable | None
) -> Callable[[], VariantResult]:
    """``row`` (the variant's cached `variant_row`) with its difference on the reference's text;
    the variant's capture is kept under ``keep`` (`CaptureStore`) when that is not None."""

    def job() -> VariantResult:
        if variant.model is None:
            return row
        if variant.model is model:  # float32: the reference itself
            return replace(row, diff=identical(reference))
        t0 = time.thread_time()
        with activity("precision comparison"):
            cap = _captures().get(keep) if keep is not None else None
            if cap is None:
                cap = variant_capture(variant, reference.encoded)
                if keep is not None:
                    _captures().put(keep, cap)
            diff = compare(reference.pattern, reference.output, cap.pattern, cap.output)
        _costs()[variant.name] = (len(reference.encoded.ids), time.thread_time() - t0)
        return replace(row, diff=diff)

    return job


def _capture_job(variant: Variant, reference: TextCapture, key: Hashable) -> Callable[[], bool]:
    """The variant's capture of the reference's text, kept under ``key`` (a variant chosen after
    its comparison ran without keeping it)."""

    def job() -> bool:
        t0 = time.thread_time()
        with activity("precision comparison"):
            _captures().put(key, variant_capture(variant, reference.encoded))
        _costs()[variant.name] = (len(reference.encoded.ids), time.thread_time() - t0)
        return True

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
    """Every variant on ``text``: float32 against itself in this run (no pass over the patterns),
    then the session's chosen variant and the others (cheapest first) while their foreseen cost
    fits `FOREGROUND_S`; the rest, and the band's timings, by the server's worker
    (`precision_jobs`), the chosen variant first. Rows not done yet come without numbers.
    ``compute=False``: only what is done already (a waiting view looking again)."""
    n = check_size(choice, text)
    dev = str(device()[0])
    model, _ = get_model(choice)
    reference = get_capture(choice, text, NAMES)
    variants = {name: precision_variant(choice, name) for name in VARIANTS}
    jobs = precision_jobs()
    chosen = precision_variant_of()
    chosen = chosen if chosen in VARIANTS and chosen != REFERENCE else None
    keys = {name: ("compare", choice, text, dev, name) for name in VARIANTS}
    rows = {name: _row(choice, name) for name in VARIANTS}

    def job(name: str) -> Callable[[], VariantResult]:
        keep = _capture_key(choice, text, dev, name) if name == chosen else None
        return _compare_job(rows[name], variants[name], reference, model, keep)

    done: dict[str, Any] = {}
    spent = 0.0
    others = sorted(
        (v for v in VARIANTS if v not in (REFERENCE, chosen)), key=lambda v: _foreseen(v, n) or float("inf")
    )
    order = [REFERENCE, *([chosen] if chosen else []), *others]
    for name in order:
        got = jobs.get(keys[name])
        if compute and got is None and (name == REFERENCE or _fits(name, n, spent)):
            t0 = time.thread_time()
            got = jobs.run_here(keys[name], job(name))
            spent += (time.thread_time() - t0) * (name != REFERENCE)
        if got is not None:
            done[name] = got
    band = band_length(n, model.cfg.max_len)
    time_key = ("time", choice, dev, band)
    band_timing = jobs.get(time_key)
    comparing = tuple(name for name in order if name not in done)
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


def precision_compared(choice: ModelChoice, text: str, name: str) -> VariantResult | Failed | None:
    """The comparison of ``name`` on ``text`` as the server has it now: its row, the error of a
    comparison that failed, or None while it is still running (or queued)."""
    got = precision_jobs().get(("compare", choice, text, str(device()[0]), name))
    return got if isinstance(got, (VariantResult, Failed)) else None


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


def precision_layer(choice: ModelChoice, text: str, name: str, layer: int) -> npt.NDArray[np.float32] | None:
    """Layer ``layer``'s patterns [head_index, query_pos, key_pos] of the variant ``name`` on
    ``text`` (read-only; the float32 ones are the page's capture), from the variant's kept
    capture (`CaptureStore`: the chosen variant's comparison keeps it). None while the server's
    worker captures it: a variant chosen after its comparison ran, when that does not fit the
    page run."""
    reference = get_capture(choice, text, NAMES)
    if name == REFERENCE:
        return reference.at("pattern", layer)
    dev = str(device()[0])
    key = _capture_key(choice, text, dev, name)
    cap = _captures().get(key)
    if cap is None:
        jobs = precision_jobs()
        failed = jobs.get(key)
        if isinstance(failed, Failed):
            raise RuntimeError(failed.message)
        jobs.forget(key)  # done before, and its capture since dropped from the store: again
        job = _capture_job(precision_variant(choice, name), reference, key)
        if _fits(name, reference.n_pos, 0.0):
            with st.spinner(tr("Running the model in {name}...", name=name)):
                jobs.run_here(key, job)
        else:
            jobs.submit([(key, job)])
        cap = _captures().get(key)
    return None if cap is None else cap.at("pattern", layer)
