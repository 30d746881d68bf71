"""Plots, loglog_slope and the ``plot`` CLI, on synthetic results whose curves are known in closed form."""

import subprocess
import sys

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest

import jaxbandit as jb
from jaxbandit import cli, plots

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ROUNDS = np.unique(np.round(np.logspace(0, 3, 40)).astype(int))  # 1..1000, log-spaced
SEED_FACTORS = np.array([0.9, 1.0, 1.2])


def synthetic(rounds=ROUNDS):
    """A: c·√t (sublinear), B: c·0.3·t (linear), per seed scaled by SEED_FACTORS, c = 1 + C/100."""
    C = np.array([100.0, 0.0, 10.0])  # deliberately unsorted
    t = rounds.astype(float)
    shapes = np.stack([np.sqrt(t), 0.3 * t])  # [alg, round]
    scale = 1.0 + C / 100.0
    cum = shapes[:, None, None, :] * scale[None, :, None, None] * SEED_FACTORS[None, None, :, None]
    return jb.SweepResult(
        dims=("algorithm", "C", "seed", "round"),
        coords={"algorithm": np.array(["A", "B"]), "C": C, "seed": np.arange(3), "round": rounds},
        data={"cumulative_regret": cum, "corruption_spent": np.zeros_like(cum)},
        meta={"horizon": int(rounds[-1])},
    )


def stderr(x):
    return np.std(x, ddof=1) / np.sqrt(len(x))


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_regret_curves_mean_band_and_png(tmp_path):
    res = synthetic()
    ax = plots.plot_regret_curves(res, title="t")
    lines = ax.get_lines()
    assert [ln.get_label() for ln in lines] == [
        "A, C=100",
        "A, C=0",
        "A, C=10",
        "B, C=100",
        "B, C=0",
        "B, C=10",
    ]
    # A at C=0: mean over seeds of SEED_FACTORS·√t
    np.testing.assert_allclose(lines[1].get_ydata(), SEED_FACTORS.mean() * np.sqrt(ROUNDS))
    assert len(ax.collections) == 6  # one s.e. band per line
    assert ax.get_xscale() == "linear"
    path = tmp_path / "curves.png"
    plots.save_figure(ax.figure, path)
    assert path.read_bytes()[:8] == PNG_MAGIC


def test_regret_curves_loglog_and_given_axes():
    _fig, (a1, a2) = plt.subplots(1, 2)
    out = plots.plot_regret_curves(synthetic().sel(algorithm="A"), ax=a2, loglog=True)
    assert out is a2 and not a1.get_lines()
    assert (a2.get_xscale(), a2.get_yscale()) == ("log", "log")
    with pytest.raises(ValueError, match="ax="):
        plots.plot_regret_curves(synthetic(), ax="left")
    with pytest.raises(ValueError, match="loglog='yes' is invalid"):
        plots.plot_regret_curves(synthetic(), loglog="yes")
    with pytest.raises(ValueError, match="result=dict is invalid"):
        plots.plot_regret_curves({"cumulative_regret": np.zeros((2, 2))})


def test_final_vs_C_is_the_frontier_with_standard_errors():
    res = synthetic()
    ax = plots.plot_final_vs(res, "C", logx=True)
    assert ax.get_xscale() == "symlog"  # C includes 0
    assert [c.get_label() for c in ax.containers] == ["A", "B"]
    T = ROUNDS[-1]
    for container, shape in zip(ax.containers, (np.sqrt(T), 0.3 * T)):
        line, _caps, (bars,) = container
        np.testing.assert_allclose(line.get_xdata(), [0.0, 10.0, 100.0])  # sorted by C
        finals = shape * (1 + np.array([0.0, 10.0, 100.0])[:, None] / 100) * SEED_FACTORS
        np.testing.assert_allclose(line.get_ydata(), finals.mean(axis=1))
        half_widths = [(seg[1, 1] - seg[0, 1]) / 2 for seg in bars.get_segments()]
        np.testing.assert_allclose(half_widths, [stderr(f) for f in finals])


