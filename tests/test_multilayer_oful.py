"""Multi-layer OFUL against the float64 NumPy loop of tests/reference_baselines.py fed the same layers,
and the layer distribution against its closed form."""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import reference_baselines as ref
from conftest import assert_same_arms, random_stream, replay_run
from scipy import stats

import jaxbandit as jb

K, D, T = 20, 10, 400


def _layers(seed, T):
    """Round t's layer: 1 in round 1, then drawn by round t−1's update from its key (the second half of
    split(fold_in(agent_key, t − 1)), agent_key = fold_in(key, 2); jaxbandit/runner/simulate.py) with
    P(ℓ) = 2^{−ℓ}, the remainder on layer 1."""
    L = int(math.log2(2 * T) + 1)
    probs = np.array([2.0**-ell for ell in range(1, L + 1)])
    probs[0] += 2.0**-L
    logits = jnp.log(jnp.asarray(probs))
    agent_key = jax.random.fold_in(jax.random.key(seed), 2)

    def draw(t):
        k_update = jax.random.split(jax.random.fold_in(agent_key, t))[1]
        return jax.random.categorical(k_update, logits) + 1

    return np.concatenate([[1], np.asarray(jax.vmap(draw)(jnp.arange(T - 1)))])


@functools.partial(jax.jit, static_argnames="T")
def _run(th, X, noise, budget, lam, S, L, R, beta_scale, delta, *, T):
    alg = jb.multilayer_oful(T, D, lam=lam, S=S, L=L, R=R, beta_scale=beta_scale, delta=delta)
    return replay_run(alg, th, X, noise, budget, key=5)


CASES = [  # lam, S, L, R, beta_scale, delta, budget, noise
    (1.0, 1.0, 1.0, 0.5, 1.0, 0.033, 0.0, "t3"),  # the public code's constants, c = 1
    (1.0, 1.0, 1.0, 0.5, 0.5, 0.033, 100.0, "t3"),  # c = 0.5 as in the code, corrupted
    (2.0, 1.5, 1.0, 1.0, 0.01, 0.1, 30.0, "gauss"),  # a tuned-sized radius
]


@pytest.mark.parametrize("case", CASES)
def test_matches_the_float64_reference_every_round(x64, case):
    lam, S, L, R, beta_scale, delta, budget, noise = case
    th, X, eta = random_stream(61, T, K, D, noise)
    got = _run(th, X, eta, budget, lam, S, L, R, beta_scale, delta, T=T)
    layers = _layers(5, T)
    assert set(np.unique(layers)) >= {1, 2, 3, 4}  # several layers are exercised
    want = ref.multilayer_oful(
        th, X, eta, layers, lam=lam, S=S, L=L, R=R, beta_scale=beta_scale, delta=delta, budget=budget
    )
    assert_same_arms(got, want)


def test_layers_are_drawn_with_probability_two_to_minus_ell():
    layers = _layers(0, 20_000)[1:]  # T = 2·10⁴: L = 16 layers
    L = 16
    probs = np.array([2.0**-ell for ell in range(1, L + 1)])
    probs[0] += 2.0**-L
    counts = np.bincount(layers, minlength=L + 1)[1:]
    top = 6  # pool the rare layers so every expected count is ≥ 5
    observed = np.append(counts[:top], counts[top:].sum())
    expected = np.append(probs[:top], probs[top:].sum()) * layers.size
    assert stats.chisquare(observed, expected).pvalue > 1e-4


def test_a_round_updates_the_global_and_only_its_own_layer(x64):
    alg = jb.multilayer_oful(100, 3, lam=2.0)
    s0 = alg.init()
    x = jnp.asarray([0.6, 0.8, 0.0])
    s1 = alg.update(s0, x, jnp.asarray(1.5), jnp.nan, jax.random.key(0))
    want = np.linalg.inv(2.0 * np.eye(3) + np.outer(x, x))
    np.testing.assert_allclose(np.asarray(s1.Sigma_inv), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(s1.layer_Sigma_inv[0]), want, rtol=1e-12)  # round 1 is layer 1
    np.testing.assert_array_equal(np.asarray(s1.layer_Sigma_inv[1:]), np.asarray(s0.layer_Sigma_inv[1:]))
    np.testing.assert_allclose(np.asarray(s1.layer_b[0]), 1.5 * np.asarray(x))
    assert s1.layer_Sigma_inv.shape == (8, 3, 3)  # L = ⌊log₂ 200⌋ + 1


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(lam=0.0), "lam=0.0"),
        (dict(R=-1.0), "R=-1.0"),
        (dict(delta=1.5), "delta=1.5"),
        (dict(L=0.0), "L=0.0"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        jb.multilayer_oful(100, 4, **kwargs)
