"""Numerics: float32 over long horizons against float64 on the same stream, and a state that never
becomes NaN or inf under extreme input (huge or infinite rewards, the heaviest tails, unbounded
corruption, a tiny σ_min).

The 10⁶-round measurement, and float32-vs-float64 regret over seeds on long runs, are
``benchmarks/long_horizon.py``; here at most T = 2·10⁵ keeps CI fast (tests/test_cr_hvt_ucb.py compares
regret in distribution on short runs).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandit as jb

D = 10
F32_EPS = float(np.finfo(np.float32).eps)


def forced_stream(T, seed=0):
    """A bandit-like stream from NumPy: contexts leaning towards θ* (as a UCB's choices do, which makes
    V anisotropic), rewards ⟨x, θ*⟩ + Student-t(3) noise."""
    rng = np.random.default_rng(seed)
    th = rng.normal(size=D)
    th /= np.linalg.norm(th)
    g = rng.normal(size=(T, D))
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    x = 0.6 * th + 0.8 * g
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    r = x @ th + rng.standard_t(3.0, size=T)
    return x, r


def feed(make_alg, x, r):
    """The final state after feeding (x_t, r_t) to ``update`` in the current dtype."""
    alg = make_alg()
    dtype = alg.init().V_inv.dtype

    @jax.jit
    def run(xs, rs):
        def step(state, xr):
            return alg.update(state, xr[0], xr[1], jnp.asarray(jnp.nan, dtype)), None

        return jax.lax.scan(step, alg.init(), (xs, rs))[0]

    return run(jnp.asarray(x, dtype), jnp.asarray(r, dtype))


# (algorithm, T, tolerance on ‖A₃₂V − I‖₂). Each float32 round rounds V⁻¹ (which shrinks like 1/t) at
# relative eps and those errors accumulate: the worst case is T·eps/2 (6e-3 at 10⁵ rounds); they partly
# cancel (benchmarks/long_horizon.py measures 1.6e-4 at 2·10⁵ and 1.8e-3 at 10⁶), and an error of 1e-3
# still leaves the UCB widths (∝ √‖x‖²_{V⁻¹}) within 5e-4 of float64. CR-Hvt-UCB runs fewer rounds only
# because its rounds (with the projection) cost more.
LONG_ALGS = {
    "cr_hvt_ucb": (
        lambda T: jb.cr_hvt_ucb(T, D, eps=1.0, nu=3**0.5, corruption=100.0, beta_scale=1e-4),
        lambda s: np.asarray(s.theta, np.float64),
        30_000,
        2e-4,
    ),
    "oful": (
        lambda T: jb.oful(T, D, lam=1.0, beta=1.0),
        lambda s: np.asarray(s.V_inv, np.float64) @ np.asarray(s.b, np.float64),
        200_000,
        1e-3,
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(LONG_ALGS))
def test_float32_inverse_stays_accurate_over_a_long_horizon(name):
    factory, theta_of, T, tol = LONG_ALGS[name]
    make_alg = lambda: factory(T)
    x, r = forced_stream(T)
    s32 = feed(make_alg, x, r)
    with jax.enable_x64(True):
        s64 = feed(make_alg, x, r)
    A32 = np.asarray(s32.V_inv)
    A64 = np.asarray(s64.V_inv, np.float64)
    assert A32.dtype == np.float32 and A64.dtype == np.float64
    assert all(np.all(np.isfinite(np.asarray(leaf))) for leaf in jax.tree_util.tree_leaves(s32))
    assert np.array_equal(A32, A32.T)  # Sherman–Morrison keeps exact symmetry
    ev32 = np.linalg.eigvalsh(A32.astype(np.float64))
    ev64 = np.linalg.eigvalsh(A64)
    assert ev32[0] > 0  # positive definite
    np.testing.assert_allclose(ev32, ev64, rtol=1e-3)
    if name == "oful":  # V is known exactly: λI + Σ x xᵀ
        x32 = x.astype(np.float32).astype(np.float64)
        V = np.eye(D) + x32.T @ x32
    else:
        V = np.linalg.inv(A64)
    assert np.linalg.norm(A32 @ V - np.eye(D), 2) <= tol
    assert np.linalg.norm(A32 - A64, 2) <= tol * np.linalg.norm(A64, 2)
    th32, th64 = theta_of(s32), theta_of(s64)
    assert np.linalg.norm(th32 - th64) <= 2 * tol * np.linalg.norm(th64)


# --- extreme input: the state stays finite ---

T_X, D_X, K_X = 300, 5, 6


@functools.cache
def _scenarios():
    """Replayed scenarios, one vmap axis: (label, noise `[T]`, adversary budget, the algorithm's C).
    Drawn when first needed, not when pytest imports the file (every xdist worker does)."""
    rng = np.random.default_rng(0)
    sign = np.where(np.arange(T_X) % 2 == 0, 1.0, -1.0)
    spikes = np.where(np.arange(T_X) % 37 == 5, 1e30, 0.0) + 0.1 * rng.normal(size=T_X)

    def family_draws(family, seed):
        keys = jax.random.split(jax.random.key(seed), T_X)
        return np.asarray(jax.vmap(lambda k: family.sample(k, jnp.int32(0))[0])(keys), np.float64)

    noises = {
        "±1e30": 1e30 * sign,
        "±inf": np.inf * sign,
        "+inf": np.full(T_X, np.inf),
        "-inf": np.full(T_X, -np.inf),
        "1e30 spikes": spikes,
        "t(1.01)": family_draws(jb.noise.student_t(1.01), 1),
        "pareto(1.01)": family_draws(jb.noise.pareto(1.01), 2),
        "symmetric_pareto(1.01)": family_draws(jb.noise.symmetric_pareto(1.01), 3),
    }
    scenarios = []
    for name, eta in noises.items():
        for budget, C in ((0.0, 0.0), (np.inf, 10.0), (np.inf, 1e30), (1e30, 1e30)):
            scenarios.append((f"{name}, flip({budget:g}), C={C:g}", eta, budget, C))
    return scenarios


def _contexts():
    """Every context exactly at the norm bound L = 1 (unit vectors), θ* at the bound S = 1."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(T_X, K_X, D_X))
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    th = rng.normal(size=D_X)
    return X, th / np.linalg.norm(th)


def _registered(name):
    """A registered algorithm with its theory constants, for a budget C (ε = 0.5, ν = 1)."""
    spec = jb.registry.algorithm(name)
    return lambda C: spec.make(jb.registry.Problem(T_X, D_X, eps=0.5, nu=1.0, corruption=C))


EXTREME_ALGS = {name: _registered(name) for name in jb.registry.names()}
# tiny σ_min and ν: the weight 1/(ασ²) of a round would overflow float32 without the σ floor
EXTREME_ALGS.update(
    {
        "cr_hvt_ucb tiny sigma": lambda C: jb.cr_hvt_ucb(
            T_X, D_X, eps=1.0, nu=1e-30, sigma_min=1e-30, corruption=C, beta_scale=1e-2
        ),
        "heavy_oful tiny sigma": lambda C: jb.heavy_oful(
            T_X, D_X, eps=1.0, nu=1e-30, sigma_min=1e-30, beta_scale=1e-2
        ),
        "gadaoful tiny sigma": lambda C: jb.gadaoful(
            T_X, D_X, nu=1e-30, sigma_min=1e-30, corruption=C, constants="theory", beta_scale=1e-2
        ),
    }
)


@pytest.mark.parametrize("alg_name", list(EXTREME_ALGS))
def test_state_stays_finite_under_extreme_input(alg_name):
    from jaxbandit.runner.simulate import init_carry, rollout

    X, th = _contexts()
    scenarios = _scenarios()
    etas = jnp.asarray(np.stack([s[1] for s in scenarios]), jnp.float32)
    budgets = jnp.asarray([s[2] for s in scenarios], jnp.float32)
    Cs = jnp.asarray([s[3] for s in scenarios], jnp.float32)

    @jax.jit
    @jax.vmap
    def run(eta, budget, C):
        alg = EXTREME_ALGS[alg_name](C)
        env = jb.envs.replay(
            theta_star=jnp.asarray(th, jnp.float32),
            contexts=jnp.asarray(X, jnp.float32),
            noise=eta,
            corruption=jb.corruption.flip(budget),
        )
        carry, traj = rollout(
            alg, env, init_carry(alg, env, jax.random.key(0)), jnp.arange(T_X, dtype=jnp.int32)
        )
        return carry.alg_state, traj

    state, traj = run(etas, budgets, Cs)
    for i, (label, *_rest) in enumerate(scenarios):
        for path, leaf in jax.tree_util.tree_leaves_with_path(state):  # nested states too (TOFU's history)
            assert np.all(np.isfinite(np.asarray(leaf[i]))), (alg_name, label, jax.tree_util.keystr(path))
        assert np.all(np.isfinite(np.asarray(traj.regret[i]))), (alg_name, label)
        assert np.all(np.asarray(traj.regret[i]) >= 0)
        theta = getattr(state, "theta", None)
        if theta is not None and alg_name != "tofu":  # constrained to ‖θ‖ ≤ S (TOFU's θ̂ = V^{-1/2}u is not)
            assert np.linalg.norm(np.asarray(theta[i], np.float64)) <= 1.0 + 1e-5, (alg_name, label)
    # the adversary never spends beyond its budget, however large the rewards
    spent = np.abs(np.asarray(traj.corruption, np.float64)).sum(axis=1)
    assert np.all(spent <= np.asarray(budgets, np.float64) * (1 + 1e-5) + 1e-6)


def test_sherman_morrison_handles_zero_and_infinite_weights():
    from jaxbandit.core.linalg import sherman_morrison

    A = jnp.eye(3, dtype=jnp.float32) * 0.5
    u = jnp.asarray([1.0, 0.0, 0.0], jnp.float32)
    np.testing.assert_array_equal(np.asarray(sherman_morrison(A, u, jnp.float32(0.0))), np.asarray(A))
    limit = np.asarray(sherman_morrison(A, u, jnp.float32(np.inf)))  # V + ∞·uuᵀ: no variance along u
    np.testing.assert_allclose(limit, np.diag([0.0, 0.5, 0.5]), atol=1e-7)
    huge = np.asarray(sherman_morrison(A, u, jnp.float32(1e38)))
    assert np.all(np.isfinite(huge))


def test_kappa_is_finite_for_a_tiny_sigma_min():
    """κ = d log(1 + L²T/(σ_min²λαd)): σ_min² underflows float32 for σ_min = 1e-30, κ must not."""
    from jaxbandit.agents.cr_hvt_ucb import theory_constants

    c32 = theory_constants(horizon=1000, dim=5, eps=1.0, sigma_min=1e-30)
    want = 5 * np.log1p(1000 / (1e-60 * 5 * 8 * 5))
    assert float(c32.kappa) == pytest.approx(want, rel=1e-6)
    assert np.isfinite(float(c32.tau0))
