r"""Why attention, measured on one text: a recurrent layer (a tanh RNN or a GRU) against one
attention layer, both reading the same token vectors (a model's embedding of the text).

Three measurements, each a function of plain values (the token vectors as numpy, a frozen
`LayerSpec`), returning numpy and dataclasses, so the app caches them and a notebook calls them:

- `hidden_states`: the recurrent layer steps through the text one token at a time, and step t
  needs step t − 1's result; attention computes every position from the inputs at once.
  `sequential_steps` counts the *steps*: operations that depend on each other and so cannot
  start before the previous one has finished (n for a recurrent layer over n tokens, 1 for
  attention, however many multiplications each step holds).
- `gradient_profile`: how much the last position's output can still feel each earlier input,
  :math:`\lVert \partial h_n / \partial x_i \rVert_F` against the distance n − i (why below).
- the time of each layer against length is the costs page's sweep (`timing_settings` for
  `tformer.efficiency.rnn.rnn_sweep`), and the steps are `tformer.efficiency.rnn.path_lengths`.

Why gradients vanish or explode in a tanh RNN,
:math:`h_t = \tanh(W_{ih} x_t + b_{ih} + W_{hh} h_{t-1} + b_{hh})`: by the chain rule (the
formula is written in `gradient_profile`'s docstring, where the page reads it), the gradient
of h_n with respect to x_i is a product of the n − i steps' Jacobians, so the gradient crosses n − i copies of :math:`W_{hh}`, each damped by tanh's derivative
:math:`1 - h_t^2 \le 1`. Its norm scales like :math:`\rho(W_{hh})^{n-i}` times the product of
those derivatives: with :math:`W_{hh} = s\,Q` (Q orthogonal, so the spectral radius and the
spectral norm are both s, the `LayerSpec.scale`) it is at most
:math:`s^{\,n-i} \lVert W_{ih} \rVert_F`. Below s = 1 it must vanish, exponentially in the
distance; above 1 it can grow (once the tanh derivatives no longer pull it back under 1). A
GRU multiplies by its update gate too, which can hold the state (z → 1) and with it the
gradient. Attention's output at n reads every x_i through one softmax: no product over the
positions in between, so no decay with distance.

How it is computed: `input_jacobians` differentiates the whole layer end to end with autograd
(the reference, and what tests compare against a hand-derived product). `gradient_profile`
takes each step's own Jacobians by autograd (all steps in one backward pass) and multiplies
them from the last step back, exactly the product above, renormalising as it goes and keeping
the scale as a logarithm: a norm of 10⁻⁴⁰⁰ is neither 0 nor a float64 underflow. Everything
runs in float64.

Torch and numpy; no Streamlit, no plotly. Like ``layouts``, this module imports torch and is
imported from its module, not re-exported by ``tformer.analysis``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch

from ..efficiency.measure import Budget
from ..efficiency.rnn import RnnSettings, path_lengths
from ..model.attention import scaled_dot_product_attention

__all__ = [
    "KINDS",
    "MAX_D_HIDDEN",
    "MAX_POS",
    "RECURRENT_KINDS",
    "GradientProfile",
    "LayerRun",
    "LayerSpec",
    "LayerWeights",
    "attention_pattern",
    "gradient_profile",
    "gru_cell",
    "hidden_states",
    "input_jacobians",
    "layer_weights",
    "rnn_cell",
    "run_layer",
    "sequential_steps",
    "standardize",
    "timing_settings",
]

KINDS = ("rnn", "gru", "attention")
RECURRENT_KINDS = ("rnn", "gru")
MAX_POS = 4096  # the longest text measured (the app's own limit is lower)
MAX_D_HIDDEN = 256
MAX_D_IN = 8192
SCALE_RANGE = (0.01, 10.0)  # recurrent weight scales outside it say nothing new

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class LayerSpec:
    """One layer that mixes the positions of a text. Frozen so it hashes (a cache key).

    ``kind``: "rnn" (tanh RNN), "gru" or "attention" (one head of self-attention);
    ``d_hidden``: the width of its state / output; ``scale``: the recurrent weights are
    ``scale`` times an orthogonal matrix (each of the GRU's three blocks), so ``scale`` is
    their spectral radius (attention has none and ignores it); ``input_scale``: the input
    weights' standard deviation times √d_in (with standardized inputs, each pre-activation's
    input part has about this standard deviation); ``seed``: every weight.
    """

    kind: str = "rnn"
    d_hidden: int = 16
    scale: float = 1.0
    input_scale: float = 0.25
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind={self.kind!r} is not one of {KINDS}")
        if not isinstance(self.d_hidden, int) or isinstance(self.d_hidden, bool):
            raise ValueError(f"d_hidden={self.d_hidden!r} must be an integer")
        if not 1 <= self.d_hidden <= MAX_D_HIDDEN:
            raise ValueError(f"d_hidden={self.d_hidden} must be in [1, {MAX_D_HIDDEN}]")
        lo, hi = SCALE_RANGE
        if not (math.isfinite(self.scale) and lo <= self.scale <= hi):
            raise ValueError(f"scale={self.scale!r} must be in [{lo}, {hi}]")
        if not (math.isfinite(self.input_scale) and 0 < self.input_scale <= hi):
            raise ValueError(f"input_scale={self.input_scale!r} must be in (0, {hi}]")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed={self.seed!r} must be a non-negative integer")

    @property
    def recurrent(self) -> bool:
        return self.kind in RECURRENT_KINDS

    @property
    def gates(self) -> int:
        """Blocks of the input projection: 1 (tanh RNN), 3 (GRU: r, z, n), 3 (attention: q, k, v)."""
        return 1 if self.kind == "rnn" else 3


# --- inputs and weights ---------------------------------------------------------------------------


def standardize(x: npt.ArrayLike) -> FloatArray:
    """Token vectors [pos, d_in] as float64, each shifted and scaled to mean 0 and standard
    deviation 1 over its d_in entries (a LayerNorm without parameters): MiniLM's embeddings
    and the from-scratch encoder's differ in scale by an order of magnitude, and the layers
    here should see the same size of input from either. ValueError for a shape that is not
    [pos, d_in] within the bounds, or for values that are not finite."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 2:
        raise ValueError(f"x must be [pos, d_in] with pos >= 1 and d_in >= 2, got shape {a.shape}")
    if a.shape[0] > MAX_POS or a.shape[1] > MAX_D_IN:
        raise ValueError(f"x has shape {a.shape}: at most {MAX_POS} positions and d_in {MAX_D_IN}")
    if not np.isfinite(a).all():
        raise ValueError("x holds values that are not finite (NaN or inf)")
    centred = a - a.mean(axis=1, keepdims=True)
    std = centred.std(axis=1, keepdims=True)
    standardized: FloatArray = centred / np.where(std > 0, std, 1.0)
    return standardized


