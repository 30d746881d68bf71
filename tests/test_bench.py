"""The robustness benchmark: the selectors it traces (jb.noise.select, jb.corruption.select), its tuning
and report against separate runs, resume, the report's statistics against closed forms, bad input."""

import functools
import json
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import cli_env

import jaxbandit as jb
from jaxbandit import cli
from jaxbandit.core.dtypes import float_dtype
from jaxbandit.experiments import bench
from jaxbandit.experiments.bench import protocol
from jaxbandit.experiments.bench import report as bench_report
from jaxbandit.report.results import SweepResult

# --- the selectors ----------------------------------------------------------------------------------


def test_noise_select_draws_exactly_the_chosen_family():
    families = [jb.noise.gaussian(2.0), jb.noise.student_t(2.5), jb.noise.pareto(1.6)]
    key = jax.random.key(7)
    drawn = jax.jit(lambda i, t: jb.noise.select(families, i).sample(key, t))
    for i, fam in enumerate(families):
        for t in (0, 5):
            want = fam.sample(key, t)
            got = drawn(float(i), t)
            assert np.asarray(got[0]) == np.asarray(want[0]) and np.asarray(got[1]) == np.asarray(want[1])
        chosen = jb.noise.select(families, i)
        assert float(chosen.moment_bound(0.4)) == float(fam.moment_bound(0.4))
        assert chosen.max_order == fam.max_order


def test_noise_select_ignores_moments_a_family_not_chosen_lacks():
    families = [jb.noise.gaussian(), jb.noise.student_t(1.8)]  # t(1.8) has no 2nd moment
    assert float(jb.noise.select(families, 0).moment_bound(1.0)) == pytest.approx(1.0)
    traced = jax.jit(lambda i: jb.noise.select(families, i).moment_bound(1.0))
    assert float(traced(0.0)) == pytest.approx(1.0)
    with pytest.raises(ValueError, match=r"eps=1\.0 is invalid for student_t"):
        jb.noise.select(families, 1).moment_bound(1.0)


@pytest.mark.parametrize("index", [2, -1, 0.5, [0]])
def test_select_refuses_an_index_outside_the_list(index):
    with pytest.raises(ValueError, match=r"index=.* is invalid: it must be an integer in \[0, 1\]"):
        jb.noise.select([jb.noise.gaussian(), jb.noise.gaussian(2.0)], index)
    with pytest.raises(ValueError, match=r"index=.* is invalid: it must be an integer in \[0, 1\]"):
        jb.corruption.select([jb.corruption.none(), jb.corruption.flip(1.0)], index)
    with pytest.raises(ValueError, match="families=\\[\\] is invalid"):
        jb.noise.select([], 0)


def test_corruption_select_runs_bitwise_as_the_chosen_adversary_alone():
    adversaries = [
        jb.corruption.none(),
        jb.corruption.flip(3.0),
        jb.corruption.flip_rounds(4),
        jb.corruption.random_sign(2.0),
        jb.corruption.targeted(3.0, target=[0.6, -0.8, 0.0]),
    ]
    alg = jb.oful(30, 3, beta_scale=0.1)

    def env(adv):
        return jb.envs.linear(3, 5, noise=jb.noise.student_t(3.0), corruption=adv)

    chosen = jax.jit(lambda i: jb.simulate(alg, env(jb.corruption.select(adversaries, i)), 3, 30))
    for i, adv in enumerate(adversaries):
        if adv.name in ("none", "flip"):
            continue  # the benchmark's runs are checked against these two alone (test_report_rows_...)
        alone = jb.simulate(alg, env(adv), 3, 30)
        got = chosen(float(i))
        np.testing.assert_array_equal(np.asarray(got.corruption), np.asarray(alone.corruption))
        np.testing.assert_array_equal(np.asarray(got.action), np.asarray(alone.action))
    both_budgeted = jb.corruption.select(adversaries[:2], 1)
    assert float(both_budgeted.budget()) == 3.0
    assert jb.corruption.select(adversaries[:3], 1).budget is None  # flip_rounds declares none


def test_no_two_attacks_of_the_benchmark_corrupt_alike():
    """Each attack of the benchmark's axis, at the same C, gives its own corruption sequence. (With the
    targeted attack's default θ† = −θ* every round's c_t is flip's −2⟨X, θ*⟩: the report's targeted rows
    were the flip rows.)"""
    settings = bench.make_settings(quick=True, noises=("gaussian",), C_grid=(40.0,))
    scen = bench.scenarios(settings)
    env = bench.environment_factory(scen)
    alg = jb.oful(100, bench.settings.DIM, beta_scale=0.01)
    run = jax.jit(
        lambda attack, key: jb.simulate(alg, env({"noise": 0.0, "attack": attack}), key, 100).corruption
    )
    keys = [jax.random.key(s) for s in range(2)]
    seqs = {a.name: [np.asarray(run(float(i), k)) for k in keys] for i, a in enumerate(scen.attacks)}
    names = list(seqs)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert any(not np.array_equal(x, y) for x, y in zip(seqs[a], seqs[b])), (a, b)
    assert np.abs(seqs["targeted C=40"][0]).sum() <= 40.0 + 1e-3
    # what the report's targeted rows used to be: the default θ† = −θ* corrupts every round as flip does
    rng = np.random.default_rng(1)
    default, flip = jb.corruption.targeted(1e9), jb.corruption.flip(1e9)
    for t in range(20):
        X = rng.standard_normal((20, 10))
        theta = rng.standard_normal(10)
        view = jb.corruption.AdversaryView(X, theta, X @ theta, int(rng.integers(20)), 0.0, t)
        c_default, _ = default.corrupt(default.init(), view)
        c_flip, _ = flip.corrupt(flip.init(), view)
        assert float(c_default) == float(c_flip)


