"""XLA:CPU's classic fusion emitters (the library's CPU option) against XLA's default ones, in one process.

The same code, the same sweeps as ``grid_sweep.py`` (CR-Hvt-UCB: 16 β × 25 seeds × 2000 rounds, and
Figure 1's tuning grid × 10 seeds × 1000 rounds), compiled once with each setting
(``JAXBANDIT_CPU_CLASSIC_EMITTERS`` is read at every call), then timed interleaved, best of
``--repeats``; also whether the two give bitwise equal results.

    python benchmarks/cpu_emitters.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import time

import common
import grid_sweep
import numpy as np

import jaxbandit as jb

VARIABLE = "JAXBANDIT_CPU_CLASSIC_EMITTERS"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    rows = []
    for name, (call, runs, T) in grid_sweep.sweeps(jb, 2000, 1000, False, 25).items():
        fns, first, results = {}, {}, {}
        for mode, value in (("classic", "1"), ("default", "0")):

            def run(value=value, call=call):
                os.environ[VARIABLE] = value
                return call()

            t = time.perf_counter()
            results[mode] = run()
            first[mode] = time.perf_counter() - t
            fns[mode] = run
        best = common.interleaved_best(fns, args.repeats)
        equal = all(
            np.array_equal(results["classic"].data[f], results["default"].data[f])
            for f in results["classic"].data
        )
        rows.append(
            dict(
                sweep=name,
                runs=runs,
                rounds=T,
                default=runs * T / best["default"],
                classic=runs * T / best["classic"],
                speedup=best["default"] / best["classic"],
                first_default=first["default"],
                first_classic=first["classic"],
                bitwise=equal,
            )
        )
        print(
            f"{name}: classic {runs * T / best['classic']:.3g}/s, default {runs * T / best['default']:.3g}/s",
            flush=True,
        )
    os.environ.pop(VARIABLE, None)
    print(f"\nagent-rounds per second, best of {args.repeats}, interleaved; first: first call, compiling\n")
    common.print_table(
        rows,
        [
            ("sweep", ""),
            ("runs", ""),
            ("rounds", ""),
            ("default", ".3g"),
            ("classic", ".3g"),
            ("speedup", ".2f"),
            ("first_default", ".1f"),
            ("first_classic", ".1f"),
            ("bitwise", ""),
        ],
    )
    path = common.write_json("cpu_emitters", {"rows": rows})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
