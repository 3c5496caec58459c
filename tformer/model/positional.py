r"""Sinusoidal positional encoding and its shift property.

.. math::
    PE_{(pos, 2i)} = \sin\!\left(pos / 10000^{2i/d}\right), \qquad
    PE_{(pos, 2i+1)} = \cos\!\left(pos / 10000^{2i/d}\right)

Each (sin, cos) pair turns at its own frequency, so moving k positions is a rotation of every
pair by its own angle: :math:`PE_{pos+k} = M_k \, PE_{pos}` with :math:`M_k` block-diagonal.
"""

from __future__ import annotations

import torch


def pe_frequencies(d_model: int) -> torch.Tensor:
    r"""Angular frequency of pair i: :math:`\omega_i = 1/10000^{2i/d}`. Returns [d_model/2], float64."""
    if d_model < 2 or d_model % 2:
        raise ValueError(f"d_model={d_model} must be a positive even number (sin/cos pairs)")
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    return 10000.0 ** (-two_i / d_model)


def sinusoidal_encoding(n_pos: int, d_model: int, start: int = 0) -> torch.Tensor:
    r"""PE for positions start..start+n_pos-1: even dims sin, odd dims cos. Returns [pos, d_model].

    .. math::
        PE_{(pos,2i)}=\sin\!\left(\frac{pos}{10000^{2i/d}}\right),\qquad
        PE_{(pos,2i+1)}=\cos\!\left(\frac{pos}{10000^{2i/d}}\right)

    Computed in float64 then cast, so far positions stay accurate in float32.
    """
    if n_pos < 0:
        raise ValueError(f"n_pos={n_pos} must be >= 0")
    pos = torch.arange(start, start + n_pos, dtype=torch.float64)[:, None]  # [pos, 1]
    angles = pos * pe_frequencies(d_model)[None, :]  # [pos, d_model/2]
    pe = torch.empty(n_pos, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe.to(torch.float32)  # [pos, d_model]


def pe_shift_matrix(k: int, d_model: int) -> torch.Tensor:
    r"""The matrix :math:`M_k` with :math:`PE_{pos+k} = M_k PE_{pos}` for every pos.

    .. math::
        PE_{pos+k} = M_k\,PE_{pos},\qquad M_k=\mathrm{diag}_i\!\left(
        \begin{pmatrix}\cos\omega_i k & \sin\omega_i k\\ -\sin\omega_i k & \cos\omega_i k\end{pmatrix}\right)

    Block i acts on (sin, cos) of pair i,
    from sin(a+b) = sin a cos b + cos a sin b and cos(a+b) = cos a cos b - sin a sin b.
    It depends on k only, not on pos. Returns [d_model, d_model], float64.
    """
    angles = pe_frequencies(d_model) * k  # [d_model/2]
    c, s = torch.cos(angles), torch.sin(angles)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    idx = torch.arange(0, d_model, 2)
    m[idx, idx] = c
    m[idx, idx + 1] = s
    m[idx + 1, idx] = -s
    m[idx + 1, idx + 1] = c
    return m
