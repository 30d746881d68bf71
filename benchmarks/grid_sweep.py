"""Grid sweeps with shared streams, against the per-run bound and the previous code, in one process.

Two sweeps of CR-Hvt-UCB in the paper's environment (d = 10, K = 20, Student-t(3), flip C = 100):

  - ``grid16``: 16 ``beta_scale`` values × 25 seeds × 2000 rounds (400 runs);
  - ``tuning``: Figure 1's tuning sweep of CR-Hvt-UCB: its registry grid (7 β × 5 α) × C ∈ {0, 100}
    × 10 seeds (700 runs) × ``--tuning-horizon`` rounds.

For each it times, interleaved (best of ``--repeats``): ``jb.sweep`` now (run again: its grid's checks
are remembered); ``checked``: the same with the checks made every call, as a sweep's first call makes
them; ``ahead``: the current code with a chunk's rounds drawn ``--ahead`` at a time
(``jb.ExecutionOptions(draw_ahead=N)``; on a CPU the default only for a sweep of 2²² agent-rounds or
more, which these are not: it costs compilation); ``jb.sweep`` of the
previous code (``--previous REV``, extracted with ``git archive`` and imported as a second package); and the
per-run bound: the do-nothing agent on the same number of independent runs, each drawing its own stream
(what any simulator that draws a stream per run pays), in one program (``bound``) and split over the
cores, a thread each, as ``jb.sweep`` runs on a CPU (``bound_cores``). Compilation is excluded (each
sweep is run once first) and measured separately by ``compile_time.py``. Target (issue 12), 2-core CPU:
``grid16`` at ≥ 3× the per-run bound.

``--record all`` keeps every round (and the per-round fields), so that each chunk's results cross to the
host (on an accelerator, beside the next chunk's rounds); ``--workers N`` sets ``cpu_workers`` in both
codes (a previous revision that predates ``jb.ExecutionOptions`` runs at its defaults only);
``--chunk-size N`` runs both in chunks of N rounds.

    python benchmarks/grid_sweep.py [--previous 5f1eb40] [--repeats 3] [--ahead 16] [--record last|all]
                                    [--workers N] [--chunk-size N] [--sweeps grid16 tuning independent]
                                    [--quick]
"""

from __future__ import annotations

import argparse
import functools
import math
import time

import common
import jax
import numpy as np

import jaxbandit as jb


