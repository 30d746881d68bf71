"""Shared streams: a sweep draws each seed's stream once for every grid point that cannot change it, finds
the axes that can by tracing the environment, never merges streams that differ, and still gives every
run bitwise what it gives alone."""

import functools
import re
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import record_programs

import jaxbandit as jb
from jaxbandit.runner import plan as plan_lib
from jaxbandit.runner import sharing
from jaxbandit.runner.program import Layout

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


LAYOUT_GRIDS = {
    "grid": {"C": [5.0], "beta_scale": [0.05, 0.5], "df": [2.5, 4.0], "S": [1.0]},
    "lone": {"C": [5.0], "beta_scale": [0.5], "df": [4.0], "S": [1.0]},
}
LAYOUT_SWEEP = dict(horizon=T, seeds=[3, 8], record="all", chunk_size=25)


@functools.cache
def _cpu_layout():
    """The sweeps of ``LAYOUT_GRIDS`` in the CPU's layout, and the lone grid's seed 8 run alone by
    ``jb.simulate``: what every other layout must give (computed once for all of them)."""
    in_step = {name: jb.sweep(make_alg, make_env, g, **LAYOUT_SWEEP) for name, g in LAYOUT_GRIDS.items()}
    p = {n: jnp.float32(v[0]) for n, v in LAYOUT_GRIDS["lone"].items()}
    alone = jax.jit(
        lambda p: jb.simulate(make_alg(p), make_env(p), jax.random.fold_in(jax.random.key(0), 8), horizon=T)
    )(p)
    return in_step, alone


