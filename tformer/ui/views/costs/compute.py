"""The costs page's sweeps: run on the device in use, once per device and settings, and shared.

A sweep is measured only when someone asks for it ("Run the sweep"): it takes seconds and
loads the machine. Its result is cached (``st.cache_data``) by section, device, torch's thread
count and settings, and every later visitor with the same settings sees it without waiting.
One sweep runs at a time on a server (`tformer.efficiency.measure.exclusive`); a second waits,
with a message, for at most the first one's budget. The progress bar is made inside the cached
function (an element made outside could not be replayed from the cache) and removed at the end.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from ....efficiency.costs import Sweep, WallSettings, wall_sweep
from ....efficiency.measure import MIB, REL_SPREAD, Budget, Note, Progress
from ....efficiency.rnn import RnnSettings, rnn_sweep
from ....efficiency.sparse import local_mask, strided_mask
from ....efficiency.sparse_costs import SparseSettings, sparse_sweep
from ....i18n import tr
from ....model.capture import capture_ids
from ...binding import bind, bind_number, view
from ...caches import ModelChoice, device, get_capture, get_model
from ...opening import chosen_head
from ...state import CostsState

COST_SECTIONS = {
    "wall": "The n² wall",
    "rnn": "Attention vs an RNN",
    "sparse": "Sparse and local attention",
}
METHODS = {
    "explicit": "explicit attention (the n × n scores)",
    "sdpa_math": "SDPA, math backend",
    "sdpa_efficient": "SDPA, memory-efficient backend",
    "sdpa_flash": "SDPA, Flash backend",
    "sdpa_cudnn": "SDPA, cuDNN backend",
    "tiled": "our tiled loop (online softmax)",
    "rnn": "tanh RNN, one position after another",
    "gru": "GRU, one position after another",
    "attention": "one self-attention layer",
    "dense_local": "dense SDPA + local mask",
    "local": "local window, only its blocks",
    "dense_strided": "dense SDPA + strided mask",
    "strided": "strided, only its blocks",
}
MEMORY_METHODS = {
    "cuda": "Peak memory: the CUDA allocator's peak (`torch.cuda.max_memory_allocated` after "
    "`reset_peak_memory_stats`), minus what was allocated before the call",
    "profiler": "Peak memory: torch profiler memory events (`profile_memory=True`) of the measuring thread, "
    "added up in time order; the peak above the start of the call",
    "none": "Peak memory: not measured on this device",
}
# Each section's time for its whole sweep (s) at the default budget a call (docs/performance.md
# has what they took); a larger budget per call scales them up.
TOTALS = {
    "wall": WallSettings().budget.total_s,
    "rnn": RnnSettings().budget.total_s,
    "sparse": SparseSettings().budget.total_s,
}
MAX_TOTAL_S = 120.0
N_MIN = 64
D_HEADS = (8, 16, 32, 64, 128, 256)
D_MODELS = (64, 128, 256, 384, 512, 768, 1024)
N_MAXES = tuple(2**e for e in range(8, 17))  # 256 .. 65536
CALL_MS = (10, 25, 50, 100, 250, 500, 1000, 2000, 5000)


def method_names() -> dict[str, str]:
    return {k: tr(v) for k, v in METHODS.items()}


def run_device() -> tuple[str, str]:
    """The device the sweeps run on (torch's name) and its name for the page."""
    from ....efficiency.measure import device_name

    dev = device()[0]
    return str(dev), _device_name(str(dev)) if dev.type != "cpu" else device_name(dev)


@st.cache_resource(show_spinner=False)
def _device_name(dev: str) -> str:
    import torch

    from ....efficiency.measure import device_name

    return device_name(torch.device(dev))


def cost_device_line(sweep: Sweep | None = None) -> str:
    """One line naming the device and how time and memory are measured."""
    dev, name = run_device()
    import torch

    kind = torch.device(dev).type
    method = (
        sweep.memory_method if sweep is not None else {"cuda": "cuda", "cpu": "profiler"}.get(kind, "none")
    )
    if kind == "cpu":
        # the device's name in backticks: a product name, shown as it is in every language
        where = tr(
            "Device: the CPU (`{name}`); torch threads: {threads}.",
            name=name,
            threads=torch.get_num_threads(),
        )
    else:
        where = tr("Device: `{device}` (`{name}`).", device=dev, name=name)
    return " ".join(
        [
            where,
            tr(
                "Time: after a warm-up call, the median of repeated calls (the device synchronised "
                "around each), repeated until their interquartile range is under {share:.0%} of the "
                "median or a bound on calls or time is reached; the error bars span the quartiles.",
                share=REL_SPREAD,
            ),
            tr(MEMORY_METHODS[method]) + ".",
        ]
    )


# --- settings ---------------------------------------------------------------------------------------


def cost_controls(part: str) -> Any:
    """The section's sweep settings (bound to the view state, in a collapsed box) as the
    settings object of its sweep; None (with a message) when they do not fit together."""
    v = view().page(CostsState)
    with st.expander(tr("Sweep settings: sizes and budgets")):
        c1, c2, c3 = st.columns(3)
        if part in ("wall", "sparse"):
            c1.number_input(tr("number of heads"), **bind_number("costs.n_heads"))
            c2.select_slider(tr("d_head"), D_HEADS, **bind("costs.d_head", D_HEADS))
        else:
            c1.number_input(tr("number of heads"), **bind_number("costs.n_heads"))
            c2.select_slider(tr("d_model"), D_MODELS, **bind("costs.d_model", D_MODELS))
        c3.select_slider(tr("longest length tried"), N_MAXES, **bind("costs.n_max", N_MAXES))
        c4, c5, c6 = st.columns(3)
        c4.select_slider(
            tr("time budget per call (ms)"),
            CALL_MS,
            help=tr("No length is started whose call would take longer, by the growth seen so far."),
            **bind("costs.call_ms", CALL_MS),
        )
        memories = list(view().choices("costs.memory"))
        c5.selectbox(
            tr("memory budget (MiB)"),
            memories,
            # translated now: AppTest calls a format_func from its own thread, language unknown
            format_func={
                m: tr("auto: min(1 GiB, ¼ of the free memory)") if m == "auto" else m for m in memories
            }.__getitem__,
            help=tr(
                "Checked before each length with the method's formula: a length that would need more is skipped."
            ),
            **bind("costs.memory", memories),
        )
        if part == "wall":
            dtypes = list(view().choices("costs.dtype"))
            c6.selectbox(
                tr("number type"),
                dtypes,
                format_func={
                    d: tr("auto: float16 on a GPU, else float32") if d == "auto" else d for d in dtypes
                }.__getitem__,
                **bind("costs.dtype", dtypes),
            )
    scale = max(1.0, v.call_ms / 250)
    budget = Budget(
        call_s=v.call_ms / 1000,
        memory_bytes=None if v.memory == "auto" else int(v.memory) * MIB,
        total_s=min(TOTALS[part] * scale, MAX_TOTAL_S),
    )
    n_max = max(v.n_max, N_MIN * 2)
    if part == "wall":
        dtype = v.dtype
        if dtype == "auto":
            dtype = "float16" if run_device()[0].startswith("cuda") else "float32"
        return WallSettings(
            n_heads=v.n_heads, d_head=v.d_head, n_min=N_MIN, n_max=n_max, dtype=dtype, budget=budget
        )
    if part == "rnn":
        if v.d_model % v.n_heads:
            st.warning(
                tr(
                    "d_model = {d} is not divisible by {h} heads: choose another number of heads.",
                    d=v.d_model,
                    h=v.n_heads,
                )
            )
            return None
        return RnnSettings(d_model=v.d_model, n_heads=v.n_heads, n_min=N_MIN, n_max=n_max, budget=budget)
    return SparseSettings(n_heads=v.n_heads, d_head=v.d_head, n_min=N_MIN, n_max=n_max, budget=budget)


# --- running ----------------------------------------------------------------------------------------

SWEEPS: dict[str, Callable[[Any, str, Progress | None], Sweep]] = {
    "wall": wall_sweep,
    "rnn": rnn_sweep,
    "sparse": sparse_sweep,
}


@st.cache_data(max_entries=24, show_spinner=False)
def _sweep(part: str, dev: str, threads: int, settings: Any, attempt: int) -> Sweep:
    """One sweep, measured; ``threads`` and ``attempt`` are part of the key only."""
    bar = st.progress(0.0, text=tr("Starting the sweep..."))
    names = method_names()
    shown = [-1.0]

    def progress(fraction: float, note: Note) -> None:
        if fraction - shown[0] >= 0.01 or fraction >= 1.0:  # a few dozen updates, not hundreds
            shown[0] = fraction
            bar.progress(min(max(fraction, 0.0), 1.0), text=note.render(tr, names))

    try:
        return SWEEPS[part](settings, dev, progress)
    finally:
        bar.empty()


@st.cache_resource(show_spinner=False)
def _attempts() -> dict[tuple[Any, ...], int]:
    """(section, device, threads, settings) -> the attempt whose sweep finished last: every
    session sees a finished sweep without asking again."""
    return {}


def run_cost_sweep(part: str, settings: Any) -> Sweep | None:
    """The section's sweep for these settings on this device: the cached one if it ran
    already, else a button that runs it (with a progress bar). None until it has run."""
    import torch

    dev = run_device()[0]
    threads = torch.get_num_threads()
    key = (part, dev, threads, settings)
    attempts = _attempts()
    attempt = attempts.get(key)
    if attempt is None:
        slot = st.empty()  # the offer goes once the sweep has run
        with slot.container():
            st.info(
                tr(
                    "Not measured yet with these settings on this device. The sweep takes at most about "
                    "{seconds:.0f} s and loads the machine meanwhile; its result is kept for every visitor.",
                    seconds=settings.budget.total_s,
                )
            )
            clicked = st.button(tr("Run the sweep"), key=f"costs_run_{part}", type="primary")
        if not clicked:
            return None
        result = _sweep(part, dev, threads, settings, 1)
        slot.empty()
        attempts[key] = 1
        return result
    if st.button(tr("Measure again"), key=f"costs_again_{part}"):
        attempt += 1
    result = _sweep(part, dev, threads, settings, attempt)
    attempts[key] = attempt
    return result


# --- what a sweep shows -------------------------------------------------------------------------------


def sparse_on_text(choice: ModelChoice | None, text: str) -> dict[str, Any] | None:
    """The mask settings, the layer and head pickers and the masked weights of the current text
    (`sparse_patterns`); None, with a message, when there is no text or no model to run."""
    c1, c2, c3, c4 = st.columns(4)
    window = c1.number_input(tr("local window w"), **bind_number("costs.window"))
    stride = c2.number_input(tr("stride s"), **bind_number("costs.stride"))
    if choice is None:
        st.info(
            tr(
                "Fix the model settings in the sidebar to see these masks on a text; the timing below needs none."
            )
        )
        return None
    if not text.strip():
        st.info(tr("No text: type one in the sidebar to see these masks on it. The timing below needs none."))
        return None
    model, _ = get_model(choice)
    layers, heads = range(model.cfg.n_layers), range(model.cfg.n_heads)
    first_layer, first_head = chosen_head(choice, text, model.cfg.n_layers, model.cfg.n_heads)
    layer = int(c3.selectbox(tr("layer"), layers, **bind("layer", layers, clamp=True, fallback=first_layer)))
    head = int(c4.selectbox(tr("head"), heads, **bind("head", heads, clamp=True, fallback=first_head)))
    try:
        found = sparse_patterns(choice, text, layer, int(window), int(stride))
    except ValueError as err:
        st.warning(tr("Could not run the model on this text: {error}", error=err))
        return None
    return {**found, "layer": layer, "head": head, "window": int(window), "stride": int(stride)}


@st.cache_resource(max_entries=16, show_spinner=False)
def sparse_patterns(choice: ModelChoice, text: str, layer: int, window: int, stride: int) -> dict[str, Any]:
    """The chosen layer's weights [head_index, query_pos, key_pos] on ``text`` without a mask and
    with the local and the strided mask applied in every layer (the encoder's own attn_mask),
    and the share of cells each mask allows."""
    model, _ = get_model(choice)
    base = get_capture(choice, text, ["pattern"], (layer,))
    n = base.n_pos
    out: dict[str, Any] = {"none": base.at("pattern", layer), "labels": base.labels, "shares": {}}
    for kind, mask in (("local", local_mask(n, window)), ("strided", strided_mask(n, stride))):
        cap = capture_ids(model, base.encoded, ["pattern"], (layer,), attn_mask=mask)
        out[kind] = cap.at("pattern", layer)
        out["shares"][kind] = float(mask.mean())
    out["causal"] = bool(model.cfg.causal)
    return out
