"""Independent numpy references shared by several test files."""

from __future__ import annotations

import numpy as np


def np_sinusoidal(n_pos: int, d_model: int) -> np.ndarray:
    """PE written out independently of tformer, in numpy: the oracle for PE-based tests."""
    pos = np.arange(n_pos)[:, None]
    omega = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    pe = np.empty((n_pos, d_model))
    pe[:, 0::2] = np.sin(pos * omega)
    pe[:, 1::2] = np.cos(pos * omega)
    return pe.astype(np.float32)
