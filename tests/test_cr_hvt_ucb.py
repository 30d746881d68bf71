"""CR-Hvt-UCB against the independent float64 NumPy loop of Algorithm 1 (tests/reference.py)."""

import functools
import zlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import random_stream
from reference import cr_hvt_ucb as reference

import jaxbandit as jb

T, K, D = 400, 20, 10

CASES = [
    # (eps, nu, C of the algorithm, adversary budget, beta_scale, noise)
    (1.0, 3**0.5, 0.0, 0.0, 1.0, "t3"),
    (1.0, 3**0.5, 20.0, 20.0, 1.0, "t3"),
    (1.0, 3**0.5, 40.0, 20.0, 0.01, "t3"),  # unknown C: an upper bound C̄ > C
    (0.4, 15 ** (1 / 1.4), 20.0, 20.0, 0.01, "pareto"),
    (0.4, 2.0, 0.0, 10.0, 0.003, "pareto"),  # ν a constant guess, C̄ = 0 under corruption
    (0.7, 1.0, 5.0, 5.0, 0.05, "gauss"),
]


@functools.partial(jax.jit, static_argnames=("revealed", "overrides"))
def _run(th, X, eta, nus, eps, nu, C, budget, beta_scale, revealed=False, overrides=()):
    """One compiled run per (dtype, shapes, static flags): the stream and every constant are traced."""
    T, _, d = X.shape
    alg = jb.cr_hvt_ucb(
        T,
        d,
        eps=eps,
        nu="revealed" if revealed else nu,
        corruption=C,
        beta_scale=beta_scale,
        **dict(overrides),
    )
    env = jb.envs.replay(
        theta_star=th, contexts=X, noise=eta, nu=nus, corruption=jb.corruption.flip(budget=budget)
    )
    return jb.simulate(alg, env, jax.random.key(0), horizon=T)


def run_jax(th, X, eta, eps, nu, C, budget, beta_scale, nus=None, **kw):
    revealed = isinstance(nu, str)
    nus = np.ones(X.shape[0]) if nus is None else nus
    return _run(
        th,
        X,
        eta,
        nus,
        eps,
        1.0 if revealed else nu,
        C,
        budget,
        beta_scale,
        revealed=revealed,
        overrides=tuple(sorted(kw.items())),
    )


@pytest.mark.parametrize("case", CASES)
def test_matches_numpy_reference_in_x64(x64, case):
    eps, nu, C, budget, beta_scale, noise = case
    # a seed that is the same in every process (hash() of a str is salted per process)
    th, X, eta = random_stream(zlib.crc32(repr(case).encode()) % 1000, T, K, D, noise)
    out = run_jax(th, X, eta, eps, nu, C, budget, beta_scale)
    actions, regrets = reference(th, X, eta, eps=eps, nu=nu, C=C, budget=budget, beta_scale=beta_scale)
    np.testing.assert_array_equal(np.asarray(out.action), actions)
    np.testing.assert_allclose(np.asarray(out.regret), regrets, rtol=0, atol=1e-9)


def test_revealed_nu_matches_reference(x64):
    th, X, eta = random_stream(7, T, K, D, "gauss")
    nus = np.exp(np.random.default_rng(1).uniform(-1.0, 1.0, size=T))
    eta = eta * nus
    out = run_jax(th, X, eta, 1.0, "revealed", 10.0, 10.0, 0.05, nus=nus)
    actions, regrets = reference(th, X, eta, eps=1.0, nu=None, C=10.0, budget=10.0, beta_scale=0.05, nus=nus)
    np.testing.assert_array_equal(np.asarray(out.action), actions)
    np.testing.assert_allclose(np.asarray(out.regret), regrets, rtol=0, atol=1e-9)


def test_overridden_constants_match_reference(x64):
    th, X, eta = random_stream(11, T, K, D, "t3")
    kw = dict(S=1.5, L=1.0, lam=2.0, alpha=4.0, delta=0.01, sigma_min=0.1)
    out = run_jax(th, X, eta, 0.8, 1.5, 30.0, 30.0, 0.02, **kw)
    actions, regrets = reference(th, X, eta, eps=0.8, nu=1.5, C=30.0, budget=30.0, beta_scale=0.02, **kw)
    np.testing.assert_array_equal(np.asarray(out.action), actions)
    np.testing.assert_allclose(np.asarray(out.regret), regrets, rtol=0, atol=1e-9)


def _forced_updates(xs, rs, **kw):
    """θ̂ and V⁻¹ after feeding the same (X_t, r_t) stream to ``update`` (no arm choice involved)."""
    alg = jb.cr_hvt_ucb(xs.shape[0], xs.shape[1], **kw)

    def step(state, xr):
        return alg.update(state, xr[0], xr[1], jnp.nan), None

    final, _ = jax.lax.scan(step, alg.init(), (jnp.asarray(xs), jnp.asarray(rs)))
    return np.asarray(final.theta, np.float64), np.asarray(final.V_inv, np.float64)


def test_float32_update_close_to_float64():
    th, X, eta = random_stream(3, 2000, 1, D, "t3")
    xs = X[:, 0]
    rs = xs @ th + eta
    kw = dict(eps=1.0, nu=3**0.5, corruption=20.0, beta_scale=0.01)
    theta32, V32 = _forced_updates(xs, rs, **kw)
    with jax.enable_x64(True):
        theta64, V64 = _forced_updates(xs, rs, **kw)
    assert np.linalg.norm(theta32 - theta64) <= 1e-4 * max(np.linalg.norm(theta64), 1e-3)
    assert np.abs(V32 - V64).max() <= 1e-4 * np.abs(V64).max()


def test_hvt_ucb_is_the_corruption_free_case(x64):
    th, X, eta = random_stream(5, 200, K, D, "t3")
    kw = dict(eps=1.0, nu=3**0.5, beta_scale=0.05)
    env = jb.envs.replay(theta_star=th, contexts=X, noise=eta)
    a = jb.simulate(jb.hvt_ucb(200, D, **kw), env, jax.random.key(0), horizon=200)
    b = jb.simulate(jb.cr_hvt_ucb(200, D, corruption=0.0, **kw), env, jax.random.key(0), horizon=200)
    np.testing.assert_array_equal(np.asarray(a.action), np.asarray(b.action))


def test_state_is_the_design_tuple():
    alg = jb.cr_hvt_ucb(100, 4, eps=1.0, nu=1.0, corruption=1.0)
    state = alg.init()
    assert state._fields == ("V_inv", "theta", "beta", "t")
    assert state.V_inv.shape == (4, 4) and state.theta.shape == (4,)
    np.testing.assert_allclose(np.asarray(state.V_inv), np.eye(4) / 4.0, rtol=1e-6)
