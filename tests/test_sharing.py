"""Shared streams: a sweep draws each seed's stream once for every grid point that cannot change it, finds
the axes that can by tracing the environment, never merges streams that differ, and still gives every
run bitwise what it gives alone."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import record_context

import jaxbandit as jb
from jaxbandit.runner import sharing

T, D, K = 60, 3, 5


def make_alg(p):
    return jb.cr_hvt_ucb(T, D, eps=1.0, nu=1.5, corruption=p["C"], beta_scale=p["beta_scale"])


def make_env(p):
    return jb.envs.linear(
        D, K, noise=jb.noise.student_t(p["df"]), corruption=jb.corruption.flip(p["C"]), S=p["S"]
    )


POINT = {"C": 1.0, "beta_scale": 0.1, "df": 3.0, "S": 1.0}


def test_the_stream_axes_are_those_the_stream_reads():
    assert sharing.stream_axes(make_env, POINT) == ("S", "df")
    # the adversary's budget and the algorithm's constants cannot change θ*, contexts or noise
    assert (
        sharing.stream_axes(
            lambda p: jb.envs.linear(
                D, K, noise=jb.noise.gaussian(1.0), corruption=jb.corruption.flip(p["C"])
            ),
            POINT,
        )
        == ()
    )
    # ν_t revealed at a traced ε, a heteroscedastic range: both change the stream
    hetero = lambda p: jb.envs.linear(
        D, K, noise=jb.noise.heteroscedastic(jb.noise.gaussian(1.0), low=p["S"]), eps=p["C"] / 10
    )
    assert sharing.stream_axes(hetero, POINT) == ("C", "S")


def test_a_value_that_reaches_the_stream_only_rarely_is_still_a_stream_axis():
    """Sharing must never merge streams that differ, even where they differ in few rounds: the analysis
    follows data flow, not sampled values."""

    def env(p):
        base = jb.envs.linear(D, K, noise=jb.noise.gaussian(1.0))

        def draw(key, theta, t):
            rnd = base.stream.draw(key, theta, t)
            return rnd._replace(eta=rnd.eta + jnp.where(t == 10_000, p["C"], 0.0))

        return jb.Environment(base.stream._replace(draw=draw), jb.corruption.flip(p["C"]))

    assert sharing.stream_axes(env, POINT) == ("C",)


def test_shared_and_unshared_runs_are_bitwise_the_runs_alone():
    grid = {"C": [0.0, 5.0], "beta_scale": [0.05, 0.5], "df": [2.5, 4.0], "S": [1.0]}
    res = jb.sweep(make_alg, make_env, grid, horizon=T, seeds=[3, 8], record="all", chunk_size=25)
    assert res.meta["stream_axes"] == ["df", "S"]
    assert res.meta["streams"] == 2 * 2  # df values × seeds (S has one value)

    @jax.jit
    def alone(p, seed):
        return jb.simulate(make_alg(p), make_env(p), jax.random.fold_in(jax.random.key(0), seed), horizon=T)

    for i, C in enumerate(grid["C"]):
        for j, bs in enumerate(grid["beta_scale"]):
            for k, df in enumerate(grid["df"]):
                for s, seed in enumerate((3, 8)):
                    p = {n: jnp.float32(v) for n, v in zip(grid, (C, bs, df, 1.0))}
                    run = alone(p, seed)
                    for field in ("regret", "action", "corruption"):
                        np.testing.assert_array_equal(
                            res.data[field][i, j, k, 0, s], np.asarray(getattr(run, field))
                        )


@pytest.mark.parametrize(
    "ahead, runs_minor, by_component, peel",
    [(5, True, False, 1), (25, False, True, 0), (0, False, False, 0), (0, True, True, 0)],
)
def test_other_chunk_layouts_are_bitwise_the_cpus(monkeypatch, ahead, runs_minor, by_component, peel):
    """On a GPU a chunk's rounds are drawn ahead in blocks (a vmap over the block's rounds, then the
    rounds) and the lanes' states are carried with the runs on the minor axes: the same values as the
    CPU's layout (each round drawn in its own step, runs major, the contexts components first where
    several lanes read a stream), here forced on the CPU, with several lanes and with one, against the
    runs alone. Blocks of 5 and of the whole chunk (25), and a last chunk padded past the horizon (T =
    60); the contexts components first or not, either way, in every layout; with the GPU's layout, a
    Newton step of the projection and three of the Student-t sampler made before their loops
    (``linalg.PEELED_NEWTON_STEPS``, ``noise.PEELED_REJECTION_STEPS``) too; with the runs minor, the
    sphere's uniforms drawn shaped, as on a GPU (``streams.FLAT_SPHERE_BITS``)."""
    from jaxbandit.runner import sweep as sweep_module

    grid = {"C": [5.0], "beta_scale": [0.05, 0.5], "df": [2.5, 4.0], "S": [1.0]}
    lone = {"C": [5.0], "beta_scale": [0.5], "df": [4.0], "S": [1.0]}
    kw = dict(horizon=T, seeds=[3, 8], record="all", chunk_size=25)
    assert sweep_module.DRAW_AHEAD is None and sweep_module.RUNS_MINOR is None
    assert sweep_module.CONTEXTS_BY_COMPONENT is None
    assert jax.default_backend() == "cpu" and not sweep_module._runs_minor()
    in_step = {name: jb.sweep(make_alg, make_env, g, **kw) for name, g in (("grid", grid), ("lone", lone))}
    monkeypatch.setattr(sweep_module, "DRAW_AHEAD", ahead)
    monkeypatch.setattr(sweep_module, "RUNS_MINOR", runs_minor)
    monkeypatch.setattr(sweep_module, "CONTEXTS_BY_COMPONENT", by_component)
    monkeypatch.setattr(jb.core.linalg, "PEELED_NEWTON_STEPS", peel)
    monkeypatch.setattr(jb.envs.noise, "PEELED_REJECTION_STEPS", 3 * peel)
    monkeypatch.setattr(jb.envs.streams, "FLAT_SPHERE_BITS", not runs_minor)  # shaped, as on a GPU
    for name, g in (("grid", grid), ("lone", lone)):
        drawn_ahead = jb.sweep(make_alg, make_env, g, **kw)
        for field in in_step[name].data:
            np.testing.assert_array_equal(drawn_ahead.data[field], in_step[name].data[field])
    p = {n: jnp.float32(v[0]) for n, v in lone.items()}
    alone = jax.jit(
        lambda p: jb.simulate(make_alg(p), make_env(p), jax.random.fold_in(jax.random.key(0), 8), horizon=T)
    )(p)
    for field in ("regret", "action", "corruption"):
        np.testing.assert_array_equal(
            drawn_ahead.data[field][0, 0, 0, 0, 1], np.asarray(getattr(alone, field))
        )


