"""LinTS (Agrawal & Goyal 2013) against the float64 NumPy loop of tests/reference_lin_ts.py, and its
contract as a randomised algorithm: keys, determinism, vmap batch invariance, validation, finiteness."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import reference_lin_ts as ref
from conftest import random_stream

import jaxbandit as jb
from jaxbandit.agents.lin_ts import cholesky_times, lin_ts
from jaxbandit.runner.simulate import init_carry, rollout


def _replay(th, X, eta):
    return jb.envs.replay(theta_star=th, contexts=X, noise=eta)


def _draws(seed, T, d):
    """The z_t `[T, d]` a run with key ``jax.random.key(seed)`` draws: round t's select key is the first
    half of split(fold_in(agent_key, t)), agent_key = fold_in(key, 2) (jaxbandit/runner/simulate.py)."""
    agent_key = jax.random.fold_in(jax.random.key(seed), 2)

    def z(t):
        k_select = jax.random.split(jax.random.fold_in(agent_key, t))[0]
        return jax.random.normal(k_select, (d,), jnp.float64)

    return np.asarray(jax.vmap(z)(jnp.arange(T)))


# (label, T, d, factory arguments, the reference's v from the paper's formula or the constant)
CASES = [
    (
        "formula defaults",
        300,
        5,
        {"lam": 1.0, "R": 1.0},
        lambda T, d: ref.scale(d, R=1.0, epsilon=1.0 / math.log(T), delta=1.0 / T),
    ),
    (
        "formula, given epsilon and delta",
        300,
        5,
        {"lam": 0.7, "R": 0.2, "epsilon": 0.5, "delta": 0.05},
        lambda T, d: ref.scale(d, R=0.2, epsilon=0.5, delta=0.05),
    ),
    ("constant v", 300, 5, {"lam": 2.0, "v": 0.3}, lambda T, d: 0.3),
    ("constant v, LAPACK Cholesky", 80, 17, {"lam": 1.0, "v": 0.5}, lambda T, d: 0.5),
]


@pytest.mark.parametrize("label, T, d, kwargs, v_ref", CASES, ids=[c[0] for c in CASES])
def test_matches_reference_in_float64(x64, label, T, d, kwargs, v_ref):
    K, seed = 8, 7
    th, X, eta = random_stream(3, T, K, d)

    @jax.jit
    def run(th, X, eta, hypers):  # every hyperparameter traced
        alg = lin_ts(T, d, **hypers)
        return jb.simulate(alg, _replay(th, X, eta), jax.random.key(seed), horizon=T)

    out = run(th, X, eta, {k: jnp.float64(v) for k, v in kwargs.items()})
    assert out.regret.dtype == jnp.float64
    actions, regret = ref.run_lin_ts(th, X, eta, _draws(seed, T, d), lam=kwargs["lam"], v=v_ref(T, d))
    np.testing.assert_array_equal(np.asarray(out.action), actions)
    np.testing.assert_allclose(np.asarray(out.regret), regret, rtol=0, atol=1e-9)


T_S, K_S, D_S = 120, 6, 5
ENV_S = _replay(*random_stream(11, T_S, K_S, D_S))  # one environment, so that runs share compilations


def _actions(alg, seed):
    return np.asarray(jb.simulate(alg, ENV_S, jax.random.key(seed), horizon=T_S).action)


def test_same_key_is_bitwise_equal_and_keys_differ():
    alg = lin_ts(T_S, D_S)
    a, b, c = (jb.simulate(alg, ENV_S, jax.random.key(k), horizon=T_S) for k in (0, 0, 1))
    for field in a._fields:
        np.testing.assert_array_equal(np.asarray(getattr(a, field)), np.asarray(getattr(b, field)))
    assert np.any(np.asarray(a.action) != np.asarray(c.action))


def test_v_zero_is_greedy_ridge():
    greedy = _actions(jb.oful(T_S, D_S, lam=0.5, beta=0.0), 0)
    alg = lin_ts(T_S, D_S, lam=0.5, v=0.0)
    for seed in (0, 1):  # without exploration the key is irrelevant
        np.testing.assert_array_equal(_actions(alg, seed), greedy)
    assert len(np.unique(greedy)) > 1  # the comparison is not between constant runs


def test_vmap_over_keys_equals_single_runs_bitwise():
    """The trajectories, as tests/test_determinism.py compares them (the unrolled factor, d ≤ 16; the
    LAPACK factor's batch invariance is checked on its own below)."""
    T, K, d = 60, 6, 5
    th, X, eta = random_stream(5, T, K, d)
    alg = lin_ts(T, d, v=0.5)
    env = _replay(th, X, eta)

    def run(key):
        return jb.simulate(alg, env, key, horizon=T)

    keys = jax.random.split(jax.random.key(2), 5)
    batched = jax.jit(jax.vmap(run))(keys)
    single = jax.jit(run)
    for i in range(keys.shape[0]):
        alone = single(keys[i])
        for field in alone._fields:
            np.testing.assert_array_equal(
                np.asarray(getattr(batched, field)[i]), np.asarray(getattr(alone, field))
            )
    assert len({tuple(a) for a in np.asarray(batched.action)}) == keys.shape[0]


@pytest.mark.parametrize("d", [5, 17])
def test_cholesky_times_is_the_lower_factor_and_batch_invariant(x64, d):
    rng = np.random.default_rng(d)
    G = rng.normal(size=(4, d, d))
    A = np.linalg.inv(np.eye(d) + G @ np.swapaxes(G, 1, 2))  # inverse Gram matrices
    z = rng.normal(size=(4, d))
    batched = np.asarray(jax.jit(jax.vmap(cholesky_times))(A, z))
    single = jax.jit(cholesky_times)
    for i in range(4):
        np.testing.assert_array_equal(batched[i], np.asarray(single(A[i], z[i])))
        np.testing.assert_allclose(batched[i], np.linalg.cholesky(A[i]) @ z[i], rtol=1e-10, atol=1e-12)
    indefinite = np.diag(np.r_[np.ones(d - 1), -1e-12])  # rounding-level negative eigenvalue
    assert np.all(np.isfinite(np.asarray(single(indefinite, z[0]))))


BAD = [
    ({"horizon": 0}, "horizon=0", ">= 1"),
    ({"dim": 1.5}, "dim=1.5", ">= 1"),
    ({"lam": 0.0}, "lam=0.0", "(0, inf)"),
    ({"lam": -1}, "lam=-1.0", "(0, inf)"),
    ({"v": -0.1}, "v=-0.1", "[0, inf)"),
    ({"v": math.inf}, "v=inf", "[0, inf)"),
    ({"R": 0.0}, "R=0.0", "(0, inf)"),
    ({"epsilon": 0.0}, "epsilon=0.0", "(0, 1)"),
    ({"epsilon": 1.0}, "epsilon=1.0", "(0, 1)"),
    ({"delta": 1.5}, "delta=1.5", "(0, 1)"),
    ({"delta": math.nan}, "delta=nan", "(0, 1)"),
]


@pytest.mark.parametrize("kwargs, shown, valid", BAD, ids=[b[1] for b in BAD])
def test_invalid_arguments_raise(kwargs, shown, valid):
    args = {"horizon": 10, "dim": 3, **kwargs}
    with pytest.raises(ValueError) as err:
        lin_ts(**args)
    assert shown in str(err.value) and valid in str(err.value)


@pytest.mark.parametrize("enable_x64", [False, True], ids=["float32", "float64"])
def test_infinite_rewards_keep_the_state_finite(enable_x64):
    T, K, d = 60, 6, 5
    with jax.enable_x64(enable_x64):
        th, X, eta = random_stream(13, T, K, d)
        eta[::3] = np.inf
        eta[1::5] = -np.inf
        alg = lin_ts(T, d)
        env = _replay(th, X, eta)

        @jax.jit
        def run(key):
            return rollout(alg, env, init_carry(alg, env, key), jnp.arange(T, dtype=jnp.int32))

        carry, traj = run(jax.random.key(0))
        state = carry.alg_state
        assert state.V_inv.dtype == (jnp.float64 if enable_x64 else jnp.float32)
        for field, leaf in zip(state._fields, state):
            assert np.all(np.isfinite(np.asarray(leaf))), field
        assert int(state.t) == T
        assert np.all(np.isfinite(np.asarray(traj.regret)))
