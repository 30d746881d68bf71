"""``python -m jaxbandit figure1`` (jaxbandit/figure1.py) at a tiny horizon: the files it writes, the
committed tuned constants it reads, and one-line errors for bad arguments."""

import hashlib
import json
import math
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import cli_env

import jaxbandit as jb
from jaxbandit import cli, figure1

ROOT = Path(__file__).resolve().parents[1]
TUNED = ROOT / "jaxbandit" / "experiments" / "data" / "figure1_tuned.json"
HORIZON, SEEDS = 60, 2


def _cli(*args, fast_compile=True):
    env = cli_env(fast_compile=fast_compile)
    return subprocess.run(
        [sys.executable, "-m", "jaxbandit", *args], capture_output=True, text=True, env=env, timeout=600
    )


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    out = tmp_path_factory.mktemp("figure1")
    proc = _cli(
        "figure1",
        "--horizon",
        str(HORIZON),
        "--seeds",
        str(SEEDS),
        "--out",
        str(out),
        "--repeats",
        "2",
        "--no-progress",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, out


def _committed():
    return json.loads(TUNED.read_text())


@pytest.mark.slow
def test_writes_the_figure_the_curves_and_the_settings(made):
    proc, out = made
    png = (out / "figure1.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    import matplotlib.image

    image = matplotlib.image.imread(out / "figure1.png")
    assert image.shape[0] > 600 and image.shape[1] > 1500  # 2 rows (theory, tuned) x 3 panels
    for variant in ("theory", "tuned"):
        assert (out / f"figure1_{variant}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    res = jb.SweepResult.load(out / "results.npz")
    assert res.dims == ("constants", "noise", "algorithm", "C", "seed", "round")
    assert res.coords["constants"].tolist() == ["theory", "tuned"]
    assert res.coords["noise"].tolist() == ["student_t", "pareto"]
    assert res.coords["algorithm"].tolist() == ["cr_hvt_ucb", "gadaoful"]
    assert res.coords["C"].tolist() == [0.0, 100.0]
    np.testing.assert_array_equal(res.coords["round"], np.arange(1, HORIZON + 1))
    np.testing.assert_array_equal(res.coords["seed"], np.arange(SEEDS))
    c = np.asarray(res.cumulative_regret)
    assert c.shape == (2, 2, 2, 2, SEEDS, HORIZON)
    assert np.all(np.isfinite(c)) and np.all(c >= 0)
    assert np.all(np.diff(c, axis=-1) >= 0)  # cumulative: non-decreasing
    assert np.all(c[..., -1] <= 2.0 * HORIZON + 1e-3)  # rewards of unit vectors: gap <= 2
    for v in ("theory", "tuned"):
        for m in ("cr_hvt_ucb", "gadaoful"):
            for C in (0, 100):
                timed = res.meta["runtimes"][v][m][f"C={C}"]
                rounds, seconds = np.asarray(timed["rounds"]), np.asarray(timed["seconds"])
                assert rounds[-1] == HORIZON and np.all(np.diff(rounds) > 0)
                assert seconds.shape == (2, rounds.size) and np.all(seconds > 0)
                assert np.all(np.diff(seconds, axis=1) >= 0)  # time to reach round t grows with t
    assert res.meta["horizon"] == HORIZON and res.meta["labels"]["gadaoful"] == "GAdaOFUL"
    assert res.meta["identical"] == []  # CR-Hvt-UCB and GAdaOFUL share no curve
    # one result format: the plot command and xarray open it
    assert cli.run_plot(out / "results.npz", out / "plot_npz.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    xr = pytest.importorskip("xarray")
    assert cli.run_plot(out / "results.nc", out / "plot_nc.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with xr.open_dataset(out / "results.nc", engine="h5netcdf") as ds:
        assert ds["cumulative_regret"].sel(constants="tuned", algorithm="gadaoful").shape == (
            2,
            2,
            SEEDS,
            HORIZON,
        )

    meta = json.loads((out / "figure1.json").read_text())
    assert meta["horizon"] == HORIZON and meta["seeds"] == [0, 1]
    assert meta["dim"] == 10 and meta["num_arms"] == 20 and meta["C"] == [0.0, 100.0]
    assert meta["noise"]["student_t"]["eps"] == 1.0
    assert math.isclose(meta["noise"]["student_t"]["nu"], math.sqrt(3.0), rel_tol=1e-6)
    assert meta["noise"]["pareto"]["eps"] == 0.4
    assert math.isclose(meta["noise"]["pareto"]["nu"], 15.0 ** (1 / 1.4), rel_tol=1e-5)
    import jaxlib

    assert meta["versions"]["jax"] == jax.__version__ and meta["versions"]["jaxlib"] == jaxlib.__version__
    assert meta["versions"]["numpy"] == np.__version__ and meta["versions"]["jaxbandit"] == jb.__version__
    assert meta["device"]["backend"] == jax.default_backend()
    # the CPU model, where Linux names it: machines of one core count differ 2.5x in speed
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if "model name" in cpuinfo:
        assert meta["device"]["cpu_model"] and f": {meta['device']['cpu_model']}\n" in cpuinfo
    assert meta["wall_seconds"]["total"] > 0
    assert meta["command"].startswith("python -m jaxbandit figure1 --horizon 60")
    # the summary printed: one regret row per curve
    assert proc.stdout.count("GAdaOFUL") >= 8 and "final regret" in proc.stdout


@pytest.mark.slow
def test_tuned_constants_are_read_from_the_committed_file(made):
    _, out = made
    meta = json.loads((out / "figure1.json").read_text())
    committed = _committed()
    assert meta["tuned_file"]["sha256"] == hashlib.sha256(TUNED.read_bytes()).hexdigest()
    for noise in ("student_t", "pareto"):
        for method in ("cr_hvt_ucb", "gadaoful"):
            chosen = committed["methods"][method]["noise"][noise]["best"]
            assert meta["constants_used"]["tuned"][noise][method] == chosen
    # the theory constants are the papers' defaults
    theory = meta["constants_used"]["theory"]["student_t"]
    assert theory["cr_hvt_ucb"]["C=100"] == {"beta_scale": 1.0, "alpha": 8.0}


@pytest.mark.slow
def test_a_curve_is_the_plain_simulation_of_that_setting(made):
    """GAdaOFUL with the tuned constants, Pareto noise, C = 100: the figure's sweep (noise selector,
    constants chosen by traced grid values) must give exactly the run that jb.gadaoful with those
    constants and jb.envs.linear with the Pareto family give for seeds 0 and 1."""
    _, out = made
    best = _committed()["methods"]["gadaoful"]["noise"]["pareto"]["best"]
    nu = 15.0 ** (1 / 1.4)
    alg = jb.gadaoful(HORIZON, 10, nu=nu, corruption=100.0, constants="theory", **best)
    env = jb.envs.linear(10, 20, noise=jb.noise.pareto(1.5, 1.0), corruption=jb.corruption.flip(100.0))
    keys = jax.vmap(lambda s: jax.random.fold_in(jax.random.key(0), s))(jnp.arange(SEEDS))
    regret = jax.jit(jax.vmap(lambda k: jb.simulate(alg, env, k, horizon=HORIZON).regret))(keys)
    res = jb.SweepResult.load(out / "results.npz")
    curve = res.sel(constants="tuned", noise="pareto", algorithm="gadaoful", C=100.0).cumulative_regret
    np.testing.assert_allclose(curve, np.cumsum(np.asarray(regret, np.float64), axis=1), rtol=1e-5, atol=1e-4)


def test_the_committed_tuned_file_records_its_provenance():
    """Every registered algorithm is tuned by the benchmark's protocol with the same radius grid and one
    second constant, so the budgets differ only by edge extensions; each choice is the least mean of the
    settings the search evaluated, and its radius is the chosen multiple of the theory value."""
    data = figure1.load_tuned()
    assert set(data["methods"]) == set(jb.registry.names())  # figure1 --baselines --constants tuned
    for method in jb.registry.names():
        entry = data["methods"][method]
        assert min(entry["seeds"]) >= 1000  # disjoint from reported seeds 0..n-1
        axes = [a["name"] for a in entry["protocol"]["axes"]]
        assert axes[0] == "beta_scale" and len(axes) == 2, (method, axes)  # every method: two axes
        assert entry["protocol"]["axes"][0]["values"] == [10.0 ** (k / 2) for k in range(-16, 1)]
        names = tuple(jb.registry.algorithm(method).grid)
        for noise in ("student_t", "pareto"):
            e = entry["noise"][noise]
            rows = e["rows"]
            assert e["budget"] == len(rows) >= 17 + 5 - 1
            best = min(rows, key=lambda r: r["mean"])
            assert e["mean_final_regret"] == best["mean"]
            assert all(e["chosen"][a] == best[a] for a in axes)
            assert math.isclose(e["best"][names[0]], e["chosen"]["beta_scale"] * e["theory_radius"])
            assert set(e["best"]) == set(names)
    for key in ("created", "command", "versions", "device"):
        assert data[key]


def test_the_tuning_table_has_a_row_per_method_and_noise_setting():
    data = figure1.load_tuned()
    lines = figure1.tuning_table(data).splitlines()
    assert len(lines) == 2 + 2 * len(data["methods"])
    label = data["methods"]["oful"]["label"]
    (row,) = [ln for ln in lines if ln.startswith(f"| {label} | pareto |")]
    assert f"| {data['methods']['oful']['noise']['pareto']['budget']} |" in row
    with pytest.raises(ValueError, match=r"data=list is invalid"):
        figure1.tuning_table([])


def test_tune_chooses_the_least_regret_of_an_independent_sweep(tmp_path):
    """``tune`` at a tiny size against a direct ``jb.sweep`` of every setting its search evaluated (the
    radius as a multiple of OFUL's theory β-scale 1, λ as given), the final regret averaged over C and
    seeds in NumPy: the means agree and the choice is their least."""
    kw = dict(horizon=30, seeds=[1000, 1001])
    grids = {"oful": {"beta_scale": [1e-3, 1e-1, 1.0], "lam": [0.3, 1.0, 3.0]}}
    data = figure1.tune(
        **kw, out=tmp_path / "t.json", methods_to_tune=["oful"], grids=grids, progress=False, verbose=False
    )
    entry = data["methods"]["oful"]["noise"]["pareto"]
    rows = entry["rows"]
    scales = jnp.asarray([r["beta_scale"] for r in rows])
    lams = jnp.asarray([r["lam"] for r in rows])

    def make(p):  # row i's constants, picked by a traced index: one compiled sweep of every row
        i = jnp.asarray(p["row"]).astype(jnp.int32)
        return jb.oful(30, 10, beta_scale=scales[i], lam=lams[i])

    res = jb.sweep(
        make,
        figure1.environment,
        {"row": np.arange(len(rows), dtype=float), "noise": [1.0], "C": [0.0, 100.0]},
        seeds=kw["seeds"],
        horizon=30,
        progress=False,
    )
    finals = np.asarray(res.final_regret, np.float64).reshape(len(rows), -1).mean(axis=1)
    np.testing.assert_allclose([r["mean"] for r in rows], finals, rtol=1e-4)
    assert entry["mean_final_regret"] == rows[int(np.argmin(finals))]["mean"]
    assert entry["best"] == entry["chosen"]  # OFUL's theory beta_scale is 1
    with pytest.raises(ValueError, match=r"grids\['oful'\]"):
        figure1.tune(
            **kw, out=tmp_path / "u.json", methods_to_tune=["oful"], grids={"oful": {"beta": [1, 2]}}
        )


@pytest.mark.parametrize(
    "args, match",
    [
        (["--horizon", "0"], "--horizon"),
        (["--horizon", "3"], "--horizon"),
        (["--horizon", "many"], "--horizon"),
        (["--seeds", "0"], "--seeds"),
        (["--constants", "maybe"], "--constants"),
        (["--repeats", "-1"], "--repeats"),
        (["--bogus"], "--bogus"),
    ],
)
def test_bad_arguments_are_one_line_errors(capsys, args, match):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["figure1", *args])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and match in err, err


@pytest.mark.slow
def test_bad_arguments_from_the_shell(tmp_path):
    proc = _cli("figure1", "--horizon", "2", "--out", str(tmp_path), fast_compile=False)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1, proc.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    proc = _cli(
        "figure1", "--horizon", "10", "--tuned-file", str(bad), "--out", str(tmp_path), fast_compile=False
    )
    assert proc.returncode == 2 and proc.stderr.startswith("error: tuned constants file")
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert not (tmp_path / "results.npz").exists()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(horizon=3), r"horizon=3 is invalid: it must be an integer >= 4"),
        (dict(seeds=0), "seeds=0"),
        (dict(constants="paper"), "constants='paper'"),
        (dict(baselines="yes"), "baselines='yes'"),
        (dict(repeats=0), "repeats=0"),
        (dict(seeds=1001, constants="tuned"), "tuning seeds|tuned on"),
    ],
)
def test_run_rejects_invalid_values_before_running(kwargs, match, tmp_path):
    with pytest.raises(ValueError, match=match):
        figure1.run(**{"horizon": 10, "out": tmp_path, **kwargs})
    assert not any(tmp_path.iterdir())


def test_run_rejects_an_output_path_that_is_a_file(tmp_path):
    target = tmp_path / "file"
    target.write_text("")
    with pytest.raises(ValueError, match=r"out=.*not a directory"):
        figure1.run(10, 2, target, constants="theory")


def test_tuned_file_errors_name_the_file(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        figure1.load_tuned(tmp_path / "missing.json")
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"format": "something else", "methods": {}}))
    with pytest.raises(ValueError, match=r"wrong\.json.*not a jaxbandit\.figure1\.tuned"):
        figure1.load_tuned(wrong)
    data = _committed()
    data["methods"]["gadaoful"]["noise"]["pareto"]["best"]["tau0"] = -1.0
    negative = tmp_path / "negative.json"
    negative.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="gadaoful/pareto must give positive numbers"):
        figure1.load_tuned(negative)
    only = dict(_committed())
    only["methods"] = {"cr_hvt_ucb": only["methods"]["cr_hvt_ucb"]}
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps(only))
    with pytest.raises(ValueError, match="no entry for 'gadaoful'"):
        figure1.run(10, 2, tmp_path / "out", constants="tuned", tuned_file=partial)


