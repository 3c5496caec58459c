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


def test_run_meta_leaves_the_history_to_the_train_pages_views(tmp_path, monkeypatch):
    """The sidebar reads run_meta on every rerun and cache_data copies it each time: the curves
    and the role timeline (the bulk of run.json) are not in it."""
    from tformer.ui.caches import run_meta

    from ._saved_runs import train_and_save

    monkeypatch.setenv("TFORMER_RUNS_DIR", str(tmp_path))
    train_and_save(tmp_path / "r", updates=2)
    meta = run_meta("r")
    assert "history" not in meta
    assert meta["examples"]  # what its callers read
    assert meta["task"]["name"] == "reverse"
