"""The scaling experiment (``python -m jaxbandit scaling``): its fits against closed forms and synthetic
data with a known exponent, its argument checks, its plan of sweeps, and a tiny end-to-end CLI run."""

import json
import math
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest
from conftest import cli_env

import jaxbandit as jb
from jaxbandit import cli
from jaxbandit.experiments import scaling
from jaxbandit.experiments.bench import protocol
from jaxbandit.experiments.figure1 import load_tuned
from jaxbandit.experiments.figure1.settings import TUNE_SEEDS
from jaxbandit.experiments.scaling import fit as F
from jaxbandit.experiments.scaling import settings as S
from jaxbandit.experiments.scaling import tuning as T

# --- fits: closed forms ------------------------------------------------------------------------------


def test_loglog_fit_recovers_an_exact_power_law_and_its_interval_collapses():
    """Y = A x^b f_s: every seed mean is A x^b mean(f), so the slope is b exactly; the seed factors are
    the same at every x, and seeds are resampled jointly across x, so every resample's slope is b too."""
    x = np.array([250.0, 500.0, 1000.0, 2000.0])
    b, A = 0.62, 3.5
    f = np.array([0.5, 1.0, 2.0, 4.0, 1.3])
    Y = A * x[:, None] ** b * f[None, :]
    out = F.loglog_fit(x, Y, resamples=300)
    assert out.slope == pytest.approx(b, abs=1e-12)
    assert out.intercept == pytest.approx(math.log(A * f.mean()), abs=1e-12)
    assert out.ci_low == pytest.approx(b, abs=1e-12) and out.ci_high == pytest.approx(b, abs=1e-12)
    assert out.valid_resamples == 300 and out.seeds == 5
    assert out.x == tuple(x) and out.mean == pytest.approx(tuple(A * x**b * f.mean()))


def test_linear_fit_recovers_an_exact_line_and_its_interval_collapses():
    x = np.array([0.0, 25.0, 50.0, 100.0, 200.0])
    alpha, gamma = 40.0, 0.75
    offsets = np.array([-3.0, 0.0, 5.0, 11.0])  # per seed, the same at every C
    Y = alpha + gamma * x[:, None] + offsets[None, :]
    out = F.linear_fit(x, Y, resamples=300)
    assert out.slope == pytest.approx(gamma, abs=1e-12)
    assert out.intercept == pytest.approx(alpha + offsets.mean(), abs=1e-10)
    assert (out.ci_low, out.ci_high) == pytest.approx((gamma, gamma), abs=1e-12)


def test_excess_fit_takes_per_seed_differences_and_leaves_out_non_positive_excess():
    x = np.array([0.0, 10.0, 20.0, 40.0, 80.0])
    b, k = 0.8, 2.0
    base = np.array([100.0, 150.0, 90.0])  # R(0) per seed, very different
    excess = k * x**b
    excess[1] = -5.0  # a budget where corruption happened to help on average: left out
    Y = base[None, :] + excess[:, None]
    out = F.excess_loglog_fit(x, Y, resamples=300)
    assert out.x == (20.0, 40.0, 80.0)
    assert out.slope == pytest.approx(b, abs=1e-12)
    assert out.intercept == pytest.approx(math.log(k), abs=1e-12)
    assert (out.ci_low, out.ci_high) == pytest.approx((b, b), abs=1e-12)


def test_compare_places_a_value_below_inside_or_above_the_interval():
    x = np.array([1.0, 2.0, 4.0])
    out = F.loglog_fit(x, np.stack([x**0.5, x**0.5]).T, resamples=100)
    assert out.compare(0.7) == "below" and out.compare(0.5) == "contains" and out.compare(0.3) == "above"
    assert out.contains(0.5) and not out.contains(0.7)


# --- fits: coverage on synthetic noise --------------------------------------------------------------


def test_bootstrap_interval_covers_a_known_exponent_at_about_its_level():
    """Y[i, s] = A x_i^b exp(σ z_is), independent log-normal noise: the seed mean's logarithm has slope b
    in expectation. Over 200 synthetic data sets (fixed NumPy seed) the 95 % interval should cover b in
    about 95 % of them; a percentile bootstrap with 30 seeds under-covers slightly, hence [0.88, 0.99]."""
    rng = np.random.default_rng(20261126)
    x = np.array([250.0, 500.0, 1000.0, 2000.0, 4000.0])
    b, A, sigma = 0.7, 2.0, 0.5
    reps, covered, widths = 200, 0, []
    for r in range(reps):
        Y = A * x[:, None] ** b * np.exp(sigma * rng.standard_normal((x.size, 30)))
        out = F.loglog_fit(x, Y, resamples=500, seed=r)
        covered += out.contains(b)
        widths.append(out.ci_high - out.ci_low)
    assert 0.88 <= covered / reps <= 0.99
    # and the interval is informative: its width is a fraction of the exponent
    assert 0.0 < np.median(widths) < 0.3


