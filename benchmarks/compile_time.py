"""Seconds to the first result of a small sweep in a fresh process, now and with the previous code.

Each measurement is a fresh Python process (no persistent compilation cache) that imports the library and
runs a 2 × 2-point sweep (C ∈ {0, 100} × two ``beta_scale`` values, 2 seeds, T = 200) of one algorithm in
the paper's environment, then the same sweep at new grid values. ``null``: the do-nothing agent of
``common.null_agent``, i.e. the environment's own share, which any algorithm's sweep compiles at least.
``first`` is the first call (tracing, compilation and running); ``again`` the second call (cached:
running only); ``compile`` = first − again; ``rerun`` a third call from new factory objects with the
first call's settings, as a notebook cell run again makes (the same program, found by what it computes);
``trace``, ``lower`` and ``xla``: the first call's seconds of tracing to jaxprs, lowering to StableHLO and
XLA's compilation (``jax.monitoring``'s events, summed over its programs; a jitted function traced inside
another is counted in both traces, so ``trace`` is an upper bound).
The processes of the two versions alternate, ``--repeats`` times each, and the table shows the medians.
Target (issue 12), 2-core CPU: CR-Hvt-UCB compile ≤ 2 s.

``--size grid16``: the 16-point grid of ``grid_sweep.py`` instead (16 ``beta_scale`` values, C = 100,
25 seeds, T = 2000). ``--size simulate``: ``jb.simulate`` of one run (T = 1000, C = 100,
``beta_scale`` = 1e-4) instead of a sweep, ``rerun`` from a newly built algorithm and environment with
the same settings (as a loop over seeds that builds them in the loop makes). ``--ahead N``: the current
code's processes draw a chunk's rounds N at a time (``jb.ExecutionOptions(draw_ahead=N)``); with
``--previous`` at the same revision the table then compares the two layouts of one code.

    python benchmarks/compile_time.py [--previous 5f1eb40] [--repeats 3] [--algorithms cr_hvt_ucb oful null]
                                      [--size small|grid16|simulate] [--ahead N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import common
import jax
import numpy as np

#: jax.monitoring events of a compilation, by the column they add to.
PHASES = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "xla",
}


#: name -> (rounds, seeds, the first call's grid, the second call's: new values, the same shapes)
SIZES = {
    "small": (200, 2, {"C": [0.0, 100.0], "b": [1e-4, 1e-3]}, {"C": [0.0, 50.0], "b": [1e-4, 1e-2]}),
    "grid16": (
        2000,
        25,
        {"C": [100.0], "b": common.grid_betas()},
        {"C": [50.0], "b": np.logspace(-5, 0, 16).tolist()},
    ),
    "simulate": (1000, 1, {"C": [100.0], "b": [1e-4]}, {"C": [100.0], "b": [1e-4]}),
}


def child(which: str, previous: str, algorithm: str, size: str = "small", ahead: int = 0) -> None:
    phases = dict.fromkeys(PHASES.values(), 0.0)

    def record(event: str, seconds: float, **_) -> None:
        if event in PHASES:
            phases[PHASES[event]] += seconds

    jax.monitoring.register_event_duration_secs_listener(record)
    t0 = time.perf_counter()
    lib = common.load_previous(previous) if which == "previous" else __import__("jaxbandit")
    imported = time.perf_counter() - t0
    executed = common.sweep_options(lib, draw_ahead=ahead or None) if which == "now" else {}
    T, seeds, *grids = SIZES[size]
    d, K = common.D, common.K

    def factories():
        def make_alg(p):
            if algorithm == "null":
                return common.null_agent(lib)
            if algorithm == "cr_hvt_ucb":
                return lib.cr_hvt_ucb(T, d, eps=1.0, nu=3**0.5, corruption=p["C"], beta_scale=p["b"])
            return lib.oful(T, d, beta_scale=p["b"])

        def make_env(p):
            return lib.envs.linear(
                d, K, noise=lib.noise.student_t(3.0), corruption=lib.corruption.flip(p["C"])
            )

        return make_alg, make_env

    times, first_phases = [], {}
    cell = factories()
    for grid, made in ((grids[0], cell), (grids[1], cell), (grids[0], factories())):
        t = time.perf_counter()
        if size == "simulate":  # one run; the same objects again, then newly built ones
            point = {k: v[0] for k, v in grid.items()}
            if made is not cell or not times:
                alg, env = made[0](point), made[1](point)
            jax.block_until_ready(lib.simulate(alg, env, 0, horizon=T))
        else:
            lib.sweep(*made, grid, horizon=T, seeds=seeds, record=10, **executed)
        times.append(time.perf_counter() - t)
        first_phases = first_phases or dict(phases)
    first, again, rerun = times
    print(json.dumps({"import": imported, "first": first, "again": again, "rerun": rerun, **first_phases}))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--previous", default="5f1eb40", help="git revision of the previous code")
    parser.add_argument("--repeats", type=int, default=3)
    names = ["cr_hvt_ucb", "oful", "null"]
    parser.add_argument("--algorithms", nargs="+", default=names, choices=names)
    parser.add_argument("--size", default="small", choices=list(SIZES), help="the sweep compiled")
    parser.add_argument("--ahead", type=int, default=0, help="the current code draws N rounds at once")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.child[0], args.previous, args.child[1], args.size, args.ahead)
    env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    rows = []
    for algorithm in args.algorithms:
        runs: dict = {"now": [], "previous": []}
        for _ in range(args.repeats):
            for which in runs:
                cmd = [sys.executable, __file__, "--previous", args.previous, "--child", which, algorithm]
                cmd += ["--size", args.size, "--ahead", str(args.ahead)]
                out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
                runs[which].append(json.loads(out.strip().splitlines()[-1]))
        for which, rs in runs.items():
            first = float(np.median([r["first"] for r in rs]))
            again = float(np.median([r["again"] for r in rs]))
            rerun = float(np.median([r.get("rerun", np.nan) for r in rs]))
            split = {k: float(np.median([r.get(k, np.nan) for r in rs])) for k in PHASES.values()}
            row = dict(algorithm=algorithm, code=which, first=first, again=again, compile=first - again)
            row["rerun"] = rerun
            rows.append({**row, **split})
            print(f"{algorithm} {which}: first {first:.2f} s, again {again:.2f} s", flush=True)
    print(
        f"\nprevious = {args.previous}; sweep {args.size}; now drawn {args.ahead or 'one round'} ahead; "
        f"medians of {args.repeats} fresh processes\n"
    )
    common.print_table(
        rows,
        [("algorithm", ""), ("code", "")]
        + [(k, ".2f") for k in ("first", "again", "compile", "rerun", *PHASES.values())],
    )
    path = common.write_json(
        "compile_time", {"rows": rows, "previous": args.previous, "size": args.size, "ahead": args.ahead}
    )
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