@dataclass(frozen=True, eq=False)
class LayerWeights:
    """A layer's weights, float64, in torch's nn.RNN / nn.GRU layout.

    ``w_in`` [gates·d_hidden, d_in] and ``b_in`` [gates·d_hidden]: the input projection (W_ih
    and b_ih; for attention W_Q, W_K, W_V stacked, no bias); ``w_rec`` [gates·d_hidden,
    d_hidden] and ``b_rec``: the recurrent weights W_hh and b_hh (attention: W_O [d_hidden,
    d_hidden] and a zero bias).
    """

    spec: LayerSpec
    w_in: torch.Tensor
    b_in: torch.Tensor
    w_rec: torch.Tensor
    b_rec: torch.Tensor


def _orthogonal(d: int, gen: torch.Generator) -> torch.Tensor:
    """A random orthogonal [d, d]: QR of a Gaussian, the signs fixed so it is uniformly drawn."""
    q, r = torch.linalg.qr(torch.randn(d, d, generator=gen, dtype=torch.float64))
    orthogonal: torch.Tensor = q * torch.sign(torch.diagonal(r))
    return orthogonal


def layer_weights(spec: LayerSpec, d_in: int) -> LayerWeights:
    """The weights of ``spec`` for inputs of width ``d_in``, drawn from a generator seeded by
    ``spec.seed`` (the global seed is left alone): the same spec gives the same weights."""
    if not isinstance(d_in, int) or not 2 <= d_in <= MAX_D_IN:
        raise ValueError(f"d_in={d_in!r} must be an integer in [2, {MAX_D_IN}]")
    gen = torch.Generator().manual_seed(spec.seed)
    h, g = spec.d_hidden, spec.gates
    w_in = torch.randn(g * h, d_in, generator=gen, dtype=torch.float64) * (spec.input_scale / math.sqrt(d_in))
    if spec.recurrent:
        w_rec = torch.cat([spec.scale * _orthogonal(h, gen) for _ in range(g)])  # [gates·h, h]
        b_rec = torch.zeros(g * h, dtype=torch.float64)
    else:
        w_rec = torch.randn(h, h, generator=gen, dtype=torch.float64) / math.sqrt(h)  # W_O
        b_rec = torch.zeros(h, dtype=torch.float64)
    return LayerWeights(spec, w_in, torch.zeros(g * h, dtype=torch.float64), w_rec, b_rec)


