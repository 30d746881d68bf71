"""CRT against the float64 NumPy loop of tests/reference_baselines.py (every arm, every round)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import reference_baselines as ref
from conftest import assert_same_arms, random_stream, replay_run

import jaxbandit as jb

K, D, T = 20, 10, 400


@functools.partial(jax.jit, static_argnames=("T", "constant"))
def _run(th, X, noise, budget, eps, nu, lam, S, delta, beta_scale, beta, *, T, constant):
    alg = jb.crt(
        T,
        D,
        eps=eps,
        nu=nu,
        lam=lam,
        S=S,
        delta=delta,
        beta_scale=beta_scale,
        beta=beta if constant else None,
    )
    return replay_run(alg, th, X, noise, budget)


CASES = [  # eps, nu, lam, S, delta, beta_scale, beta, budget, noise
    (1.0, 3**0.5, 1.0, 1.0, 0.01, 1.0, None, 0.0, "t3"),  # the theory radius
    (1.0, 3**0.5, 1.0, 1.0, 0.01, 0.1, None, 100.0, "t3"),  # the public code's 1/10, corrupted
    (0.4, 15 ** (1 / 1.4), 2.0, 1.5, 0.05, 0.02, None, 0.0, "pareto"),  # heavy truncation
    (0.5, 1.0, 0.5, 1.0, 0.01, 1.0, 0.3, 30.0, "gauss"),  # a constant radius
]


@pytest.mark.parametrize("case", CASES)
def test_matches_the_float64_reference_every_round(x64, case):
    eps, nu, lam, S, delta, beta_scale, beta, budget, noise = case
    th, X, eta = random_stream(51, T, K, D, noise)
    got = _run(
        th, X, eta, budget, eps, nu, lam, S, delta, beta_scale, 0.0 if beta is None else beta,
        T=T, constant=beta is not None,
    )  # fmt: skip
    want = ref.crt(
        th, X, eta, eps=eps, nu=nu, lam=lam, S=S, delta=delta, beta=beta, beta_scale=beta_scale, budget=budget
    )
    assert_same_arms(got, want)


def test_truncation_zeroes_large_rewards_and_keeps_small_ones(x64):
    """Round 1: b_1 = 1, so a reward of 1.5 is dropped (b stays 0); round 2: b_2 = 2^{1/4} at ε = 1."""
    alg = jb.crt(10, 3, eps=1.0, nu=1.0)
    x = jnp.asarray([1.0, 0.0, 0.0])
    s1 = alg.update(alg.init(), x, jnp.asarray(1.5), jnp.nan)
    np.testing.assert_array_equal(np.asarray(s1.b), 0.0)
    s2 = alg.update(s1, x, jnp.asarray(1.15), jnp.nan)  # 1.15 < 2^{1/4} ≈ 1.189
    np.testing.assert_array_equal(np.asarray(s2.b), [1.15, 0.0, 0.0])
    s3 = alg.update(s2, x, jnp.asarray(-1.25), jnp.nan)  # 1.25 > 3^{1/4} ≈ 1.316? no: kept
    np.testing.assert_allclose(np.asarray(s3.b), [1.15 - 1.25, 0.0, 0.0])
    # log det carried by the determinant lemma equals the direct one
    np.testing.assert_allclose(float(s3.log_det), np.log(np.linalg.det(np.eye(3) + 3 * np.outer(x, x))))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(eps=0.0, nu=1.0), "eps=0.0"),
        (dict(eps=1.0, nu=0.0), "nu=0.0"),
        (dict(eps=1.0, nu=1.0, lam=-1.0), "lam=-1.0"),
        (dict(eps=1.0, nu=1.0, delta=0.0), "delta=0.0"),
        (dict(eps=1.0, nu=1.0, beta=-1.0), "beta=-1.0"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        jb.crt(100, 4, **kwargs)
