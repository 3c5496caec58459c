"""What a user takes away besides pictures: the captured tensors as NPZ, a table (the per-head
metrics) as CSV. No Streamlit here: a notebook uses the same functions. Figures as PNG and SVG:
`tformer.figures.images`; the offline report: `tformer.figures.report`."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .model.capture import TextCapture

TENSORS = ("q", "k", "v", "attn_scores", "pattern", "z")  # what the NPZ holds when captured


def capture_npz(capture: TextCapture, names: Iterable[str] = TENSORS) -> bytes:
    """The capture's tensors as a compressed NPZ: one array per name (per-layer ones with the
    layer first, as in `TextCapture`), plus ``tokens`` (str), ``ids`` and ``layers`` (the model
    layers the per-layer arrays hold). Loads with ``np.load(f)``; no pickle is needed."""
    arrays: dict[str, np.ndarray] = {
        "tokens": np.asarray(capture.labels, dtype=str),
        "ids": np.asarray(capture.encoded.ids, dtype=np.int64),
    }
    n_layers = capture.cfg.n_layers
    arrays["layers"] = np.asarray(
        capture.layers if capture.layers is not None else range(n_layers), dtype=np.int64
    )
    for name in names:
        if name in capture:
            arrays[name] = np.asarray(capture[name])
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)  # type: ignore[arg-type]
    return buf.getvalue()


def rows_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    """Rows of a table (dicts with the same keys) as CSV text; None becomes an empty cell."""
    if not rows:
        return ""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if v is None else v for k, v in row.items()})
    return out.getvalue()