# --- the layers -------------------------------------------------------------------------------------


def rnn_cell(h: torch.Tensor, u: torch.Tensor, w_hh: torch.Tensor, b_hh: torch.Tensor) -> torch.Tensor:
    r"""One step of a tanh RNN, with the input part :math:`u_t = W_{ih} x_t + b_{ih}` computed
    for every position beforehand. h: [..., d_hidden], u: [..., d_hidden].

    .. math::
        h_t = \tanh(u_t + W_{hh} h_{t-1} + b_{hh})
    """
    return torch.tanh(u + h @ w_hh.T + b_hh)


def gru_cell(h: torch.Tensor, u: torch.Tensor, w_hh: torch.Tensor, b_hh: torch.Tensor) -> torch.Tensor:
    r"""One step of a GRU (torch's nn.GRU equations, gates in its order r, z, n), with
    :math:`u_t = W_{ih} x_t + b_{ih}` = :math:`(u_r, u_z, u_n)` computed beforehand:

    .. math::
        r = \sigma(u_r + W_{hr} h + b_{hr}),\quad z = \sigma(u_z + W_{hz} h + b_{hz})

        c = \tanh(u_n + r \odot (W_{hn} h + b_{hn})),\quad h_t = (1 - z) \odot c + z \odot h

    h: [..., d_hidden], u: [..., 3·d_hidden]. The update gate z is the path that can carry
    the state (and its gradient) across a step unchanged.
    """
    gh = h @ w_hh.T + b_hh
    u_r, u_z, u_n = u.chunk(3, dim=-1)
    h_r, h_z, h_n = gh.chunk(3, dim=-1)
    r = torch.sigmoid(u_r + h_r)
    z = torch.sigmoid(u_z + h_z)
    c = torch.tanh(u_n + r * h_n)
    return (1 - z) * c + z * h


CELLS = {"rnn": rnn_cell, "gru": gru_cell}


def _recurrent(u: torch.Tensor, w: LayerWeights) -> torch.Tensor:
    """Step the cell through u [batch, pos, gates·d_hidden] one position at a time from h = 0:
    every state [batch, pos, d_hidden]. Step t cannot start before step t − 1 is done."""
    cell = CELLS[w.spec.kind]
    h = u.new_zeros(u.shape[0], w.spec.d_hidden)  # [batch, d_hidden]
    states = []
    for u_t in u.unbind(dim=1):  # unbind: one gradient buffer for all steps, not one per step
        h = cell(h, u_t, w.w_rec, w.b_rec)
        states.append(h)
    return torch.stack(states, dim=1)  # [batch, pos, d_hidden]


def _attention(qkv: torch.Tensor, w: LayerWeights) -> tuple[torch.Tensor, torch.Tensor]:
    """One head of self-attention on the projected inputs qkv [batch, pos, 3·d_hidden]: every
    position at once, `tformer.model.attention.scaled_dot_product_attention`, then W_O.
    Returns (outputs [batch, pos, d_hidden], pattern [batch, query_pos, key_pos])."""
    q, k, v = (t[:, None] for t in qkv.chunk(3, dim=-1))  # [batch, head_index=1, pos, d_hidden]
    z, pattern = scaled_dot_product_attention(q, k, v)
    return z[:, 0] @ w.w_rec.T + w.b_rec, pattern[:, 0]


def _projected(x: torch.Tensor, w: LayerWeights) -> torch.Tensor:
    return x @ w.w_in.T + w.b_in  # [..., pos, gates·d_hidden], every position at once


def _outputs(u: torch.Tensor, w: LayerWeights) -> torch.Tensor:
    return _recurrent(u, w) if w.spec.recurrent else _attention(u, w)[0]


def _checked(x: npt.ArrayLike) -> torch.Tensor:
    return torch.from_numpy(standardize(x))


