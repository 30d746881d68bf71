"""Determinism: the same key gives bitwise-identical results across calls, and a run's result does not
depend on which other runs share its batch (alone, in a vmap batch of 7 or of 64, in sweeps of
different grids and seeds).

Bitwise batch invariance needs two things from the library (see ``jaxbandit.core.linalg.dot`` and
``jaxbandit.envs.noise.log``): sums over the context dimension written as a fixed sequence of elementwise
adds, because XLA's CPU reductions and dots choose their summation order by the batch shape; and a
``log``/``exp`` whose rounding does not depend on the batch shape either, because XLA's CPU ``log`` and
``exp`` are vectorised differently for different shapes.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandit as jb

T, D, K = 100, 4, 6  # small shapes compile fast; one test below uses the paper's d = 10, K = 20

NOISES = {
    "student_t": lambda: jb.noise.student_t(3.0),
    "pareto": lambda: jb.noise.pareto(1.5),
    "symmetric_pareto": lambda: jb.noise.symmetric_pareto(2.0),
    "heteroscedastic": lambda: jb.noise.heteroscedastic(jb.noise.student_t(2.5)),
    "gaussian": lambda: jb.noise.gaussian(0.5),
    "empirical": lambda: jb.noise.empirical(jb.datasets.sp500_returns("WMT")),
}
ALGS = {
    "cr_hvt_ucb": lambda T=T, D=D: jb.cr_hvt_ucb(T, D, eps=1.0, nu=3**0.5, corruption=20.0, beta_scale=1e-3),
    "hvt_ucb_revealed": lambda T=T, D=D: jb.hvt_ucb(T, D, eps=0.4, nu="revealed", beta_scale=1e-2),
    "oful": lambda T=T, D=D: jb.oful(T, D, lam=1.0, beta=1.0),
    "cw_oful": lambda T=T, D=D: jb.cw_oful(T, D, corruption=20.0),
}


def assert_bitwise(a: jb.Trajectory, b: jb.Trajectory, index=None):
    for field in a._fields:
        x = np.asarray(getattr(a, field))
        y = np.asarray(getattr(b, field))
        y = y if index is None else y[index]
        assert x.dtype == y.dtype
        assert np.array_equal(x, y), (field, np.flatnonzero(x != y)[:5])


def env_for(noise, d=D, k=K):
    return jb.envs.linear(d, k, noise=NOISES[noise](), corruption=jb.corruption.flip(20.0), eps=0.4)


def check_batch_invariance(alg, env, horizon):
    run = lambda k: jb.simulate(alg, env, k, horizon=horizon)
    keys = jax.random.split(jax.random.key(5), 64)
    alone = jax.jit(run)(keys[3])
    batched = jax.jit(jax.vmap(run))
    assert_bitwise(alone, batched(keys[:7]), 3)
    assert_bitwise(alone, batched(keys), 3)


@pytest.mark.slow
def test_a_run_does_not_depend_on_its_batch():
    """CR-Hvt-UCB with revealed ν_t on heteroscedastic Student-t noise: the projection, the UCB, every
    sum over d and the t sampler. (The paper's d = 10, K = 20 take the same code paths: d ≤ 32.)"""
    check_batch_invariance(ALGS["hvt_ucb_revealed"](), env_for("heteroscedastic"), T)


@pytest.mark.parametrize("noise", list(NOISES))
def test_noise_draws_do_not_depend_on_their_batch(noise):
    family = NOISES[noise]()
    draw = jax.jit(jax.vmap(lambda k: family.sample(k, jnp.int32(3))))
    keys = jax.random.split(jax.random.key(9), 256)
    full = np.asarray(draw(keys)[0])
    for B in (1, 7):
        for start in (0, 13, 100):
            assert np.array_equal(np.asarray(draw(keys[start : start + B])[0]), full[start : start + B])


def test_same_key_same_result_across_calls():
    alg, env = ALGS["cr_hvt_ucb"](), env_for("student_t")
    key = jax.random.key(11)
    eager_a = jb.simulate(alg, env, key, horizon=T)
    eager_b = jb.simulate(alg, env, key, horizon=T)
    assert_bitwise(eager_a, eager_b)
    jitted = jax.jit(jb.simulate, static_argnums=(0, 1, 3))
    assert_bitwise(jitted(alg, env, key, T), jitted(alg, env, key, T))
    assert_bitwise(eager_a, jitted(alg, env, key, T))  # eager and compiled agree too
    # an int seed is the key jax.random.key(seed)
    assert_bitwise(jb.simulate(alg, env, 11, horizon=T), eager_a)


@pytest.mark.parametrize("impl", ["threefry2x32", "rbg"])
def test_an_int_seed_is_jax_random_key_of_it(impl):
    """``as_key`` makes a threefry seed's key on the host (no compilation); it must be JAX's own key."""
    from jaxbandit.runner.simulate import as_key

    previous = jax.config.jax_default_prng_impl
    jax.config.update("jax_default_prng_impl", impl)
    try:
        for seed in (0, 1, 11, 12345, 2**31 - 1, 2**31, -1):
            try:
                expected = jax.random.key(seed)
            except OverflowError:
                continue
            got = as_key(seed)
            assert jax.random.key_impl(got) == jax.random.key_impl(expected)
            np.testing.assert_array_equal(jax.random.key_data(got), jax.random.key_data(expected))
    finally:
        jax.config.update("jax_default_prng_impl", previous)


def make_alg(p):
    return jb.cr_hvt_ucb(T, D, eps=1.0, nu=3**0.5, corruption=p["C"], beta_scale=p["beta_scale"])


def make_env(p):
    return jb.envs.linear(D, K, noise=jb.noise.student_t(3.0), corruption=jb.corruption.flip(p["C"]))


@pytest.mark.slow
def test_sweep_is_deterministic_and_batch_invariant():
    grid = {"C": [0.0, 20.0], "beta_scale": [1e-3]}
    first = jb.sweep(make_alg, make_env, grid, horizon=T, seeds=3)
    again = jb.sweep(make_alg, make_env, grid, horizon=T, seeds=3)
    for field in first.data:
        assert np.array_equal(first.data[field], again.data[field]), field
    # the same (C, beta_scale, seed) inside a bigger grid, with other seeds and another chunking
    other = jb.sweep(
        make_alg,
        make_env,
        {"C": [50.0, 20.0, 5.0], "beta_scale": [1e-2, 1e-3]},
        horizon=T,
        seeds=[2, 1],
        chunk_size=40,
    )
    a = first.sel(C=20.0, beta_scale=1e-3)
    b = other.sel(C=20.0, beta_scale=1e-3)
    for field in ("regret", "action", "corruption"):
        assert np.array_equal(getattr(a, field)[1], getattr(b, field)[1]), field  # seed 1
        assert np.array_equal(getattr(a, field)[2], getattr(b, field)[0]), field  # seed 2
    # The running sums are added chunk by chunk (carry + cumsum(chunk)), so another chunk size
    # associates the float32 sum differently: equal to rounding, not bitwise.
    np.testing.assert_allclose(b.cumulative_regret[1], a.cumulative_regret[1], rtol=1e-6)
    # and it is the run simulate gives for that seed's key (hyperparameters concrete or traced)
    key = jax.random.fold_in(jax.random.key(0), 1)
    p = {"C": 20.0, "beta_scale": 1e-3}
    concrete = jax.jit(lambda k: jb.simulate(make_alg(p), make_env(p), k, horizon=T))(key)
    traced = jax.jit(lambda q, k: jb.simulate(make_alg(q), make_env(q), k, horizon=T))(
        {n: jnp.float32(v) for n, v in p.items()}, key
    )
    for run in (concrete, traced):
        assert np.array_equal(np.asarray(run.regret), a.regret[1])
        assert np.array_equal(np.asarray(run.action), a.action[1])


def test_linalg_helpers_are_batch_invariant():
    rng = np.random.default_rng(0)
    A = jnp.asarray(rng.normal(size=(64, D, D)), jnp.float32)
    x = jnp.asarray(rng.normal(size=(64, K, D)), jnp.float32)
    from jaxbandit.core.linalg import dot, ellipsoid_norm, matvec, sherman_morrison

    for f in (
        lambda a, v: dot(v, a[0]),
        lambda a, v: matvec(a, v),
        lambda a, v: ellipsoid_norm(a, v),
        lambda a, v: sherman_morrison(a, v[0], jnp.float32(0.7)),
    ):
        g = jax.jit(jax.vmap(f))
        full = np.asarray(g(A, x))
        for B in (1, 3, 7, 17):
            part = np.asarray(g(A[5 : 5 + B], x[5 : 5 + B]))
            assert np.array_equal(part, full[5 : 5 + B])


def test_noise_log_is_accurate_and_batch_invariant():
    rng = np.random.default_rng(1)
    u = np.exp(rng.uniform(-44.0, 40.0, size=4096)).astype(np.float32)
    got = np.asarray(jax.jit(jb.noise.log)(u), np.float64)
    want = np.log(u.astype(np.float64))
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got - want) / ulp) <= 1.0
    g = jax.jit(jb.noise.log)
    for B in (1, 5, 7, 13, 64):
        parts = np.concatenate([np.asarray(g(u[i : i + B])) for i in range(0, 20 * B, B)])
        assert np.array_equal(parts, np.asarray(got[: parts.size], np.float32))
    edge = np.asarray(jb.noise.log(jnp.asarray([0.0, np.inf, -1.0, np.nan, 1.0], jnp.float32)))
    assert (
        edge[0] == -np.inf and edge[1] == np.inf and np.isnan(edge[2]) and np.isnan(edge[3]) and edge[4] == 0
    )