def test_linear_interval_covers_a_known_slope_at_about_its_level():
    rng = np.random.default_rng(7)
    x = np.array([0.0, 50.0, 100.0, 200.0, 400.0])
    reps, covered = 200, 0
    for r in range(reps):
        Y = 30.0 + 0.4 * x[:, None] + 20.0 * rng.standard_normal((x.size, 25))
        covered += F.linear_fit(x, Y, resamples=500, seed=r).contains(0.4)
    assert 0.88 <= covered / reps <= 0.99


# --- fits: a power law with curvature ----------------------------------------------------------------


def curved(T, p=0.5, b=3.0, a=2.0):
    """R(T) = a·T^p·(1 + b/log T): its log–log slope p − b/(log T·(log T + b)) rises to p as T grows."""
    L = np.log(T)
    return a * T**p * (1.0 + b / L)


def test_local_slopes_are_the_closed_form_secants_of_a_curved_power_law():
    T = np.array([500.0, 1000.0, 2000.0, 4000.0, 8000.0, 16000.0])
    f = np.array([0.8, 1.0, 1.3])  # per-seed factors, the same at every T
    Y = curved(T)[:, None] * f[None, :]
    L = np.log(T)
    secant = 0.5 + np.diff(np.log1p(3.0 / L)) / np.diff(L)  # log(1 + b/L) between neighbours
    np.testing.assert_allclose(F.local_slopes(T, Y), secant, rtol=1e-12)
    assert np.all(np.diff(secant) > 0) and np.all(secant < 0.5)  # still curving up to p = 0.5


def test_the_late_window_fit_its_neighbours_and_the_interval_that_covers_them():
    T = np.array([500.0, 1000.0, 2000.0, 4000.0, 8000.0, 16000.0])
    Y = curved(T)[:, None] * np.array([0.8, 1.0, 1.3])[None, :]
    out = F.window_fit(T, Y, resamples=200)
    logT, logR = np.log(T), np.log(curved(T))

    def ls(a, b):  # independent least squares over points a..b-1
        return np.polyfit(logT[a:b], logR[a:b], 1)[0]

    assert out.late.x == tuple(T[3:]) and out.slope == pytest.approx(ls(3, 6), abs=1e-12)
    assert [w.x for w in out.windows] == [tuple(T[3:]), tuple(T[2:5]), tuple(T[2:])]
    # seeds differ by a constant factor: every bootstrap interval is a point, so the interval is the
    # window sensitivity alone
    slopes = [ls(3, 6), ls(2, 5), ls(2, 6)]
    assert (out.ci_low, out.ci_high) == pytest.approx((min(slopes), max(slopes)), abs=1e-12)
    assert out.whole.slope == pytest.approx(ls(0, 6), abs=1e-12)
    # the late window is nearer the exponent than the whole range, and both lie below it
    assert out.whole.slope < out.slope < 0.5
    assert out.compare(0.5) == "below" and out.compare(out.slope) == "contains"
    assert out.as_dict()["local"] == pytest.approx(list(F.local_slopes(T, Y)))


def test_the_window_interval_holds_the_late_windows_bootstrap_interval_with_noise():
    rng = np.random.default_rng(5)
    T = np.array([250.0, 500.0, 1000.0, 2000.0])
    Y = curved(T)[:, None] * np.exp(0.3 * rng.standard_normal((4, 20)))
    out = F.window_fit(T, Y, resamples=300)
    assert out.ci_low <= out.late.ci_low <= out.late.slope <= out.late.ci_high <= out.ci_high
    assert len(out.windows) == 3 and len(out.local) == 3
    few = F.window_fit(T[:3], Y[:3], resamples=300)  # no neighbours: the late window is every point
    assert len(few.windows) == 1 and (few.ci_low, few.ci_high) == (few.late.ci_low, few.late.ci_high)
    with pytest.raises(ValueError, match="ascending"):
        F.window_fit(T[::-1], Y[::-1], resamples=300)


