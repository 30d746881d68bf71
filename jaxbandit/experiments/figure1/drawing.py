"""Figure 1 drawn (panels (a), (b), (c), one row per constants setting) and printed as a table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ...report.analysis import mean_and_stderr
from .methods import spec
from .runtime import runtime_slope
from .settings import C_VALUES, noise_settings


def format_summary(summary, horizon, num_seeds) -> str:
    """The summary as a text table."""
    lines = [
        f"Figure 1: T = {horizon}, mean ± s.e. over {num_seeds} seed(s); slope = log–log slope of "
        "the mean cumulative regret against t over t ≥ T/2 (1: linear, < 1: sublinear)",
        f"{'constants':<9} {'noise':<10} {'method':<11} {'C':>5} {'final regret':>19} {'slope':>7}",
    ]
    for r in (r for r in summary if r["kind"] == "regret"):
        lines.append(
            f"{r['constants']:<9} {r['noise']:<10} {spec(r['method']).label:<11} {r['C']:>5g} "
            f"{r['final_regret_mean']:>10.1f} ± {r['final_regret_stderr']:<6.1f} "
            f"{r['loglog_slope_second_half']:>7.2f}"
        )
    lines.append("")
    lines.append(
        "Runtime (b), ε = 1: seconds for one run of T rounds, median [min, max] over repeats, after "
        "compilation; ms per round over the last chunk; slope of time against t over t ≥ T/2 "
        "(1: constant cost per round, 2: cost per round ∝ t)"
    )
    lines.append(
        f"{'constants':<9} {'method':<11} {'C':>5} {'seconds per run':>30} {'ms/round':>9} {'slope':>6}"
    )
    for r in (r for r in summary if r["kind"] == "runtime"):
        lines.append(
            f"{r['constants']:<9} {spec(r['method']).label:<11} {r['C']:>5g} "
            f"{r['seconds_median']:>10.4g} [{r['seconds_min']:.4g}, {r['seconds_max']:.4g}]"
            f"{'':>3} {r['ms_per_round_at_end']:>9.3g} {r['loglog_slope_second_half']:>6.2f}"
        )
    return "\n".join(lines)


def draw(
    curves: Mapping,
    runtimes: Mapping,
    variants: Sequence[str],
    selected: Sequence[str],
    horizon: int,
    num_seeds: int,
    path,
):
    """Panels (a), (b), (c) — one row per constants setting in ``variants`` — saved to ``path``."""
    from matplotlib import ticker

    from ...report.plots import algorithm_style, pyplot, readable_log_ticks, save_figure

    plt = pyplot()
    settings = noise_settings()
    rows = len(variants)
    fig, axes = plt.subplots(rows, 3, figsize=(17, 6.2 * rows), squeeze=False, layout="constrained")
    t = np.arange(1, horizon + 1)
    styles = {0.0: "-", 100.0: "--"}
    for row, v in zip(axes, variants):
        for ax, n in ((row[0], "student_t"), (row[2], "pareto")):
            for k, m in enumerate(selected):
                for C in C_VALUES:
                    mean, se = mean_and_stderr(curves[(v, n, m, C)], axis=0)
                    label = f"{spec(m).label}, C={C:g}"
                    twin = next(
                        (
                            o
                            for o in selected[:k]
                            if np.array_equal(curves[(v, n, o, C)], curves[(v, n, m, C)])
                        ),
                        None,
                    )
                    if twin is not None:  # drawn dotted over the curve it would hide
                        label += f" (dotted: same runs as {spec(twin).label})"
                    ax.plot(
                        t, mean, ":" if twin is not None else styles[C], color=spec(m).color, label=label,
                        marker=algorithm_style(m)["marker"], markevery=max(1, horizon // 8),
                    )  # fmt: skip
                    ax.fill_between(t, mean - se, mean + se, color=spec(m).color, alpha=0.2, linewidth=0)
            ax.set_title(f"{settings[n].panel} regret, {settings[n].title}\n({v} constants)", fontsize=10)
            ax.set_xlabel("round t")
            ax.set_ylabel(f"cumulative regret (mean ± s.e., {num_seeds} seeds)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
        ax = row[1]
        for m in selected:
            for C in C_VALUES:
                rounds, sec = runtimes[(v, m, C)]
                mid = np.median(sec, axis=0)
                slope = runtime_slope(rounds, sec)
                ax.plot(
                    rounds,
                    mid,
                    styles[C],
                    marker=algorithm_style(m)["marker"],
                    markersize=3,
                    color=spec(m).color,
                    label=f"{spec(m).label}, C={C:g} (slope {slope:.2f})",
                )
                if sec.shape[0] > 1:
                    ax.fill_between(
                        rounds, sec.min(axis=0), sec.max(axis=0), color=spec(m).color, alpha=0.2, linewidth=0
                    )
        ax.set_xscale("log")
        ax.set_yscale("log")
        readable_log_ticks(ax, "y")
        ax.xaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda x, _: f"{x:g}"))
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
        ax.set_title(
            f"(b) runtime, ε = 1: seconds to reach round t, one run\n({v} constants; median, min–max band)",
            fontsize=10,
        )
        ax.set_xlabel("round t")
        ax.set_ylabel("wall-clock seconds (after compilation)")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    save_figure(fig, path)
    plt.close(fig)


def is_figure1_result(result) -> bool:
    """Whether ``result`` is the per-seed result ``figure1`` writes (``figure_result``): dims (constants,
    noise, algorithm, C, seed, round) and the runtimes of panel (b) in its meta."""
    dims = ("constants", "noise", "algorithm", "C", "seed", "round")
    return tuple(result.dims) == dims and isinstance(result.meta.get("runtimes"), dict)


def redraw(result, path) -> None:
    """Figure 1 drawn again (:func:`draw`) from the per-seed result ``figure1`` wrote (``results.npz``:
    the curves, and panel (b)'s runtimes in its meta); nothing re-run."""
    if not is_figure1_result(result):
        raise ValueError(
            f"result={result!r} is not Figure 1's per-seed result: it needs the axes (constants, noise, "
            "algorithm, C, seed, round) and panel (b)'s runtimes in its meta"
        )
    cum = np.asarray(result.data["cumulative_regret"])
    variants = [str(v) for v in result.coords["constants"]]
    noises = [str(n) for n in result.coords["noise"]]
    selected = [str(m) for m in result.coords["algorithm"]]
    Cs = [float(c) for c in result.coords["C"]]
    curves = {
        (v, n, m, C): cum[vi, ni, mi, ci]
        for vi, v in enumerate(variants)
        for ni, n in enumerate(noises)
        for mi, m in enumerate(selected)
        for ci, C in enumerate(Cs)
    }
    timed = result.meta["runtimes"]
    runtimes = {
        (v, m, C): (np.asarray(t["rounds"]), np.asarray(t["seconds"]))
        for v in variants
        for m in selected
        for C in Cs
        for t in [timed[v][m][f"C={C:g}"]]
    }
    horizon = int(result.coords["round"][-1])
    draw(curves, runtimes, variants, selected, horizon, len(result.coords["seed"]), path)
