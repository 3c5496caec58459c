"""The Train page's "Memory of a step" section: activation checkpointing and gradient
accumulation measured on this server (`tformer.training.memory`), with the identity that makes
accumulation exact and the code that computed it.

Measured on request (a button), then again whenever the chosen lengths or layer counts change:
the sweeps take a few seconds, and the checkpointing sweep stops starting rows past
`SWEEP_SECONDS`. Results are cached per device (the accumulation sweep and the gradient checks)
and per device and chosen shapes (the checkpointing sweep), so a class sees one measurement.
Every string goes through `tformer.i18n.tr`.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import numpy as np
import streamlit as st
import torch

from ....efficiency.measure import device_name
from ....i18n import tr
from ....timing import Load, activity
from ....training.memory import (
    MemoryRow,
    SweepSetup,
    accumulated_gradients,
    accumulation_sweep,
    checkpoint_sweep,
    checkpointed,
)
from ....training.recipe import model_config
from ....training.tasks import TaskSpec, make_batch
from ...binding import bind, view
from ...timing_view import busy_method, load_note

BATCHES = (16, 32, 64)
MICRO = 4
BUDGET_BYTES = 1 << 30  # no shape above 1 GiB by its estimate is built
ROW_SECONDS = 0.2  # the timing bound of one row
SWEEP_SECONDS = 60.0  # the checkpointing sweep starts no row it predicts past this
SHAPES = ("train.memory_lengths", "train.memory_layers")  # the view-state keys of the chosen shapes
_SHOWN = "_train_memory_shown"  # session_state: the button was pressed in this session


@dataclass(frozen=True)
class Measured:
    """The accumulation sweep and the two gradient checks, on one device."""

    device: str
    accumulation: tuple[MemoryRow, ...]
    checkpoint_diff: float  # max |grad plain - grad checkpointed|
    accumulation_diff: float  # max |grad whole batch - grad of MICRO micro-batches|
    largest_grad: float


def _gradient_checks() -> tuple[float, float, float]:
    """The same small model's gradients three ways: plain, checkpointed, accumulated."""
    from ....model.encoder import Encoder

    spec = TaskSpec("reverse", length=32)
    torch.manual_seed(0)
    model = Encoder(model_config(spec, n_layers=2, d_model=32)).train()
    x, y = make_batch(spec, np.random.default_rng(1), 16)
    xs, ys = torch.from_numpy(x.astype(np.int64)), torch.from_numpy(y.astype(np.int64))
    plain = accumulated_gradients(model, [(xs, ys)])
    with checkpointed(model):
        again = accumulated_gradients(model, [(xs, ys)])
    parts = accumulated_gradients(model, list(zip(xs.chunk(MICRO), ys.chunk(MICRO), strict=True)))

    def diff(other: dict[str, torch.Tensor]) -> float:
        return max(float((plain[k] - other[k]).abs().max()) for k in plain)

    return diff(again), diff(parts), max(float(g.abs().max()) for g in plain.values())


@st.cache_resource(max_entries=4, show_spinner=False)
def measure_memory(device: str) -> Measured:
    """The accumulation sweep and the gradient checks on ``device`` (one measurement per server
    and device, shared by every session)."""
    setup = SweepSetup(BUDGET_BYTES, device=device, max_seconds=ROW_SECONDS)
    with activity("memory sweep"):
        acc = accumulation_sweep(BATCHES, setup, micro=MICRO)
        ck_diff, acc_diff, largest = _gradient_checks()
    return Measured(device_name(torch.device(device)), tuple(acc), ck_diff, acc_diff, largest)


@st.cache_resource(max_entries=16, show_spinner=False)
def measure_checkpointing(
    device: str, lengths: tuple[int, ...], layers: tuple[int, ...]
) -> tuple[MemoryRow, ...]:
    """The checkpointing sweep over ``lengths`` x ``layers`` on ``device`` (one measurement per
    server, device and set of shapes, shared by every session)."""
    setup = SweepSetup(BUDGET_BYTES, device=device, max_seconds=ROW_SECONDS, total_seconds=SWEEP_SECONDS)
    with activity("memory sweep"):
        return tuple(checkpoint_sweep(lengths, layers, setup))