@pytest.mark.parametrize(
    "x, Y, match",
    [
        ([1.0, 2.0], np.ones((3, 4)), "x must be 1-D"),
        ([1.0, 2.0], np.ones((2, 1)), "at least 2"),
        ([2.0, 2.0], np.ones((2, 4)), "2 distinct grid points"),
        ([0.0, 2.0], np.ones((2, 4)), "every x > 0"),
        ([1.0, 2.0], np.zeros((2, 4)), "must all be > 0"),
        ([1.0, np.nan], np.ones((2, 4)), "finite"),
    ],
)
def test_loglog_fit_rejects_bad_input(x, Y, match):
    with pytest.raises(ValueError, match=match):
        F.loglog_fit(x, Y, resamples=100)


def test_fit_options_and_excess_grid_are_checked():
    with pytest.raises(ValueError, match="resamples"):
        F.linear_fit([0.0, 1.0], np.ones((2, 3)), resamples=10)
    with pytest.raises(ValueError, match="level"):
        F.linear_fit([0.0, 1.0], np.ones((2, 3)), level=1.5)
    with pytest.raises(ValueError, match="hold 0"):
        F.excess_loglog_fit([1.0, 2.0, 3.0], np.ones((3, 3)))
    with pytest.raises(ValueError, match="positive mean excess"):
        F.excess_loglog_fit([0.0, 1.0, 2.0], np.ones((3, 3)))


# --- settings, plan and argument checks -------------------------------------------------------------


def _run_fails(match, **kwargs):
    with pytest.raises(ValueError, match=match):
        scaling.run(True, "/nonexistent/never-written", progress=False, verbose=False, **kwargs)


def test_unknown_algorithm_lists_the_registered_names():
    with pytest.raises(ValueError) as err:
        scaling.run(True, algorithms=["oful", "no_such_ucb"], progress=False, verbose=False)
    assert "no_such_ucb" in str(err.value)
    for name in jb.registry.names():
        assert name in str(err.value)
    _run_fails("a name is given twice", algorithms=["oful", "oful"])


def test_default_algorithms_are_the_registry():
    assert S.check_algorithms(None) == jb.registry.names()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"seeds": 1}, "seeds=1 is invalid"),
        ({"seeds": 0}, "seeds=0 is invalid"),
        ({"seeds": 2000}, "tuning seeds"),
        ({"horizons": [500]}, "horizons=.* at least 2"),
        ({"horizons": [2, 500]}, r"horizons=.* in \[4, inf\]"),
        ({"horizons": [500, 500]}, "horizons=.* distinct"),
        ({"horizons": [500, 1000.5]}, "horizons=.* integers"),
        ({"horizons": "500,1000"}, "horizons=.* integers"),
        ({"eps": [0.0, 1.0]}, r"eps=.* \(0, 1\]"),
        ({"eps": [1.5]}, r"eps=.* \(0, 1\]"),
        ({"budgets": [10.0, 20.0]}, "must include 0"),
        ({"budgets": [0.0, -1.0]}, "budgets=.*"),
        ({"dims": [0, 10]}, r"dims=.* in \[1, inf\]"),
        ({"linear_cost_max_horizon": 100}, "linear_cost_max_horizon=100 is invalid"),
        ({"tune_horizons": [2]}, r"tune_horizons=.* in \[4, inf\]"),
        ({"tune_horizons": [400, 400]}, "tune_horizons=.* distinct"),
    ],
)
def test_bad_grids_raise_before_anything_runs(kwargs, match):
    _run_fails(match, **kwargs)


def test_out_must_be_a_directory(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ValueError, match="not a directory"):
        scaling.run(True, f, progress=False, verbose=False)


def test_plan_runs_each_algorithm_per_horizon_and_dimension_with_the_cap_on_linear_cost():
    plan = S.override(scaling.QUICK, horizons=(100, 200, 400, 800), linear_cost_max_horizon=200)
    assert plan.corruption_horizon == 200 and plan.dim_horizon == 200  # moved into the new grid
    jobs = scaling.plan_jobs(plan, jb.registry.names())
    for name, spec in jb.registry.algorithms().items():
        mine = [j for j in jobs if j.method == name]
        at_base = sorted(j.horizon for j in mine if j.dim == S.DIM)
        expected = [t for t in plan.horizons if spec.cost != "O(t)" or t <= 200]
        assert at_base == expected, name
        others = sorted(j.dim for j in mine if j.dim != S.DIM)
        assert others == [d for d in plan.dims if d != S.DIM]
        assert all(j.horizon == plan.dim_horizon for j in mine if j.dim != S.DIM)
        for j in mine:  # the whole C grid only where part (b) is measured
            full = j.horizon == plan.corruption_horizon and j.dim == S.DIM
            assert j.budgets == (plan.budgets if full else (0.0,))
    assert len(set(jobs)) == len(jobs)