def hidden_states(x: npt.ArrayLike, spec: LayerSpec) -> FloatArray:
    """What the layer computes on the token vectors x [pos, d_in] (standardized first, see
    `standardize`): [pos, d_hidden]. For a recurrent layer row t is the state after step t
    (rows 0..k−1 are all that exists after k steps); for attention every row comes out of the
    same single step."""
    xt = _checked(x)
    w = layer_weights(spec, int(xt.shape[1]))
    with torch.inference_mode():
        out = _outputs(_projected(xt, w)[None], w)[0]
    states: FloatArray = out.numpy().copy()
    return states


def attention_pattern(x: npt.ArrayLike, spec: LayerSpec) -> FloatArray:
    """The attention layer's weights on x [pos, d_in]: [query_pos, key_pos], rows sum to 1."""
    if spec.kind != "attention":
        raise ValueError(f"a {spec.kind} layer has no attention pattern")
    xt = _checked(x)
    w = layer_weights(spec, int(xt.shape[1]))
    with torch.inference_mode():
        _, pattern = _attention(_projected(xt, w)[None], w)
    weights: FloatArray = pattern[0].numpy().copy()
    return weights


def sequential_steps(kind: str, n: int) -> int:
    """How many steps must run one after another to compute all n positions: n for a
    recurrent layer (step t needs step t − 1's state), 1 for attention (every position reads
    the inputs only). A step may hold many multiplications; what counts is that the next one
    cannot start before it ends. The same count as `tformer.efficiency.rnn.path_lengths`."""
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is not one of {KINDS}")
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n={n!r} must be a positive integer")
    paths = path_lengths(np.array([n]))
    return int(paths["attention" if kind == "attention" else "gru"]["sequential"][0])


# --- gradients --------------------------------------------------------------------------------------


def input_jacobians(x: npt.ArrayLike, spec: LayerSpec) -> FloatArray:
    r"""The full Jacobian of the last position's output with respect to every input,
    :math:`\partial h_n / \partial x_i`, by autograd through the whole layer: [pos, d_hidden,
    d_in] (row i is the Jacobian for input i). One backward pass: the text is copied d_hidden
    times into a batch and copy c backpropagates only output component c. Memory grows with
    pos × d_hidden × d_in: meant for short texts and tests (`gradient_profile` gives the norms of
    any length). The inputs are standardized first (`standardize`); the Jacobian is with
    respect to the standardized vectors."""
    xt = _checked(x)
    n, d_in = int(xt.shape[0]), int(xt.shape[1])
    if n * spec.d_hidden * d_in > 1 << 24:
        raise ValueError(
            f"{n} positions x d_hidden {spec.d_hidden} x d_in {d_in} is too large a Jacobian: "
            "use gradient_profile for the norms"
        )
    w = layer_weights(spec, d_in)
    batch = xt.expand(spec.d_hidden, n, d_in).clone().requires_grad_(True)  # [d_hidden, pos, d_in]
    with torch.enable_grad():
        last = _outputs(_projected(batch, w), w)[:, -1]  # [d_hidden (copies), d_hidden]
        (grad,) = torch.autograd.grad(last.diagonal().sum(), batch)  # grad[c, i] = ∂h_n[c] / ∂x_i
    jacobians: FloatArray = grad.permute(1, 0, 2).numpy().copy()  # [pos, d_hidden, d_in]
    return jacobians


@dataclass(frozen=True, eq=False)
class GradientProfile:
    r"""How strongly the last position's output depends on each input, by distance.

    ``distance[d] = d`` and ``log10_norm[d]`` = :math:`\log_{10} \lVert \partial h_n /
    \partial x_{n-d} \rVert_F` (positions 0-based: n is the last one, so d runs 0..n−1;
    −inf where it is exactly 0). ``log10_bound``: for the tanh RNN, the bound
    :math:`\log_{10}(s^{d} \lVert W_{ih} \rVert_F)` that no norm can exceed (None for the
    others). ``factor_per_step``: 10 to the slope of a least-squares line through the finite
    log norms at d >= 1 (the factor one more step back multiplies the gradient by; None with
    fewer than two such points).
    """

    spec: LayerSpec
    distance: npt.NDArray[np.int64]
    log10_norm: FloatArray
    log10_bound: FloatArray | None
    factor_per_step: float | None

    @property
    def n_pos(self) -> int:
        return int(self.distance.shape[0])

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def scale(self) -> float:
        return self.spec.scale