def test_final_vs_rejects_non_grid_axes():
    for bad in ("algorithm", "seed", "round", "eps"):
        with pytest.raises(ValueError, match=f"axis='{bad}' is invalid"):
            plots.plot_final_vs(synthetic(), bad)


def with_constants_axis(res):
    """``res`` with a string axis ``constants`` (theory, tuned) in front, as the benchmark writes."""
    cum = np.stack([res.cumulative_regret, 2.0 * res.cumulative_regret])
    coords = {"constants": np.array(["theory", "tuned"]), **res.coords}
    return jb.SweepResult(("constants", *res.dims), coords, {"cumulative_regret": cum}, dict(res.meta))


def test_string_coordinates_label_panels_and_lines(tmp_path):
    res = with_constants_axis(synthetic())
    fig = plots.plot_panels(res)  # a panel per constants × C (a row per constants), a line per algorithm
    titles = [f"constants={k}, C={c}" for k in ("theory", "tuned") for c in (100, 0, 10)]
    assert [ax.get_title() for ax in fig.axes] == titles
    tuned_c0 = fig.axes[4].get_lines()
    assert [ln.get_label() for ln in tuned_c0] == ["A", "B"]
    np.testing.assert_allclose(tuned_c0[0].get_ydata(), 2.0 * SEED_FACTORS.mean() * np.sqrt(ROUNDS))
    assert fig.axes[4].get_subplotspec().rowspan.start == 1  # tuned: the second row
    ax = plots.plot_regret_curves(res.sel(C=0.0))
    labels = ["constants=theory, A", "constants=theory, B", "constants=tuned, A", "constants=tuned, B"]
    assert [ln.get_label() for ln in ax.get_lines()] == labels
    with pytest.raises(
        ValueError, match="axis='constants' is invalid: it must be one of the result's numeric"
    ):
        plots.plot_final_vs(res, "constants")
    path = tmp_path / "bench_like.npz"
    res.save(path)
    assert cli.run_plot(path).read_bytes()[:8] == PNG_MAGIC


def test_a_line_with_the_same_runs_as_an_earlier_one_is_dashed_and_says_so():
    res = synthetic()
    cum = np.concatenate([res.cumulative_regret, res.cumulative_regret[:1]])  # C: the first algorithm again
    twin = jb.SweepResult(
        res.dims, {**res.coords, "algorithm": np.array(["A", "B", "A2"])}, {"cumulative_regret": cum}
    )
    ax = plots.plot_regret_curves(twin.sel(C=0.0))
    lines = ax.get_lines()
    assert [ln.get_label() for ln in lines] == ["A", "B", "A2 (same runs as A)"]
    assert [ln.get_linestyle() for ln in lines] == ["-", "-", "--"]
    legend = ax.get_legend()
    assert legend.get_bbox_to_anchor().x0 >= ax.get_window_extent().x1 - 1  # outside the data, right
    fig = plots.plot_panels(twin)
    assert all("dotted: the same runs" in a.get_title() for a in fig.axes)
    assert [ln.get_linestyle() for ln in fig.axes[0].get_lines()] == ["-", "-", ":"]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["A", "B", "A2"]
    with pytest.raises(ValueError, match="legend='inside' is invalid"):
        plots.plot_regret_curves(twin, legend="inside")


def test_runtime_loglog_with_fitted_slopes(tmp_path):
    T = np.array([1000, 2000, 4000, 8000])
    repeats = np.array([0.9, 1.0, 1.3])
    ax = plots.plot_runtime({"linear": (T, 1e-4 * T), "quadratic": (T, 1e-8 * T[:, None] ** 2 * repeats)})
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["linear (slope 1.00)", "quadratic (slope 2.00)"]
    # with repeats the marker is the median and the bar spans min..max
    line, _caps, (bars,) = ax.containers[0]
    np.testing.assert_allclose(line.get_ydata(), 1e-8 * T**2 * 1.0)
    np.testing.assert_allclose(
        [seg[:, 1] for seg in bars.get_segments()], np.stack([1e-8 * T**2 * 0.9, 1e-8 * T**2 * 1.3], axis=1)
    )
    plots.save_figure(ax.figure, tmp_path / "rt.png")
    assert (tmp_path / "rt.png").read_bytes()[:8] == PNG_MAGIC