def test_quick_fits_at_least_four_horizons_for_every_algorithm():
    for spec in jb.registry.algorithms().values():
        assert len(scaling.QUICK.horizons_for(spec)) >= 4, spec.name
        assert len(scaling.FULL.horizons_for(spec)) >= 4, spec.name


def test_plan_override_checks_fields():
    with pytest.raises(ValueError, match="not a field"):
        S.override(scaling.QUICK, colour=3)
    assert S.override(scaling.QUICK) == S.check_plan(scaling.QUICK)
    for plan in (scaling.QUICK, scaling.FULL):
        assert S.check_plan(plan) == plan
        assert plan.dim_horizon in plan.horizons and plan.corruption_horizon in plan.horizons


def test_noise_is_as_heavy_as_eps_allows_and_nu_bounds_its_moment():
    for eps in (0.1, 0.2, 0.4, 0.7, 1.0):
        family = S.noise(eps)
        assert float(family.max_order) == pytest.approx(1.0 + eps + S.TAIL_MARGIN)
        nu = float(S.moment_bound(eps))
        shape = 1.0 + eps + S.TAIL_MARGIN
        assert nu >= float(family.moment_bound(eps)) * (1 - 1e-6)
        assert nu >= float(jb.noise.raw_pareto_moment_bound(shape, 1.0, eps)) * (1 - 1e-6)
    # the paper's setting: ε = 0.4, Pareto(1.5), ν = 15^{1/1.4}
    assert float(S.moment_bound(0.4)) == pytest.approx(15 ** (1 / 1.4), rel=1e-5)


def _final_regrets(method, horizon, settings, seeds, dim=S.DIM):
    """Final regret `[setting, seed]` of ``method`` at C = 0 for each ``(eps, values)`` of ``settings``
    (its own constants, absolute, registry-grid names): one direct sweep over a traced row index,
    nothing of the tuning's bookkeeping."""
    spec = jb.registry.algorithm(method)
    names = tuple(spec.grid)
    eps = jnp.asarray([e for e, _ in settings])
    table = jnp.asarray([[v[n] for n in names] for _, v in settings])

    def make(p):
        e = eps[jnp.asarray(p["row"]).astype(jnp.int32)]
        prob = jb.registry.Problem(horizon, dim, eps=e, nu=S.moment_bound(e), corruption=0.0)
        return spec.build(prob, dict(zip(names, table[jnp.asarray(p["row"]).astype(jnp.int32)])))

    def env(p):
        return S.environment(dim)({"eps": eps[jnp.asarray(p["row"]).astype(jnp.int32)], "C": 0.0})

    grid = {"row": [float(i) for i in range(len(settings))]}
    res = jb.sweep(make, env, grid, horizon=horizon, seeds=seeds, progress=False)
    return np.asarray(res.final_regret, np.float64).reshape(len(settings), len(seeds))


def test_scaling_tuning_chooses_the_least_regret_of_an_independent_sweep():
    """Every setting the search evaluated, recomputed by a direct sweep with absolute constants (the
    radius as the multiple × its theory value at that T and ε), and the choice is the least of them."""
    horizon, eps = 24, 0.6
    entry = T.tune_one("oful", horizon, eps)
    spec = jb.registry.algorithm("oful")
    prob = jb.registry.Problem(horizon, S.DIM, eps=eps, nu=S.moment_bound(eps), corruption=0.0)
    theory = float(spec.theory(prob)["beta_scale"])
    assert entry["budget"] == len(entry["rows"]) >= protocol.base_budget("oful")
    rows = entry["rows"]
    settings = [(eps, {"beta_scale": r["beta_scale"] * theory, "lam": r["lam"]}) for r in rows]
    direct = _final_regrets("oful", horizon, settings, list(TUNE_SEEDS))
    for row, final in zip(rows, direct):
        assert row["mean"] == pytest.approx(final.mean(), rel=1e-5)
        assert row["stderr"] == pytest.approx(final.std(ddof=1) / math.sqrt(final.size), rel=1e-4)
    least = min(entry["rows"], key=lambda r: r["mean"])
    assert entry["best"] == {"beta_scale": least["beta_scale"], "lam": least["lam"]}