# --- settings and bad input -------------------------------------------------------------------------


def test_every_algorithm_searches_the_same_radius_grid_and_one_second_constant_on_the_same_budget():
    for coarse, radius in ((False, protocol.RADIUS_GRID), (True, protocol.RADIUS_GRID[::2])):
        budgets = {}
        for name in jb.registry.names():
            axes = protocol.axes(name, coarse)
            assert axes[0].name == protocol.RADIUS and axes[0].values == radius, name
            assert axes[0].start == 1.0  # the theory radius breaks ties
            spec = jb.registry.algorithm(name)
            searched = {a.name for a in axes[1:]} | set(protocol.fixed(name))
            assert searched == set(tuple(spec.grid)[1:]), name  # every other free constant
            budgets[name] = protocol.base_budget(name, coarse)
            assert len(axes) == 2, name  # the radius and one second constant (α, τ₀ or λ)
        assert len(set(budgets.values())) == 1, budgets
    np.testing.assert_allclose(np.log10(protocol.RADIUS_GRID), np.arange(-8.0, 0.5, 0.5))


def _quadratic(optimum: dict, flat_below: float | None = None):
    """An objective of known minimum: Σ (log10 v − log10 optimum)² per axis (the others at the value
    given), its stderr 1; below ``flat_below`` the radius axis is flat (a plateau). Records every call."""
    calls = []

    def evaluate(axis, values, fixed):
        calls.append((axis, list(values), dict(fixed)))
        point = [{**fixed, axis: v} for v in values]
        mean = []
        for p in point:
            r = p[protocol.RADIUS] if flat_below is None else max(p[protocol.RADIUS], flat_below)
            logs = {**p, protocol.RADIUS: r}
            mean.append(sum((np.log10(logs[k]) - np.log10(v)) ** 2 for k, v in optimum.items()))
        return np.asarray(mean), np.ones(len(values))

    return evaluate, calls


def test_the_search_extends_an_edge_until_the_optimum_is_inside():
    axes = protocol.axes("oful")[:1]  # the radius axis alone
    evaluate, calls = _quadratic({protocol.RADIUS: 10**-10.5})
    found = protocol.search(axes, evaluate)
    assert found.best == {protocol.RADIUS: pytest.approx(10**-10.5)} and found.edges == {}
    # the grid, then two half decades at a time below 1e-8 until 10^-10.5 has a neighbour below it
    assert [len(c[1]) for c in calls] == [17, 2, 2, 2]
    tried = sorted(r[protocol.RADIUS] for r in found.rows)
    np.testing.assert_allclose(np.log10(tried), np.arange(-11.0, 0.5, 0.5))
    assert found.budget == 23 == len(found.rows)


def test_the_search_reports_an_edge_it_cannot_pass():
    evaluate, _ = _quadratic({protocol.RADIUS: 1e-20})
    found = protocol.search(protocol.axes("oful")[:1], evaluate)
    assert found.best[protocol.RADIUS] == pytest.approx(protocol.RADIUS_LIMITS[0])
    assert found.edges == {protocol.RADIUS: "low"}


def test_a_plateau_is_won_by_the_value_nearest_the_theory_radius():
    """Below 1e-5 every radius gives the same regret (no arm changes): the search keeps 1e-5, the one
    nearest the theory value 1, and extends nothing."""
    evaluate, calls = _quadratic({protocol.RADIUS: 1e-12}, flat_below=1e-5)
    found = protocol.search(protocol.axes("oful")[:1], evaluate)
    assert found.best[protocol.RADIUS] == pytest.approx(1e-5) and len(calls) == 1


