"""CR-Hvt-UCB's exponent in T with constants tuned for the scaling study: per ε, at two horizons.

Not a speed benchmark: the measurement behind the scaling study's claims (docs/scaling.md). In the
study's setting (d = 10, K = 20, centred Pareto with shape 1.1 + ε, ν as the study gives it, C = 0),
the benchmark's tuning protocol (``jaxbandit.experiments.bench.protocol``: the radius as a multiple of
its theory value over 10⁻⁸ … 1 in half decades, then α, edges extended) chooses CR-Hvt-UCB's constants
separately for each ε and each tuning horizon on the tuning seeds 1000–1009. Each set of constants then
runs every horizon on the reported seeds 0..n−1: if the local slope of regret in T rises with the
constants tuned at the short horizon but not with those tuned at the long one, the rise is a property
of constants tuned for another horizon, not of the algorithm. Per set and ε: the constants, the local
log–log slopes between neighbouring horizons, the late-window exponent (the last three horizons) with
a seed-bootstrap interval, and the final regret against random play's. Writes ``scaling_tuning.json``.

    python benchmarks/scaling_tuning.py [--tune-horizons 2000 16000] [--horizons 500 ... 64000]
        [--eps 0.2 0.4 0.6 0.8 1.0] [--seeds 30]
"""

from __future__ import annotations

import argparse
import time

import common
import jax.numpy as jnp
import numpy as np

import jaxbandit as jb
from jaxbandit.experiments.bench import protocol
from jaxbandit.experiments.figure1.settings import TUNE_SEEDS
from jaxbandit.experiments.scaling import fit
from jaxbandit.experiments.scaling.settings import environment, moment_bound
from jaxbandit.report.analysis import mean_and_stderr

METHOD = "cr_hvt_ucb"


def _problem(horizon: int, eps) -> jb.registry.Problem:
    return jb.registry.Problem(horizon, common.D, eps=eps, nu=moment_bound(eps), corruption=0.0)


def _tuning_factory(horizon: int):
    """The protocol's axes as grid values: the radius as a multiple of its theory value, α as given."""
    spec = jb.registry.algorithm(METHOD)
    names = tuple(spec.grid)

    def make(p):
        prob = _problem(horizon, p["eps"])
        return spec.build(prob, protocol.constants(names, spec.theory(prob)[names[0]], p))

    return make


def _report_factory(horizon: int, chosen: np.ndarray, eps_values: np.ndarray):
    """The constants of set ``p["set"]`` at ε index ``p["eps"]``: ``chosen[set, eps, constant]`` in the
    registry grid's order (absolute values)."""
    spec = jb.registry.algorithm(METHOD)
    names = tuple(spec.grid)
    table = jnp.asarray(chosen)
    eps_table = jnp.asarray(eps_values)

    def make(p):
        s = jnp.asarray(p["set"]).astype(jnp.int32)
        e = jnp.asarray(p["eps"]).astype(jnp.int32)
        prob = _problem(horizon, eps_table[e])
        return spec.build(prob, {n: table[s, e, k] for k, n in enumerate(names)})

    return make