def _tuning_file(path, plan, methods):
    """A scaling tuning file with a different, known point per (method, tuning horizon, ε)."""
    data = {"format": T.FORMAT, "setting": T.setting(), "methods": {}}
    for m in methods:
        for i, horizon in enumerate(T.tune_horizons_for(plan, m)):
            for j, e in enumerate(plan.eps):
                point = {"beta_scale": 10.0 ** -(1 + i + 2 * j), "lam": 0.5 + i + j}
                row = {**point, "axis": "beta_scale", "mean": 1.0, "stderr": 0.1}
                entry = {"best": point, "rows": [row], "edges": {}, "budget": 1, "seconds": 0.0}
                entry["radius_curve"] = {"values": 1, "within": 1, "flat": False}
                data["methods"].setdefault(m, {}).setdefault(str(horizon), {})[f"{e:g}"] = entry
    path.write_text(json.dumps(data))
    return data


def test_each_tuned_variant_runs_the_point_chosen_for_its_eps_at_every_horizon(tmp_path):
    """A tuning file with a distinct point per horizon and ε: the run's ``tuned@T`` regret at every
    (ε, horizon) is a direct sweep with that point (its radius multiple × the theory radius of the run's
    own T); an O(t) algorithm has no set for a tuning horizon beyond its cap (NaN, no fit)."""
    kw = dict(horizons=(20, 40), eps=(0.5, 1.0), budgets=(0.0,), dims=(10,), seeds=2)
    plan = S.override(scaling.QUICK, tune_horizons=(20, 40), linear_cost_max_horizon=20, **kw)
    _tuning_file(tmp_path / "given.json", plan, ("oful", "tofu"))
    out = tmp_path / "run"
    result = scaling.run(
        True, out, algorithms=["oful", "tofu"], tune_horizons=(20, 40), linear_cost_max_horizon=20,
        tuned_file=tmp_path / "given.json", workers=1, progress=False, verbose=False, **kw,
    )  # fmt: skip
    assert result.data["settings"]["variants"] == ["theory", "tuned@20", "tuned@40"]
    assert json.loads((out / "tuning.json").read_text())["methods"].keys() == {"oful", "tofu"}
    for m, horizons in (("oful", (20, 40)), ("tofu", (20,))):
        spec = jb.registry.algorithm(m)
        for k, horizon in enumerate(plan.horizons_for(spec)):
            cells, settings = [], []
            for i, tuned_at in enumerate((20, 40)):
                for j, e in enumerate(plan.eps):
                    got = result.arrays[f"T/{m}"][1 + i, j, k]
                    if tuned_at not in horizons:
                        assert np.all(np.isnan(got))
                        continue
                    prob = jb.registry.Problem(horizon, S.DIM, eps=e, nu=S.moment_bound(e), corruption=0.0)
                    radius = 10.0 ** -(1 + i + 2 * j) * float(spec.theory(prob)["beta_scale"])
                    cells.append(got)
                    settings.append((e, {"beta_scale": radius, "lam": 0.5 + i + j}))
            np.testing.assert_allclose(cells, _final_regrets(m, horizon, settings, [0, 1]), rtol=1e-5)
    assert {(r["algorithm"], r["constants"]) for r in result.data["fits"]} == {
        ("oful", "theory"), ("oful", "tuned@20"), ("oful", "tuned@40"), ("tofu", "theory"),
        ("tofu", "tuned@20"),
    }  # fmt: skip


def test_tuning_refuses_a_bad_plan_or_algorithm_before_running(tmp_path):
    with pytest.raises(ValueError, match=r"tune_horizons=.* in \[4, inf\]"):
        T.tune(scaling.QUICK._replace(tune_horizons=(2,)), ["oful"], tmp_path / "t.json")
    with pytest.raises(ValueError, match="no_such_ucb"):
        T.tune(scaling.QUICK, ["no_such_ucb"], tmp_path / "t.json")
    with pytest.raises(ValueError, match="width=0 is invalid"):
        protocol.batches([1.0], 0)
    assert not (tmp_path / "t.json").exists()


