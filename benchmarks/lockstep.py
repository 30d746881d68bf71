"""Several algorithms on the same streams: one compiled program per algorithm against all of them in lockstep.

``jb.sweep({...}, ...)`` compiles one program per algorithm by default, and each draws the stream again;
with ``lockstep=True`` one program runs them all and every round's draw serves all of them. Four O(1)
algorithms (CR-Hvt-UCB, OFUL, CW-OFUL, LinTS) in the paper's environment (d = 10, K = 20, Student-t(3),
flip C = 100), in two layouts:

  - ``independent``: ``--seeds`` seeds and no grid: one lane per stream, where the draw is most of a round;
  - ``grid16``: 16 ``beta_scale`` values × 25 seeds: 16 lanes share each stream's draw already.

For each: agent-rounds per second of both (interleaved, best of ``--repeats``, compilation excluded), the
first call's seconds (compilation included), and whether the results are bitwise equal.

    python benchmarks/lockstep.py [--seeds 400] [--horizon 1000] [--repeats 2]
"""

from __future__ import annotations

import argparse
import time

import common
import numpy as np

import jaxbandit as jb


def algorithms(T: int, grid: bool) -> dict:
    d = common.D

    def beta(p):
        return p["beta_scale"] if grid else 1e-3

    return {
        "cr_hvt_ucb": lambda p: jb.cr_hvt_ucb(T, d, eps=1.0, nu=3**0.5, corruption=100.0, beta_scale=beta(p)),
        "oful": lambda p: jb.oful(T, d, beta_scale=beta(p)),
        "cw_oful": lambda p: jb.cw_oful(T, d, corruption=100.0, beta_scale=beta(p)),
        "lin_ts": lambda p: jb.lin_ts(T, d, v=beta(p)),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=400, help="seeds of the independent layout")
    parser.add_argument("--horizon", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    T = args.horizon

    def environment(p):
        return common.paper_env(100.0)

    layouts = {
        "independent": (algorithms(T, grid=False), None, args.seeds),
        "grid16": (algorithms(T, grid=True), {"beta_scale": list(np.logspace(-4, 0, 16))}, 25),
    }
    rows = []
    for name, (algs, grid, seeds) in layouts.items():
        calls = {
            mode: (
                lambda lock=lock: jb.sweep(
                    algs, environment, grid, horizon=T, seeds=seeds, record=T, lockstep=lock
                )
            )
            for mode, lock in (("per algorithm", False), ("lockstep", True))
        }
        first, results = {}, {}
        for mode, call in calls.items():
            t = time.perf_counter()
            results[mode] = call()
            first[mode] = time.perf_counter() - t
        equal = all(
            np.array_equal(results["per algorithm"].data[f], results["lockstep"].data[f])
            for f in results["lockstep"].data
        )
        best = common.interleaved_best(calls, args.repeats)
        agent_rounds = results["lockstep"].cumulative_regret.size * T  # algorithms x runs x T
        for mode in calls:
            rows.append(
                dict(
                    layout=name,
                    mode=mode,
                    runs=agent_rounds // T,
                    first=first[mode],
                    rate=agent_rounds / best[mode],
                    speedup=best["per algorithm"] / best[mode],
                    bitwise=equal,
                )
            )
            print(f"{name} {mode}: first {first[mode]:.1f} s, {agent_rounds / best[mode]:.3g} /s", flush=True)
    print(f"\nT = {T}; agent-rounds per second, best of {args.repeats}, interleaved\n")
    common.print_table(
        rows,
        [
            ("layout", ""),
            ("mode", ""),
            ("runs", ""),
            ("first", ".1f"),
            ("rate", ".3g"),
            ("speedup", ".2f"),
            ("bitwise", ""),
        ],
    )
    path = common.write_json("lockstep", {"rows": rows, "horizon": T})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
