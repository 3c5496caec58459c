"""Streamlit cache helpers of the app, outside a running server."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("streamlit")

from tformer.ui import shared_figure


def test_shared_figure_builds_once_per_argument_values():
    calls = []

    def build(a, *, k):
        calls.append((a.copy(), k))
        return {"sum": float(a.sum()), "k": k}

    x = np.arange(6, dtype=np.float32)
    first = shared_figure(build, x, k=1)
    assert shared_figure(build, x.copy(), k=1) is first  # equal content: the same object
    assert shared_figure(build, x + 1, k=1) == {"sum": 21.0, "k": 1}  # new content: rebuilt
    assert shared_figure(build, x, k=2)["k"] == 2  # keyword arguments count too
    assert len(calls) == 3