@pytest.mark.parametrize(
    "runtimes, match",
    [
        ({}, "non-empty dict"),
        ({"a": [1, 2, 3]}, "pair"),
        ({"a": ([1, 2], [1.0])}, "shape \\(1,\\)"),
        ({"a": ([1, 2], [1.0, 0.0])}, "seconds must be finite numbers in \\(0, inf\\)"),
        ({"a": ([0, 2], [1.0, 1.0])}, "horizons must be finite"),
    ],
)
def test_runtime_validation(runtimes, match):
    with pytest.raises(ValueError, match=match):
        plots.plot_runtime(runtimes)


def test_loglog_slope_recovers_known_exponents():
    slopes = jb.loglog_slope(synthetic())  # [algorithm, C]
    assert slopes.shape == (2, 3)
    np.testing.assert_allclose(slopes[0], 0.5, atol=1e-9)
    np.testing.assert_allclose(slopes[1], 1.0, atol=1e-9)
    per_seed = jb.loglog_slope(synthetic(), per_seed=True, start=0.1)
    assert per_seed.shape == (2, 3, 3)
    np.testing.assert_allclose(per_seed[1], 1.0, atol=1e-9)


def test_loglog_slope_window_and_nan():
    # t^0.3 early, t^0.8 late: the default window (second half) sees only the late exponent
    t = np.arange(1, 201, dtype=float)
    curve = np.where(t <= 50, t**0.3, 50**0.3 * (t / 50) ** 0.8)
    res = jb.SweepResult(
        ("seed", "round"),
        {"seed": np.arange(2), "round": np.arange(1, 201)},
        {"cumulative_regret": np.stack([curve, curve])},
    )
    assert float(jb.loglog_slope(res)) == pytest.approx(0.8, abs=1e-9)
    zero = jb.SweepResult(res.dims, res.coords, {"cumulative_regret": np.zeros((2, 200))})
    assert np.isnan(jb.loglog_slope(zero))
    for bad in (0.0, 1.0, -0.2, "half", True):
        with pytest.raises(ValueError, match="start="):
            jb.loglog_slope(res, start=bad)
    with pytest.raises(ValueError, match="per_seed='no' is invalid"):
        jb.loglog_slope(res, per_seed="no")
    short = jb.SweepResult(
        res.dims, {"seed": np.arange(2), "round": np.array([10, 200])}, {"cumulative_regret": np.ones((2, 2))}
    )
    with pytest.raises(ValueError, match="only 1 recorded round"):
        jb.loglog_slope(short)


def test_loglog_fit_of_power_laws_and_bad_input():
    from jaxbandit.report.analysis import loglog_fit

    t = np.linspace(1.0, 50.0, 40)
    np.testing.assert_allclose(loglog_fit(t, np.stack([2.0 * t**0.5, t**1.5])), [0.5, 1.5], atol=1e-12)
    assert np.isnan(loglog_fit(t, np.where(t > 10, t, 0.0)))  # log 0: undefined
    assert np.isnan(loglog_fit(t[:1], t[:1]))  # one point: no slope
    with pytest.raises(ValueError, match="x has shape"):
        loglog_fit(t, t[:-1])
    with pytest.raises(ValueError, match=r"x is invalid .* in \(0, inf\)"):
        loglog_fit(t - 1.0, t)


def test_panels_one_per_value_of_the_axes_that_are_not_lines():
    fig = plots.plot_panels(synthetic())
    visible = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in visible] == ["C=100", "C=0", "C=10"]
    assert all(len(ax.get_lines()) == 2 for ax in visible)  # one per algorithm
    single = plots.plot_panels(synthetic().sel(C=0.0), loglog=True)
    assert len(single.axes) == 1 and single.axes[0].get_yscale() == "log"
    with pytest.raises(ValueError, match="by='algorithm' is invalid"):
        plots.plot_panels(synthetic(), by="algorithm")
    # without an algorithm axis (a sweep of one algorithm over C × beta_scale): a line per beta_scale
    one = synthetic().sel(algorithm="A")
    scaled = jb.SweepResult(
        ("C", "beta_scale", "seed", "round"),
        {**one.coords, "beta_scale": np.array([1.0, 1e-4])},
        {"cumulative_regret": np.stack([one.cumulative_regret, 2 * one.cumulative_regret], axis=1)},
    )
    assert plots.facets(scaled) == (["beta_scale"], ["C"])
    fig = plots.plot_panels(scaled)
    assert [ax.get_title() for ax in fig.axes] == ["C=100", "C=0", "C=10"]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["beta_scale=1", "beta_scale=0.0001"]
    np.testing.assert_allclose(
        fig.axes[1].get_lines()[1].get_ydata(), 2 * SEED_FACTORS.mean() * np.sqrt(ROUNDS)
    )