def test_noise_selector_draws_exactly_the_family():
    """The figure's environment draws, for noise index i, exactly what that family draws."""
    keys = jax.random.split(jax.random.key(3), 64)
    for index, family in enumerate((jb.noise.student_t(3.0), jb.noise.pareto(1.5, 1.0))):
        chosen = figure1.selected_noise(float(index))
        got = jax.vmap(lambda k: chosen.sample(k, 0)[0])(keys)
        want = jax.vmap(lambda k: family.sample(k, 0)[0])(keys)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        np.testing.assert_allclose(
            float(chosen.moment_bound(0.4)), float(family.moment_bound(0.4)), rtol=1e-6
        )


def test_identical_curves_are_counted_per_cell():
    from jaxbandit.experiments.figure1.run import identical_curves

    rng = np.random.default_rng(0)
    curves = {}
    for v in ("theory", "tuned"):
        for n in ("student_t", "pareto"):
            for C in (0.0, 100.0):
                base = np.cumsum(rng.uniform(size=(2, 5)), axis=1)
                curves[(v, n, "a", C)] = base
                curves[(v, n, "b", C)] = base + (1e-6 if (v, C) == ("tuned", 100.0) else 0.0)
                curves[(v, n, "c", C)] = base + 1.0
    assert identical_curves(curves, ("a", "b", "c")) == [{"pair": ["a", "b"], "cells": 6, "of": 8}]
