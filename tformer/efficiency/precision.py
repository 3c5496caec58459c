r"""One model in several number formats on one text: float32 (the reference), bfloat16,
float16, and INT8 dynamic quantization of its Linear layers.

A float has a sign, exponent bits (the range) and mantissa bits (the precision):

.. math::
    x = (-1)^s \cdot 2^{e - \text{bias}} \cdot (1.m_1 m_2 \dots m_p)_2,
    \qquad \text{relative step } \varepsilon = 2^{-p}

float32 has 8 exponent and 23 mantissa bits, bfloat16 keeps the 8 exponent bits and 7 mantissa
bits, float16 has 5 and 10. Dynamic INT8 stores each Linear weight as int8 with a scale,
:math:`W \approx s_W\, W_{\text{int8}}`, and quantizes each input on the fly with a scale taken
from that input's own range, :math:`x \approx s_x (x_{\text{uint8}} - z_x)`, so the matmul runs on
integers and one multiplication by :math:`s_W s_x` brings the result back to float. W_Q, W_K and
W_V are quantized as three matrices (`SeparateQKV`), as torch quantizes a model built with
separate query, key and value layers (BERT's): the encoder keeps them in one fused Linear, and
one scale for the three would give each the step of the largest.

For each variant this module makes a copy of the model (the shared one is never changed),
captures its attention pattern through the model's own hook points (computed in that dtype,
cast to float32 to compare), times plain forwards (`tformer.timing.measure`: the median of
repeats until their spread is small or a bound is reached, with its quartiles and what else
ran meanwhile), and measures the weights' bytes from the state dict. No Streamlit here.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F
from torch import nn

from ..model.attention import MultiHeadAttention
from ..model.capture import TextCapture, capture_ids
from ..model.encoder import Encoder
from ..model.tokenizer import Encoded
from ..timing import Load, Timing, activity, watch
from ..timing import measure as measure_time

REFERENCE = "float32"
# Every variant, in the order a table lists them. The two INT8 ones differ only in how many
# scales a weight matrix gets: one for the whole matrix, or one per output row (channel).
VARIANTS = ("float32", "bfloat16", "float16", "int8", "int8_channel")
FLOAT_DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}
INT8_VARIANTS = ("int8", "int8_channel")
# Timing (`tformer.timing.measure`): at least MIN_RUNS plain forwards after a warm-up, until
# their IQR / median is under REL_SPREAD, and at most RUNS of them or BUDGET_S seconds (at least
# one forward): float16 is emulated on many CPUs and takes several times longer. The page times
# five models on every new text, so the bound per model stays small.
MIN_RUNS = 5
RUNS = 30
BUDGET_S = 0.3
REL_SPREAD = 0.05


@dataclass(frozen=True, eq=False)
class Variant:
    """The model in one number format, or why it cannot be made here (``problem``)."""

    name: str  # one of VARIANTS
    model: Encoder | None  # None when the variant is not available
    device: str  # where it runs: dynamic INT8 runs on the CPU even when the model is on a GPU
    problem: str | None = None  # why the variant is missing (a dtype the device cannot run...)
    deprecated: bool = False  # torch warned that the API used to make it is deprecated
    scales: int | None = None  # INT8: scales of the first Linear's weight (1: per tensor)

    @property
    def available(self) -> bool:
        return self.model is not None


@dataclass(frozen=True, eq=False)
class Diff:
    """How far a variant's numbers are from float32's, over every layer and head."""

    pattern_max: float  # largest |Δ weight| of any cell
    pattern_mean: float  # mean |Δ weight| over every cell of every head
    output_max: float  # largest |Δ| of the final output (last hidden state)
    output_mean: float
    head_max: npt.NDArray[np.float32]  # [layer, head_index] largest |Δ weight| of each head
    head_changed: npt.NDArray[np.float32]  # [layer, head_index] share of query rows whose top key changed
    rows_changed: int  # query rows (all layers and heads) whose most attended key changed
    rows: int  # query rows compared (layers x heads x query_pos)

    @property
    def changed(self) -> float:
        return self.rows_changed / self.rows if self.rows else 0.0


@dataclass(frozen=True, eq=False)
class VariantResult:
    """One row of the comparison: the variant, its time, its size and its difference."""

    name: str
    dtype: str  # the weights' dtype: "float32", "bfloat16", "float16", "qint8"
    device: str
    problem: str | None = None  # not None: every number below is None
    forward_ms: float | None = None  # median of `runs` plain forwards (no hooks), after the capture
    runs: int = 0
    timing: Timing | None = None  # the forwards' timing: quartiles, settled, other work
    weight_bytes: int | None = None  # every tensor of the state dict
    linear_bytes: int | None = None  # the Linear layers' part of it (weights, biases, scales)
    diff: Diff | None = None
    deprecated: bool = False
    scales: int | None = None


@dataclass(frozen=True, eq=False)
class PrecisionReport:
    """Every variant on one text; ``results`` in VARIANTS order."""

    n_pos: int
    results: tuple[VariantResult, ...]
    threads: int  # torch's CPU threads while timing
    cpu_capability: str  # what torch's CPU kernels were built to use here (AVX2, AVX512...)
    engine: str  # the quantized engine (x86, fbgemm, qnnpack...)
    runs: int = RUNS  # the most timed runs per variant
    load: Load = Load()  # what else ran on the machine while the variants were timed

    def result(self, name: str) -> VariantResult:
        for r in self.results:
            if r.name == name:
                return r
        raise KeyError(f"no variant {name!r}; this report has {[r.name for r in self.results]}")


# --- what the device can do ---------------------------------------------------------------------


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}".strip()


def dtype_problem(dtype: torch.dtype, device: torch.device | str) -> str | None:
    """None when ``device`` runs a matmul, a softmax, a LayerNorm, GELU and SDPA in ``dtype``
    with finite results; else why not (the error, shortened)."""
    dev = torch.device(device)
    try:
        g = torch.Generator().manual_seed(0)
        x = torch.randn(2, 4, 8, generator=g).to(dev, dtype)
        w = torch.randn(8, 8, generator=g).to(dev, dtype)
        h = F.gelu(F.layer_norm(x @ w, (8,)))
        p = torch.softmax(h @ h.transpose(-1, -2), dim=-1)
        z = F.scaled_dot_product_attention(h[:, None], h[:, None], h[:, None])
        if p.dtype != dtype or z.dtype != dtype:
            return f"the result came back as {p.dtype}, not {dtype}"
        if not (torch.isfinite(p.float()).all() and torch.isfinite(z.float()).all()):
            return "the test computation gave values that are not finite"
    except (RuntimeError, TypeError, NotImplementedError, ValueError) as err:
        return _first_line(err)
    return None


def _quantize(model: nn.Module, per_channel: bool) -> tuple[nn.Module, bool]:
    """``model`` (on the CPU, float32) with its Linear layers dynamically quantized to int8, in
    place; and whether torch warned that the API is deprecated."""
    from torch.ao import quantization as tq

    spec: dict[type, tq.QConfig] | set[type] = (
        {nn.Linear: tq.per_channel_dynamic_qconfig} if per_channel else {nn.Linear}
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = tq.quantize_dynamic(model, spec, dtype=torch.qint8, inplace=True)
    deprecated = any(issubclass(w.category, (DeprecationWarning, FutureWarning)) for w in caught)
    return out, deprecated


class SeparateQKV(nn.Module):
    """W_Q, W_K and W_V as three Linear layers, their outputs concatenated (rows Q;K;V): the
    numbers of the fused ``attn.qkv`` Linear, in the shape of a model with separate query, key
    and value layers, so that quantizing it gives each matrix a scale of its own."""

    def __init__(self, fused: nn.Linear) -> None:
        super().__init__()
        d_in, d_out = fused.in_features, fused.out_features // 3
        if fused.out_features != 3 * d_out or fused.bias is None:
            raise ValueError(f"a fused Q, K, V Linear has 3 x d_model outputs and a bias, got {fused}")
        self.q, self.k, self.v = (nn.Linear(d_in, d_out) for _ in range(3))
        with torch.no_grad():
            for part, w, b in zip(
                (self.q, self.k, self.v), fused.weight.chunk(3, dim=0), fused.bias.chunk(3), strict=True
            ):
                part.weight.copy_(w)  # [d_model, d_model]
                part.bias.copy_(b)  # [d_model]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.q(x), self.k(x), self.v(x)], dim=-1)  # [batch, pos, 3 * d_model]


def separate_qkv(model: Encoder) -> Encoder:
    """``model`` with each block's fused ``attn.qkv`` replaced by `SeparateQKV`, in place."""
    fused = [m for m in model.modules() if isinstance(m, MultiHeadAttention) and isinstance(m.qkv, nn.Linear)]
    for attn in fused:
        attn.add_module("qkv", SeparateQKV(attn.qkv))  # replaces the child of that name
    return model