def test_secondary_constants_are_searched_at_the_radius_chosen():
    axes = protocol.axes("cr_hvt_ucb")
    assert [a.name for a in axes] == [protocol.RADIUS, "alpha"]
    assert axes[1].values == (0.5, 2.0, 8.0, 32.0, 128.0) and axes[1].start == 8.0
    evaluate, calls = _quadratic({protocol.RADIUS: 1e-3, "alpha": 1000.0})
    found = protocol.search(axes, evaluate)
    assert calls[0][2] == {"alpha": 8.0}  # the radius searched with alpha at its grid's middle
    assert {c[0] for c in calls[1:]} == {"alpha"}
    assert all(c[2] == {protocol.RADIUS: pytest.approx(1e-3)} for c in calls[1:])
    # 128 is the grid's edge: extended by its ratio 4 to 512 and 2048; 512 is nearest 1000 on a log scale
    assert found.best["alpha"] == pytest.approx(512.0) and found.edges == {}
    # alpha = 8 at the chosen radius was evaluated by the radius search: reused, not run or counted again
    assert [v for c in calls[1:] for v in c[1]][:4] == [0.5, 2.0, 32.0, 128.0]
    assert (
        found.budget == 17 + 4 + 2 == len(found.rows) == len({tuple(sorted(r.items())) for r in found.rows})
    )
    g = protocol.fixed("gadaoful")
    assert g == {"m0": 1.0} and [a.name for a in protocol.axes("gadaoful")] == [protocol.RADIUS, "tau0"]


def test_the_protocols_pieces_against_hand_computed_values_and_their_refusals():
    # a curve whose best is 10 ± 1: 10.5 and 11 lie within their own s.e. of it, 13 does not
    assert protocol.flatness([10.0, 10.5, 11.0, 13.0], [1.0, 1.0, 1.0, 1.0]) == dict(
        values=4, within=3, flat=True
    )
    assert protocol.flatness([10.0, 12.0, 13.0], [1.0, 1.0, 0.5])["flat"] is False
    assert protocol.constant_axes("gadaoful") == (protocol.RADIUS, "tau0", "m0")
    assert protocol.evaluation_grid("gadaoful", "tau0", [0.1, 1], {protocol.RADIUS: 1e-3, "m0": 1.0}) == {
        protocol.RADIUS: [1e-3],
        "tau0": [0.1, 1.0],
        "m0": [1.0],
    }
    # LinTS: the radius multiplier scales its theory v; its other constants are taken as given
    assert protocol.constants(("v", "lam"), 0.5, {protocol.RADIUS: 0.01, "lam": 3.0}) == {
        "v": 0.005,
        "lam": 3.0,
    }
    with pytest.raises(ValueError, match=r"mean \(shape \(2,\)\) and stderr \(shape \(1,\)\) are invalid"):
        protocol.flatness([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match=r"axis='alpha'.* is invalid for 'oful'.*missing \['lam'\]"):
        protocol.evaluation_grid("oful", "alpha", [1.0], {protocol.RADIUS: 1.0})


def test_settings_scenarios():
    s = bench.make_settings(quick=True, noises=("gaussian", "pareto"), adversaries=("none", "flip"))
    noises = bench.noise_settings(s)
    assert [n.name for n in noises] == ["gaussian(ε=1)", "pareto(ε=0.5)", "pareto(ε=1)"]
    # the tail is as heavy as ε allows: Pareto shape 1.1 + ε, so the (1+ε)-moment is finite
    pareto_half = jb.noise.pareto(1.6)
    assert noises[1].nu == pytest.approx(float(pareto_half.moment_bound(0.5)))
    attacks = bench.attacks(s)
    assert [(a.adversary, a.C) for a in attacks] == [("none", 0.0), ("flip", 40.0)]
    assert set(s.seeds).isdisjoint(s.tune_seeds)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"algorithms": ["nope"]}, r"algorithms=\['nope'\] is invalid: choose from \['cr_hvt_ucb'"),
        ({"adversaries": ["flip", "evil"]}, r"adversaries=.* is invalid: choose from \['none', 'flip'"),
        ({"noises": ["cauchy"]}, r"noises=\['cauchy'\] is invalid: choose from \['gaussian'"),
        ({"noises": ["gaussian", "gaussian"]}, "a name is given twice"),
        ({"eps_grid": [0.5, 1.5]}, r"eps_grid=\[0.5, 1.5\] is invalid: give distinct numbers in \(0, 1\]"),
        ({"C_grid": [10.0, 10.0]}, r"C_grid=\[10.0, 10.0\] is invalid: give distinct numbers in \(0, inf\]"),
        ({"C_grid": [-1.0]}, r"C_grid=\[-1.0\] is invalid"),
        ({"horizon": 5}, "horizon=5 is invalid: it must be an integer >= 20"),
        ({"seeds": 1}, "seeds=1 is invalid: it must be an integer >= 2"),
        ({"seeds": 2000}, "seeds=2000 is invalid: at most 1000"),
    ],
)
def test_settings_refuse_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        bench.make_settings(quick=True, **kwargs)


def test_run_bench_refuses_settings_it_did_not_make(tmp_path):
    with pytest.raises(ValueError, match="settings=dict is invalid: build it with"):
        bench.run_bench({"horizon": 100}, tmp_path, progress=False)


# --- a tiny benchmark, checked against separate runs -------------------------------------------------

