"""The yardstick of benchmarks/yardstick.py runs, and is the naive app it claims to be: MiniLM's
own weights from a forward on every rerun, one heatmap trace per head, every weight as a JSON
float (no binary arrays, no pooling)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("streamlit")
pytest.importorskip("transformers")
from streamlit.testing.v1 import AppTest

NAIVE = str(Path(__file__).resolve().parent.parent / "benchmarks" / "naive_app.py")


@pytest.mark.slow
def test_the_naive_app_draws_every_head_as_json_floats():
    at = AppTest.from_file(NAIVE, default_timeout=120)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    at.text_area(key="text").input("the cat sat on the mat").run()  # [CLS] 6 words [SEP]
    assert not at.exception, [e.message for e in at.exception]
    detail, grid = (json.loads(c.proto.spec) for c in at.get("plotly_chart"))
    assert len(grid["data"]) == 6 * 12  # one heatmap trace per head of MiniLM's 6 x 12
    assert all(t["type"] == "heatmap" for t in grid["data"])
    z = detail["data"][0]["z"]
    assert isinstance(z, list)  # plain JSON numbers, not a {"dtype", "bdata"} binary array
    weights = np.array(z, dtype=float)
    assert weights.shape == (8, 8)  # every query and key, no pooling
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-5)  # softmax rows
    assert detail["data"][0]["x"][1] == "1 the"
    # a new text runs the model again: the weights change with it
    at.text_area(key="text").input("the dog ran in the park").run()
    again = np.array(json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]["z"], dtype=float)
    assert again.shape == (8, 8)
    assert not np.allclose(again, weights)
