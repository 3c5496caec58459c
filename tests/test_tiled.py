"""The tiled loop with the online softmax equals the explicit attention, masks and all; every
SDPA backend the device runs equals the explicit attention within its number type's rounding."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tformer.efficiency.costs import BACKENDS, sdpa_backends, sdpa_call
from tformer.efficiency.tiled import explicit_attention, tile_bytes, tiled_attention

TOL = 1e-5
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def qkv(
    batch: int = 2, heads: int = 3, n_q: int = 13, n_k: int | None = None, d: int = 8, dtype=torch.float32
):
    gen = torch.Generator().manual_seed(7)
    n_k = n_q if n_k is None else n_k
    q = torch.randn(batch, heads, n_q, d, generator=gen, dtype=dtype)
    k = torch.randn(batch, heads, n_k, d, generator=gen, dtype=dtype)
    v = torch.randn(batch, heads, n_k, d, generator=gen, dtype=dtype)
    return q, k, v


def biggest(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).abs().max())


@pytest.mark.parametrize(
    ("block_q", "block_k"), [(1, 1), (3, 3), (5, 3), (3, 5), (7, 7), (13, 13), (64, 64), (1, 64), (64, 1)]
)
def test_tiled_equals_explicit_for_every_block_size(block_q, block_k):
    q, k, v = qkv()
    ref = explicit_attention(q, k, v)
    out = tiled_attention(q, k, v, block_q=block_q, block_k=block_k)
    assert out.shape == ref.shape == (2, 3, 13, 8)
    assert biggest(out, ref) <= TOL
    assert biggest(ref, F.scaled_dot_product_attention(q, k, v)) <= TOL  # the oracle agrees


def test_tiled_equals_explicit_with_more_keys_than_queries():
    q, k, v = qkv(n_q=5, n_k=17)
    assert biggest(tiled_attention(q, k, v, block_q=2, block_k=4), explicit_attention(q, k, v)) <= TOL


@pytest.mark.parametrize(("block_q", "block_k"), [(1, 1), (4, 3), (5, 5), (32, 32)])
def test_causal_mask(block_q, block_k):
    q, k, v = qkv(n_q=11)
    causal = torch.ones(11, 11, dtype=torch.bool).tril()  # [query_pos, key_pos], broadcast
    ref = explicit_attention(q, k, v, causal)
    assert biggest(tiled_attention(q, k, v, block_q=block_q, block_k=block_k, attn_mask=causal), ref) <= TOL
    assert biggest(ref, F.scaled_dot_product_attention(q, k, v, is_causal=True)) <= TOL


def test_padded_keys_in_a_batch():
    q, k, v = qkv(batch=2, n_q=9)
    real = torch.tensor([9, 5])  # the second text has 4 [PAD] keys
    keep = torch.arange(9)[None, :] < real[:, None]  # [batch, key_pos]
    mask = keep[:, None, None, :]  # [batch, 1, 1, key_pos]
    ref = explicit_attention(q, k, v, mask)
    out = tiled_attention(q, k, v, block_q=4, block_k=3, attn_mask=mask)
    assert biggest(out, ref) <= TOL
    # the padded text's real rows see only its 5 real keys: they equal the unpadded run
    alone = explicit_attention(q[1:, :, :5], k[1:, :, :5], v[1:, :, :5])
    assert biggest(out[1:, :, :5], alone) <= TOL


@pytest.mark.parametrize(("block_q", "block_k"), [(1, 1), (2, 3), (16, 16)])
def test_fully_masked_rows_are_zero_not_nan(block_q, block_k):
    q, k, v = qkv(n_q=7)
    mask = torch.ones(2, 3, 7, 7, dtype=torch.bool).tril()
    mask[0, :, 2] = False  # query 2 of the first text may attend to nothing
    mask[1, 1, 4:] = False  # rows 4..6 of one head of the second
    ref = explicit_attention(q, k, v, mask)
    out = tiled_attention(q, k, v, block_q=block_q, block_k=block_k, attn_mask=mask)
    assert not torch.isnan(out).any()
    assert not torch.isnan(ref).any()
    assert (out[0, :, 2] == 0).all()
    assert (out[1, 1, 4:] == 0).all()
    assert (ref[0, :, 2] == 0).all()
    assert (ref[1, 1, 4:] == 0).all()
    assert biggest(out, ref) <= TOL


def test_a_row_masked_only_in_its_first_key_tiles_is_still_right():
    # m stays −∞ through the first tiles, then finite: the rescaling must not make NaN
    q, k, v = qkv(batch=1, heads=1, n_q=6)
    mask = torch.zeros(6, 6, dtype=torch.bool)
    mask[:, 4:] = True
    ref = explicit_attention(q, k, v, mask)
    assert biggest(tiled_attention(q, k, v, block_q=2, block_k=1, attn_mask=mask), ref) <= TOL


def test_large_scores_do_not_overflow():
    q, k, v = qkv(n_q=8)
    q = q * 60  # scores of several hundred: exp would overflow without the running maximum
    out = tiled_attention(q, k, v, block_q=3, block_k=2)
    assert torch.isfinite(out).all()
    assert biggest(out, explicit_attention(q, k, v)) <= TOL


@pytest.mark.parametrize(("dtype", "tol"), [(torch.float16, 1e-2), (torch.bfloat16, 3e-2)])
def test_low_precision_inputs_accumulate_in_float32(dtype, tol):
    q, k, v = qkv(n_q=16)
    low = [t.to(dtype) for t in (q, k, v)]
    out = tiled_attention(*low, block_q=4, block_k=4)
    assert out.dtype == dtype
    ref = explicit_attention(*[t.float() for t in low])
    assert biggest(out, ref) <= tol


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"block_q": 0}, "block_q=0 must be a positive integer"),
        ({"block_k": -1}, "block_k=-1 must be a positive integer"),
        ({"block_q": 2.5}, r"block_q=2\.5 must be a positive integer"),
        ({"attn_mask": torch.ones(13, 13)}, "attn_mask must be bool"),
        ({"attn_mask": torch.ones(4, 13, dtype=torch.bool)}, r"attn_mask \(4, 13\) does not broadcast"),
    ],
)
def test_bad_arguments_are_refused(bad, message):
    q, k, v = qkv()
    with pytest.raises(ValueError, match=message):
        tiled_attention(q, k, v, **bad)


def test_bad_shapes_are_refused():
    q, k, v = qkv()
    with pytest.raises(ValueError, match="batch, head_index, pos, d_head"):
        explicit_attention(q[0], k[0], v[0])
    with pytest.raises(ValueError, match="do not fit"):
        tiled_attention(q, k[..., :4], v)


def test_tile_bytes_is_independent_of_n():
    assert tile_bytes(12, 64, 64, 32) == 4 * 12 * (2 * 64 * 64 + 64 * 66)


# --- SDPA backends ------------------------------------------------------------------------------------

TOLERANCE = {"float32": 1e-5, "float16": 5e-3, "bfloat16": 3e-2}


def test_the_math_backend_runs_on_this_device():
    found = sdpa_backends(DEVICE, "float32")
    assert set(found) == set(BACKENDS)
    assert found["sdpa_math"]


@pytest.mark.parametrize("dtype", list(TOLERANCE))
@pytest.mark.parametrize("backend", list(BACKENDS))
def test_every_backend_the_device_runs_equals_explicit(backend, dtype):
    if not sdpa_backends(DEVICE, dtype)[backend]:
        pytest.skip(f"{backend} does not run on {DEVICE} in {dtype}")
    tdtype = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]
    q, k, v = (t.to(DEVICE, tdtype) for t in qkv(n_q=40, d=32))
    ref = explicit_attention(q.float(), k.float(), v.float())  # the same rounded inputs, in float32
    out = sdpa_call(backend, q, k, v)
    assert out.dtype == tdtype
    assert biggest(out.float(), ref) <= TOLERANCE[dtype]
    causal = torch.ones(40, 40, dtype=torch.bool, device=DEVICE).tril()
    try:
        masked = sdpa_call(backend, q, k, v, attn_mask=causal)
    except RuntimeError:
        return  # this backend takes no explicit mask (CUDA's flash kernel): the plain call was checked
    assert (
        biggest(masked.float(), explicit_attention(q.float(), k.float(), v.float(), causal))
        <= TOLERANCE[dtype]
    )