TINY = dict(
    quick=True,
    algorithms=("oful", "lin_ts"),
    noises=("gaussian", "student_t"),
    adversaries=("none", "flip"),
    horizon=40,
    seeds=3,
    tune_seeds=2,
    eps_grid=(1.0,),
    C_grid=(5.0,),
)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    settings = bench.make_settings(**TINY)
    result = bench.run_bench(settings, out, progress=False)
    return settings, out, result


def _scenario_env(noise, attack):
    # the registered Student-t: t₃ at ε = 1, else df = 1.1 + ε capped at 2 (infinite variance)
    df = 3.0 if noise.eps >= 1.0 else min(1.1 + noise.eps, 2.0)
    fam = jb.noise.gaussian(1.0) if noise.family == "gaussian" else jb.noise.student_t(df)
    adv = jb.corruption.none() if attack.adversary == "none" else jb.corruption.flip(attack.C)
    return jb.envs.linear(bench.settings.DIM, bench.settings.NUM_ARMS, noise=fam, corruption=adv)


# The runs checked one by one against jb.simulate (each scenario compiles one program per algorithm);
# LinTS rides along in the benchmark itself, its keyed selection covered by the sweep's own tests.
SEPARATELY_CHECKED = ("oful",)


def _radius_rows(out, method: str) -> list[dict]:
    """The settings the radius search of ``method`` evaluated (its λ held at the start, 1)."""
    rows = SweepResult.load(out / "parts" / f"{method}.npz").meta["search"]["rows"]
    return [r for r in rows if r["axis"] == protocol.RADIUS]


def _tried(out, method: str) -> tuple[float, ...]:
    """The radius multipliers the search of ``method`` evaluated, and the theory value 1."""
    return tuple(sorted({r[protocol.RADIUS] for r in _radius_rows(out, method)} | {1.0}))


@functools.cache
def _separate_runs(
    method: str, noise_index: int, attack_index: int, multipliers: tuple, lam: float = 1.0
) -> np.ndarray:
    """Final regret of ``method`` (a beta_scale and a ridge λ, theory values 1) in one scenario of TINY
    at each radius multiplier and λ = ``lam``, on the reported and the tuning seeds, run by jb.simulate (not
    jb.sweep): `[values, seeds]`, float64 sums of the per-round regret (seeds: reported, then tuning)."""
    settings = bench.make_settings(**TINY)
    scen = bench.scenarios(settings)
    noise, attack = scen.noises[noise_index], scen.attacks[attack_index]
    spec = jb.registry.algorithm(method)
    name, ridge = spec.grid
    problem = jb.registry.Problem(settings.horizon, 10, eps=noise.eps, nu=noise.nu, corruption=attack.C)
    assert spec.theory(problem) == {name: 1.0, ridge: 1.0}
    env = _scenario_env(noise, attack)
    seeds = np.array(settings.seeds + settings.tune_seeds)

    def regret(v, seed):
        key = jax.random.fold_in(jax.random.key(0), seed)
        return jb.simulate(spec.build(problem, {name: v, ridge: lam}), env, key, settings.horizon).regret

    run = jax.jit(jax.vmap(jax.vmap(regret, (None, 0)), (0, None)))
    per_round = run(jnp.asarray(multipliers, float_dtype()), jnp.asarray(seeds))
    return np.asarray(per_round, np.float64).sum(axis=-1)


def test_every_setting_the_search_tried_is_the_mean_of_separate_runs_and_the_best_is_chosen(tiny):
    settings, out, _ = tiny
    scen = bench.scenarios(settings)
    info = json.loads((out / "bench.json").read_text())
    for method in SEPARATELY_CHECKED:
        rows = _radius_rows(out, method)
        assert all(r["lam"] == 1.0 for r in rows)  # the radius is searched at λ's start
        tried = np.array([r[protocol.RADIUS] for r in rows])
        # the coarse grid, and below or above it only whole extensions of one decade each
        assert set(np.round(np.log10(protocol.RADIUS_GRID[::2]), 6)) <= set(np.round(np.log10(tried), 6))
        values = np.asarray(_tried(out, method))
        at = [int(np.flatnonzero(values == v)[0]) for v in tried]
        finals = [
            _separate_runs(method, n, k, tuple(values))[at, len(settings.seeds) :]
            for n in range(len(scen.noises))
            for k in range(len(scen.attacks))
        ]
        per_seed = np.mean(finals, axis=0)  # [values, tuning seeds]: averaged over the scenarios
        np.testing.assert_allclose([r["mean"] for r in rows], per_seed.mean(axis=1), rtol=1e-4)
        np.testing.assert_allclose(
            [r["stderr"] for r in rows], per_seed.std(axis=1, ddof=1) / np.sqrt(per_seed.shape[1]), rtol=1e-3
        )
        best = info["tuned"][method][protocol.RADIUS]
        assert per_seed.mean(axis=1)[np.isclose(tried, best)][0] <= per_seed.mean(axis=1).min() * (1 + 1e-6)
        lower, upper = tried[tried < best], tried[tried > best]
        assert (lower.size and upper.size) or info["search"][method][
            "edges"
        ]  # inside, or the edge is reported


