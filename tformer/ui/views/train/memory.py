"""The Train page's "Memory of a step" section: activation checkpointing and gradient
accumulation measured on this server (`tformer.training.memory`), with the identity that makes
accumulation exact and the code that computed it.

Measured on request (a button): the two sweeps take a few seconds. Results are cached per device
and shape list, so a class sees one measurement. Every string goes through `tformer.i18n.tr`.
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
from ...timing_view import busy_method, load_note

LENGTHS = (32, 64)
LAYERS = (2, 4)
BATCHES = (16, 32, 64)
MICRO = 4
BUDGET_BYTES = 1 << 30  # no shape above 1 GiB by its estimate is built
ROW_SECONDS = 0.2  # the timing bound of one row


@dataclass(frozen=True)
class Measured:
    """Both sweeps and the two gradient checks, on one device."""

    device: str
    checkpoint: tuple[MemoryRow, ...]
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
    """Both sweeps on ``device`` (one measurement per server and device, shared by every session)."""
    setup = SweepSetup(BUDGET_BYTES, device=device, max_seconds=ROW_SECONDS)
    with activity("memory sweep"):
        ck = checkpoint_sweep(LENGTHS, LAYERS, setup)
        acc = accumulation_sweep(BATCHES, setup, micro=MICRO)
        ck_diff, acc_diff, largest = _gradient_checks()
    return Measured(device_name(torch.device(device)), tuple(ck), tuple(acc), ck_diff, acc_diff, largest)


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
                tr("note"): r.skipped or "",
            }
        )
    return out


def _load(m: Measured) -> Load:
    load = Load()
    for r in (*m.checkpoint, *m.accumulation):
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
    st.dataframe(_table(rows, kind=kind), hide_index=True)
    st.caption(caption)


def _results(m: Measured) -> None:
    checkpoint_note = tr(
        "Batch 32, reverse task, d_model 64. Gradients checkpointed against plain: largest "
        "difference {diff:.1e} (largest gradient {largest:.2g}).",
        diff=m.checkpoint_diff,
        largest=m.largest_grad,
    )
    _part(tr("Activation checkpointing"), m.checkpoint, "checkpoint", checkpoint_note)
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
    note = load_note(_load(m))
    if note:
        st.warning(note)
    with st.expander(tr("The code that computed it")):
        st.code(inspect.getsource(accumulated_gradients), language="python")
        st.code(inspect.getsource(checkpointed), language="python")


def memory_view() -> None:
    """The section: the lesson, a button that measures (once per device), the results."""
    _explain()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    shown = st.session_state.get("_train_memory_shown", False)
    if st.button(tr("Measure memory and time"), key="train.memory.measure", type="primary") or shown:
        st.session_state["_train_memory_shown"] = True
        with st.spinner(tr("Measuring training steps on this server...")):
            _results(measure_memory(device))
