"""Why attention, measured on a text (tformer.analysis.why): the recurrent layers step through
the text and agree with torch's own modules, the gradient norms match a Jacobian product derived
by hand and autograd end to end, vanish below a recurrent scale of 1 and grow well above it,
attention's do not decay with distance, nothing underflows, and a 512-token text fits the
app's edit budget."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch
from torch import nn

from tformer.analysis.why import (
    KINDS,
    LayerSpec,
    attention_pattern,
    gradient_profile,
    hidden_states,
    input_jacobians,
    layer_weights,
    run_layer,
    sequential_steps,
    standardize,
    timing_settings,
)
from tformer.efficiency.rnn import RnnSettings, path_lengths, rnn_sweep


def tokens(n: int, d_in: int = 12, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d_in))


# --- the hand-derived reference -------------------------------------------------------------------


def hand_rnn(x: np.ndarray, spec: LayerSpec) -> tuple[np.ndarray, np.ndarray]:
    """States and ∂h_n/∂x_i of a tanh RNN, in numpy, straight from the formulas:
    h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh),
    ∂h_n/∂x_i = (Π_{t=n..i+1} diag(1 - h_t²) W_hh) diag(1 - h_i²) W_ih."""
    w = layer_weights(spec, x.shape[1])
    w_ih, b_ih, w_hh, b_hh = (t.numpy() for t in (w.w_in, w.b_in, w.w_rec, w.b_rec))
    xs = standardize(x)
    h = np.zeros(spec.d_hidden)
    states = []
    for x_t in xs:
        h = np.tanh(w_ih @ x_t + b_ih + w_hh @ h + b_hh)
        states.append(h)
    hs = np.array(states)
    n = len(hs)
    jac = np.empty((n, spec.d_hidden, x.shape[1]))
    for i in range(n):
        j = np.diag(1 - hs[i] ** 2) @ w_ih
        for t in range(i + 1, n):
            j = np.diag(1 - hs[t] ** 2) @ w_hh @ j
        jac[i] = j
    return hs, jac


@pytest.mark.parametrize("scale", [0.5, 1.0, 2.0])
def test_the_gradient_matches_a_jacobian_product_derived_by_hand_on_a_tiny_rnn(scale):
    x = tokens(7, d_in=4, seed=3)
    spec = LayerSpec(kind="rnn", d_hidden=3, scale=scale, input_scale=1.0)
    states, jac = hand_rnn(x, spec)
    np.testing.assert_allclose(hidden_states(x, spec), states, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(input_jacobians(x, spec), jac, rtol=1e-10, atol=1e-12)
    norms = np.linalg.norm(jac.reshape(len(jac), -1), axis=1)[::-1]  # by distance
    np.testing.assert_allclose(gradient_profile(x, spec).log10_norm, np.log10(norms), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scale", [0.5, 2.0])
def test_the_chained_product_equals_autograd_end_to_end(kind, scale):
    x = tokens(25, d_in=10, seed=1)
    spec = LayerSpec(kind=kind, d_hidden=6, scale=scale)
    jac = input_jacobians(x, spec)
    ref = np.log10(np.linalg.norm(jac.reshape(len(jac), -1), axis=1))[::-1]
    np.testing.assert_allclose(gradient_profile(x, spec).log10_norm, ref, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kind", ["rnn", "gru"])
def test_the_recurrent_layers_are_torchs_own(kind):
    x = tokens(30, d_in=8)
    spec = LayerSpec(kind=kind, d_hidden=5, scale=1.3)
    w = layer_weights(spec, 8)
    module = (nn.RNN if kind == "rnn" else nn.GRU)(8, 5, batch_first=True).double()
    with torch.no_grad():
        module.weight_ih_l0.copy_(w.w_in)
        module.bias_ih_l0.copy_(w.b_in)
        module.weight_hh_l0.copy_(w.w_rec)
        module.bias_hh_l0.copy_(w.b_rec)
        out, _ = module(torch.from_numpy(standardize(x))[None])
    np.testing.assert_allclose(hidden_states(x, spec), out[0].numpy(), rtol=1e-10, atol=1e-12)


def test_the_recurrent_weights_have_the_asked_spectral_radius():
    for kind in ("rnn", "gru"):
        w = layer_weights(LayerSpec(kind=kind, d_hidden=8, scale=0.7), 16)
        for block in w.w_rec.split(8):  # each of the GRU's three blocks
            eig = torch.linalg.eigvals(block).abs()
            assert torch.allclose(eig.max(), torch.tensor(0.7, dtype=torch.float64), atol=1e-10)
            sv = torch.linalg.svdvals(block)
            assert torch.allclose(sv, torch.full_like(sv, 0.7), atol=1e-10)  # scale x orthogonal


# --- what the gradients show -------------------------------------------------------------------------


def slope(p) -> float:
    y = p.log10_norm[1:]
    return float(np.polyfit(np.arange(1, len(y) + 1), y, 1)[0])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gradients_vanish_below_scale_one_and_grow_well_above(seed):
    x = tokens(64, d_in=32, seed=seed)
    low = gradient_profile(x, LayerSpec(kind="rnn", scale=0.5))
    high = gradient_profile(x, LayerSpec(kind="rnn", scale=2.0))
    assert low.factor_per_step is not None
    assert low.factor_per_step < 0.6
    assert slope(low) < 0
    assert low.log10_norm[-1] < low.log10_norm[1] - 10  # ten decades lost over 63 steps
    # a monotonic trend: every 8-step window ends lower than it began
    assert (np.diff(low.log10_norm[1::8]) < 0).all()
    assert high.factor_per_step is not None
    assert high.factor_per_step > 1.0
    assert slope(high) > 0
    assert high.log10_norm[-1] > high.log10_norm[1]
    # the bound s^(n-i) ||W_ih||_F holds at every distance
    for p in (low, high):
        assert p.log10_bound is not None
        assert (p.log10_norm <= p.log10_bound + 1e-9).all()


def test_the_factor_per_step_rises_with_the_scale_for_both_recurrent_layers():
    x = tokens(64, d_in=32)
    for kind in ("rnn", "gru"):
        factors = [
            gradient_profile(x, LayerSpec(kind=kind, scale=s)).factor_per_step for s in (0.5, 1.0, 2.0, 3.0)
        ]
        assert all(f is not None for f in factors)
        assert factors == sorted(factors), (kind, factors)
        assert factors[0] < 0.7  # the GRU vanishes too below 1


def test_attentions_gradient_does_not_decay_with_distance():
    x = tokens(128, d_in=32)
    att = gradient_profile(x, LayerSpec(kind="attention"))
    rnn = gradient_profile(x, LayerSpec(kind="rnn", scale=0.5))
    assert att.factor_per_step is not None
    assert 0.98 < att.factor_per_step < 1.02
    far, near = att.log10_norm[64:], att.log10_norm[1:9]
    assert abs(np.median(far) - np.median(near)) < 0.5  # within a factor of about 3
    assert np.ptp(att.log10_norm[1:]) < 1.5
    assert rnn.log10_norm[64:].max() < rnn.log10_norm[1:9].min() - 10
    assert att.log10_bound is None


def test_norms_far_below_float64_do_not_underflow():
    x = tokens(512, d_in=16)
    p = gradient_profile(x, LayerSpec(kind="rnn", scale=0.1))
    assert np.isfinite(p.log10_norm).all()
    assert p.log10_norm[-1] < -400  # 10^-400: no float64 holds it, its logarithm does


# --- the strips and the steps ----------------------------------------------------------------------------


def test_a_recurrent_state_depends_only_on_the_tokens_so_far_and_attention_on_all():
    x = tokens(20, d_in=8)
    changed = x.copy()
    changed[15] = tokens(1, d_in=8, seed=9)[0]  # another token at position 15
    for kind in ("rnn", "gru"):
        a, b = hidden_states(x, LayerSpec(kind=kind)), hidden_states(changed, LayerSpec(kind=kind))
        np.testing.assert_array_equal(a[:15], b[:15])  # the steps before it are done already
        assert not np.allclose(a[15:], b[15:])
        # step k of a prefix is step k of the whole text
        np.testing.assert_allclose(hidden_states(x[:7], LayerSpec(kind=kind)), a[:7], rtol=1e-12)
    a, b = hidden_states(x, LayerSpec(kind="attention")), hidden_states(changed, LayerSpec(kind="attention"))
    assert not np.allclose(a[:15], b[:15])  # every position reads every token in its one step


def test_run_layer_gathers_states_profile_pattern_and_steps():
    x = tokens(11, d_in=8)
    for kind in KINDS:
        spec = LayerSpec(kind=kind, d_hidden=4)
        run = run_layer(x, spec)
        assert run.states.shape == (11, 4)
        np.testing.assert_allclose(run.states, hidden_states(x, spec), rtol=1e-12)
        assert run.profile.distance.tolist() == list(range(11))
        assert run.steps == (1 if kind == "attention" else 11)
        if kind == "attention":
            assert run.pattern is not None
            assert run.pattern.shape == (11, 11)
            np.testing.assert_allclose(run.pattern.sum(-1), 1.0, atol=1e-12)
            np.testing.assert_allclose(run.pattern, attention_pattern(x, spec))
        else:
            assert run.pattern is None


def test_sequential_steps_are_the_costs_pages_path_lengths():
    paths = path_lengths(np.array([1, 16, 512]))
    for n, seq in zip([1, 16, 512], paths["gru"]["sequential"], strict=True):
        assert sequential_steps("rnn", n) == sequential_steps("gru", n) == int(seq) == n
        assert sequential_steps("attention", n) == 1
    with pytest.raises(ValueError, match="positive"):
        sequential_steps("rnn", 0)


def test_one_token_and_a_single_text_shape_work():
    x = tokens(1, d_in=4)
    for kind in KINDS:
        run = run_layer(x, LayerSpec(kind=kind, d_hidden=3))
        assert run.states.shape == (1, 3)
        assert run.profile.log10_norm.shape == (1,)
        assert np.isfinite(run.profile.log10_norm).all()
        assert run.profile.factor_per_step is None  # no distance >= 1 to fit


# --- inputs, weights, determinism -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "message"),
    [
        (np.zeros((0, 8)), "pos >= 1"),
        (np.zeros(8), r"\[pos, d_in\]"),
        (np.zeros((3, 1)), "d_in >= 2"),
        (np.full((3, 4), np.nan), "not finite"),
        (np.zeros((5000, 4)), "at most"),
    ],
)
def test_bad_inputs_raise_clear_errors(x, message):
    with pytest.raises(ValueError, match=message):
        hidden_states(x, LayerSpec())


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"kind": "lstm"}, "kind"),
        ({"d_hidden": 0}, "d_hidden"),
        ({"d_hidden": 1000}, "d_hidden"),
        ({"scale": 0.0}, "scale"),
        ({"scale": float("nan")}, "scale"),
        ({"input_scale": -1.0}, "input_scale"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_specs_raise_clear_errors(changes, message):
    with pytest.raises(ValueError, match=message):
        LayerSpec(**changes)


def test_constant_token_vectors_standardize_to_zero_not_nan():
    out = standardize(np.ones((3, 5)))
    assert np.isfinite(out).all()
    assert (out == 0).all()


def test_weights_are_a_function_of_the_spec_and_leave_the_global_seed_alone():
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    a = layer_weights(LayerSpec(kind="gru", seed=4), 8)
    assert torch.equal(torch.random.get_rng_state(), before)
    b = layer_weights(LayerSpec(kind="gru", seed=4), 8)
    c = layer_weights(LayerSpec(kind="gru", seed=5), 8)
    assert torch.equal(a.w_rec, b.w_rec)
    assert torch.equal(a.w_in, b.w_in)
    assert not torch.equal(a.w_rec, c.w_rec)


def test_the_jacobian_refuses_sizes_it_cannot_hold():
    with pytest.raises(ValueError, match="gradient_profile"):
        input_jacobians(np.zeros((4096, 64)) + np.arange(64), LayerSpec(d_hidden=128))


# --- time ----------------------------------------------------------------------------------------------


@pytest.fixture
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # CPU time of this thread is then all the work
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize(("n", "budget_s"), [(16, 0.15), (128, 0.25), (512, 0.5)])
def test_a_texts_measurements_fit_the_apps_edit_budget(one_thread, n, budget_s):
    """Every layer the page draws for one text (the tanh RNN and the GRU at three scales, and
    attention) in less CPU time than the edit budget (CPU time: other programs on a shared
    machine do not count against it; the best of three runs)."""
    x = tokens(n, d_in=384)
    specs = [LayerSpec(kind=k, scale=s) for k in ("rnn", "gru") for s in (0.5, 1.0, 2.0)]
    specs.append(LayerSpec(kind="attention"))
    best = float("inf")
    for _ in range(3):
        start = time.thread_time()
        for spec in specs:
            run_layer(x, spec)
        best = min(best, time.thread_time() - start)
    assert best < budget_s, f"{best * 1e3:.0f} ms of CPU at {n} tokens"


def test_the_timing_settings_sweep_both_recurrent_layers_and_attention():
    s = timing_settings(d_model=32, n_max=32, total_s=2.0)
    assert s.recurrent == ("rnn", "gru")
    assert s.n_min == 16
    assert s.n_heads == 2
    sweep = rnn_sweep(s)
    assert [c.method for c in sweep.curves] == ["rnn", "gru", "attention"]
    for c in sweep.curves:
        assert len(c.points) >= 1
        assert (c.q1_s <= c.time_s).all()
        assert (c.time_s <= c.q3_s).all()
    assert sweep.extra["paths"]["gru"]["sequential"].tolist() == sweep.extra["lengths"].tolist()


def test_rnn_settings_name_the_recurrent_layers():
    assert RnnSettings().recurrent == ("gru",)  # the costs page's sweep is unchanged
    with pytest.raises(ValueError, match="recurrent"):
        RnnSettings(recurrent=("lstm",))
    with pytest.raises(ValueError, match="recurrent"):
        RnnSettings(recurrent=())