# ---- the plot CLI -------------------------------------------------------------------------------


@pytest.fixture
def saved(tmp_path):
    return synthetic().save(tmp_path / "sweep.npz")


def test_plot_cli_writes_png_next_to_file(saved, capsys):
    assert cli.main(["plot", str(saved)]) == 0
    assert saved.with_suffix(".png").read_bytes()[:8] == PNG_MAGIC
    assert cli.main(["plot", str(saved.with_suffix(".json")), "--loglog"]) == 0
    assert (saved.parent / "sweep-loglog.png").read_bytes()[:8] == PNG_MAGIC
    out = saved.parent / "elsewhere" / "fig.png"
    assert cli.main(["plot", str(saved), "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == PNG_MAGIC
    assert f"wrote {out}" in capsys.readouterr().out


def _one_line_error(capsys, argv, *needles):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    for needle in needles:
        assert needle in err


def test_plot_cli_errors_are_one_line(saved, tmp_path, capsys):
    _one_line_error(capsys, ["plot", str(tmp_path / "missing.npz")], "FILE=", "does not exist")
    text = tmp_path / "notes.npz"
    text.write_text("not an archive")
    _one_line_error(capsys, ["plot", str(text)], "FILE=", "not a .npz archive")
    other = tmp_path / "other.npz"
    np.savez(other, x=np.arange(3))
    _one_line_error(capsys, ["plot", str(other)], "FILE=", "not a jaxbandit result", "holds the arrays ['x']")
    with np.load(saved) as z:  # its dims and meta (inside the archive) garbled
        arrays = {k: z[k] for k in z.files}
    np.savez(saved, **{**arrays, "jaxbandit/info": np.asarray("{ not json")})
    _one_line_error(capsys, ["plot", str(saved)], "FILE=", "not a jaxbandit result")
    _one_line_error(capsys, ["plot", str(other), "--out", str(tmp_path / "x.pdf")], "FILE=")
    synthetic().save(saved)
    _one_line_error(capsys, ["plot", str(saved), "--out", str(tmp_path / "x.pdf")], "--out=", ".png")


def test_plot_cli_as_a_module(saved):
    ok = subprocess.run(
        [sys.executable, "-m", "jaxbandit", "plot", str(saved), "--loglog"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    assert (saved.parent / "sweep-loglog.png").exists()
    bad = subprocess.run(
        [sys.executable, "-m", "jaxbandit", "plot", str(saved.parent / "nope")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2
    assert (
        bad.stderr.startswith("error: FILE=")
        and bad.stderr.count("\n") == 1
        and "Traceback" not in bad.stderr
    )


def test_default_demo_arguments_unchanged():
    args = cli.build_parser().parse_args([])
    assert (args.command, args.horizon, args.seeds, str(args.out), args.progress) == (
        None,
        2000,
        5,
        "out/demo",
        None,  # progress bars when stderr is a terminal (tests/test_cli.py)
    )


@pytest.mark.slow
def test_the_demos_method_axis_is_bitwise_the_methods_run_as_separate_algorithms(tmp_path):
    """The demo runs its three methods as one grid axis of one compiled sweep; each row must be the
    algorithm the label names, run on its own (jb.cr_hvt_ucb with Python constants, jb.hvt_ucb)."""
    from jaxbandit.experiments import demo

    T, seeds, d, K = 40, 2, 10, 20
    res = demo.run_demo(T, seeds, tmp_path, progress=False)["result"]
    nu = 3**0.5
    separate = jb.sweep(
        {
            "theory": lambda p: jb.cr_hvt_ucb(T, d, eps=1.0, nu=nu, corruption=p["C"]),
            "hvt": lambda p: jb.hvt_ucb(T, d, eps=1.0, nu=nu, beta_scale=demo.DEMO_BETA_SCALE),
        },
        lambda p: jb.envs.linear(d, K, noise=jb.noise.student_t(3.0), corruption=jb.corruption.flip(p["C"])),
        {"C": [0.0, 100.0]},
        horizon=T,
        seeds=seeds,
        record=1,
    )
    labels = list(res.coords["algorithm"])
    assert labels[0] == "CR-Hvt-UCB (theory)" and labels[2].startswith("Hvt-UCB")
    assert cli.run_plot(tmp_path / "demo.npz").read_bytes()[:8] == PNG_MAGIC  # one result format
    for row, name in ((0, "theory"), (2, "hvt")):
        np.testing.assert_array_equal(
            res.cumulative_regret[row], separate.sel(algorithm=name).cumulative_regret
        )


# ---- facets, selection, summaries -----------------------------------------------------------------


def bench_like():
    """A benchmark-shaped result: algorithm × constants × noise × attack, curves c·√t with c known."""
    rounds = np.array([10, 100, 1000])
    alg, const = np.array(["oful", "lin_ts"]), np.array(["theory", "tuned"])
    noise = np.array(["gaussian(ε=1)", "pareto(ε=0.5)", "pareto(ε=1)"])
    attack = np.array(["none"] + [f"{a} C={c}" for a in ("flip", "targeted") for c in (10, 30, 100, 300)])
    scale = np.arange(2 * 2 * 3 * 9, dtype=float).reshape(2, 2, 3, 9) + 1.0
    cum = scale[..., None, None] * SEED_FACTORS[:, None] * np.sqrt(rounds)
    coords = {"algorithm": alg, "constants": const, "noise": noise, "attack": attack}
    return jb.SweepResult(
        ("algorithm", "constants", "noise", "attack", "seed", "round"),
        {**coords, "seed": np.arange(3), "round": rounds},
        {"cumulative_regret": cum},
    )


def test_a_benchmark_result_is_faceted_and_too_many_panels_name_a_selection(tmp_path, capsys):
    res = bench_like()
    # three axes besides the algorithm: the shortest (constants) becomes line styles
    assert plots.facets(res) == (["algorithm", "constants"], ["noise", "attack"])
    with pytest.raises(
        ValueError, match=r"27 panels \(noise \(3\) × attack \(9\)\), more than max_panels=24"
    ):
        plots.plot_panels(res)
    fig = plots.plot_panels(cli.select(res, ["attack=none"]))
    assert [ax.get_title() for ax in fig.axes] == [
        f"constants={k}, noise={n}" for k in ("theory", "tuned") for n in res.coords["noise"]
    ]
    assert "attack=none" in fig._suptitle.get_text()  # the selected value, one: in the title
    lines = fig.axes[4].get_lines()  # tuned, pareto(ε=0.5): lines OFUL, LinTS
    assert [ln.get_label() for ln in lines] == ["OFUL", "LinTS"]
    np.testing.assert_allclose(lines[1].get_ydata(), res.cumulative_regret[1, 1, 1, 0].mean(axis=0))
    # a family name selects all its values; eps for ε; algorithms by their label
    part = cli.select(res, ["noise=pareto", "attack=flip C=30", "algorithm=LinTS"])
    assert list(part.coords["noise"]) == ["pareto(ε=0.5)", "pareto(ε=1)"]
    assert cli.select(res, ["noise=Pareto(eps=1)"]).coords["noise"].tolist() == ["pareto(ε=1)"]
    np.testing.assert_array_equal(part.cumulative_regret[0, :, :, 0], res.cumulative_regret[1, :, 1:, 2])
    for bad, said in (("noise=cauchy", "matches none of the values of noise"), ("shape=1", "AXIS=VALUE")):
        with pytest.raises(ValueError, match=said):
            cli.select(res, [bad])
    path = tmp_path / "per_seed.npz"
    bench_like().save(path)
    assert cli.main(["plot", str(path), "--select", "constants=tuned", "--out", str(tmp_path)]) == 2
    assert (
        "3 noise × 9 attack panels, too many to read in one figure: draw some with --select, e.g. "
        "--select attack='none'" in capsys.readouterr().err
    )
    assert cli.main(["plot", str(path), "--select", "attack=none", "--out", str(tmp_path)]) == 0
    # FILE may follow the pairs; one FILE, and pairs only
    assert cli.main(["plot", "--select", "attack=none", str(path), "--out", str(tmp_path / "after.png")]) == 0
    assert (tmp_path / "after.png").read_bytes()[:8] == PNG_MAGIC
    capsys.readouterr()
    for argv, said in (
        (["--select", "attack=none"], "error: plot takes one FILE: give the result to draw\n"),
        (
            [str(path), "--select", "attack=none", "b.npz"],
            f"error: plot takes one FILE: {path} and b.npz are two\n",
        ),
    ):
        assert cli.main(["plot", *argv]) == 2
        assert capsys.readouterr().err == said
    with pytest.raises(SystemExit, match="2"):  # an argument error, as argparse's own
        cli.main(["plot", "--select", "attack=none", "x", "y"])
    assert capsys.readouterr().err == "error: argument --select: give AXIS=VALUE pairs, not 'x'\n"


def test_plot_of_a_summary_draws_the_result_written_with_it(tmp_path, capsys):
    res = synthetic()
    res.meta["created"] = "2026-12-05T08:41:41+00:00"
    summary = {
        "figure": "Figure 1",
        "created": res.meta["created"],
        "summary": [],
        "files": {"npz": "/x/results.npz"},
    }
    (tmp_path / "figure1.json").write_text(__import__("json").dumps(summary))
    assert cli.main(["plot", str(tmp_path / "figure1.json")]) == 2
    err = capsys.readouterr().err
    assert "is Figure 1's summary (settings and final numbers, no curves), not a result" in err
    assert "results.npz or figure1_results.npz or per_seed.npz" in err
    other = synthetic()
    other.meta["created"] = "another run"
    other.save(tmp_path / "results.npz")  # not the run the summary describes: not drawn
    assert cli.main(["plot", str(tmp_path / "figure1.json")]) == 2
    res.save(tmp_path / "figure1_results.npz")
    assert cli.main(["plot", str(tmp_path / "figure1.json")]) == 0
    assert "drawing " + str(tmp_path / "figure1_results.npz") in capsys.readouterr().out
    assert (tmp_path / "figure1_results.png").read_bytes()[:8] == PNG_MAGIC
    assert not (tmp_path / "figure1.png").exists()  # the name of Figure 1's own drawing is left alone


def test_a_result_of_final_regret_only_is_drawn_against_its_longest_numeric_axis():
    """A scaling or tuning result records one round: no curves against t, so its numeric axis with the
    most values is the x axis (mean ± s.e. of the final regret over seeds)."""
    res = with_constants_axis(synthetic(rounds=np.array([1000])))
    assert plots.final_axis(res) == "C" and plots.facets(res) == (["algorithm"], ["constants"])
    fig = plots.plot_panels(res, loglog=True)
    assert [ax.get_title() for ax in fig.axes] == ["constants=theory", "constants=tuned"]
    tuned_b = fig.axes[1].containers[1].lines[0]  # tuned, B: 2·0.3·1000·(1 + C/100), sorted by C
    np.testing.assert_allclose(tuned_b.get_xdata(), [0, 10, 100])
    np.testing.assert_allclose(tuned_b.get_ydata(), 600 * SEED_FACTORS.mean() * np.array([1.0, 1.1, 2.0]))
    assert fig.axes[0].get_xscale() == "symlog" and fig.axes[0].get_xlabel() == "C"
    assert_readable(fig, "final regret against C")
    assert plots.final_axis(synthetic()) is None  # curves: regret against t


def test_a_lone_npz_of_an_earlier_version_names_its_sidecar(tmp_path, capsys):
    # an earlier version's .npz: the data and coords arrays, its dims and meta in a .json beside it
    with np.load("docs/figure1_results.npz") as z:
        arrays = {k: z[k] for k in z.files if k.startswith(("data/", "coords/"))}
    np.savez(tmp_path / "copied.npz", **arrays)
    assert cli.main(["plot", str(tmp_path / "copied.npz")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "copied.json beside it, and copied.json is missing: copy it" in err


# ---- every figure the CLI, the experiments and the notebooks draw, rendered small and read -------------

DOCS = jb.__file__ and __import__("pathlib").Path(__file__).resolve().parents[1] / "docs"


@pytest.fixture
def drawn(monkeypatch):
    """The figures saved while the test runs, as (path, Figure): every experiment saves through
    ``save_figure`` (the figure stays drawable after ``plt.close``)."""
    from jaxbandit.experiments import demo
    from jaxbandit.experiments.bench import report as bench_report
    from jaxbandit.report import plots as plots_module

    figures = []

    def keep(fig, path):
        figures.append((path, fig))

    for module in (plots_module, bench_report, demo):
        monkeypatch.setattr(module, "save_figure", keep)
    return figures


def assert_readable(fig, what: str) -> None:
    """Rendered small (a plain ``savefig``, no tight bounding box): every legend lies inside the figure and
    off every panel but its own, every log axis labels at least two ticks, and every visible panel holds
    data or says why it holds none."""
    import io

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not hasattr(fig.canvas, "get_renderer"):  # closed by the code that saved it
        FigureCanvasAgg(fig)
    fig.savefig(io.BytesIO(), format="png", dpi=30)
    fig.set_dpi(30)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    panels = [ax for ax in fig.axes if ax.get_visible()]
    legends = [(lg, None) for lg in fig.legends] + [(ax.get_legend(), ax) for ax in panels if ax.get_legend()]
    for legend, owner in legends:
        extent = legend.get_window_extent(renderer)
        assert box.x0 - 1 <= extent.x0 and extent.x1 <= box.x1 + 1, f"{what}: a legend leaves the figure"
        assert box.y0 - 1 <= extent.y0 and extent.y1 <= box.y1 + 1, f"{what}: a legend leaves the figure"
        for ax in panels:
            if ax is not owner:
                assert not extent.overlaps(ax.get_window_extent(renderer)), f"{what}: a legend covers a panel"

    def labelled(axis) -> int:
        lo, hi = sorted(axis.get_view_interval())
        shown = zip(axis.get_majorticklocs(), axis.get_ticklabels())
        return sum(1 for v, t in shown if t.get_text() and t.get_visible() and lo <= v <= hi)

    for ax in panels:
        for name, scale in (("x", ax.get_xscale()), ("y", ax.get_yscale())):
            if scale in ("log", "symlog"):  # a shared axis is labelled on one of the panels sharing it
                siblings = getattr(ax, f"get_shared_{name}_axes")().get_siblings(ax)
                count = max(labelled(getattr(a, f"{name}axis")) for a in siblings)
                assert count >= 2, f"{what}: {ax.get_title()!r} labels {count} tick(s) on a log {name} axis"
        holds = any(len(ln.get_xdata()) for ln in ax.get_lines()) or ax.collections or ax.texts
        assert holds, f"{what}: the panel {ax.get_title()!r} is empty"


def test_every_figure_of_the_cli_is_readable(tmp_path, drawn, capsys):
    bench = DOCS / "benchmarks" / "bench_cpu_2026-12-05"
    runs = [
        [str(DOCS / "figure1_results.npz")],
        [str(DOCS / "figure1_results.npz"), "--loglog"],
        [str(DOCS / "figure1.json")],  # Figure 1 itself, its runtimes included
        [str(bench / "per_seed.npz"), "--select", "attack=none"],
        [str(bench / "per_seed.npz"), "--select", "noise=student_t(eps=0.5)", "constants=tuned", "--loglog"],
        [str(DOCS / "benchmarks" / "scaling_cpu_2026-12-05" / "results_C.npz")],  # final regret against C
        [str(DOCS / "benchmarks" / "scaling_cpu_2026-12-05" / "results_d.npz"), "--select", "eps=1"],
    ]
    for k, args in enumerate(runs):
        assert cli.main(["plot", *args, "--out", str(tmp_path / f"{k}.png")]) == 0, capsys.readouterr().err
    assert len(drawn) == len(runs)
    for args, (_, fig) in zip(runs, drawn):
        assert_readable(fig, " ".join(args))
    assert len(drawn[2][1].axes) == 6  # Figure 1: panels (a), (b), (c) per constants setting


def test_every_figure_of_the_experiments_is_readable(tmp_path, drawn):
    import json

    from jaxbandit.experiments import demo
    from jaxbandit.experiments.bench import report as bench_report
    from jaxbandit.experiments.scaling import report as scaling_report

    demo.run_demo(30, 2, tmp_path, progress=False)
    bench = DOCS / "benchmarks" / "bench_cpu_2026-12-05"
    info = json.loads((bench / "bench.json").read_text())
    bench_report.figures(jb.SweepResult.load(bench / "per_seed.npz"), info, tmp_path)
    scaling = DOCS / "benchmarks" / "scaling_cpu_2026-12-05"
    data = json.loads((scaling / "scaling.json").read_text())
    parts = {p: jb.SweepResult.load(scaling / f"results_{p}.npz") for p in ("T", "C", "d")}
    assert set(scaling_report.draw(scaling_report.arrays_from(parts), data, tmp_path)) == {
        "png_T",
        "png_C",
        "png_d",
    }
    names = [p.name for p, _ in drawn]
    assert names == [
        "regret.png",
        "frontier.png",
        "epsilon.png",
        "scaling_T.png",
        "scaling_C.png",
        "scaling_d.png",
    ]
    for path, fig in drawn:
        assert_readable(fig, path.name)
    # scaling --budgets 0 50: one budget besides 0 is no line on log–log axes, so no C figure
    parts["C"] = cli.select(parts["C"], ["C=0", "C=50"])
    assert set(scaling_report.draw(scaling_report.arrays_from(parts), data, tmp_path)) == {"png_T", "png_d"}


def test_the_notebooks_figures_are_readable():
    res = synthetic()
    # quickstart: regret curves and the frontier side by side, as its cell draws them
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.2), layout="constrained")
    plots.plot_regret_curves(res, ax=left, loglog=True, title="regret")
    plots.plot_final_vs(res, "C", ax=right, logx=True, title="final regret against C")
    assert_readable(fig, "quickstart")
    # figure1: the saved result's tuned curves on log–log axes
    saved = jb.SweepResult.load(DOCS / "figure1_results.npz")
    fig = plots.plot_panels(saved.sel(constants="tuned"), loglog=True, title="tuned constants (log–log)")
    titles = [f"noise={n}, C={c}" for n in ("student_t", "pareto") for c in (0, 100)]
    assert [ax.get_title() for ax in fig.axes] == titles
    assert_readable(fig, "figure1 notebook")
    # each function on its own figure, legend right of the axes
    for ax in (plots.plot_regret_curves(res), plots.plot_final_vs(res, "C", logy=True)):
        assert_readable(ax.figure, "a plot_* function's own figure")


def test_log_axes_label_ticks_within_a_decade_and_over_several():
    for lo, hi in ((650.0, 1800.0), (90.0, 101.0), (3.0, 700.0), (1.0, 1e6)):
        fig, ax = plt.subplots(layout="constrained")
        ax.plot([1, 2], [lo, hi])
        ax.set_yscale("log")
        ax.set_ylim(lo, hi)
        plots.readable_log_ticks(ax)
        fig.canvas.draw()
        shown = [(v, t.get_text()) for v, t in zip(ax.yaxis.get_majorticklocs(), ax.yaxis.get_ticklabels())]
        values = [v for v, t in shown if lo <= v <= hi and t]
        texts = [t for v, t in shown if lo <= v <= hi and t]
        assert len(values) >= 2 and len(texts) >= 2, (lo, hi, texts)
        if hi / lo < 1e3:  # plain numbers where 1-2-5 or round values are labelled
            assert all(float(t) == pytest.approx(v) for t, v in zip(texts, values)), texts
    with pytest.raises(ValueError, match="axes='z' is invalid"):
        plots.readable_log_ticks(ax, "z")