@pytest.mark.parametrize(
    "runs, horizon",
    [
        (160000, 2000),
        (100000, 1000),
        (10000, 2000),
        (10000, 5000),
        (400, 100000),
        (700, 1000),
        (10**6, 1000),
        (3, 7),
    ],
)
def test_the_default_chunks_split_the_horizon_evenly_within_the_output_budget(runs, horizon):
    """As few chunks as chunks no longer than the budget's (CHUNK_OUTPUTS / runs rounds, at least 64, a
    multiple of 16) allow, equal and a multiple of 4 (or the whole horizon), so the last chunk is padded
    past the horizon by fewer than 4 rounds a chunk: 10⁴ runs × 2000 rounds now run 2000 rounds, not
    3328 (two chunks of 1664)."""
    from jaxbandit.runner import sweep as sweep_module

    cap = min(horizon, max(64, sweep_module.CHUNK_OUTPUTS // runs) // 16 * 16)
    chunk = sweep_module._default_chunk(runs, horizon)
    chunks = -(-horizon // chunk)
    assert chunk <= cap and (chunk == horizon or chunk % 4 == 0)
    assert all(-(-horizon // n) > cap for n in range(1, chunks))  # fewer chunks would be too long
    assert 0 <= chunks * chunk - horizon < 4 * chunks
    if (runs, horizon) == (10000, 2000):
        assert (chunk, chunks) == (1000, 2)


def test_a_bad_output_budget_is_named(monkeypatch):
    from jaxbandit.runner import sweep as sweep_module

    monkeypatch.setattr(sweep_module, "CHUNK_OUTPUTS", 0)
    with pytest.raises(ValueError, match="CHUNK_OUTPUTS=0 is invalid"):
        jb.sweep(
            make_alg,
            make_env,
            {"C": [5.0], "beta_scale": [0.5], "df": [4.0], "S": [1.0]},
            horizon=10,
            seeds=1,
        )


def test_the_block_drawn_ahead_is_the_largest_divisor_of_the_chunk_that_fits_the_memory_cap(monkeypatch):
    """A round of this stream is K·d + K + 2 = 22 float32 per stream (contexts, means, η_t, ν_t): with
    4 streams, 352 bytes a round."""
    from jaxbandit.runner import sweep as sweep_module

    grid = {"C": [5.0], "beta_scale": [0.5], "df": [2.5, 4.0], "S": [1.0]}
    names, axes = jb.runner.grid.grid_arrays(grid)
    layout = sweep_module._Layout(("S", "df"), ("C", "beta_scale"))
    monkeypatch.setattr(sweep_module, "CPU_WORKERS", 1)  # one program: its draws are every stream's
    plan = sweep_module._Plan.make(layout, names, axes, np.array([3, 8]), jax.random.key(0), None, T, 24, 1)
    assert plan.padded == 4 and plan.chunk == 24 and plan.workers == 1
    ahead = lambda lanes=1: sweep_module._rounds_ahead(make_env, layout, plan, lanes, T)
    assert ahead() == 0 and ahead(lanes=2) == 0  # the CPU's default for a small sweep
    # the CPU's default for a large sweep (4 streams × lanes × T rounds) whose streams serve 2+ lanes
    monkeypatch.setattr(sweep_module, "CPU_AHEAD_MIN_WORK", 4 * 2 * T)
    assert ahead(lanes=1) == 0 and ahead(lanes=2) == 12  # 24's largest divisor <= CPU_AHEAD (16)
    monkeypatch.setattr(sweep_module, "CPU_AHEAD_BYTES", 352 * 5)
    assert ahead(lanes=2) == 4  # <= 5 rounds fit the cache's share
    monkeypatch.setattr(sweep_module, "CPU_AHEAD_BYTES", 352)
    assert ahead(lanes=2) == 0  # one round at a time: each in its own step
    seeds, key = np.array([3, 8]), jax.random.key(0)
    with monkeypatch.context() as m:  # two programs of 2 streams each, 176 bytes a round: 2 rounds fit
        m.setattr(sweep_module, "CPU_WORKERS", 2)
        halves = sweep_module._Plan.make(layout, names, axes, seeds, key, None, T, 24, 1)
        assert halves.workers == 2 and sweep_module._rounds_ahead(make_env, layout, halves, 2, T) == 2
    for name, bad in (("CPU_AHEAD", -1), ("CPU_AHEAD_BYTES", 0), ("CPU_AHEAD_MIN_WORK", 2.5)):
        with monkeypatch.context() as m:
            m.setattr(sweep_module, name, bad)
            with pytest.raises(ValueError, match=f"{name}={bad!r} is invalid"):
                ahead(lanes=2)
    monkeypatch.setattr(sweep_module, "DRAW_AHEAD", 10)
    assert ahead() == 8  # 24's largest divisor <= 10
    monkeypatch.setattr(sweep_module, "AHEAD_BYTES", 352 * 5)
    assert ahead() == 4  # <= 5 rounds fit
    monkeypatch.setattr(sweep_module, "AHEAD_BYTES", 100)
    assert ahead() == 1  # not even one round fits: one at a time
    monkeypatch.setattr(sweep_module, "AHEAD_BYTES", "1 GB")
    with pytest.raises(ValueError, match="AHEAD_BYTES='1 GB' is invalid"):
        ahead()
    monkeypatch.setattr(sweep_module, "AHEAD_BYTES", 1 << 30)
    monkeypatch.setattr(sweep_module, "DRAW_AHEAD", None)
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert ahead() == 24  # a GPU's default: the whole chunk when it fits
    monkeypatch.setattr(sweep_module, "DRAW_AHEAD", -1)
    with pytest.raises(ValueError, match="DRAW_AHEAD"):
        ahead()
    monkeypatch.setattr(sweep_module, "RUNS_MINOR", "yes")
    with pytest.raises(ValueError, match="RUNS_MINOR='yes' is invalid"):
        sweep_module._runs_minor()


def test_contexts_are_components_first_by_default_on_a_cpu_where_several_lanes_read_a_stream(monkeypatch):
    from jaxbandit.runner import sweep as sweep_module

    assert sweep_module.CONTEXTS_BY_COMPONENT is None and jax.default_backend() == "cpu"
    assert not sweep_module._contexts_by_component(1) and sweep_module._contexts_by_component(2)
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert not sweep_module._contexts_by_component(16)  # not measured on a GPU: its layout kept
    monkeypatch.setattr(sweep_module, "CONTEXTS_BY_COMPONENT", True)
    assert sweep_module._contexts_by_component(1)
    monkeypatch.setattr(sweep_module, "CONTEXTS_BY_COMPONENT", 1)
    with pytest.raises(ValueError, match="CONTEXTS_BY_COMPONENT=1 is invalid"):
        sweep_module._contexts_by_component(2)


def test_algorithms_in_lockstep_are_bitwise_the_algorithms_run_apart():
    """Lockstep (the default) feeds one draw per stream to every algorithm in one program: two
    deterministic algorithms and a randomised one (keys), with a stream axis, an adversary axis and
    several chunks, must give bitwise what one program per algorithm gives (checked against runs alone
    above)."""
    algs = {
        "cr": make_alg,
        "lin_ts": lambda p: jb.lin_ts(T, D, v=p["beta_scale"]),
        "oful": lambda p: jb.oful(T, D, beta_scale=p["beta_scale"]),
        # an eigendecomposition a round: in lockstep one matrix per LAPACK call, apart one batched call
        "heavy_oful": lambda p: jb.heavy_oful(T, D, eps=1.0, nu=1.5),
    }
    grid = {"C": [0.0, 5.0], "beta_scale": [0.05, 0.5], "df": [2.5, 4.0], "S": [1.0]}
    kw = dict(horizon=T, seeds=[3, 8], record="all", chunk_size=25)
    apart = jb.sweep(algs, make_env, grid, lockstep=False, **kw)
    together = jb.sweep(algs, make_env, grid, **kw)  # lockstep is the default
    assert together.dims == apart.dims and list(together.coords["algorithm"]) == list(algs)
    for field in apart.data:
        np.testing.assert_array_equal(together.data[field], apart.data[field])
    with pytest.raises(ValueError, match="lockstep='yes' is invalid"):
        jb.sweep(algs, make_env, grid, lockstep="yes", **kw)


def test_lapack_runs_one_matrix_a_call_where_several_calls_could_run_at_once(monkeypatch):
    """On one CPU device, one algorithm's program makes one batched LAPACK call at a time; algorithms in
    lockstep could make several at once, which jaxlib 0.10 let take every thread of the pool and hang
    (GAdaOFUL with Heavy-OFUL, 256 runs, T = 100, on 2 cores), so their program is traced with LAPACK one
    matrix a call (``batching.lapack``). That the bits stay: the lockstep test above."""
    from jaxbandit.core import batching

    entered = record_context(monkeypatch, batching, "lapack_per_matrix")
    tofu = lambda p: jb.tofu(4, D, eps=1.0, nu=1.5)
    kw = dict(horizon=4, seeds=1, record=4)
    grid = {k: [v] for k, v in POINT.items()}
    jb.sweep(tofu, make_env, grid, **kw)
    assert entered and not any(entered)
    entered.clear()
    jb.sweep({"a": tofu, "b": lambda p: jb.tofu(4, D, eps=0.5, nu=1.5)}, make_env, grid, **kw)
    assert entered and all(entered)


@pytest.mark.parametrize("workers", [2, 3])
def test_groups_of_streams_on_threads_are_bitwise_one_program(monkeypatch, workers):
    """On one CPU device the streams run in equal groups, one compiled program called from a thread per
    group at once (``CPU_WORKERS``; 4 streams in 3 groups: padded to 6, the padding dropped): every value
    the same as one program, for CR-Hvt-UCB and GAdaOFUL in lockstep, whose LAPACK calls then run one
    matrix a call (several programs at once could otherwise take every pool thread and hang)."""
    from jaxbandit.core import batching
    from jaxbandit.runner import sweep as sweep_module

    algs = {
        "cr": make_alg,
        "gada": lambda p: jb.gadaoful(T, D, nu=1.5, corruption=p["C"], beta_scale=p["beta_scale"]),
    }
    grid = {"C": [5.0], "beta_scale": [0.05, 0.5], "df": [2.5, 4.0], "S": [1.0]}
    kw = dict(horizon=T, seeds=[3, 8], record="all", chunk_size=25)
    monkeypatch.setattr(sweep_module, "CPU_WORKERS", 1)
    one = jb.sweep(algs, make_env, grid, **kw)
    monkeypatch.setattr(sweep_module, "CPU_WORKERS", workers)
    entered = record_context(monkeypatch, batching, "lapack_per_matrix")
    grouped = jb.sweep(algs, make_env, grid, **kw)
    assert entered and all(entered)
    assert grouped.meta["streams"] == one.meta["streams"] == 4
    for field in one.data:
        np.testing.assert_array_equal(grouped.data[field], one.data[field])
    names, axes = jb.runner.grid.grid_arrays(grid)
    layout = sweep_module._Layout(("df", "S"), ("C", "beta_scale"))
    plan = sweep_module._Plan.make(layout, names, axes, np.array([3, 8]), jax.random.key(0), None, T, 25, 2)
    assert plan.workers == workers and plan.padded == -(-4 // workers) * workers
    assert {g[0].shape[0] for g in plan.groups} == {plan.padded // workers}


def test_groups_on_threads_trace_with_the_callers_jax_settings(x64, monkeypatch):
    """The chunk's program is traced on the calling thread, where ``jax.enable_x64`` (a thread's
    setting) holds, and only run on the workers' threads: float64 values equal to one program's."""
    from jaxbandit.runner import sweep as sweep_module

    grid = {"C": [5.0], "beta_scale": [0.05, 0.5], "df": [4.0], "S": [1.0]}
    kw = dict(horizon=T, seeds=3, record=T)
    monkeypatch.setattr(sweep_module, "CPU_WORKERS", 1)
    one = jb.sweep(make_alg, make_env, grid, **kw)
    monkeypatch.setattr(sweep_module, "CPU_WORKERS", 2)
    grouped = jb.sweep(make_alg, make_env, grid, **kw)
    assert grouped.cumulative_regret.dtype == np.float64
    np.testing.assert_array_equal(grouped.cumulative_regret, one.cumulative_regret)


def test_an_algorithm_calling_lapack_itself_runs_its_groups_one_after_another(monkeypatch):
    """An algorithm that calls ``jnp.linalg`` itself (not through ``batching.lapack``) makes a batched
    LAPACK call in the sweep's program, which jaxlib 0.10 may split over the pool and block a pool thread
    on: several such programs at once could hang. The sweep then runs its groups one after another, with
    a warning that names the cure, and the same values."""
    from jaxbandit.runner import sweep as sweep_module

    def own(p):
        base = make_alg(p)

        def select(state, contexts):
            spread = jnp.linalg.eigh(contexts.T @ contexts)[0]  # batched under the sweep's vmap
            return base.select(state, contexts + 0.0 * spread[-1])

        return base._replace(select=select)

    grid = {"C": [5.0], "beta_scale": [0.05, 0.5], "df": [4.0], "S": [1.0]}
    kw = dict(horizon=T, seeds=2, record=T)
    monkeypatch.setattr(sweep_module, "CPU_WORKERS", 1)
    one = jb.sweep(own, make_env, grid, **kw)
    monkeypatch.setattr(sweep_module, "CPU_WORKERS", 2)
    with pytest.warns(UserWarning, match="one after another.*batching.lapack"):
        apart = jb.sweep(own, make_env, grid, **kw)
    np.testing.assert_array_equal(apart.cumulative_regret, one.cumulative_regret)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the library's own algorithms: at once, no warning
        jb.sweep(make_alg, make_env, grid, **kw)


def test_the_cpu_runs_a_group_of_streams_on_each_core_by_default(monkeypatch, tmp_path):
    import os

    from jaxbandit.runner import sweep as sweep_module

    monkeypatch.setattr(sweep_module, "CGROUP", tmp_path)  # no cgroup files: no quota
    assert sweep_module.CPU_WORKERS is None
    cores = len(os.sched_getaffinity(0))
    assert sweep_module._cpu_workers(1000, None) == cores
    assert sweep_module._cpu_workers(1, None) == 1  # at most a group a stream
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("runs",))
    assert sweep_module._cpu_workers(1000, mesh) == 1  # over devices: one program each
    monkeypatch.setattr(sweep_module, "CPU_WORKERS", 5)
    assert sweep_module._cpu_workers(1000, None) == 5 and sweep_module._cpu_workers(3, None) == 3
    for bad in (0, 2.5, "2"):
        monkeypatch.setattr(sweep_module, "CPU_WORKERS", bad)
        with pytest.raises(ValueError, match="CPU_WORKERS"):
            sweep_module._cpu_workers(1000, None)


@pytest.mark.parametrize(
    "files, quota",
    [
        ({"cpu.max": "150000 100000\n"}, 2),  # cgroup v2, 1.5 CPUs: 2 groups
        ({"cpu.max": "100000 100000\n"}, 1),
        ({"cpu.max": "max 100000\n"}, None),  # no quota
        ({"cpu/cpu.cfs_quota_us": "300000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 3),  # cgroup v1
        ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
        ({"cpu.max": "garbled\n"}, None),
        ({}, None),
    ],
)
def test_a_containers_cpu_quota_caps_the_groups(monkeypatch, tmp_path, files, quota):
    import os

    from jaxbandit.runner import sweep as sweep_module

    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.setattr(sweep_module, "CGROUP", tmp_path)
    assert sweep_module._cpu_quota() == quota
    cores = len(os.sched_getaffinity(0))
    expected = cores if quota is None else min(cores, quota)
    assert sweep_module._cpu_workers(1000, None) == expected
    monkeypatch.setattr(sweep_module, "CPU_WORKERS", 4)  # set by the user: theirs, quota or not
    assert sweep_module._cpu_workers(1000, None) == 4


def test_streams_are_padded_to_a_multiple_of_the_groups():
    from jaxbandit.runner import distributed

    assert distributed.padded_size(10, None) == 10
    assert distributed.padded_size(10, None, 3) == 12 and distributed.padded_size(12, None, 3) == 12
    for bad in (0, 2.5, "2", True):
        with pytest.raises(ValueError, match="groups"):
            distributed.padded_size(10, None, bad)


def test_a_grid_axis_read_in_python_control_flow_is_named_before_anything_runs():
    def branching(p):
        beta = 1.0 if p["beta_scale"] > 0.3 else 0.5
        return jb.cr_hvt_ucb(T, D, eps=1.0, nu=1.5, corruption=p["C"], beta_scale=beta)

    with pytest.raises(
        ValueError,
        match=r"grid axis 'beta_scale' is invalid for the algorithm: the factory "
        r"reads it in Python control flow",
    ):
        jb.sweep(
            branching, make_env, {"C": [0.0], "beta_scale": [0.1, 0.5], "df": [3.0], "S": [1.0]}, horizon=T
        )

    def branching_env(p):
        noise = jb.noise.gaussian(1.0) if p["df"] > 3 else jb.noise.student_t(3.0)
        return jb.envs.linear(D, K, noise=noise)

    with pytest.raises(ValueError, match="grid axis 'df' is invalid for the environment"):
        jb.sweep(
            make_alg,
            branching_env,
            {"C": [0.0], "beta_scale": [0.1], "df": [2.0, 5.0], "S": [1.0]},
            horizon=T,
        )