def tune(horizon: int, eps: float) -> dict:
    """The protocol's search at one tuning horizon and ε on the tuning seeds."""
    make = _tuning_factory(horizon)

    def evaluate(axis, values, fixed):
        grid = {**protocol.evaluation_grid(METHOD, axis, values, fixed), "eps": [eps], "C": [0.0]}
        res = jb.sweep(
            make, environment(common.D), grid, horizon=horizon, seeds=list(TUNE_SEEDS), record=[horizon]
        )
        final = np.asarray(res.final_regret, np.float64).reshape(len(values), len(TUNE_SEEDS))
        return mean_and_stderr(final, axis=-1)

    found = protocol.search(protocol.axes(METHOD), evaluate, protocol.fixed(METHOD))
    spec = jb.registry.algorithm(METHOD)
    names = tuple(spec.grid)
    theory = float(spec.theory(_problem(horizon, eps))[names[0]])
    curve = [r for r in found.rows if r["axis"] == protocol.RADIUS]
    return {
        "chosen": {a.name: found.best[a.name] for a in protocol.axes(METHOD)},
        "constants": protocol.constants(names, theory, found.best),
        "budget": found.budget,
        "edges": found.edges,
        "radius_curve": protocol.flatness([r["mean"] for r in curve], [r["stderr"] for r in curve]),
        "rows": found.rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tune-horizons", type=int, nargs="+", default=[2000, 16000])
    parser.add_argument(
        "--horizons", type=int, nargs="+", default=[500, 1000, 2000, 4000, 8000, 16000, 32000, 64000]
    )
    parser.add_argument("--eps", type=float, nargs="+", default=[0.2, 0.4, 0.6, 0.8, 1.0])
    parser.add_argument("--seeds", type=int, default=30)
    args = parser.parse_args()
    if args.seeds > TUNE_SEEDS[0]:
        raise ValueError(f"seeds={args.seeds} is invalid: reported seeds must stay below {TUNE_SEEDS[0]}")
    tune_horizons = sorted(args.tune_horizons)
    horizons = np.asarray(sorted(args.horizons), np.float64)
    eps_values = np.asarray(args.eps, np.float64)
    names = tuple(jb.registry.algorithm(METHOD).grid)

    start = time.perf_counter()
    tuned = {T: {e: tune(T, float(e)) for e in args.eps} for T in tune_horizons}
    tune_seconds = time.perf_counter() - start
    for T in tune_horizons:
        for e in args.eps:
            print(
                f"tuned at T = {T}, eps = {e}: {tuned[T][e]['constants']} ({tuned[T][e]['budget']} settings)"
            )
    chosen = np.asarray(
        [[[tuned[T][e]["constants"][n] for n in names] for e in args.eps] for T in tune_horizons], np.float64
    )  # [set, eps, constant]

    finals, seconds = [], {}
    for T in horizons.astype(int):
        t0 = time.perf_counter()
        make = _report_factory(int(T), chosen, eps_values)

        def env(p):
            return environment(common.D)(
                {"eps": jnp.asarray(eps_values)[jnp.asarray(p["eps"]).astype(int)], "C": 0.0}
            )

        res = jb.sweep(
            make,
            env,
            {"set": list(range(len(tune_horizons))), "eps": list(range(len(args.eps)))},
            horizon=int(T),
            seeds=args.seeds,
            record=[int(T)],
        )
        finals.append(np.asarray(res.final_regret, np.float64).reshape(len(tune_horizons), len(args.eps), -1))
        seconds[int(T)] = time.perf_counter() - t0
        print(f"T = {T}: {seconds[int(T)]:.0f} s", flush=True)
    regret = np.stack(finals, axis=-2)  # [set, eps, horizon, seed]
    # the scaling study's own statistic: the late window's exponent, its interval covering seeds and window
    fits = [
        [fit.window_fit(horizons, regret[s, e]) for e in range(len(args.eps))]
        for s in range(len(tune_horizons))
    ]
    random_play = jb.scaling.random_play_regret([common.D])[common.D][0]
    rows = []
    for s, T in enumerate(tune_horizons):
        for e, eps in enumerate(args.eps):
            c, f = tuned[T][eps]["constants"], fits[s][e]
            rows.append(
                {
                    "tuned at T": T,
                    "eps": eps,
                    "constants": ", ".join(f"{n} = {c[n]:.3g}" for n in names),
                    "1/(1+eps)": f"{1 / (1 + eps):.2f}",
                    "local slopes": " ".join(f"{x:.2f}" for x in f.local),
                    "late b [95%]": f"{f.slope:.2f} [{f.ci_low:.2f}, {f.ci_high:.2f}]",
                    "R(T_max)/random": f"{regret[s, e, -1].mean() / (random_play * horizons[-1]):.2f}",
                }
            )
    common.print_table(rows, [(k, "") for k in rows[0]])
    common.write_json(
        "scaling_tuning",
        {
            "method": METHOD,
            "tune_horizons": tune_horizons,
            "tune_seeds": list(TUNE_SEEDS),
            "horizons": horizons.astype(int).tolist(),
            "eps": list(args.eps),
            "seeds": args.seeds,
            "tuned": {str(T): {str(e): tuned[T][e] for e in args.eps} for T in tune_horizons},
            "rows": rows,
            "fits": [[f.as_dict() for f in row] for row in fits],  # [set][eps]: fit.window_fit
            "random_play_per_round": random_play,
            "final_regret": regret.tolist(),
            "seconds": {"tuning": tune_seconds, **{str(k): v for k, v in seconds.items()}},
        },
    )


if __name__ == "__main__":
    main()