def int8_problem() -> str | None:
    """None when this torch build quantizes a Linear layer dynamically to int8 and runs it on
    the CPU; else why not."""
    engines = [e for e in torch.backends.quantized.supported_engines if e != "none"]
    if not engines:
        return "this torch build has no quantized engine"
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            tiny, _ = _quantize(nn.Sequential(nn.Linear(8, 8)), per_channel=False)
            y = tiny(torch.randn(2, 8))
        if not torch.isfinite(y).all():
            return "the quantized test layer gave values that are not finite"
    except (ImportError, AttributeError, RuntimeError, NotImplementedError, AssertionError) as err:
        return _first_line(err)
    return None


# --- making the variants ------------------------------------------------------------------------


def make_variant(model: Encoder, name: str) -> Variant:
    """A copy of ``model`` in the number format ``name`` (one of VARIANTS); ``model`` itself is
    never changed. A format the device cannot run comes back with its ``problem`` and no model.

    float32 returns the model itself (nothing to change). INT8 dynamic quantization exists for
    the CPU only: on a GPU its copy is moved to the CPU first; its W_Q, W_K and W_V become three
    Linear layers first (`separate_qkv`), each quantized on its own.
    """
    if name not in VARIANTS:
        raise ValueError(f"unknown variant {name!r}; one of {list(VARIANTS)}")
    dev = model.device
    if name == REFERENCE:
        return Variant(name, model, str(dev))
    if name in FLOAT_DTYPES:
        dtype = FLOAT_DTYPES[name]
        problem = dtype_problem(dtype, dev)
        if problem is not None:
            return Variant(name, None, str(dev), problem=f"{name} on {dev}: {problem}")
        return Variant(name, copy.deepcopy(model).to(dtype=dtype).eval(), str(dev))
    problem = int8_problem()
    if problem is not None:
        return Variant(name, None, "cpu", problem=f"dynamic INT8: {problem}")
    clone = separate_qkv(copy.deepcopy(model).to("cpu", torch.float32).eval())
    _, deprecated = _quantize(clone, per_channel=name == "int8_channel")  # in place: still an Encoder
    return Variant(name, clone, "cpu", deprecated=deprecated, scales=_weight_scales(clone))