def shape_pickers() -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The lengths and the layer counts the checkpointing sweep measures (bound to the view
    state: a share link opens the same choice), each sorted."""
    v = view()
    labels = (tr("lengths (tokens)"), tr("layer counts"))
    picked = []
    for column, key, label in zip(st.columns(2), SHAPES, labels, strict=True):
        options = list(v.choices(key))
        chosen = column.multiselect(label, options, max_selections=v.max_items(key), **bind(key, options))
        picked.append(tuple(sorted(chosen)))
    return picked[0], picked[1]


def _mib(row: MemoryRow) -> str:
    if row.cost is None or row.cost.peak_bytes is None:
        return "–"
    return f"{row.cost.peak_bytes / 2**20:.1f}"


def _ms(row: MemoryRow) -> str:
    if row.cost is None:
        return "–"
    t = row.cost.timing
    return f"{t.median * 1e3:.3g} ({t.q1 * 1e3:.3g}–{t.q3 * 1e3:.3g})"


def _table(rows: tuple[MemoryRow, ...], *, kind: str) -> list[dict[str, str]]:
    """Rows as the table shows them; ``kind``: "checkpoint" or "accumulation"."""
    out = []
    for r in rows:
        how = (
            (tr("checkpointed") if r.checkpoint else tr("plain"))
            if kind == "checkpoint"
            else (tr("{k} micro-batches", k=r.micro) if r.micro > 1 else tr("one batch"))
        )
        out.append(
            {
                tr("layers"): str(r.layers),
                tr("length"): str(r.length),
                tr("batch"): str(r.batch),
                tr("step"): how,
                tr("peak memory (MiB)"): _mib(r),
                tr("ms per step (quartiles)"): _ms(r),
                tr("note"): r.skipped.render(tr) if r.skipped is not None else "",
            }
        )
    return out


def _load(rows: tuple[MemoryRow, ...]) -> Load:
    load = Load()
    for r in rows:
        if r.cost is not None:
            load = load.merge(r.cost.timing.load)
    return load


def _explain() -> None:
    st.markdown(
        tr(
            "A training step keeps every block's intermediate results (q, k, v, the scores and "
            "weights, the FFN's hidden layer) from the forward pass until the backward pass needs "
            "them. Two ways to hold less: **activation checkpointing** keeps only each block's "
            "input and runs the block again during the backward pass; **gradient accumulation** "
            "runs a large batch as several micro-batches, one after another, and adds up their "
            "gradients."
        )
    )
    st.latex(
        r"\nabla \frac{1}{N}\sum_{t=1}^{N} \ell_t \;=\; \sum_i \frac{n_i}{N}\,"
        r"\nabla \frac{1}{n_i}\sum_{t \in i} \ell_t"
    )
    st.caption(
        tr(
            "Micro-batch i's mean loss weighted by its share of the tokens n_i / N: the gradients "
            "add up to the whole batch's exactly."
        )
    )


def _part(title: str, rows: tuple[MemoryRow, ...], kind: str, caption: str) -> None:
    st.subheader(title)
    st.dataframe(_table(rows, kind=kind), hide_index=True, height="content")  # every row, no scrolling
    st.caption(caption)


def _checkpoint_part(m: Measured, rows: tuple[MemoryRow, ...]) -> None:
    if not rows:
        st.subheader(tr("Activation checkpointing"))
        st.info(tr("Choose at least one length and one layer count to measure checkpointing."))
        return
    checkpoint_note = tr(
        "Batch 32, reverse task, d_model 64. Gradients checkpointed against plain: largest "
        "difference {diff:.1e} (largest gradient {largest:.2g}).",
        diff=m.checkpoint_diff,
        largest=m.largest_grad,
    )
    if any(r.skipped is not None for r in rows):
        checkpoint_note += " " + tr(
            "A shape is not built when its memory estimate passes {mib:,.0f} MiB, nor started when "
            "the row measured before it predicts that the sweep would pass {s:.0f} s.",
            mib=BUDGET_BYTES / 2**20,
            s=SWEEP_SECONDS,
        )
    _part(tr("Activation checkpointing"), rows, "checkpoint", checkpoint_note)


def _results(m: Measured, checkpoint_rows: tuple[MemoryRow, ...]) -> None:
    _checkpoint_part(m, checkpoint_rows)
    accumulation_note = tr(
        "Length 64, 4 layers: the same sequences as one batch and as {k} micro-batches. "
        "Gradients against the whole batch's: largest difference {diff:.1e}.",
        k=MICRO,
        diff=m.accumulation_diff,
    )
    _part(tr("Gradient accumulation"), m.accumulation, "accumulation", accumulation_note)
    st.caption(
        tr(
            "Measured on {device}. Memory: the most the step held above what was held before it "
            "(on CPU the profiler's memory events, on CUDA the allocator). Time: median of calls "
            "repeated until the spread is small, quartiles in brackets.",
            device=m.device,
        )
        + " "
        + busy_method()
    )
    note = load_note(_load((*checkpoint_rows, *m.accumulation)))
    if note:
        st.warning(note)
    with st.expander(tr("The code that computed it")):
        st.code(inspect.getsource(accumulated_gradients), language="python")
        st.code(inspect.getsource(checkpointed), language="python")


def memory_view() -> None:
    """The section: the lesson, the shapes to sweep, a button that measures (once per device and
    shapes; after it, a change of the shapes measures them), the results."""
    _explain()
    lengths, layers = shape_pickers()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if st.button(tr("Measure memory and time"), key="train.memory.measure", type="primary"):
        st.session_state[_SHOWN] = True
    if not st.session_state.get(_SHOWN, False):
        return
    with st.spinner(tr("Measuring training steps on this server...")):
        rows = measure_checkpointing(device, lengths, layers) if lengths and layers else ()
        _results(measure_memory(device), rows)
