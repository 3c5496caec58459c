"""The sublayers' sizes next to the residual stream: sublayer_norms_figure."""

from __future__ import annotations

import numpy as np
import pytest

from tformer.analysis.layer_stats import sublayer_norms
from tformer.figures.sublayers import sublayer_norms_figure

from ._figures import CJK, SCRIPT, font_sizes


def norms_of(n_layers: int, n: int, seed: int = 0, outlier: bool = False):
    rng = np.random.default_rng(seed)
    x, attn, mlp = (rng.normal(size=(n_layers, n, 8)).astype(np.float32) for _ in range(3))
    if outlier:
        mlp[1, 0] *= 50
    return sublayer_norms(x, attn, mlp)


def test_norms_figure_per_token_and_per_layer():
    norms = norms_of(3, 5)
    labels = ["a", "b", "c", "d", "e"]
    fig = sublayer_norms_figure(norms, labels, layer=1)
    bars = [t for t in fig.data if t.type == "bar"]
    assert len(bars) == 3
    np.testing.assert_allclose(bars[1].y, norms.attn_out[1])
    lines = [t for t in fig.data if t.xaxis == "x2"]
    np.testing.assert_allclose(lines[0].y, norms.attn_ratio_mean)
    np.testing.assert_allclose(lines[1].y, norms.mlp_ratio_mean)
    (band,) = [s for s in fig.layout.shapes if s.name == "layer"]
    assert band.x0 < 1 < band.x1
    assert fig.layout.meta["bars"]
    assert not fig.layout.meta["clipped"]
    assert {a.text for a in fig.layout.annotations if a.name and a.name.startswith("ratio.")} == {
        "attention",
        "FFN",
    }


def test_norms_figure_cuts_one_huge_bar_and_writes_its_value():
    norms = norms_of(2, 10, outlier=True)
    fig = sublayer_norms_figure(norms, list("abcdefghij"), layer=1)
    assert fig.layout.meta["clipped"]
    assert fig.layout.yaxis.range[1] < float(norms.mlp_out[1, 0])
    (cut,) = [a for a in fig.layout.annotations if a.name == "cut"]
    assert cut.text.startswith(f"{norms.mlp_out[1, 0]:.0f}") or cut.text.startswith(
        f"{norms.mlp_out[1, 0]:.3g}"
    )


def test_norms_figure_lines_beyond_64_tokens_and_one_token():
    fig = sublayer_norms_figure(norms_of(2, 100), [f"t{i}" for i in range(100)], layer=0)
    assert not fig.layout.meta["bars"]
    assert {t.type for t in fig.data} == {"scatter"}
    one = sublayer_norms_figure(norms_of(1, 1), ["only"], layer=0)
    assert one.layout.meta["n_pos"] == 1


def test_norms_figure_validates_layer_and_labels():
    norms = norms_of(2, 3)
    with pytest.raises(ValueError, match="layer=2"):
        sublayer_norms_figure(norms, ["a", "b", "c"], layer=2)
    with pytest.raises(ValueError, match="2 tokens were given"):
        sublayer_norms_figure(norms, ["a", "b"], layer=0)


def test_norms_figure_escapes_labels_and_keeps_cjk():
    norms = norms_of(2, len(CJK) + 1)
    fig = sublayer_norms_figure(norms, [*CJK, SCRIPT], layer=0)
    text = fig.to_json()
    assert "<script>" not in text
    assert "&lt;script&gt;" in text
    assert "猫" in fig.layout.xaxis.ticktext
    assert min(font_sizes(fig.to_dict()["layout"])) >= 12