def _fit_factor(log10_norm: FloatArray) -> float | None:
    d = np.arange(log10_norm.shape[0])
    ok = np.isfinite(log10_norm) & (d >= 1)
    if ok.sum() < 2:
        return None
    slope = np.polyfit(d[ok].astype(np.float64), log10_norm[ok], 1)[0]
    return float(10.0**slope)


def _local_jacobians(u: torch.Tensor, states: torch.Tensor, w: LayerWeights) -> tuple[np.ndarray, np.ndarray]:
    """Every step's own Jacobians, by autograd, all steps in one backward pass:
    A[t] = ∂h_t/∂h_{t−1} [pos, d_hidden, d_hidden] and B[t] = ∂h_t/∂u_t [pos, d_hidden,
    gates·d_hidden], at the states [pos, d_hidden] the layer went through. Each step's inputs
    are copied d_hidden times (batch c backpropagates output component c only)."""
    dh = w.spec.d_hidden
    n = int(u.shape[0])
    prev = torch.cat([states.new_zeros(1, dh), states[:-1]])  # h_{t−1}, with h_{−1} = 0
    h_rep = prev.expand(dh, n, dh).clone().requires_grad_(True)  # [d_hidden (copies), pos, d_hidden]
    u_rep = u.expand(dh, n, u.shape[1]).clone().requires_grad_(True)
    with torch.enable_grad():
        out = CELLS[w.spec.kind](h_rep, u_rep, w.w_rec, w.b_rec)  # [copies, pos, d_hidden]
        picked = out.diagonal(dim1=0, dim2=2).sum()  # Σ_c out[c, :, c]
        grad_h, grad_u = torch.autograd.grad(picked, (h_rep, u_rep))
    return grad_h.permute(1, 0, 2).numpy(), grad_u.permute(1, 0, 2).numpy()


def _chain(a: np.ndarray, b: np.ndarray, gram: np.ndarray) -> FloatArray:
    r"""log10 ‖(A_n ⋯ A_{i+1}) B_i W‖_F for every i, going back from the last step:
    P starts as the identity, J_i = P B_i, then P ← P A_i. P is renormalised to norm 1 at each
    step and its log scale kept apart, so no product underflows or overflows. ‖P B_i W‖_F² is
    Σ (P M_i) ⊙ P with M_i = B_i (W Wᵀ) B_iᵀ, all M_i computed at once beforehand, so the loop
    multiplies d_hidden x d_hidden matrices only."""
    n, dh = a.shape[0], a.shape[1]
    m = (b @ gram) @ b.transpose(0, 2, 1)  # [pos, d_hidden, d_hidden]
    out = np.full(n, -math.inf, dtype=np.float64)
    p = np.eye(dh)
    log_scale = 0.0
    for i in range(n - 1, -1, -1):
        sq = float(((p @ m[i]) * p).sum())
        if sq > 0:
            out[n - 1 - i] = log_scale + 0.5 * math.log10(sq)
        p = p @ a[i]
        size = float(np.sqrt((p * p).sum()))
        if size == 0.0:  # every earlier input is cut off exactly (-inf already)
            break
        p /= size
        log_scale += math.log10(size)
    return out


def _attention_profile(u: torch.Tensor, w: LayerWeights) -> FloatArray:
    """log10 ‖∂y_n/∂x_i‖_F for the attention layer, end to end by autograd (one step: cheap).
    Only the last query's row is computed: y_n reads q_n and every k_j, v_j, and no other row
    of the pattern reaches it. Taken with respect to the projected inputs (q, k, v) and mapped
    back through the Gram matrix of W_QKV."""
    n, dh = int(u.shape[0]), w.spec.d_hidden
    batch = u.expand(dh, n, u.shape[1]).clone().requires_grad_(True)  # [d_hidden, pos, 3·d_hidden]
    with torch.enable_grad():
        q, k, v = (t[:, None] for t in batch.chunk(3, dim=-1))  # [copies, 1, pos, d_hidden]
        z, _ = scaled_dot_product_attention(q[:, :, -1:], k, v)  # [copies, 1, 1, d_hidden]
        last = z[:, 0, 0] @ w.w_rec.T + w.b_rec  # [copies, d_hidden]
        (grad,) = torch.autograd.grad(last.diagonal().sum(), batch)
    j = grad.permute(1, 0, 2).numpy()  # [pos, d_hidden, 3·d_hidden]
    gram = (w.w_in @ w.w_in.T).numpy()
    sq = ((j @ gram) * j).sum(axis=(1, 2))  # [pos]
    with np.errstate(divide="ignore"):
        per_pos = 0.5 * np.log10(np.maximum(sq, 0.0))
    return np.ascontiguousarray(per_pos[::-1])  # by distance: the last position first


