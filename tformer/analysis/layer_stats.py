r"""Summary numbers of one encoder layer, computed from captured activations (numpy only).

Three questions a class asks about a layer, each answered by one pure function over the arrays of
a `TextCapture` (batch dropped; per-layer activations have the layer first):

- how many FFN units does the nonlinearity switch off? (`ffn_sparsity`, from ``mlp_pre`` and
  ``mlp_post``)
- how large is what each sublayer adds, next to the residual stream it adds to?
  (`sublayer_norms`, from ``resid_pre``, ``attn_out`` and ``mlp_out``)
- what do the mean and spread of the values entering a LayerNorm look like?
  (`layernorm_stats`)

Nothing here runs the model; results are float32 numpy (shares and means as Python floats).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float32]


def _as_array(x: npt.ArrayLike, name: str, ndims: tuple[int, ...], dims: str) -> npt.NDArray[np.float64]:
    a = np.asarray(x)
    if a.ndim not in ndims:
        raise ValueError(f"{name} must be {dims}, got shape {tuple(a.shape)}")
    if a.size == 0:
        raise ValueError(f"{name} has shape {tuple(a.shape)}: at least one position is needed")
    # float64 for the sums: 1536 units x 512 positions of float32 lose digits in a float32 mean
    return a.astype(np.float64, copy=False)


def _mean_finite(a: npt.NDArray[np.float64], axis: int) -> Array:
    """Mean over ``axis`` of the finite entries (NaN where there is none), as float32."""
    finite = np.isfinite(a)
    count = finite.sum(axis=axis)
    total = np.where(finite, a, 0.0).sum(axis=axis)
    out = np.full(count.shape, np.nan)
    np.divide(total, count, out=out, where=count > 0)
    return out.astype(np.float32)


# ---------------------------------------------------------------------------------------------
# FFN sparsity
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FfnSparsity:
    """How many FFN activations are (near) zero after the nonlinearity.

    Shares are fractions in 0..1. For a one-layer input [pos, d_mlp] the per-token arrays are
    [pos] and the per-layer ones are None; for [layer, pos, d_mlp] they are [layer, pos] and
    [layer].
    """

    tol: float  # "near zero" means |a| < tol
    d_mlp: int  # units per token the shares count
    zero: float  # share of exact zeros in mlp_post, over every position (and layer) given
    near_zero: float  # share of |mlp_post| < tol (exact zeros included)
    inactive: float  # share of mlp_pre <= 0: the units a ReLU switches off
    zero_per_token: Array  # [pos] or [layer, pos]
    near_zero_per_token: Array  # [pos] or [layer, pos]
    inactive_per_token: Array  # [pos] or [layer, pos]
    zero_per_layer: Array | None  # [layer], None for a one-layer input
    near_zero_per_layer: Array | None  # [layer], None for a one-layer input


def ffn_sparsity(mlp_pre: npt.ArrayLike, mlp_post: npt.ArrayLike, *, tol: float = 1e-2) -> FfnSparsity:
    r"""Share of FFN activations ``a = act(h)`` that are exactly zero, or nearly (|a| < tol).

    ``mlp_pre`` is h = xW_1 + b_1 and ``mlp_post`` is a = act(h), both [pos, d_mlp] for one
    layer or [layer, pos, d_mlp] for all (then shares are also given per layer). With ReLU the
    exact-zero share equals the share of h <= 0 (``inactive``); GELU is exactly zero only at
    h = 0, so there the near-zero share is the one that tells.

    .. math::
        \text{zero} = \frac{1}{P\,F}\sum_{p,f} \mathbb{1}[a_{pf} = 0],\qquad
        \text{near zero} = \frac{1}{P\,F}\sum_{p,f} \mathbb{1}[\,|a_{pf}| < \tau\,]

    Per token, the same sums run over the d_mlp = F units of one position only.
    """
    if not tol > 0:
        raise ValueError(f"tol={tol!r} must be > 0")
    dims = "[pos, d_mlp] or [layer, pos, d_mlp]"
    pre = _as_array(mlp_pre, "mlp_pre", (2, 3), dims)
    post = _as_array(mlp_post, "mlp_post", (2, 3), dims)
    if pre.shape != post.shape:
        raise ValueError(f"mlp_pre has shape {tuple(pre.shape)} but mlp_post has shape {tuple(post.shape)}")
    zero = post == 0.0
    near = np.abs(post) < tol
    off = pre <= 0.0
    per_layer = post.ndim == 3
    return FfnSparsity(
        tol=float(tol),
        d_mlp=int(post.shape[-1]),
        zero=float(zero.mean()),
        near_zero=float(near.mean()),
        inactive=float(off.mean()),
        zero_per_token=zero.mean(axis=-1).astype(np.float32),
        near_zero_per_token=near.mean(axis=-1).astype(np.float32),
        inactive_per_token=off.mean(axis=-1).astype(np.float32),
        zero_per_layer=zero.mean(axis=(1, 2)).astype(np.float32) if per_layer else None,
        near_zero_per_layer=near.mean(axis=(1, 2)).astype(np.float32) if per_layer else None,
    )


# ---------------------------------------------------------------------------------------------
# Sublayer norms
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SublayerNorms:
    """L2 norms per layer and token of a block's input and of what its two sublayers add.

    Fields carry the hook short names of the vectors they measure. Per-token arrays are
    [layer, pos]; the ``*_mean`` arrays are [layer] (mean over tokens, NaN ratios skipped).
    """

    resid_pre: Array  # [layer, pos] ||x||, the block's input
    attn_out: Array  # [layer, pos] ||MultiHead(x)||
    mlp_out: Array  # [layer, pos] ||FFN(.)||
    attn_ratio: Array  # [layer, pos] ||attn_out|| / ||resid_pre|| (NaN where ||x|| = 0)
    mlp_ratio: Array  # [layer, pos] ||mlp_out|| / ||resid_pre|| (NaN where ||x|| = 0)
    resid_pre_mean: Array  # [layer]
    attn_out_mean: Array  # [layer]
    mlp_out_mean: Array  # [layer]
    attn_ratio_mean: Array  # [layer]
    mlp_ratio_mean: Array  # [layer]

    @property
    def n_layers(self) -> int:
        return int(self.resid_pre.shape[0])

    @property
    def n_pos(self) -> int:
        return int(self.resid_pre.shape[1])


def sublayer_norms(
    resid_pre: npt.ArrayLike, attn_out: npt.ArrayLike, mlp_out: npt.ArrayLike
) -> SublayerNorms:
    r"""How large each sublayer's output is next to the residual stream it is added to.

    All three inputs are [layer, pos, d_model] (``cap["resid_pre"]``, ``cap["attn_out"]``,
    ``cap["mlp_out"]``; for one layer pass ``a[None]``). Both ratios divide by the norm of the
    block's input x = resid_pre, so they compare on one scale; the FFN's own input is
    resid_mid (x plus attention, normalised when post-norm), whose norm is of the same order.
    A ratio well below 1 means the sublayer nudges the token's vector; near or above 1, it
    rewrites it.

    .. math::
        \|v\| = \sqrt{\textstyle\sum_{d} v_d^2},\qquad
        r^{\text{attn}}_{p} = \frac{\|\mathrm{MultiHead}(x)_p\|}{\|x_p\|},\qquad
        r^{\text{FFN}}_{p} = \frac{\|\mathrm{FFN}_p\|}{\|x_p\|}

    Per-layer values are means over the P positions: :math:`\bar r = \frac1P \sum_p r_p`.
    """
    dims = "[layer, pos, d_model]"
    arrays = [
        _as_array(a, n, (3,), dims)
        for n, a in (("resid_pre", resid_pre), ("attn_out", attn_out), ("mlp_out", mlp_out))
    ]
    shapes = {tuple(a.shape) for a in arrays}
    if len(shapes) != 1:
        raise ValueError(
            "resid_pre, attn_out and mlp_out must share one shape [layer, pos, d_model], got "
            + ", ".join(str(tuple(a.shape)) for a in arrays)
        )
    x, attn, mlp = (np.linalg.norm(a, axis=-1) for a in arrays)  # [layer, pos]

    def ratio(num: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        out = np.full(num.shape, np.nan)
        np.divide(num, x, out=out, where=x > 0)
        return out

    r_attn, r_mlp = ratio(attn), ratio(mlp)
    f32 = np.float32
    return SublayerNorms(
        resid_pre=x.astype(f32),
        attn_out=attn.astype(f32),
        mlp_out=mlp.astype(f32),
        attn_ratio=r_attn.astype(f32),
        mlp_ratio=r_mlp.astype(f32),
        resid_pre_mean=_mean_finite(x, 1),
        attn_out_mean=_mean_finite(attn, 1),
        mlp_out_mean=_mean_finite(mlp, 1),
        attn_ratio_mean=_mean_finite(r_attn, 1),
        mlp_ratio_mean=_mean_finite(r_mlp, 1),
    )


# ---------------------------------------------------------------------------------------------
# LayerNorm statistics
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LayerNormStats:
    """μ and σ of each token's values entering a LayerNorm (arrays have x's shape minus d_model)."""

    mean: Array  # [pos] μ
    sigma: Array  # [pos] σ = sqrt(var + eps): the hook ln*_scale, without its trailing 1
    var: Array  # [pos] biased variance (divided by d_model)
    eps: float


def layernorm_stats(x: npt.ArrayLike, *, eps: float = 1e-5) -> LayerNormStats:
    r"""Mean and spread of each token's d_model values, as the LayerNorm computes them.

    ``x`` is [pos, d_model] (any leading axes work: [layer, pos, d_model] gives [layer, pos]).
    What enters a LayerNorm depends on where it sits: post-norm LN1 takes resid_pre + attn_out,
    pre-norm LN1 takes resid_pre; pass the model's ``layer_norm_eps`` as ``eps`` to reproduce
    its ``ln1_scale`` exactly. The variance is the biased one (divided by d_model), as in
    ``nn.LayerNorm``.

    .. math::
        \mu = \frac{1}{d}\sum_{i=1}^{d} x_i,\qquad
        \sigma = \sqrt{\frac{1}{d}\sum_{i=1}^{d} (x_i - \mu)^2 + \varepsilon}
    """
    if not eps >= 0:
        raise ValueError(f"eps={eps!r} must be >= 0")
    a = np.asarray(x)
    if a.ndim < 1 or a.shape[-1] == 0:
        raise ValueError(f"x must be [pos, d_model] with d_model >= 1, got shape {tuple(a.shape)}")
    a64 = a.astype(np.float64, copy=False)
    mean = a64.mean(axis=-1)
    var = ((a64 - mean[..., None]) ** 2).mean(axis=-1)
    return LayerNormStats(
        mean=mean.astype(np.float32),
        sigma=np.sqrt(var + eps).astype(np.float32),
        var=var.astype(np.float32),
        eps=float(eps),
    )