@pytest.mark.parametrize(
    "ahead, runs_minor, by_component, peel",
    [(5, True, False, 1), (25, False, True, 0), (0, False, False, 0), (0, True, True, 0)],
)
def test_other_chunk_layouts_are_bitwise_the_cpus(ahead, runs_minor, by_component, peel):
    """On a GPU a chunk's rounds are drawn ahead in blocks (a vmap over the block's rounds, then the
    rounds) and the lanes' states are carried with the runs on the minor axes: the same values as the
    CPU's layout (each round drawn in its own step, runs major, the contexts components first where
    several lanes read a stream), here forced on the CPU, with several lanes and with one, against the
    runs alone. Blocks of 5 and of the whole chunk (25), and a last chunk padded past the horizon (T =
    60); the contexts components first or not, either way, in every layout; with the GPU's layout, a
    Newton step of the projection and three of the Student-t sampler made before their loops
    (``peeled_newton_steps``, ``peeled_rejection_steps``) too; with the runs minor, the sphere's uniforms
    drawn shaped, as on a GPU (``flat_sphere_bits``)."""
    assert jax.default_backend() == "cpu"
    in_step, alone = _cpu_layout()
    options = jb.ExecutionOptions(
        draw_ahead=ahead,
        runs_minor=runs_minor,
        contexts_by_component=by_component,
        peeled_newton_steps=peel,
        peeled_rejection_steps=3 * peel,
        flat_sphere_bits=not runs_minor,  # shaped, as on a GPU
    )
    for name, g in LAYOUT_GRIDS.items():
        drawn_ahead = jb.sweep(make_alg, make_env, g, options=options, **LAYOUT_SWEEP)
        for field in in_step[name].data:
            np.testing.assert_array_equal(drawn_ahead.data[field], in_step[name].data[field])
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
    """As few chunks as chunks no longer than the budget's (``chunk_outputs`` / runs rounds, at least 64, a
    multiple of 16) allow, equal and a multiple of 4 (or the whole horizon), so the last chunk is padded
    past the horizon by fewer than 4 rounds a chunk: 10⁴ runs × 2000 rounds now run 2000 rounds, not
    3328 (two chunks of 1664)."""
    cap = min(horizon, max(64, plan_lib.CHUNK_OUTPUTS // runs) // 16 * 16)
    chunk = plan_lib.default_chunk(runs, horizon)
    chunks = -(-horizon // chunk)
    assert chunk <= cap and (chunk == horizon or chunk % 4 == 0)
    assert all(-(-horizon // n) > cap for n in range(1, chunks))  # fewer chunks would be too long
    assert 0 <= chunks * chunk - horizon < 4 * chunks
    if (runs, horizon) == (10000, 2000):
        assert (chunk, chunks) == (1000, 2)


def test_bad_execution_options_are_named_before_anything_runs(monkeypatch):
    monkeypatch.setattr(jb.runner.driver, "run_algorithms", lambda *a, **k: pytest.fail("the sweep ran"))
    grid = {"C": [5.0], "beta_scale": [0.5], "df": [4.0], "S": [1.0]}
    bad = [
        (dict(chunk_outputs=0), "options.chunk_outputs=0 is invalid"),
        (dict(cpu_workers=2.5), "options.cpu_workers=2.5 is invalid"),
        (dict(draw_ahead=-1), "options.draw_ahead=-1 is invalid"),
        (dict(ahead_bytes="1 GB"), "options.ahead_bytes='1 GB' is invalid"),
        (dict(runs_minor="yes"), "options.runs_minor='yes' is invalid"),
        (dict(contexts_by_component=1), "options.contexts_by_component=1 is invalid"),
        (dict(peeled_newton_steps=-1), "options.peeled_newton_steps=-1 is invalid"),
        (dict(peeled_rejection_steps=-2), "options.peeled_rejection_steps=-2 is invalid"),
        (dict(flat_sphere_bits="yes"), "options.flat_sphere_bits='yes' is invalid"),
        (dict(straggler_min_lanes=-1), "options.straggler_min_lanes=-1 is invalid"),
    ]
    for fields, message in bad:
        with pytest.raises(ValueError, match=re.escape(message)):
            jb.sweep(make_alg, make_env, grid, horizon=10, seeds=1, options=jb.ExecutionOptions(**fields))
    with pytest.raises(ValueError, match=r"options=.* is invalid: it must be a jb\.ExecutionOptions"):
        jb.sweep(make_alg, make_env, grid, horizon=10, seeds=1, options={"cpu_workers": 1})


def test_the_block_drawn_ahead_is_the_largest_divisor_of_the_chunk_that_fits_the_memory_cap(monkeypatch):
    """A round of this stream is K·d + K + 2 = 22 float32 per stream (contexts, means, η_t, ν_t): with
    4 streams, 352 bytes a round."""
    grid = {"C": [5.0], "beta_scale": [0.5], "df": [2.5, 4.0], "S": [1.0]}
    names, axes = jb.runner.grid.grid_arrays(grid)
    layout = Layout(("S", "df"), ("C", "beta_scale"))
    seeds, key = np.array([3, 8]), jax.random.key(0)

    def ahead(lanes=1, cpu=None, **fields):
        # one program (one worker): its draws are every stream's
        options = jb.ExecutionOptions(cpu_workers=fields.pop("cpu_workers", 1), **fields)
        plan = plan_lib.Plan.make(layout, names, axes, seeds, key, None, T, 24, 1, options)
        return plan, plan.rounds_ahead(make_env, lanes, T, cpu)

    plan, _ = ahead()
    assert plan.padded == 4 and plan.chunk == 24 and plan.workers == 1
    assert ahead()[1] == 0 and ahead(lanes=2)[1] == 0  # the CPU's default for a small sweep
    # the CPU's default for a large sweep (4 streams × lanes × T rounds) whose streams serve 2+ lanes
    rule = plan_lib.CpuAhead(min_work=4 * 2 * T)
    assert ahead(1, rule)[1] == 0 and ahead(2, rule)[1] == 12  # 24's largest divisor <= 16 rounds
    assert ahead(2, rule._replace(bytes=352 * 5))[1] == 4  # <= 5 rounds fit the cache's share
    assert ahead(2, rule._replace(bytes=352))[1] == 0  # one round at a time: each in its own step
    # two programs of 2 streams each, 176 bytes a round: 2 rounds fit
    halves, block = ahead(2, rule._replace(bytes=352), cpu_workers=2)
    assert halves.workers == 2 and block == 2
    assert ahead(draw_ahead=10)[1] == 8  # 24's largest divisor <= 10
    assert ahead(draw_ahead=10, ahead_bytes=352 * 5)[1] == 4  # <= 5 rounds fit
    assert ahead(draw_ahead=10, ahead_bytes=100)[1] == 1  # not even one round fits: one at a time
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert ahead()[1] == 24  # a GPU's default: the whole chunk when it fits


def test_runs_are_minor_by_default_on_a_gpu(monkeypatch):
    names, axes = jb.runner.grid.grid_arrays({"C": [5.0], "beta_scale": [0.5], "df": [4.0], "S": [1.0]})
    layout = Layout(("S", "df"), ("C", "beta_scale"))
    plan = lambda **fields: plan_lib.Plan.make(
        layout, names, axes, np.array([3]), jax.random.key(0), None, T, 24, 1, jb.ExecutionOptions(**fields)
    )
    assert not plan().program(make_env, T, 1).runs_minor
    assert plan(runs_minor=True).program(make_env, T, 1).runs_minor
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert plan().program(make_env, T, 1).runs_minor
    assert not plan(runs_minor=False).program(make_env, T, 1).runs_minor


def test_contexts_are_components_first_by_default_on_a_cpu_where_several_lanes_read_a_stream(monkeypatch):
    def by_component(lanes, **fields):
        grid = {"C": [5.0], "beta_scale": list(np.linspace(0.1, 1.0, lanes)), "df": [4.0], "S": [1.0]}
        names, axes = jb.runner.grid.grid_arrays(grid)
        options = jb.ExecutionOptions(**fields)
        layout = Layout(("S", "df"), ("C", "beta_scale"))
        plan = plan_lib.Plan.make(
            layout, names, axes, np.array([3]), jax.random.key(0), None, T, 24, 1, options
        )
        return plan.program(make_env, T, 1).by_component

    assert jax.default_backend() == "cpu"
    assert not by_component(1) and by_component(2)
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert not by_component(16)  # not measured on a GPU: its layout kept
    assert by_component(1, contexts_by_component=True)


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


def test_each_algorithm_runs_only_its_own_grid(tmp_path, monkeypatch):
    """``grids``: an axis only one algorithm reads runs for that algorithm alone. Each result is bitwise
    the sweep of that algorithm alone over the shared axes and its own (those are checked against runs
    alone above); algorithms with the same own grid share a program; a checkpoint per group resumes."""
    lin_ts = lambda p: jb.lin_ts(T, D, v=p["v"])
    oful = lambda p: jb.oful(T, D, beta_scale=p["beta_scale"])
    algs = {"cr": make_alg, "lin_ts": lin_ts, "oful": oful}
    shared = {"C": [0.0, 5.0], "df": [2.5, 4.0], "S": [1.0]}
    grids = {
        "cr": {"beta_scale": [0.05, 0.5]},
        "lin_ts": {"v": [0.1, 1.0, 3.0]},
        "oful": {"beta_scale": [0.05, 0.5]},
    }
    kw = dict(horizon=T, seeds=[3, 8], record=20)
    res = jb.sweep(algs, make_env, shared, grids=grids, **kw)
    assert list(res) == ["cr", "lin_ts", "oful"]
    assert res["lin_ts"].dims == ("C", "df", "S", "v", "seed", "round")
    assert res["cr"].dims == ("C", "df", "S", "beta_scale", "seed", "round")
    for name, alg in algs.items():
        alone = jb.sweep(alg, make_env, {**shared, **grids[name]}, **kw)
        assert res[name].dims == alone.dims
        for field in alone.data:
            np.testing.assert_array_equal(res[name].data[field], alone.data[field])
    # a group's checkpoint in a directory of its own: a sweep run again resumes every group, running nothing
    saved = jb.sweep(algs, make_env, shared, grids=grids, checkpoint=tmp_path, **kw)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid-0", "grid-1"]  # cr and oful share a grid
    monkeypatch.setattr(jb.runner.driver, "start_groups", lambda *a, **k: pytest.fail("a chunk ran again"))
    again = jb.sweep(algs, make_env, shared, grids=grids, checkpoint=tmp_path, **kw)
    for name in algs:
        np.testing.assert_array_equal(again[name].cumulative_regret, saved[name].cumulative_regret)
        np.testing.assert_array_equal(again[name].cumulative_regret, res[name].cumulative_regret)
    monkeypatch.undo()
    # an algorithm without an entry runs the shared grid alone (here: a constant of its own)
    fixed = jb.sweep(
        {"cr": make_alg, "fixed": lambda p: jb.oful(T, D, beta_scale=0.5)},
        make_env,
        {**shared, "beta_scale": [0.05]},
        grids={"cr": {}},
        **kw,
    )
    assert fixed["fixed"].dims == ("C", "df", "S", "beta_scale", "seed", "round")


def test_own_grids_are_checked_before_anything_runs(monkeypatch, tmp_path):
    monkeypatch.setattr(jb.runner.driver, "run_algorithms", lambda *a, **k: pytest.fail("the sweep ran"))
    algs = {"cr": make_alg, "oful": lambda p: jb.oful(T, D, beta_scale=p["beta_scale"])}
    shared = {"C": [0.0], "df": [4.0], "S": [1.0]}
    kw = dict(horizon=T, seeds=1)
    cases = [
        (make_alg, {"cr": {"beta_scale": [0.1]}}, "grids=.* is invalid with one algorithm"),
        (algs, {"lints": {"v": [1.0]}}, r"grids\['lints'\] is invalid: 'lints' is not one of the algorithms"),
        (algs, {"cr": {"C": [1.0]}}, r"grids\['cr'\] is invalid: its axis 'C' is also an axis of grid"),
        (algs, {"cr": [0.1]}, r"grids\['cr'\]=\[0.1\] is invalid"),
        (algs, {"cr": {"beta_scale": []}}, "beta_scale"),
        (  # an axis its factory ignores: every value along it would repeat the same runs
            {"cr": make_alg, "fixed": lambda p: jb.oful(T, D, beta_scale=0.5)},
            {"fixed": {"beta_scale": [0.1, 1.0]}},
            r"grids\['fixed'\] is invalid: its axis 'beta_scale' is never read by the factory of algorithm "
            r"'fixed' \(a typo\? .*; the axes it reads are \[\]",
        ),
        (  # a typo beside an axis it reads
            algs,
            {"cr": {"beta_scale": [0.1], "alpah": [1.0, 2.0]}},
            r"its axis 'alpah' is never read by the factory of algorithm 'cr' .* reads are "
            r"\['C', 'beta_scale'\]",
        ),
    ]
    for alg, grids, message in cases:
        with pytest.raises(ValueError, match=message):
            jb.sweep(alg, make_env, shared, grids=grids, **kw)
    with pytest.raises(ValueError, match=r"out=.* is invalid with grids"):
        jb.sweep(algs, make_env, shared, grids={"cr": {"beta_scale": [0.1]}}, out=tmp_path / "r.zarr", **kw)


def test_lapack_runs_one_matrix_a_call_where_several_calls_could_run_at_once(monkeypatch):
    """On one CPU device, one algorithm's program makes one batched LAPACK call at a time; algorithms in
    lockstep could make several at once, which jaxlib 0.10 let take every thread of the pool and hang
    (GAdaOFUL with Heavy-OFUL, 256 runs, T = 100, on 2 cores), so their program is traced with LAPACK one
    matrix a call (``batching.lapack``). That the bits stay: the lockstep test above."""
    programs = record_programs(monkeypatch)
    tofu = lambda p: jb.tofu(4, D, eps=1.0, nu=1.5)
    kw = dict(horizon=4, seeds=1, record=4)
    grid = {k: [v] for k, v in POINT.items()}
    one = jb.ExecutionOptions(cpu_workers=1)
    jb.sweep(tofu, make_env, grid, options=one, **kw)
    assert programs and not any(p.trace.lapack_per_matrix for p in programs)
    programs.clear()
    jb.sweep({"a": tofu, "b": lambda p: jb.tofu(4, D, eps=0.5, nu=1.5)}, make_env, grid, options=one, **kw)
    assert programs and all(p.trace.lapack_per_matrix for p in programs)


@pytest.mark.parametrize("workers", [2, 3])
def test_groups_of_streams_on_threads_are_bitwise_one_program(monkeypatch, workers):
    """On one CPU device the streams run in equal groups, one compiled program called from a thread per
    group at once (``cpu_workers``; 4 streams in 3 groups: padded to 6, the padding dropped): every value
    the same as one program, for CR-Hvt-UCB and GAdaOFUL in lockstep, whose LAPACK calls then run one
    matrix a call (several programs at once could otherwise take every pool thread and hang)."""

    algs = {
        "cr": make_alg,
        "gada": lambda p: jb.gadaoful(T, D, nu=1.5, corruption=p["C"], beta_scale=p["beta_scale"]),
    }
    grid = {"C": [5.0], "beta_scale": [0.05, 0.5], "df": [2.5, 4.0], "S": [1.0]}
    kw = dict(horizon=T, seeds=[3, 8], record="all", chunk_size=25)
    one = jb.sweep(algs, make_env, grid, options=jb.ExecutionOptions(cpu_workers=1), **kw)
    programs = record_programs(monkeypatch)
    grouped = jb.sweep(algs, make_env, grid, options=jb.ExecutionOptions(cpu_workers=workers), **kw)
    assert programs and all(p.trace.lapack_per_matrix for p in programs)
    assert grouped.meta["streams"] == one.meta["streams"] == 4
    for field in one.data:
        np.testing.assert_array_equal(grouped.data[field], one.data[field])
    names, axes = jb.runner.grid.grid_arrays(grid)
    layout = Layout(("df", "S"), ("C", "beta_scale"))
    options = jb.ExecutionOptions(cpu_workers=workers)
    plan = plan_lib.Plan.make(
        layout, names, axes, np.array([3, 8]), jax.random.key(0), None, T, 25, 2, options
    )
    assert plan.workers == workers and plan.padded == -(-4 // workers) * workers
    assert {g[0].shape[0] for g in plan.groups} == {plan.padded // workers}


def test_groups_on_threads_trace_with_the_callers_jax_settings(x64):
    """The chunk's program is traced on the calling thread, where ``jax.enable_x64`` (a thread's
    setting) holds, and only run on the workers' threads: float64 values equal to one program's."""
    grid = {"C": [5.0], "beta_scale": [0.05, 0.5], "df": [4.0], "S": [1.0]}
    kw = dict(horizon=T, seeds=3, record=T)
    one = jb.sweep(make_alg, make_env, grid, options=jb.ExecutionOptions(cpu_workers=1), **kw)
    grouped = jb.sweep(make_alg, make_env, grid, options=jb.ExecutionOptions(cpu_workers=2), **kw)
    assert grouped.cumulative_regret.dtype == np.float64
    np.testing.assert_array_equal(grouped.cumulative_regret, one.cumulative_regret)


def test_an_algorithm_calling_lapack_itself_runs_its_groups_one_after_another():
    """An algorithm that calls ``jnp.linalg`` itself (not through ``batching.lapack``) makes a batched
    LAPACK call in the sweep's program, which jaxlib 0.10 may split over the pool and block a pool thread
    on: several such programs at once could hang. The sweep then runs its groups one after another, with
    a warning that names the cure, and the same values."""

    def own(p):
        base = make_alg(p)

        def select(state, contexts):
            spread = jnp.linalg.eigh(contexts.T @ contexts)[0]  # batched under the sweep's vmap
            return base.select(state, contexts + 0.0 * spread[-1])

        return base._replace(select=select)

    grid = {"C": [5.0], "beta_scale": [0.05, 0.5], "df": [4.0], "S": [1.0]}
    kw = dict(horizon=T, seeds=2, record=T)
    one = jb.sweep(own, make_env, grid, options=jb.ExecutionOptions(cpu_workers=1), **kw)
    two = jb.ExecutionOptions(cpu_workers=2)
    with pytest.warns(UserWarning, match="one after another.*batching.lapack"):
        apart = jb.sweep(own, make_env, grid, options=two, **kw)
    np.testing.assert_array_equal(apart.cumulative_regret, one.cumulative_regret)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the library's own algorithms: at once, no warning
        jb.sweep(make_alg, make_env, grid, options=two, **kw)


def test_the_cpu_runs_a_group_of_streams_on_each_core_by_default(tmp_path):
    import os

    workers = lambda streams, mesh=None, **fields: plan_lib.cpu_workers(
        jb.ExecutionOptions(**fields),
        streams,
        mesh,
        cgroup=tmp_path,  # no cgroup files: no quota
    )
    cores = len(os.sched_getaffinity(0))
    assert workers(1000) == cores
    assert workers(1) == 1  # at most a group a stream
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("runs",))
    assert workers(1000, mesh) == 1  # over devices: one program each
    assert workers(1000, cpu_workers=5) == 5 and workers(3, cpu_workers=5) == 3
    for bad in (0, 2.5, "2"):
        with pytest.raises(ValueError, match=r"options\.cpu_workers"):
            jb.ExecutionOptions(cpu_workers=bad).validated()


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
def test_a_containers_cpu_quota_caps_the_groups(tmp_path, files, quota):
    import os

    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert plan_lib.cpu_quota(tmp_path) == quota
    cores = len(os.sched_getaffinity(0))
    expected = cores if quota is None else min(cores, quota)
    default = jb.ExecutionOptions()
    assert plan_lib.cpu_workers(default, 1000, None, cgroup=tmp_path) == expected
    mine = jb.ExecutionOptions(cpu_workers=4)  # set by the user: theirs, quota or not
    assert plan_lib.cpu_workers(mine, 1000, None, cgroup=tmp_path) == 4


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
