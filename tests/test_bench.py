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

import jaxbandit as jb
from jaxbandit import cli
from jaxbandit.core.dtypes import float_dtype
from jaxbandit.experiments import bench
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
        jb.corruption.targeted(3.0),
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


# --- settings and bad input -------------------------------------------------------------------------


def test_the_quick_benchmark_tunes_on_every_other_grid_value_and_both_ends():
    full = jb.registry.algorithm("cr_hvt_ucb").grid
    coarse = bench.run.tuning_grid("cr_hvt_ucb", coarse=True)
    for name, values in full.items():
        want = sorted(set(values[::2]) | {values[-1]})
        np.testing.assert_array_equal(coarse[name], want)
    assert {n: list(v) for n, v in bench.run.tuning_grid("oful", coarse=False).items()} == {
        n: list(v) for n, v in jb.registry.algorithm("oful").grid.items()
    }


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
    fam = jb.noise.gaussian(1.0) if noise.family == "gaussian" else jb.noise.student_t(2.0 + noise.eps)
    adv = jb.corruption.none() if attack.adversary == "none" else jb.corruption.flip(attack.C)
    return jb.envs.linear(bench.settings.DIM, bench.settings.NUM_ARMS, noise=fam, corruption=adv)


# The runs checked one by one against jb.simulate (each scenario compiles one program per algorithm);
# LinTS rides along in the benchmark itself, its keyed selection covered by the sweep's own tests.
SEPARATELY_CHECKED = ("oful",)


@functools.cache
def _separate_runs(method: str, noise_index: int, attack_index: int):
    """Final regret of ``method`` in one scenario of TINY with its one free constant at the theory value
    and at every value of its grid, on the reported and the tuning seeds, run by jb.simulate (not
    jb.sweep): ``(values [V], seeds [S], final regret [V, S])``, float64 sums of the per-round regret."""
    settings = bench.make_settings(**TINY)
    scen = bench.scenarios(settings)
    noise, attack = scen.noises[noise_index], scen.attacks[attack_index]
    spec = jb.registry.algorithm(method)
    (name,) = spec.grid
    problem = jb.registry.Problem(settings.horizon, 10, eps=noise.eps, nu=noise.nu, corruption=attack.C)
    env = _scenario_env(noise, attack)
    grid = bench.run.tuning_grid(method, settings.coarse_tuning)[name]
    values = np.array([spec.theory(problem)[name], *grid])
    seeds = np.array(settings.seeds + settings.tune_seeds)

    def regret(v, seed):
        key = jax.random.fold_in(jax.random.key(0), seed)
        return jb.simulate(spec.build(problem, {name: v}), env, key, settings.horizon).regret

    run = jax.jit(jax.vmap(jax.vmap(regret, (None, 0)), (0, None)))
    per_round = run(jnp.asarray(values, float_dtype()), jnp.asarray(seeds))
    return values, seeds, np.asarray(per_round, np.float64).sum(axis=-1)


def test_tuning_picks_the_best_grid_value_of_separate_runs(tiny):
    settings, out, _ = tiny
    scen = bench.scenarios(settings)
    info = json.loads((out / "bench.json").read_text())
    for method in SEPARATELY_CHECKED:
        (name,) = jb.registry.algorithm(method).grid
        finals = []
        for n in range(len(scen.noises)):
            for k in range(len(scen.attacks)):
                values, seeds, final = _separate_runs(method, n, k)
                finals.append(final[1:, np.isin(seeds, settings.tune_seeds)])
        per_value = np.mean(finals, axis=(0, 2))  # over scenarios and tuning seeds
        assert info["tuned"][method] == {name: pytest.approx(values[1 + int(np.argmin(per_value))])}


def test_report_rows_are_the_runs_with_theory_and_tuned_constants(tiny):
    settings, out, result = tiny
    scen = bench.scenarios(settings)
    info = json.loads((out / "bench.json").read_text())
    assert result.dims == ("algorithm", "constants", "noise", "attack", "seed", "round")
    assert result.coords["round"][-1] == settings.horizon
    np.testing.assert_array_equal(result.coords["seed"], settings.seeds)
    for method in SEPARATELY_CHECKED:
        a = settings.algorithms.index(method)
        ((_, tuned),) = info["tuned"][method].items()
        for n in range(len(scen.noises)):
            for k in range(len(scen.attacks)):
                values, seeds, final = _separate_runs(method, n, k)
                rows = [0, 1 + int(np.flatnonzero(np.isclose(values[1:], tuned))[0])]
                want = final[rows][:, np.isin(seeds, settings.seeds)]
                np.testing.assert_allclose(result.cumulative_regret[a, :, n, k, :, -1], want, rtol=1e-4)


def test_output_files_and_the_results_dataset(tiny, tmp_path):
    settings, out, result = tiny
    for name in ("bench.json", "results.npz", "results.json", "report.md", "frontier.png"):
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
    (copy / "bench.json").write_text(json.dumps(info))
    (copy / "parts" / "lin_ts.npz").unlink()
    (copy / "results.npz").unlink()
    kept = (copy / "parts" / "oful.npz").stat().st_mtime_ns
    resumed = bench.run_bench(settings, copy, resume=True, progress=False)
    assert (copy / "parts" / "oful.npz").stat().st_mtime_ns == kept
    for k, v in result.data.items():
        np.testing.assert_array_equal(resumed.data[k], v)


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
    done = subprocess.run(args + tiny, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "## Ranking — tuned constants" in done.stdout
    assert (out / "report.md").exists() and (out / "frontier.png").exists()
    again = subprocess.run(args + tiny, capture_output=True, text=True, timeout=600)
    assert again.returncode == 2 and "pass --resume" in again.stderr
    bad = subprocess.run(args + ["--adversaries", "evil"], capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2
    assert "error: adversaries=['evil'] is invalid: choose from ['none', 'flip'" in bad.stderr