def _quantized_linear_types() -> tuple[type, ...]:
    from torch.ao.nn.quantized import dynamic as nnqd

    return (nnqd.Linear,)


def _weight_scales(model: nn.Module) -> int | None:
    """How many scales the first quantized Linear's weight has (1: one per tensor)."""
    for module in model.modules():
        if isinstance(module, _quantized_linear_types()):
            w = module.weight()  # type: ignore[operator]  # a method on quantized Linear layers
            if w.qscheme() in (torch.per_channel_affine, torch.per_channel_symmetric):
                return int(w.q_per_channel_scales().numel())
            return 1
    return None


# --- measuring ----------------------------------------------------------------------------------


def tensor_bytes(t: torch.Tensor) -> int:
    """Bytes one state-dict tensor occupies, its quantization parameters included."""
    if t.is_quantized:
        n = t.numel() * t.element_size()  # int8: one byte per element
        if t.qscheme() in (torch.per_channel_affine, torch.per_channel_symmetric):
            scales, zeros = t.q_per_channel_scales(), t.q_per_channel_zero_points()
            return n + scales.numel() * scales.element_size() + zeros.numel() * zeros.element_size()
        return n + 8 + 8  # one float64 scale, one int64 zero point
    return t.numel() * t.element_size()


def _state_tensors(value: object) -> Iterable[torch.Tensor]:
    """The tensors of one state-dict value: a tensor, or a quantized Linear's packed
    (weight, bias) tuple."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _state_tensors(v)


def weight_bytes(model: nn.Module) -> tuple[int, int]:
    """(every weight, the Linear layers' part) in bytes, summed over the state dict's tensors as
    they are stored: float32 4 bytes an element, bfloat16/float16 2, a quantized weight 1 plus
    its scales and zero points."""
    linear_types = (nn.Linear, *_quantized_linear_types())
    linear = {name for name, m in model.named_modules() if isinstance(m, linear_types)}
    total = part = 0
    for key, value in model.state_dict().items():
        n = sum(tensor_bytes(t) for t in _state_tensors(value))
        total += n
        if any(key.startswith(prefix + ".") for prefix in linear):
            part += n
    return total, part


def _synchronizer(device: torch.device) -> Callable[[], None]:
    if device.type == "cuda":
        return torch.cuda.synchronize
    if device.type == "mps":
        return torch.mps.synchronize
    return lambda: None


def time_forward(
    model: Encoder,
    ids: list[int],
    *,
    runs: int = RUNS,
    budget_s: float = BUDGET_S,
    warmup: bool = True,
    min_runs: int = MIN_RUNS,
) -> Timing:
    """The timing of plain forwards (no hooks, so attention takes the fused kernel) in
    inference mode, after one warm-up forward (``warmup=False``: the caller has just run the
    model on these ids): at least ``min_runs`` until IQR / median <= REL_SPREAD, at most
    ``runs`` or ``budget_s`` seconds (at least one run)."""
    x = torch.tensor([ids], dtype=torch.long, device=model.device)  # [batch=1, pos]
    with torch.inference_mode():
        return measure_time(
            lambda: model(x),
            min_repeats=max(1, min(min_runs, runs)),
            max_repeats=max(1, runs),
            max_seconds=budget_s,
            rel_spread=REL_SPREAD,
            warmup=1 if warmup else 0,  # first-call costs: allocator, kernel choice, caches
            sync=_synchronizer(model.device),
        )


def compare(
    ref_pattern: npt.ArrayLike, ref_output: npt.ArrayLike, pattern: npt.ArrayLike, output: npt.ArrayLike
) -> Diff:
    """The differences of ``pattern`` [layer, head_index, query_pos, key_pos] and ``output``
    [pos, d] against the reference ones (float32, same shapes)."""
    a, b = np.asarray(ref_pattern, np.float32), np.asarray(pattern, np.float32)
    if a.shape != b.shape or a.ndim != 4:
        raise ValueError(
            f"patterns must both be [layer, head_index, query_pos, key_pos], got {a.shape} and {b.shape}"
        )
    oa, ob = np.asarray(ref_output, np.float32), np.asarray(output, np.float32)
    if oa.shape != ob.shape:
        raise ValueError(f"outputs differ in shape: {oa.shape} and {ob.shape}")
    d = np.abs(b - a)  # [layer, head_index, query_pos, key_pos]
    moved = a.argmax(-1) != b.argmax(-1)  # [layer, head_index, query_pos]
    od = np.abs(ob - oa)
    return Diff(
        pattern_max=float(d.max()),
        pattern_mean=float(d.mean(dtype=np.float64)),
        output_max=float(od.max()),
        output_mean=float(od.mean(dtype=np.float64)),
        head_max=d.max(axis=(2, 3)).astype(np.float32),
        head_changed=moved.mean(axis=2).astype(np.float32),
        rows_changed=int(moved.sum()),
        rows=int(moved.size),
    )


def _dtype_name(model: nn.Module) -> str:
    if any(isinstance(m, _quantized_linear_types()) for m in model.modules()):
        return "qint8"
    return str(next(model.parameters()).dtype).removeprefix("torch.")


def measure(
    variant: Variant,
    encoded: Encoded,
    reference: TextCapture,
    *,
    runs: int = RUNS,
    budget_s: float = BUDGET_S,
) -> VariantResult:
    """One row: ``variant`` on ``encoded``, compared with ``reference`` (the float32 model's
    capture of "pattern" for the same ids)."""
    row = compare_variant(variant, encoded, reference)
    if variant.model is None:
        return row
    # The comparison's capture was a full forward of this copy on these ids: it is the warm-up.
    return with_timing(
        row, time_forward(variant.model, encoded.ids, runs=runs, budget_s=budget_s, warmup=False)
    )


def variant_row(variant: Variant) -> VariantResult:
    """``variant``'s row before any text: its dtype, device and weights' bytes (no time, no
    difference yet); a variant that is not available comes with its ``problem``."""
    if variant.model is None:
        return VariantResult(variant.name, variant.name, variant.device, problem=variant.problem)
    total, linear = weight_bytes(variant.model)
    return VariantResult(
        name=variant.name,
        dtype=_dtype_name(variant.model),
        device=variant.device,
        weight_bytes=total,
        linear_bytes=linear,
        deprecated=variant.deprecated,
        scales=variant.scales,
    )


def identical(reference: TextCapture) -> Diff:
    """The difference of a capture with itself (float32 against float32): every difference 0 and
    no query row's top key changed, without a pass over the patterns (`compare` of a capture
    with itself gives these numbers)."""
    layers, heads, n_pos = reference.pattern.shape[:3]
    zeros = np.zeros((layers, heads), np.float32)
    return Diff(0.0, 0.0, 0.0, 0.0, zeros, zeros.copy(), 0, layers * heads * n_pos)


def variant_capture(variant: Variant, encoded: Encoded) -> TextCapture:
    """``variant``'s capture of "pattern" on ``encoded``, through its hooks (computed in its own
    format, cast to float32); ValueError when the variant is not available."""
    if variant.model is None:
        raise ValueError(f"{variant.name} is not available: {variant.problem}")
    return capture_ids(variant.model, encoded, ["pattern"])


def variant_diff(
    variant: Variant, encoded: Encoded, reference: TextCapture, *, reference_model: Encoder | None = None
) -> Diff | None:
    """``variant`` on ``encoded`` compared with ``reference`` (the float32 model's capture of
    "pattern" for the same ids); None when the variant is not available. When ``variant.model``
    is ``reference_model`` (float32: the shared model itself) the reference is its own capture:
    nothing is captured or compared again (`identical`)."""
    if variant.model is None:
        return None
    if reference_model is not None and variant.model is reference_model:
        return identical(reference)
    cap = variant_capture(variant, encoded)
    return compare(reference.pattern, reference.output, cap.pattern, cap.output)


def compare_variant(
    variant: Variant, encoded: Encoded, reference: TextCapture, *, reference_model: Encoder | None = None
) -> VariantResult:
    """`variant_row` with its difference (`variant_diff`)."""
    row = variant_row(variant)
    diff = variant_diff(variant, encoded, reference, reference_model=reference_model)
    return row if diff is None else replace(row, diff=diff)


def with_timing(result: VariantResult, t: Timing | None) -> VariantResult:
    """``result`` with its forwards' timing (None: not timed yet)."""
    if t is None or result.problem is not None:
        return result
    return replace(result, forward_ms=1000.0 * t.median, runs=t.n, timing=t)


