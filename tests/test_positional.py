import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tformer import pe_shift_matrix, sinusoidal_encoding


def test_matches_the_formula_elementwise():
    d = 8
    pe = sinusoidal_encoding(50, d)
    assert pe.shape == (50, d)
    assert pe.dtype == torch.float32
    for pos in (0, 1, 7, 49):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def test_start_offset_continues_the_table():
    assert torch.allclose(sinusoidal_encoding(10, 16, start=5), sinusoidal_encoding(15, 16)[5:], atol=1e-6)


@given(k=st.integers(-60, 60), d=st.sampled_from([2, 4, 16, 64, 384]))
def test_shift_matrix_moves_every_position_by_k(k, d):
    pe = sinusoidal_encoding(200, d).double()  # [pos, d_model]
    m = pe_shift_matrix(k, d)
    lo, hi = max(0, -k), min(200, 200 - k)
    shifted = pe[lo:hi] @ m.T  # row p -> M_k PE[p]
    assert torch.allclose(shifted, pe[lo + k : hi + k], atol=1e-5)


def test_shift_matrix_is_a_rotation_that_composes():
    m3, m5, m8 = (pe_shift_matrix(k, 32) for k in (3, 5, 8))
    assert torch.allclose(m3 @ m3.T, torch.eye(32, dtype=torch.float64), atol=1e-12)
    assert torch.allclose(m3 @ m5, m8, atol=1e-12)
    assert torch.allclose(pe_shift_matrix(0, 32), torch.eye(32, dtype=torch.float64))


def test_dot_product_depends_only_on_offset():
    pe = sinusoidal_encoding(300, 64).double()
    sim = pe @ pe.T
    for k in (1, 5, 40):
        diag = torch.diagonal(sim, offset=k)
        assert diag.std() < 1e-6


def test_odd_d_model_is_rejected():
    with pytest.raises(ValueError, match="d_model=7"):
        sinusoidal_encoding(4, 7)
