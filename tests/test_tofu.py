"""TOFU against the float64 NumPy loop of tests/reference_baselines.py (every arm, every round), and its
whitened truncated sum against a direct computation."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import reference_baselines as ref
from conftest import assert_same_arms, random_stream, replay_run

import jaxbandit as jb
from jaxbandit.agents import robust_regression as rr
from jaxbandit.agents.tofu import whitened_truncated_sum

K, D, T = 20, 10, 300


@functools.partial(jax.jit, static_argnames=("T", "constant"))
def _run(th, X, noise, budget, eps, nu, lam, S, delta, beta_scale, beta, *, T, constant):
    alg = jb.tofu(
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
    (1.0, 3**0.5, 1.0, 1.0, 0.01, 0.2, None, 100.0, "t3"),  # the public code's 1/5, corrupted
    (0.4, 15 ** (1 / 1.4), 2.0, 1.5, 0.05, 0.02, None, 0.0, "pareto"),  # b_t grows with t
    (0.5, 1.0, 0.5, 1.0, 0.01, 1.0, 0.3, 30.0, "gauss"),  # a constant radius
]


@pytest.mark.parametrize("case", CASES)
def test_matches_the_float64_reference_every_round(x64, case):
    eps, nu, lam, S, delta, beta_scale, beta, budget, noise = case
    th, X, eta = random_stream(71, T, K, D, noise)
    got = _run(
        th, X, eta, budget, eps, nu, lam, S, delta, beta_scale, 0.0 if beta is None else beta,
        T=T, constant=beta is not None,
    )  # fmt: skip
    want = ref.tofu(
        th, X, eta, eps=eps, nu=nu, lam=lam, S=S, delta=delta, beta=beta, beta_scale=beta_scale, budget=budget
    )
    assert_same_arms(got, want)


def test_whitened_truncated_sum_over_several_blocks(x64):
    """More rows than one block (the history is visited block by block), some truncated, some not."""
    rng = np.random.default_rng(3)
    d, n = 4, 600
    X = rng.normal(size=(n, d)) / 2
    y = rng.standard_t(2.0, size=n)
    V = np.eye(d) + X.T @ X
    hist = rr.empty_history(n + 100, d, jnp.float64)
    hist = hist._replace(XT=hist.XT.at[:, :n].set(X.T), r=hist.r.at[:n].set(y), filled=jnp.int32(n))
    np.testing.assert_array_equal(np.asarray(hist.X[:n]), X)  # the rows' view of the history
    R, u = whitened_truncated_sum(jnp.asarray(np.linalg.inv(V)), hist, jnp.float64(0.05))
    w, Q = np.linalg.eigh(V)
    R_want = Q @ np.diag(w**-0.5) @ Q.T
    M = R_want @ X.T
    kept = np.abs(y[None, :] * M) <= 0.05
    assert 0.1 < kept.mean() < 0.9
    np.testing.assert_allclose(np.asarray(R), R_want, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(np.asarray(u), np.sum(np.where(kept, M * y[None, :], 0.0), axis=1), rtol=1e-9)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(eps=1.5, nu=1.0), "eps=1.5"),
        (dict(eps=1.0, nu=-1.0), "nu=-1.0"),
        (dict(eps=1.0, nu=1.0, S=0.0), "S=0.0"),
        (dict(eps=1.0, nu=1.0, delta=1.0), "delta=1.0"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        jb.tofu(100, 4, **kwargs)
