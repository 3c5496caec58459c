"""What a LayerNorm does to each token: layernorm_figure."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tformer.analysis.layer_stats import layernorm_stats
from tformer.figures.layernorm import MAX_LN_TOKENS, layernorm_figure

from ._figures import CJK, SCRIPT, font_sizes


def ln_inputs(n: int, d: int = 16, seed: int = 0):
    x = np.random.default_rng(seed).normal(1.0, 2.0, size=(n, d)).astype(np.float32)
    s = layernorm_stats(x)
    after = (x - s.mean[:, None]) / s.sigma[:, None]
    return x, after, s


def test_layernorm_figure_bars_markers_and_boxes():
    x, after, s = ln_inputs(4)
    fig = layernorm_figure(x, after, s.mean, s.sigma[:, None], ["a", "b", "c", "d"], highlight=1)
    mu, sigma, before_box, after_box = fig.data
    np.testing.assert_allclose(mu.y, s.mean)
    np.testing.assert_allclose(sigma.y, s.sigma)
    np.testing.assert_allclose(before_box.median, np.median(x, axis=1), rtol=1e-6)
    np.testing.assert_allclose(after_box.q1, np.percentile(after, 25, axis=1), rtol=1e-5)
    assert before_box.y is None  # five numbers per box are sent, not every value
    assert len([sh for sh in fig.layout.shapes if sh.name and sh.name.startswith("highlight")]) == 2
    assert fig.layout.meta["highlight"] == 1


def test_layernorm_figure_one_token():
    x, after, s = ln_inputs(1)
    fig = layernorm_figure(x, after, s.mean, s.sigma, ["only"])
    assert fig.layout.meta["n_pos"] == 1


@pytest.mark.parametrize(
    ("n", "mean_shape", "match"),
    [(3, (2,), r"mean has shape \(2,\)"), (MAX_LN_TOKENS + 1, None, "at most 64 tokens")],
)
def test_layernorm_figure_validates(n, mean_shape, match):
    x, after, s = ln_inputs(n)
    mean = np.zeros(mean_shape) if mean_shape else s.mean
    with pytest.raises(ValueError, match=match):
        layernorm_figure(x, after, mean, s.sigma, [str(i) for i in range(n)])
    with pytest.raises(ValueError, match="after has shape"):
        layernorm_figure(x, after[:, :-1], s.mean, s.sigma, [str(i) for i in range(n)])


def test_layernorm_figure_escapes_labels_and_keeps_cjk():
    labels = [*CJK, SCRIPT]
    x, after, s = ln_inputs(len(labels))
    fig = layernorm_figure(x, after, s.mean, s.sigma, labels, title="LN1 of layer 0")
    text = fig.to_json()
    assert "<script>" not in text
    assert "&lt;script&gt;" in text
    assert "猫" in fig.layout.xaxis2.ticktext
    assert min(font_sizes(fig.to_dict()["layout"])) >= 12
    assert json.loads(text)["layout"]["title"]["font"]["size"] in (15, 16, 17)