def test_a_tuning_file_of_another_format_or_setting_is_refused_by_name(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(ValueError, match=r"tuned_file=.*bad.json.* not a jaxbandit-scaling-tuning"):
        T.load(bad)
    data = _tuning_file(tmp_path / "other.json", scaling.QUICK, ("oful",))
    data["setting"]["tune_seeds"] = [0, 1]
    (tmp_path / "other.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"tuned_file=.*other.json.* tuned under another setting"):
        T.load(tmp_path / "other.json")
    bad.write_text("not json")
    with pytest.raises(ValueError, match=r"tuned_file=.* not a readable JSON file"):
        T.load(bad)
    data = _tuning_file(tmp_path / "damaged.json", scaling.QUICK, ("oful",))
    assert T.load(tmp_path / "damaged.json")["methods"].keys() == {"oful"}
    for damage in ("nan", "-1", '"x"', "missing"):
        broken = json.loads(json.dumps(data))
        best = broken["methods"]["oful"]["400"]["0.4"]["best"]
        if damage == "missing":
            del best["lam"]
        else:
            best["lam"] = json.loads(damage) if damage != "nan" else float("nan")
        (tmp_path / "damaged.json").write_text(json.dumps(broken))
        with pytest.raises(ValueError, match=r"tuned_file=.*damaged.json.* invalid at oful/400/0.4"):
            T.load(tmp_path / "damaged.json")


def test_the_deprecated_tuned_constants_still_read_figure1s_pareto_setting():
    data = load_tuned()
    for name in jb.registry.names():
        with pytest.warns(DeprecationWarning, match="tunes its own constants"):
            values, note = scaling.tuned_constants(data, name)
        best = data["methods"][name]["noise"]["pareto"]["best"]
        assert values == tuple(float(best[k]) for k in jb.registry.algorithm(name).grid)
        assert "unchanged" in note
    without = {"methods": {k: v for k, v in data["methods"].items() if k != "oful"}}
    with pytest.warns(DeprecationWarning):
        values, note = scaling.tuned_constants(without, "oful")
    assert values is None and "theory constants only" in note


def test_random_play_regret_against_an_independent_monte_carlo():
    rng = np.random.default_rng(3)
    for d in (3, 10):
        theta = np.zeros(d)
        theta[0] = 1.0
        X = rng.standard_normal((40000, 20, d))
        X /= np.linalg.norm(X, axis=-1, keepdims=True)
        direct = (X @ theta).max(axis=1)
        mean, se = scaling.random_play_regret([d], samples=40000, seed=1)[d]
        assert abs(mean - direct.mean()) < 5 * math.hypot(se, direct.std() / math.sqrt(direct.size))
    # d = 1: x = ±1, so the best of 20 is 1 unless all 20 are −1
    assert scaling.random_play_regret([1], samples=1000)[1][0] == pytest.approx(1.0, abs=1e-12)


# --- CLI ---------------------------------------------------------------------------------------------


def test_cli_errors_are_one_line_with_status_2(capsys):
    assert cli.main(["scaling", "--algorithms", "nope", "--quick", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: algorithms=['nope'] is invalid: choose from") and "\n" not in err
    assert "cr_hvt_ucb" in err
    assert cli.main(["scaling", "--quick", "--seeds", "1", "--no-progress"]) == 2
    assert "seeds=1 is invalid" in capsys.readouterr().err
    assert cli.main(["scaling", "--theory-only", "--tune-horizons", "30", "--no-progress"]) == 2
    assert "tune_horizons=(30,) is invalid with --theory-only" in capsys.readouterr().err
    for bad in (["--horizons", "100,x"], ["--seeds", "0"], ["--dims", ""]):
        with pytest.raises(SystemExit) as exit_:
            cli.main(["scaling", *bad])
        assert exit_.value.code == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error:") and "\n" not in err


@pytest.mark.slow
def test_cli_end_to_end_writes_the_fits_report_and_figures(tmp_path):
    env = cli_env()
    args = ["--algorithms", "oful", "--horizons", "30,60", "--eps", "0.5,1", "--budgets", "0,5,10"]
    args += ["--dims", "5,10", "--seeds", "3", "--tune-horizons", "30,60", "--out", str(tmp_path)]
    args += ["--no-progress"]
    proc = subprocess.run(
        [sys.executable, "-m", "jaxbandit", "scaling", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in ("scaling.json", "scaling.md", "results_T.npz", "results_C.npz", "results_d.npz"):
        assert (tmp_path / name).is_file()
    for part in ("T", "C", "d"):
        assert (tmp_path / f"scaling_{part}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads((tmp_path / "scaling.json").read_text())
    assert list(data["algorithms"]) == ["oful"]
    assert data["algorithms"]["oful"]["module"] == "jaxbandit.agents.oful"  # provenance
    assert data["settings"]["plan"]["horizons"] == [30, 60]
    rows = data["fits"]
    assert {(r["constants"], r["eps"]) for r in rows} == {
        (v, e) for v in ("theory", "tuned@30", "tuned@60") for e in (0.5, 1.0)
    }
    for r in rows:
        f = r["T"]
        assert math.isfinite(f["slope"]) and f["ci_low"] <= f["slope"] <= f["ci_high"]
        assert len(f["local"]) == 1 and f["late"]["x"] == [30.0, 60.0]  # two horizons: one window
        assert len(r["C"]["added_per_unit"]) == 2
        assert f["theory"] == pytest.approx(1 / (1 + r["eps"]))
        assert f["x"] == [30.0, 60.0] and f["seeds"] == 3
        assert math.isfinite(r["C"]["linear"]["slope"]) and math.isfinite(r["d"]["slope"])
    for key in ("versions", "device", "wall_seconds", "fit_method", "theory"):
        assert key in data
    res = jb.SweepResult.load(tmp_path / "results_T.npz")
    assert res.dims == ("algorithm", "constants", "eps", "seed", "round")
    assert res.coords["round"].tolist() == [30, 60] and res.coords["constants"].tolist() == [
        "theory",
        "tuned@30",
        "tuned@60",
    ]
    tuning = json.loads((tmp_path / "tuning.json").read_text())
    assert set(tuning["methods"]["oful"]) == {"30", "60"} and set(tuning["methods"]["oful"]["30"]) == {
        "0.5",
        "1",
    }
    assert np.all(np.isfinite(res.cumulative_regret)) and np.all(res.cumulative_regret >= 0)
    C = jb.SweepResult.load(tmp_path / "results_C.npz")
    assert C.dims == ("algorithm", "constants", "eps", "C", "seed", "round") and C.coords[
        "round"
    ].tolist() == [60]
    assert np.all(C.corruption_spent <= C.coords["C"][:, None, None] + 1e-3)
    d = jb.SweepResult.load(tmp_path / "results_d.npz")
    assert d.dims == ("algorithm", "constants", "eps", "dim", "seed", "round")
    # one result format: the plot command opens each part, npz and netCDF
    for part in ("T", "C", "d"):
        assert cli.run_plot(tmp_path / f"results_{part}.npz").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        if (tmp_path / f"results_{part}.nc").exists():
            cli.run_plot(tmp_path / f"results_{part}.nc", tmp_path / f"nc_{part}.png")
    md = (tmp_path / "scaling.md").read_text()
    assert "Where the theory's shape holds" in md and "OFUL" in md
    # the report is a function of the JSON alone: redrawn from the files, it is the same text
    scaling.rewrite(tmp_path)
    assert (tmp_path / "scaling.md").read_text() == md


def test_identical_runs_are_counted_per_cell_with_the_grid_values_where_they_differ():
    """[variant, eps, grid, seed]: b equals a except at C = 20 (one seed), c never equals either; NaN
    cells (not run) are not counted."""
    rng = np.random.default_rng(0)
    base = rng.uniform(1, 2, size=(2, 2, 3, 4))
    base[1, :, 2] = np.nan  # the tuned variant did not run at the third grid point
    arrays = {
        "horizons": np.array([100, 200, 400]),
        "budgets": np.array([0.0, 10.0, 20.0]),
        "dims": np.array([5, 10, 20]),
    }
    for m in ("a", "b", "c"):
        for part in ("T", "C", "d"):
            arrays[f"{part}/{m}"] = base.copy() if m != "c" else base + 1.0
    arrays["C/b"][0, 1, 2, 3] += 1e-6
    rows = scaling.identical_runs(arrays, ("a", "b", "c"))
    assert [r["pair"] for r in rows] == [["a", "b"]]
    (row,) = rows
    assert row["T"] == {"identical": 10, "cells": 10, "differ_at": []}
    assert row["C"] == {"identical": 9, "cells": 10, "differ_at": [20.0]}
