"""Positional-encoding figure builders: data in the traces, axes, line counts, shape errors."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from tformer.analysis.metrics import offset_similarity
from tformer.figures.positional import (
    attention_diff_figure,
    pe_matrix_heatmap,
    pe_offset_figure,
    pe_similarity_heatmap,
    pe_waves,
    shift_matrix_figure,
)

from ._reference import np_sinusoidal


def _np_shift_matrix(k: int, d_model: int) -> np.ndarray:
    omega = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    m = np.zeros((d_model, d_model))
    for i, w in enumerate(omega):
        c, s = np.cos(w * k), np.sin(w * k)
        m[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[c, s], [-s, c]]
    return m


@pytest.fixture
def pe() -> np.ndarray:
    return np_sinusoidal(40, 16)


def test_matrix_heatmap_data_and_axes(pe):
    fig = pe_matrix_heatmap(pe)
    (trace,) = fig.data
    assert trace.type == "heatmap"
    assert trace.z.dtype == np.float32
    np.testing.assert_array_equal(trace.z, pe)
    np.testing.assert_array_equal(trace.x, np.arange(16))
    np.testing.assert_array_equal(trace.y, np.arange(40))
    assert fig.layout.xaxis.title.text == "dimension of the encoding (d_model = 16)"
    assert fig.layout.yaxis.title.text == "position"
    assert trace.zmin == -trace.zmax  # diverging scale centred on 0
    assert len(fig.layout.shapes) == 0


def test_matrix_heatmap_marks_end_of_trained_positions(pe):
    fig = pe_matrix_heatmap(pe, max_len=32)
    (line,) = fig.layout.shapes
    assert line.y0 == line.y1 == 31.5  # between pos 31 (trained) and pos 32 (not)
    assert "max_len=32" in fig.layout.annotations[0].text
    assert len(pe_matrix_heatmap(pe, max_len=40).layout.shapes) == 0  # nothing beyond training


def test_waves_one_line_per_dim_with_wavelength(pe):
    fig = pe_waves(pe, [0, 1, 6, 0])
    assert len(fig.data) == 3  # the repeated dim is drawn once
    for trace, d in zip(fig.data, [0, 1, 6], strict=True):
        np.testing.assert_array_equal(trace.y, pe[:, d])
        np.testing.assert_array_equal(trace.x, np.arange(40))
    # dims 0, 1 share omega_0 = 1: wavelength 2*pi; dim 6 = pair 3: 2*pi*10000^(6/16) = 198.7
    assert fig.data[0].name == "dim 0 (sin, wavelength 6.28)"
    assert fig.data[1].name == "dim 1 (cos, wavelength 6.28)"
    assert fig.data[2].name == "dim 6 (sin, wavelength 199)"
    # one row per dimension, the position axis labelled under the last row only
    assert [t.yaxis for t in fig.data] == ["y", "y2", "y3"]
    assert fig.layout.xaxis3.title.text == "position"
    assert fig.layout.xaxis3.showticklabels
    assert fig.layout.xaxis.showticklabels is False
    assert [a.text for a in fig.layout.annotations][:2] == [
        "dim 0 (sin)<br>wavelength 6.28",
        "dim 1 (cos)<br>wavelength 6.28",
    ]
    assert fig.layout.meta["dims"] == [0, 1, 6]
    assert pe_waves(pe, [3], sinusoidal=False).data[0].name == "dim 3"


def test_similarity_heatmap_is_toeplitz_for_sinusoidal(pe):
    fig = pe_similarity_heatmap(pe)
    z = fig.data[0].z
    assert z.shape == (40, 40)
    assert z.dtype == np.float32
    np.testing.assert_allclose(z, pe.astype(np.float64) @ pe.T, atol=1e-4)
    for k in (0, 1, 7, 30):
        diag = np.diagonal(z, k)
        assert np.ptp(diag) < 1e-4, f"diagonal {k} not constant"
    assert z[0, 0] == pytest.approx(8.0, abs=1e-5)  # d_model / 2


def test_offset_figure_band_and_mean(pe):
    offsets, mean, std = offset_similarity(pe)
    std = std + 0.5  # a visible band, to check which trace is which
    fig = pe_offset_figure(offsets, mean, std)
    upper, lower, centre = fig.data
    np.testing.assert_allclose(upper.y, mean + std, rtol=1e-6)
    np.testing.assert_allclose(lower.y, mean - std, rtol=1e-6)
    np.testing.assert_allclose(centre.y, mean, rtol=1e-6)
    assert lower.fill == "tonexty"
    np.testing.assert_array_equal(centre.x, offsets)
    assert fig.layout.xaxis.title.text.startswith("offset k")


def test_shift_matrix_figure(pe):
    m = _np_shift_matrix(5, 16)
    # the fixture is right: PE[pos+5] = M PE[pos]
    np.testing.assert_allclose(pe[:-5].astype(np.float64) @ m.T, pe[5:], atol=1e-5)
    fig = shift_matrix_figure(m, k=5)
    np.testing.assert_allclose(fig.data[0].z, m, atol=1e-7)
    assert "k=5" in fig.layout.title.text
    assert fig.data[0].zmin == -fig.data[0].zmax
    with pytest.raises(ValueError, match=r"square.*\(4, 6\)"):
        shift_matrix_figure(np.zeros((4, 6)))


def test_attention_diff_figure():
    rng = np.random.default_rng(0)
    a = rng.dirichlet(np.ones(5), size=5).astype(np.float32)
    b = rng.dirichlet(np.ones(5), size=5).astype(np.float32)
    tokens = ["[CLS]", "the", "<b>x</b>", "the", "[SEP]"]
    fig = attention_diff_figure(a, b, tokens)
    assert [t.type for t in fig.data] == ["heatmap"] * 3
    np.testing.assert_array_equal(fig.data[0].z, a)
    np.testing.assert_array_equal(fig.data[1].z, b)
    np.testing.assert_allclose(fig.data[2].z, a - b)
    # the two patterns share one fixed scale; the difference has its own, centred on 0
    assert fig.data[0].coloraxis == fig.data[1].coloraxis == "coloraxis"
    assert fig.data[2].coloraxis == "coloraxis2"
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.0, 1.0)
    assert fig.layout.coloraxis2.cmin == -fig.layout.coloraxis2.cmax
    # unique "pos: token" categories (repeats stay apart, hover shows the token), escaped ticks
    assert list(fig.data[0].x) == ["0: [CLS]", "1: the", "2: &lt;b&gt;x&lt;/b&gt;", "3: the", "4: [SEP]"]
    assert list(fig.layout.xaxis.tickvals) == [0, 1, 2, 3, 4]
    assert fig.layout.xaxis.ticktext[2] == "&lt;b&gt;x&lt;/b&gt;"
    assert fig.layout.yaxis.ticktext[1] == fig.layout.yaxis.ticktext[3] == "the"
    assert fig.layout.yaxis.title.text == "query token (row)"
    assert fig.layout.xaxis3.title.text == "key token (column)"


def test_attention_diff_pools_long_inputs():
    n = 300  # above the shared 256-position limit: 2x2 blocks
    a = np.eye(n, dtype=np.float32)
    b = np.zeros((n, n), dtype=np.float32)
    b[:, 0] = 1.0
    fig = attention_diff_figure(a, b, [f"t{i}" for i in range(n)])
    za, zb, zd = (t.z for t in fig.data)
    assert za.shape == zb.shape == zd.shape == (150, 150)
    np.testing.assert_array_equal(np.diag(za), 1.0)  # block max keeps a one-cell diagonal bright
    assert zd[0, 0] == 1.0 or zd[0, 0] == -1.0  # signed largest |with - without| of the block
    assert zd[5, 0] == -1.0
    assert zd[5, 5] == 1.0
    assert "block" in fig.data[2].hovertemplate
    vals = list(fig.layout.xaxis.tickvals)  # in cells of 2 positions, every k-th position
    step = fig.layout.meta["tick_step"]
    assert 10 <= len(vals) <= 64
    assert vals == list(range(0, 150, step // 2))
    assert list(fig.layout.yaxis.tickvals) == vals
    exact = attention_diff_figure(a, b, [f"t{i}" for i in range(n)], max_side=None)
    assert exact.data[0].z.shape == (n, n)


def test_attention_diff_rejects_mismatches():
    eye = np.eye(4, dtype=np.float32)
    with pytest.raises(ValueError, match=r"\(4, 4\).*3 tokens"):
        attention_diff_figure(eye, eye, ["a", "b", "c"])
    with pytest.raises(ValueError, match=r"\(4, 4\).*\(3, 3\)"):
        attention_diff_figure(eye, np.eye(3), list("abcd"))


@pytest.mark.parametrize(
    "build",
    [pe_matrix_heatmap, pe_similarity_heatmap, lambda x: pe_waves(x, [0])],
    ids=["matrix", "similarity", "waves"],
)
@pytest.mark.parametrize("shape", [(10,), (2, 3, 4), (0, 4)])
def test_pe_builders_reject_non_matrix(build, shape):
    with pytest.raises(ValueError, match=r"\[pos, d_model\].*" + re.escape(str(shape))):
        build(np.zeros(shape, dtype=np.float32))


def test_bad_arguments(pe):
    with pytest.raises(ValueError, match=r"dims \[16\] outside 0..15"):
        pe_waves(pe, [0, 16])
    with pytest.raises(ValueError, match="empty"):
        pe_waves(pe, [])
    with pytest.raises(ValueError, match="max_len=0"):
        pe_matrix_heatmap(pe, max_len=0)
    with pytest.raises(ValueError, match=r"\(5,\), \(5,\), \(4,\)"):
        pe_offset_figure(np.arange(5), np.zeros(5), np.zeros(4))


def test_figures_are_deterministic(pe):
    m = _np_shift_matrix(2, 16)
    eye = np.eye(4, dtype=np.float32)
    for build in (
        lambda: pe_matrix_heatmap(pe, max_len=20),
        lambda: pe_waves(pe, [0, 5]),
        lambda: pe_similarity_heatmap(pe),
        lambda: pe_offset_figure(*offset_similarity(pe)),
        lambda: shift_matrix_figure(m, k=2),
        lambda: attention_diff_figure(eye, eye[::-1], list("abcd")),
    ):
        first, second = build().to_json(), build().to_json()
        assert first == second
        dtypes = set(re.findall(r'"dtype":"(\w+)"', first))
        assert dtypes
        assert dtypes <= {"f4", "i4"}  # arrays go to the browser as float32/int32 binary


def test_module_does_not_import_streamlit():
    code = "import sys, tformer.figures.positional; print('streamlit' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