@dataclass(frozen=True, eq=False)
class LayerRun:
    """One layer on one text: its ``states`` [pos, d_hidden] (`hidden_states`), the gradient
    ``profile`` (`gradient_profile`) and, for attention, its ``pattern`` [query_pos, key_pos]
    (None for a recurrent layer); ``steps``: `sequential_steps` for this many positions."""

    spec: LayerSpec
    states: FloatArray
    profile: GradientProfile
    pattern: FloatArray | None
    steps: int


def run_layer(x: npt.ArrayLike, spec: LayerSpec) -> LayerRun:
    """`hidden_states`, `gradient_profile` and the pattern of one layer on the token vectors x
    [pos, d_in] (standardized first, see `standardize`), stepping through the text once."""
    xt = _checked(x)
    n = int(xt.shape[0])
    w = layer_weights(spec, int(xt.shape[1]))
    u = _projected(xt, w).detach()  # [pos, gates·d_hidden]
    pattern = None
    bound: FloatArray | None = None
    if spec.recurrent:
        with torch.inference_mode():
            states = _recurrent(u[None], w)[0]  # [pos, d_hidden]
        a, b = _local_jacobians(u, states, w)
        log10_norm = _chain(a, b, (w.w_in @ w.w_in.T).numpy())
        if spec.kind == "rnn":
            bound = math.log10(float(torch.linalg.norm(w.w_in))) + np.arange(
                n, dtype=np.float64
            ) * math.log10(spec.scale)
    else:
        with torch.inference_mode():
            out, pat = _attention(u[None], w)
        states, pattern = out[0], pat[0].numpy().copy()
        log10_norm = _attention_profile(u, w)
    profile = GradientProfile(
        spec=spec,
        distance=np.arange(n, dtype=np.int64),
        log10_norm=log10_norm,
        log10_bound=bound,
        factor_per_step=_fit_factor(log10_norm),
    )
    return LayerRun(spec, states.numpy().copy(), profile, pattern, sequential_steps(spec.kind, n))


def gradient_profile(x: npt.ArrayLike, spec: LayerSpec) -> GradientProfile:
    r"""‖∂h_n/∂x_i‖_F against the distance n − i for the layer ``spec`` on the token vectors x
    [pos, d_in] (standardized first, see `standardize`). Recurrent layers: the product of the
    steps' Jacobians, by the chain rule (why it vanishes or explodes: the module docstring);
    attention: one backward pass.

    .. math::
        \frac{\partial h_n}{\partial x_i}
          = \Bigl(\prod_{t=n}^{i+1} \frac{\partial h_t}{\partial h_{t-1}}\Bigr)
            \frac{\partial h_i}{\partial x_i}

        \frac{\partial h_t}{\partial h_{t-1}} = \operatorname{diag}(1 - h_t^2)\, W_{hh},\qquad
        \frac{\partial h_i}{\partial x_i} = \operatorname{diag}(1 - h_i^2)\, W_{ih}
    """
    return run_layer(x, spec).profile


# --- time against length -----------------------------------------------------------------------------


def timing_settings(d_model: int = 64, n_max: int = 1024, total_s: float = 6.0) -> RnnSettings:
    """The costs page's RNN-against-attention sweep (`tformer.efficiency.rnn.rnn_sweep`) sized
    for this chapter: both recurrent layers (tanh RNN and GRU) and one attention layer of
    width ``d_model`` (one head per 16 dimensions), from 16 tokens doubling up to ``n_max``,
    within ``total_s`` seconds. Run it once in the background and cache the `Sweep`."""
    n_heads = max(1, d_model // 16) if d_model % 16 == 0 else 1
    return RnnSettings(
        d_model=d_model,
        n_heads=n_heads,
        n_min=16,
        n_max=n_max,
        budget=Budget(call_s=0.25, total_s=total_s),
        recurrent=RECURRENT_KINDS,
    )