def test_report_rows_are_the_runs_with_theory_and_tuned_constants(tiny):
    settings, out, result = tiny
    scen = bench.scenarios(settings)
    info = json.loads((out / "bench.json").read_text())
    assert result.dims == ("algorithm", "constants", "noise", "attack", "seed", "round")
    assert result.coords["round"][-1] == settings.horizon
    np.testing.assert_array_equal(result.coords["seed"], settings.seeds)
    for method in SEPARATELY_CHECKED:
        a = settings.algorithms.index(method)
        values = np.asarray(_tried(out, method))
        tuned = info["tuned"][method]
        at = int(np.flatnonzero(values == tuned[protocol.RADIUS])[0])
        for n in range(len(scen.noises)):
            for k in range(len(scen.attacks)):
                theory = _separate_runs(method, n, k, tuple(values))[values == 1.0, : len(settings.seeds)]
                best = _separate_runs(method, n, k, tuple(values), tuned["lam"])[at, : len(settings.seeds)]
                want = np.concatenate([theory, best[None]])
                np.testing.assert_allclose(result.cumulative_regret[a, :, n, k, :, -1], want, rtol=1e-4)


def test_output_files_and_the_results_dataset(tiny, tmp_path):
    settings, out, result = tiny
    for name in ("bench.json", "results.npz", "report.md", "frontier.png"):
        assert (out / name).exists(), name
    assert not (out / "checkpoints").exists() or not any((out / "checkpoints").iterdir())
    loaded = SweepResult.load(out / "results.npz")
    for k, v in result.data.items():
        np.testing.assert_array_equal(loaded.data[k], v)
    xr = pytest.importorskip("xarray")
    info = json.loads((out / "bench.json").read_text())
    ds = bench.to_dataset(result, info)
    assert isinstance(ds, xr.Dataset)
    assert list(ds["C"].values) == [a.C for a in bench.attacks(settings)]
    assert list(ds["noise_eps"].values) == [n.eps for n in bench.noise_settings(settings)]
    text = (out / "report.md").read_text()
    for label in ("OFUL", "LinTS", "## Ranking — theory constants", "## Robustness frontier"):
        assert label in text
    # the report comes from the compact per-seed file alone: the full results give the same text
    per_seed = SweepResult.load(out / "per_seed.npz")
    assert per_seed.coords["round"].min() >= 0.1 * settings.horizon and per_seed.dims == result.dims
    np.testing.assert_array_equal(per_seed.cumulative_regret[..., -1], result.cumulative_regret[..., -1])
    assert (
        bench_report.markdown(result, {**info, "radius_curves": bench_report.radius_curves(out, info)})
        == text
    )
    bench_report.rewrite(out)
    assert (out / "report.md").read_text() == text
    # one result format: the plot command opens the results (string coordinates: constants, noise, attack)
    for name in ("results.npz", "results.nc"):
        png = cli.run_plot(out / name, tmp_path / f"{name}.png")
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with xr.open_dataset(out / "results.nc", engine="h5netcdf") as on_disk:
        assert on_disk["cumulative_regret"].sel(constants="tuned", attack="none").shape[-2:] == (
            3,
            result.coords["round"].size,
        )


def test_an_existing_benchmark_is_refused_unless_resumed_with_its_settings(tiny, tmp_path):
    settings, out, _ = tiny
    with pytest.raises(ValueError, match="already holds a benchmark; pass --resume"):
        bench.run_bench(settings, out, progress=False)
    other = bench.make_settings(**{**TINY, "horizon": 41})
    with pytest.raises(ValueError, match="holds a benchmark with other settings"):
        bench.run_bench(other, out, resume=True, progress=False)
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match="not empty and holds no benchmark"):
        bench.run_bench(settings, tmp_path, progress=False)


def test_resume_recomputes_only_the_missing_algorithm(tiny, tmp_path):
    settings, out, result = tiny
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    info = json.loads((copy / "bench.json").read_text())
    del info["tuned"]["lin_ts"]  # as if killed while running lin_ts
    del info["settings"]["stream"], info["stream"]  # a bench.json naming no stream ran the paper's
    (copy / "bench.json").write_text(json.dumps(info))
    (copy / "parts" / "lin_ts.npz").unlink()
    (copy / "results.npz").unlink()
    kept = (copy / "parts" / "oful.npz").stat().st_mtime_ns
    resumed = bench.run_bench(settings, copy, resume=True, progress=False)
    assert (copy / "parts" / "oful.npz").stat().st_mtime_ns == kept
    for k, v in result.data.items():
        np.testing.assert_array_equal(resumed.data[k], v)


