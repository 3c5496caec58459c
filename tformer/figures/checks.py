"""Input checks shared by the figure builders: a wrong shape raises ``ValueError`` naming it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Float32Array = npt.NDArray[np.float32]


def as_float32(x: npt.ArrayLike, ndim: int, name: str, dims: str) -> Float32Array:
    """``x`` as a C-contiguous float32 array of rank ``ndim`` (``dims`` names the axes)."""
    arr = np.asarray(x)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D {dims}, got shape {tuple(arr.shape)}")
    return np.ascontiguousarray(arr, dtype=np.float32)


def check_tokens(labels: Sequence[object], n: int, name: str, shape: tuple[int, ...]) -> None:
    """Raise unless there are ``n`` token labels, naming ``name`` and its ``shape``."""
    if len(labels) != n:
        raise ValueError(
            f"{name} has shape {shape} but {len(labels)} tokens were given (expected {n} tokens)"
        )


def square_matrix(matrix: npt.ArrayLike, n: int) -> Float32Array:
    """``matrix`` as float32 [query_pos, key_pos], checked against ``n`` tokens (n >= 1)."""
    m = as_float32(matrix, 2, "matrix", "[query_pos, key_pos]")
    if m.shape != (n, n):
        raise ValueError(
            f"matrix has shape {tuple(m.shape)} [query_pos, key_pos] but {n} tokens were given "
            f"(expected ({n}, {n}))"
        )
    if n == 0:
        raise ValueError("matrix has shape (0, 0): at least one token is needed")
    return m


def before_after(
    before: npt.ArrayLike, after: npt.ArrayLike, tokens: Sequence[object], dims: str, unit: str
) -> tuple[Float32Array, Float32Array]:
    """``before`` and ``after`` as float32 of one shape ``dims`` [pos, ...], with one row per
    token and at least one row and one column (``unit`` names what a column holds)."""
    x = as_float32(before, 2, "before", dims)
    y = as_float32(after, 2, "after", dims)
    if x.shape != y.shape:
        raise ValueError(f"before has shape {tuple(x.shape)} but after has shape {tuple(y.shape)}")
    check_tokens(tokens, x.shape[0], "before", tuple(x.shape))
    if 0 in x.shape:
        raise ValueError(f"before has shape {tuple(x.shape)}: at least one token and one {unit} are needed")
    return x, y


def check_highlight(highlight: int | None, n: int) -> None:
    """Raise unless ``highlight`` is None or a position of the ``n`` tokens."""
    if highlight is not None and not 0 <= highlight < n:
        raise ValueError(f"highlight={highlight} is not a position of the {n} tokens")