def sweeps(
    lib,
    T: int,
    tuning_T: int,
    quick: bool,
    seeds: int,
    independent: int = 0,
    record: str = "last",
    chunk_size: int | None = None,
    **options,
) -> dict:
    """name -> (zero-argument sweep call, number of runs, rounds per run) for the library ``lib``; each
    sweep keeps its last round (``record="last"``) or every round (``"all"``), in chunks of ``chunk_size``
    rounds (None: the library's default), with the execution ``options`` (``jb.ExecutionOptions``
    fields)."""
    d, K = common.D, common.K

    def make_env(p):
        return lib.envs.linear(d, K, noise=lib.noise.student_t(3.0), corruption=lib.corruption.flip(p["C"]))

    T_independent = 1000

    def grid_alg(p, T=T):
        return lib.cr_hvt_ucb(T, d, eps=1.0, nu=3**0.5, corruption=p["C"], beta_scale=p["beta_scale"])

    def tuning_alg(p):
        return lib.cr_hvt_ucb(
            tuning_T, d, eps=1.0, nu=3**0.5, corruption=p["C"], beta_scale=p["beta_scale"], alpha=p["alpha"]
        )

    n_beta, n_seeds = (4, 5) if quick else (16, seeds)
    grid16 = {"C": [100.0], "beta_scale": common.grid_betas(n_beta)}
    spec_grid = jb.registry.algorithm("cr_hvt_ucb").grid
    tuning = {"C": [0.0, 100.0], **{k: list(v) for k, v in spec_grid.items()}}
    if quick:
        tuning = {k: v[:2] for k, v in tuning.items()}
    tuning_seeds = 3 if quick else 10

    executed = common.sweep_options(lib, **options)

    def call(alg, grid, horizon, seeds):
        kept = horizon if record == "last" else record
        return lambda: lib.sweep(
            alg, make_env, grid, horizon=horizon, seeds=seeds, record=kept, chunk_size=chunk_size, **executed
        )

    out = {
        "grid16": (call(grid_alg, grid16, T, n_seeds), len(grid16["beta_scale"]) * n_seeds, T),
        "tuning": (
            call(tuning_alg, tuning, tuning_T, range(1000, 1000 + tuning_seeds)),
            int(np.prod([len(v) for v in tuning.values()])) * tuning_seeds,
            tuning_T,
        ),
    }
    if independent:  # one grid point, every run its own seed: nothing to share but the compiled program
        one = {"C": [100.0], "beta_scale": [1e-4]}
        alg = functools.partial(grid_alg, T=T_independent)
        out["independent"] = (call(alg, one, T_independent, independent), independent, T_independent)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--previous", default="5f1eb40", help="git revision of the previous code, or 'none' to skip it"
    )
    parser.add_argument("--seeds", type=int, default=25, help="seeds of the 16-point grid")
    parser.add_argument(
        "--independent", type=int, default=0, help="also time N independent runs × 1000 rounds (one point)"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--ahead",
        type=int,
        default=0,
        help="also time the current code with this many rounds drawn at once (the 'ahead' column; 0: not)",
    )
    parser.add_argument("--tuning-horizon", type=int, default=1000)
    parser.add_argument(
        "--record",
        default="last",
        choices=["last", "all"],
        help="rounds kept: the last (default) or every round, whose copy to the host each chunk makes",
    )
    parser.add_argument(
        "--chunk-size", type=int, default=None, help="rounds a chunk (default: the library's)"
    )
    parser.add_argument(
        "--workers", type=int, default=None, help="cpu_workers of both codes (a CPU's groups of streams)"
    )
    parser.add_argument(
        "--sweeps",
        nargs="+",
        default=["grid16", "tuning", "independent"],
        choices=["grid16", "tuning", "independent"],
        help="the sweeps timed (independent only with --independent N)",
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    args = parser.parse_args(argv)
    T = 200 if args.quick else 2000
    tuning_T = 100 if args.quick else args.tuning_horizon
    libs = {"now": jb}
    if args.previous != "none":
        libs["previous"] = common.load_previous(args.previous)
    rows = []
    sized = (T, tuning_T, args.quick, args.seeds, args.independent, args.record, args.chunk_size)
    calls = {tag: sweeps(lib, *sized, cpu_workers=args.workers) for tag, lib in libs.items()}
    if args.ahead:
        calls["ahead"] = sweeps(jb, *sized, cpu_workers=args.workers, draw_ahead=args.ahead)
    for name in [n for n in calls["now"] if n in args.sweeps]:
        _, runs, horizon = calls["now"][name]
        fns = {tag: calls[tag][name][0] for tag in calls}
        compile_s = {}
        for tag, fn in fns.items():
            t = time.perf_counter()
            fn()  # compiles
            compile_s[tag] = time.perf_counter() - t
        # A sweep run again skips the grid's checks (remembered per factory, ~10 ms a point); its first
        # call makes them: "checked" times the current code with them made every call.
        fns["checked"] = lambda fn=fns["now"]: (jb.runner.grid.forget_validated(), fn())
        fns["bound"] = common.batched_runner(common.null_agent(), common.paper_env(), horizon, runs)
        # the same runs on every core, as jb.sweep runs its streams (cpu_workers)
        workers = jb.runner.plan.cpu_workers(jb.ExecutionOptions(cpu_workers=args.workers), runs, None)
        threads = math.gcd(runs, workers)
        fns["bound_cores"] = common.batched_runner(
            common.null_agent(), common.paper_env(), horizon, runs, threads=threads
        )
        best = common.interleaved_best(fns, args.repeats)
        rate = {tag: runs * horizon / s for tag, s in best.items()}
        rate.setdefault("previous", float("nan"))
        rate.setdefault("ahead", float("nan"))
        compile_s.setdefault("previous", float("nan"))
        rows.append(
            dict(
                sweep=name,
                runs=runs,
                rounds=horizon,
                bound=rate["bound"],
                bound_cores=rate["bound_cores"],
                previous=rate["previous"],
                now=rate["now"],
                checked=rate["checked"],
                ahead=rate["ahead"],
                now_vs_bound=rate["now"] / rate["bound"],
                now_vs_bound_cores=rate["now"] / rate["bound_cores"],
                checked_vs_bound=rate["checked"] / rate["bound"],
                ahead_vs_bound=rate["ahead"] / rate["bound"],
                previous_vs_bound=rate["previous"] / rate["bound"],
                speedup=rate["now"] / rate["previous"],
                first_call_now_s=compile_s["now"],
                first_call_previous_s=compile_s["previous"],
                first_call_ahead_s=compile_s.get("ahead", float("nan")),
            )
        )
        print(
            f"{name}: {runs} runs × {horizon} rounds: now {rate['now']:.3g}/s, previous "
            f"{rate['previous']:.3g}/s, per-run bound {rate['bound']:.3g}/s",
            flush=True,
        )
    print(
        f"\nprevious = {args.previous}; record {args.record}; cpu_workers {args.workers}; chunks of "
        f"{args.chunk_size or 'the default'} rounds; agent-rounds per "
        f"second, best of {args.repeats}, interleaved\n"
    )
    common.print_table(
        rows,
        [
            ("sweep", ""),
            ("runs", ""),
            ("rounds", ""),
            ("bound", ".3g"),
            ("bound_cores", ".3g"),
            ("previous", ".3g"),
            ("now", ".3g"),
            ("checked", ".3g"),
            ("ahead", ".3g"),
            ("previous_vs_bound", ".2f"),
            ("now_vs_bound", ".2f"),
            ("now_vs_bound_cores", ".2f"),
            ("checked_vs_bound", ".2f"),
            ("ahead_vs_bound", ".2f"),
            ("speedup", ".2f"),
        ],
    )
    path = common.write_json(
        "grid_sweep" if args.record == "last" else "grid_sweep_record_all",
        {
            "rows": rows,
            "previous": args.previous,
            "ahead": args.ahead,
            "record": args.record,
            "workers": args.workers,
            "chunk_size": args.chunk_size,
            "devices": jax.device_count(),
        },
    )
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