def test_a_resume_naming_more_algorithms_adds_them_to_a_finished_benchmark(tiny, tmp_path):
    settings, _, result = tiny
    first = bench.make_settings(**{**TINY, "algorithms": ("oful",)})
    bench.run_bench(first, tmp_path, progress=False)
    kept = (tmp_path / "parts" / "oful.npz").stat().st_mtime_ns
    with pytest.raises(ValueError, match="holds a benchmark with other settings"):  # not one less
        bench.run_bench(bench.make_settings(**{**TINY, "algorithms": ("lin_ts",)}), tmp_path, resume=True)
    extended = bench.run_bench(settings, tmp_path, resume=True, progress=False)
    assert (tmp_path / "parts" / "oful.npz").stat().st_mtime_ns == kept
    for k, v in result.data.items():  # the same as running both at once
        np.testing.assert_array_equal(extended.data[k], v)
    info = json.loads((tmp_path / "bench.json").read_text())
    assert info["settings"]["algorithms"] == ["oful", "lin_ts"] and set(info["tuned"]) == {"oful", "lin_ts"}
    assert set(info["provenance"]["algorithms"]) == {"oful", "lin_ts"}


# --- the report's statistics against closed forms ---------------------------------------------------


def _synthetic(final, rounds=None, curve=None):
    """A result [algorithm, constants, noise, attack, seed, round] with the given final regrets."""
    if curve is None:
        curve = np.asarray(final, np.float64)[..., None]
        rounds = np.array([100])
    coords = {
        "algorithm": np.array(["oful", "cr_hvt_ucb"]),
        "constants": np.array(["theory", "tuned"]),
        "noise": np.array(["gaussian(ε=1)", "pareto(ε=0.5)", "pareto(ε=1)"]),
        "attack": np.array(["none", "flip C=10", "flip C=30"]),
        "seed": np.arange(curve.shape[4]),
        "round": rounds,
    }
    dims = ("algorithm", "constants", "noise", "attack", "seed", "round")
    info = {
        "settings": {"horizon": int(rounds[-1]), "seeds": [0], "tune_seeds": [1000]},
        "noises": [
            {"name": "gaussian(ε=1)", "family": "gaussian", "eps": 1.0, "nu": 1.0, "description": ""},
            {"name": "pareto(ε=0.5)", "family": "pareto", "eps": 0.5, "nu": 5.0, "description": ""},
            {"name": "pareto(ε=1)", "family": "pareto", "eps": 1.0, "nu": 4.0, "description": ""},
        ],
        "attacks": [
            {"name": "none", "adversary": "none", "C": 0.0},
            {"name": "flip C=10", "adversary": "flip", "C": 10.0},
            {"name": "flip C=30", "adversary": "flip", "C": 30.0},
        ],
    }
    return SweepResult(dims, coords, {"cumulative_regret": curve}), info


def test_ranking_and_paired_differences_match_hand_computed_values():
    rng = np.random.default_rng(0)
    final = rng.uniform(10, 20, size=(2, 2, 3, 3, 4))
    final[1] = final[0] - 1.0 - np.arange(4)  # CR better by 1, 2, 3, 4 on seeds 0..3, in every scenario
    res, _ = _synthetic(final)
    rows = bench_report.ranking(res, constants=1)
    assert [r["algorithm"] for r in rows] == ["cr_hvt_ucb", "oful"]
    per_seed = final[1, 1].mean(axis=(0, 1))
    assert rows[0]["mean"] == pytest.approx(per_seed.mean())
    assert rows[0]["stderr"] == pytest.approx(per_seed.std(ddof=1) / 2)
    assert rows[0]["wins"] == 9 and rows[0]["mean_rank"] == 1.0
    (pair,) = bench_report.paired(res, constants=1, reference="cr_hvt_ucb")
    assert pair["mean_difference"] == pytest.approx(2.5)
    assert pair["stderr"] == pytest.approx(np.std([1, 2, 3, 4], ddof=1) / 2)
    assert pair["seeds_better"] == 4 and pair["scenarios_better"] == 9 and pair["scenarios_worse"] == 0
    assert pair["scenarios_identical"] == 0


def _three(final):
    """A synthetic result of three algorithms: ``final`` `[3, constants, noise, attack, seed]`."""
    res, info = _synthetic(final[:2])
    coords = {**res.coords, "algorithm": np.array(["oful", "cr_hvt_ucb", "hvt_ucb"])}
    return SweepResult(res.dims, coords, {"cumulative_regret": np.asarray(final)[..., None]}), info


