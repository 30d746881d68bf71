"""simulate and sweep: vmap equals a loop, no recompilation, named axes, common random numbers."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandit as jb

T, D, K = 120, 5, 8
TRACES = {"alg": 0}


def make_alg(p):
    if isinstance(p["C"], jax.core.Tracer):
        TRACES["alg"] += 1
    return jb.cr_hvt_ucb(T, D, eps=1.0, nu=1.0, corruption=p["C"], beta_scale=p["beta_scale"])


def make_env(p):
    return jb.envs.linear(D, K, noise=jb.noise.student_t(3.0), corruption=jb.corruption.flip(p["C"]))


@jax.jit
def single(C, beta_scale, seed):
    p = {"C": C, "beta_scale": beta_scale}
    return jb.simulate(make_alg(p), make_env(p), jax.random.fold_in(jax.random.key(0), seed), horizon=T)


def test_vmap_over_seeds_equals_a_loop():
    keys = jax.random.split(jax.random.key(1), 4)
    alg = jb.cr_hvt_ucb(T, D, eps=1.0, nu=1.0, corruption=5.0, beta_scale=0.01)
    env = make_env({"C": 5.0})
    run = jax.jit(lambda k: jb.simulate(alg, env, k, horizon=T))
    batched = jax.jit(jax.vmap(run))(keys)
    for i in range(4):
        one = run(keys[i])
        np.testing.assert_array_equal(np.asarray(batched.action[i]), np.asarray(one.action))
        np.testing.assert_allclose(
            np.asarray(batched.regret[i]), np.asarray(one.regret), rtol=1e-5, atol=1e-6
        )


def test_sweep_matches_single_runs_and_names_axes():
    grid = {"C": [0.0, 20.0], "beta_scale": [0.01, 0.1, 1.0]}
    res = jb.sweep(make_alg, make_env, grid, horizon=T, seeds=3)
    assert res.dims == ("C", "beta_scale", "seed", "round")
    assert res.cumulative_regret.shape == (2, 3, 3, T)
    np.testing.assert_array_equal(res.coords["round"], np.arange(1, T + 1))
    for i, C in enumerate(grid["C"]):
        for j, bs in enumerate(grid["beta_scale"]):
            for s in range(3):
                one = single(jnp.float32(C), jnp.float32(bs), s)
                np.testing.assert_array_equal(res.action[i, j, s], np.asarray(one.action))
    sub = res.sel(C=20.0, beta_scale=0.1)
    assert sub.dims == ("seed", "round")
    np.testing.assert_allclose(sub.cumulative_regret, np.cumsum(sub.regret, axis=-1), rtol=1e-5)
    assert np.all(sub.corruption_spent[:, -1] <= 20.0 + 1e-4)


def test_new_grid_values_do_not_recompile():
    grid = {"C": [0.0, 20.0], "beta_scale": [0.01, 0.1]}
    jb.sweep(make_alg, make_env, grid, horizon=T, seeds=2)
    before = TRACES["alg"]
    jb.sweep(make_alg, make_env, {"C": [3.0, 7.0], "beta_scale": [0.5, 0.2]}, horizon=T, seeds=2)
    jb.sweep(make_alg, make_env, {"C": [1.0, 2.0], "beta_scale": [0.3, 0.4]}, horizon=T, seeds=[5, 9])
    assert TRACES["alg"] == before


def test_chunked_sweep_equals_one_chunk_and_checkpoints_subsample():
    grid = {"C": [0.0, 20.0], "beta_scale": [0.05]}
    full = jb.sweep(make_alg, make_env, grid, horizon=T, seeds=2)
    chunked = jb.sweep(make_alg, make_env, grid, horizon=T, seeds=2, chunk_size=50, record=25)
    np.testing.assert_array_equal(chunked.coords["round"], [25, 50, 75, 100, 120])
    np.testing.assert_allclose(
        chunked.cumulative_regret, full.cumulative_regret[..., chunked.coords["round"] - 1], rtol=1e-6
    )
    logs = jb.sweep(make_alg, make_env, grid, horizon=T, seeds=2, record=("log", 5))
    assert logs.coords["round"][0] == 1 and logs.coords["round"][-1] == T


def test_several_algorithms_share_streams():
    algs = {"cr": make_alg, "hvt": lambda p: jb.hvt_ucb(T, D, eps=1.0, nu=1.0, beta_scale=p["beta_scale"])}
    res = jb.sweep(algs, make_env, {"C": [0.0], "beta_scale": [0.05]}, horizon=T, seeds=2)
    assert res.dims[0] == "algorithm"
    # with C = 0 both are the same algorithm on the same streams
    np.testing.assert_array_equal(res.sel(algorithm="cr").action, res.sel(algorithm="hvt").action)


def test_sweep_validates_the_grid_before_tracing():
    with pytest.raises(ValueError, match="C=-1"):
        jb.sweep(make_alg, make_env, {"C": [0.0, -1.0], "beta_scale": [0.1]}, horizon=T)
    with pytest.raises(ValueError, match="beta_scale"):
        jb.sweep(make_alg, make_env, {"C": [0.0], "beta_scale": [0.1, np.nan]}, horizon=T)


def test_a_factory_that_checks_concrete_arrays_is_validated_eagerly():
    # The grid is checked with the factories staged (no array operation runs); a factory that checks
    # its input on a jnp array needs concrete values, and is then built eagerly, so its ValueError
    # still names the grid point.
    def checking_alg(p):
        if jnp.asarray(p["beta_scale"]) > 1.0:
            raise ValueError(f"beta_scale={p['beta_scale']} is invalid: it must lie in (0, 1]")
        return make_alg(p)

    with pytest.raises(ValueError, match=r"beta_scale=2\): beta_scale=2.0 is invalid"):
        jb.sweep(checking_alg, make_env, {"C": [0.0], "beta_scale": [0.5, 2.0]}, horizon=T)


def test_the_grid_is_checked_at_once_and_once_per_factories():
    """Validation builds each factory once with every point's values (arrays over the points, a number
    where they agree), and is remembered per (factory objects, horizon, dtype, grid), as jit remembers
    programs per function: a sweep run again skips its checks; a new grid is checked."""
    concrete = []

    def counting_alg(p):
        if not isinstance(p["beta_scale"], jax.core.Tracer):
            concrete.append((p["C"], np.asarray(p["beta_scale"]).tolist()))
        return make_alg(p)

    grid = {"C": [0.0], "beta_scale": [0.1, 0.2]}
    jb.sweep(counting_alg, make_env, grid, horizon=T, seeds=1, record=T)
    assert concrete == [(0.0, pytest.approx([0.1, 0.2]))]
    concrete.clear()
    jb.sweep(counting_alg, make_env, grid, horizon=T, seeds=1, record=T)
    assert concrete == []
    jb.sweep(counting_alg, make_env, {"C": [0.0], "beta_scale": [0.1, 0.3]}, horizon=T, seeds=1, record=T)
    assert concrete == [(0.0, pytest.approx([0.1, 0.3]))]


def test_a_factory_that_needs_scalars_is_checked_point_by_point():
    """A factory that reads a grid value in Python (``float(x)``) cannot be built with arrays: it is
    then built once per point, and an invalid point is still named."""
    seen = []

    def scalar_alg(p):
        if not isinstance(p["beta_scale"], jax.core.Tracer):
            seen.append(float(p["beta_scale"]))
        return make_alg(p)

    grid = {"C": [0.0, 2.0], "beta_scale": [0.1, 0.2]}
    jb.sweep(scalar_alg, make_env, grid, horizon=T, seeds=1, record=T)
    assert sorted(seen) == pytest.approx([0.1, 0.1, 0.2, 0.2])
    with pytest.raises(ValueError, match=r"at grid point \(C=-1, beta_scale=0.1\)"):
        jb.sweep(scalar_alg, make_env, {"C": [0.0, -1.0], "beta_scale": [0.1, 0.2]}, horizon=T)


def test_simulate_is_jittable_and_deterministic():
    alg = jb.cr_hvt_ucb(T, D, eps=0.5, nu=2.0, corruption=3.0)
    env = jb.envs.linear(D, K, noise=jb.noise.pareto(2.0), corruption=jb.corruption.flip(3.0))
    f = jax.jit(jb.simulate, static_argnums=(0, 1, 3))
    a = f(alg, env, jax.random.key(3), T)
    b = f(alg, env, jax.random.key(3), T)
    np.testing.assert_array_equal(np.asarray(a.regret), np.asarray(b.regret))
    assert np.all(np.asarray(a.regret) >= 0)


def test_replay_runs_the_given_stream():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4, 3))
    th = np.array([1.0, 0.0, 0.0])
    env = jb.envs.replay(theta_star=th, contexts=X, noise=np.zeros(30))
    alg = jb.cr_hvt_ucb(30, 3, eps=1.0, nu=1.0, corruption=0.0, beta_scale=1e-4)
    out = jb.simulate(alg, env, jax.random.key(0), horizon=30)
    means = X @ th
    np.testing.assert_allclose(
        np.asarray(out.regret),
        means.max(1) - means[np.arange(30), np.asarray(out.action)],
        rtol=1e-5,
        atol=1e-6,
    )
    np.testing.assert_allclose(
        np.asarray(out.reward), means[np.arange(30), np.asarray(out.action)], rtol=1e-5
    )