def band_length(n_pos: int, max_len: int) -> int:
    """The length a text of ``n_pos`` tokens is timed at: the next power of two (at least 16),
    at most ``max_len``. Dense forwards cost the same for any ids of one length, so one timing
    per band serves every text in it."""
    if n_pos < 1 or max_len < 1:
        raise ValueError(f"need n_pos >= 1 and max_len >= 1, got {n_pos} and {max_len}")
    band = max(16, 1 << (n_pos - 1).bit_length())
    return min(band, max(max_len, n_pos))


def band_ids(ids: list[int], length: int) -> list[int]:
    """``ids`` repeated (or cut) to ``length`` positions: the input a band is timed on."""
    if not ids or length < 1:
        raise ValueError(f"need ids and length >= 1, got {len(ids)} ids and length {length}")
    return (ids * (length // len(ids) + 1))[:length]


def time_variant(
    variant: Variant, ids: list[int], *, runs: int = RUNS, budget_s: float = BUDGET_S
) -> Timing | None:
    """The timing of ``variant``'s plain forwards on ``ids`` after one warm-up forward
    (`time_forward`); None when the variant is not available."""
    if variant.model is None:
        return None
    return time_forward(variant.model, ids, runs=runs, budget_s=budget_s, warmup=True)


def variant_pattern(variant: Variant, encoded: Encoded, layer: int) -> npt.NDArray[np.float32]:
    """The variant's pattern of one layer, [head_index, query_pos, key_pos], as float32."""
    if variant.model is None:
        raise ValueError(f"{variant.name} is not available: {variant.problem}")
    return capture_ids(variant.model, encoded, ["pattern"], layers=[layer]).at("pattern", layer)


def precision_report(
    model: Encoder,
    encoded: Encoded,
    names: Iterable[str] = VARIANTS,
    *,
    variants: Mapping[str, Variant] | None = None,
    reference: TextCapture | None = None,
    runs: int = RUNS,
    budget_s: float = BUDGET_S,
) -> PrecisionReport:
    """Every variant in ``names`` on ``encoded``. ``variants`` (made by `make_variant`, e.g.
    cached by the app) and ``reference`` (the float32 model's capture of "pattern") are made
    here when not given."""
    names = tuple(names)
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        raise ValueError(f"unknown variants {unknown}; known: {list(VARIANTS)}")
    ref = capture_ids(model, encoded, ["pattern"]) if reference is None else reference
    results = []
    with activity("precision timing"), watch() as w:
        for name in names:
            v = variants[name] if variants is not None and name in variants else make_variant(model, name)
            results.append(measure(v, encoded, ref, runs=runs, budget_s=budget_s))
    return PrecisionReport(
        n_pos=len(encoded.ids),
        results=tuple(results),
        threads=torch.get_num_threads(),
        cpu_capability=torch.backends.cpu.get_cpu_capability(),
        engine=torch.backends.quantized.engine,
        runs=runs,
        load=w.load,
    )


def float_format(name: str) -> dict[str, float | int]:
    """Bits and limits of a float dtype, read from torch.finfo: exponent and mantissa bits, the
    relative step eps, the largest finite value."""
    info = torch.finfo(FLOAT_DTYPES[name])
    mantissa = round(-np.log2(info.eps))
    return {
        "bits": info.bits,
        "exponent": info.bits - 1 - mantissa,
        "mantissa": mantissa,
        "eps": float(info.eps),
        "max": float(info.max),
    }