def test_mean_rank_and_mean_regret_are_both_computed_and_can_disagree():
    """OFUL is best by a little in 8 of 9 scenarios and far worse in one: first by mean rank, last by
    mean regret. Ties share their rank; a tie for the least regret splits the win."""
    final = np.zeros((3, 2, 3, 3, 4))
    final[0] = 10.0
    final[0, :, 2, 2] = 100.0  # one disastrous scenario
    final[1] = 11.0
    final[2] = 11.0  # Hvt-UCB ties CR-Hvt-UCB everywhere
    final[..., 1] += 0.5  # seeds differ, scenarios keep their order
    res, _ = _three(final)
    rows = {r["algorithm"]: r for r in bench_report.ranking(res, constants=1, resamples=200)}
    assert rows["oful"]["mean_rank"] == pytest.approx((8 * 1 + 3) / 9)
    assert rows["cr_hvt_ucb"]["mean_rank"] == pytest.approx((8 * 2.5 + 1.5) / 9)
    assert rows["oful"]["regret_rank"] == 3 and rows["cr_hvt_ucb"]["regret_rank"] == 1.5
    assert rows["oful"]["wins"] == 8 and rows["cr_hvt_ucb"]["wins"] == 0.5 == rows["hvt_ucb"]["wins"]
    assert bench_report.ranking(res, 1, resamples=200)[0]["algorithm"] == "oful"
    # behind the leader: the paired difference of mean ranks, its interval around it
    assert rows["oful"]["behind"] == 0.0
    assert rows["cr_hvt_ucb"]["behind"] == pytest.approx(
        rows["cr_hvt_ucb"]["mean_rank"] - rows["oful"]["mean_rank"]
    )
    assert (
        rows["cr_hvt_ucb"]["behind_low"] <= rows["cr_hvt_ucb"]["behind"] <= rows["cr_hvt_ucb"]["behind_high"]
    )


def test_rank_difference_interval_is_paired_and_covers_like_a_confidence_interval():
    """Two algorithms whose seed-means differ by a small constant in every scenario, with large seed
    effects shared by both (common random numbers): the paired interval is tight around the true
    difference of mean ranks (1: B always second) where independent intervals would overlap wholly."""
    rng = np.random.default_rng(5)
    seed_effect = rng.normal(0, 50, size=8)
    final = np.zeros((2, 2, 3, 3, 8))
    final[:] = 100 + seed_effect
    final[1] += 0.5 + rng.normal(0, 0.01, size=(2, 3, 3, 8))  # CR worse by 0.5, with a little noise
    res, _ = _synthetic(final)
    rows = {r["algorithm"]: r for r in bench_report.ranking(res, constants=1, resamples=300)}
    assert rows["cr_hvt_ucb"]["behind"] == 1.0
    assert rows["cr_hvt_ucb"]["behind_low"] == rows["cr_hvt_ucb"]["behind_high"] == 1.0


def test_chance_of_two_standard_errors_is_students_t():
    from scipy import stats

    for seeds in (5, 20, 200):
        assert bench_report.chance_beyond_two_se(seeds) == pytest.approx(stats.t(seeds - 1).sf(2.0), rel=1e-5)
    with pytest.raises(ValueError, match="seeds=1 is invalid"):
        bench_report.chance_beyond_two_se(1)


def test_subset_ranks_are_computed_per_family_and_per_level():
    """OFUL is best under Gaussian noise, CR-Hvt-UCB under Pareto: the pooled rank hides both."""
    final = np.zeros((2, 2, 3, 3, 4))
    final[0, :, 0] = 1.0  # oful: gaussian best
    final[1, :, 0] = 2.0
    final[0, :, 1:] = 2.0  # pareto: cr_hvt_ucb best
    final[1, :, 1:] = 1.0
    res, info = _synthetic(final)
    cols = bench_report.subset_ranks(res, info, 1)
    assert list(cols) == ["all", "gaussian", "pareto", "C = 0", "C = 10", "C = 30"]
    np.testing.assert_allclose(cols["gaussian"], [1.0, 2.0])
    np.testing.assert_allclose(cols["pareto"], [2.0, 1.0])
    np.testing.assert_allclose(cols["all"], [(3 * 1 + 6 * 2) / 9, (3 * 2 + 6 * 1) / 9])


def test_identical_algorithms_and_duplicate_scenarios_are_computed_and_counted_once():
    rng = np.random.default_rng(2)
    final = rng.uniform(10, 20, size=(3, 2, 3, 3, 4))
    final[2] = final[1]  # Hvt-UCB's runs are CR-Hvt-UCB's in every scenario...
    final[2, 0, 1, 0] += 1.0  # ...but one, with theory constants
    final[:, :, :, 2] = final[:, :, :, 1]  # attack "flip C=30" duplicates "flip C=10"
    res, info = _three(final)
    assert bench_report.duplicate_scenarios(res) == {"attack": [("flip C=10", "flip C=30")], "noise": []}
    kept = bench_report.distinct(res)
    assert kept.coords["attack"].tolist() == ["none", "flip C=10"]
    assert bench_report.identical_algorithms(kept, 0) == [
        {"pair": ("cr_hvt_ucb", "hvt_ucb"), "scenarios": 5, "of": 6}
    ]
    assert bench_report.identical_algorithms(kept, 1) == [
        {"pair": ("cr_hvt_ucb", "hvt_ucb"), "scenarios": 6, "of": 6}
    ]
    rows = {r["algorithm"]: r for r in bench_report.paired(kept, 1, "cr_hvt_ucb")}
    assert rows["hvt_ucb"]["scenarios_identical"] == 6 and np.isnan(rows["hvt_ucb"]["t"])
    info["settings"].update(seeds=[0, 1, 2, 3], tune_seeds=list(range(1000, 1010)), coarse_tuning=False)
    text = bench_report.markdown(res, info)
    assert "attack `flip C=30` gave runs bitwise identical to `flip C=10`" in text
    assert "| Hvt-UCB | identical runs in every scenario | — | — | — | 6/6 |" in text  # tuned: no "nan"
    assert "CR-Hvt-UCB and Hvt-UCB in 5 of 6 scenarios" in text and "| nan |" not in text
    assert "over all 6 distinct scenarios" in text


def test_frontier_and_eps_tables_select_the_right_cells():
    final = np.zeros((2, 2, 3, 3, 2))
    final[..., :, :, :] = (
        np.arange(3)[None, None, None, :, None] * 10.0 + np.arange(3)[None, None, :, None, None]
    )
    res, info = _synthetic(final)
    levels, mean, _ = bench_report.frontier(res, info, constants=1)["flip"]
    np.testing.assert_array_equal(levels, [0.0, 10.0, 30.0])
    np.testing.assert_allclose(mean[0], [1.0, 11.0, 21.0])  # averaged over the three noise settings
    eps, mean, _ = bench_report.versus_eps(res, info, constants=1)["pareto"]
    np.testing.assert_array_equal(eps, [0.5, 1.0])
    np.testing.assert_allclose(mean[0], [1.0, 2.0])  # the "none" attack only


def test_loglog_slope_recovers_a_power_law():
    rounds = np.array([10, 20, 50, 100, 200, 500, 1000])
    curve = np.empty((2, 2, 3, 3, 2, rounds.size))
    curve[...] = 3.0 * rounds**0.5
    curve[:, :, 1] = 2.0 * rounds ** (1 / 1.5)
    res, info = _synthetic(None, rounds, curve)
    slopes = bench_report.loglog_slopes(res, info, constants=1)
    assert slopes["gaussian(ε=1)"][1] == pytest.approx([0.5, 0.5])
    assert slopes["pareto(ε=0.5)"][1] == pytest.approx([2 / 3, 2 / 3])


# --- the command line -------------------------------------------------------------------------------


@pytest.mark.slow
def test_bench_command_line(tmp_path):
    out = tmp_path / "b"
    args = [sys.executable, "-m", "jaxbandit", "bench", "--quick", "--out", str(out), "--no-progress"]
    tiny = ["--horizon", "30", "--seeds", "2", "--tune-seeds", "1", "--algorithms", "cw_oful",
            "--noises", "gaussian", "empirical", "--adversaries", "none", "targeted"]  # fmt: skip
    env = cli_env()
    done = subprocess.run(args + tiny, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "## Ranking — tuned constants" in done.stdout
    assert (out / "report.md").exists() and (out / "frontier.png").exists()
    again = subprocess.run(args + tiny, capture_output=True, text=True, env=env, timeout=600)
    assert again.returncode == 2 and "pass --resume" in again.stderr
    bad = subprocess.run(
        args + ["--adversaries", "evil"], capture_output=True, text=True, env=env, timeout=600
    )
    assert bad.returncode == 2
    assert "error: adversaries=['evil'] is invalid: choose from ['none', 'flip'" in bad.stderr


def test_a_radius_curve_flat_within_one_standard_error_is_reported_flat(tmp_path):
    """OFUL's tuning curve: 10 of 17 radii within their s.e. of the best is flat; CR-Hvt-UCB's curve
    (its α held at the grid's middle, 8, during the radius search; the α rows not part of it) with 3
    within is resolved."""
    (tmp_path / "tuning").mkdir()
    radii = protocol.RADIUS_GRID
    oful = {
        json.dumps({protocol.RADIUS: r}): [100.0 + (5.0 if i < 7 else 0.5), 1.0] for i, r in enumerate(radii)
    }
    cr = {
        json.dumps({protocol.RADIUS: r, "alpha": 8.0}): [100.0 + (0.0 if i < 3 else 50.0), 1.0]
        for i, r in enumerate(radii)
    }
    cr[json.dumps({protocol.RADIUS: radii[0], "alpha": 2.0})] = [100.0, 1.0]  # the alpha search: not counted
    (tmp_path / "tuning" / "oful.json").write_text(json.dumps(oful))
    (tmp_path / "tuning" / "cr_hvt_ucb.json").write_text(json.dumps(cr))
    curves = bench_report.radius_curves(tmp_path, {"tuned": {"oful": {}, "cr_hvt_ucb": {}, "crt": {}}})
    assert curves["oful"] == {"values": 17, "within": 10, "flat": True}
    assert curves["cr_hvt_ucb"] == {"values": 17, "within": 3, "flat": False}
    assert "crt" not in curves  # no tuning file
