"""XLA:CPU settings against the library's, in one process: its classic fusion emitters against XLA's
default ones, or with ``--vector-width N`` the library's settings with LLVM's preferred vector width set
to N bits (``xla_cpu_prefer_vector_width``; XLA's default is 256).

The same code, the same sweeps as ``grid_sweep.py`` (CR-Hvt-UCB: 16 β × 25 seeds × 2000 rounds, and
Figure 1's tuning grid × 10 seeds × 1000 rounds), or with ``--method NAME`` the sweep ``tune-figure1``
runs for that method (``common.figure1_tuning``, ``--seeds`` tuning seeds, ``--horizon`` rounds),
compiled once with each setting (the options are read at every call), then timed interleaved, best of
``--repeats``; also whether the two give bitwise equal results.

    python benchmarks/cpu_emitters.py [--repeats 3]
    python benchmarks/cpu_emitters.py --vector-width 512 --method gadaoful --horizon 1500 --seeds 10
"""

from __future__ import annotations

import argparse
import os
import time

import common
import grid_sweep
import numpy as np

import jaxbandit as jb
from jaxbandit.runner import xla_options

VARIABLE = "JAXBANDIT_CPU_CLASSIC_EMITTERS"
WIDTH = "xla_cpu_prefer_vector_width"


def settings(vector_width: int | None) -> dict:
    """Name of each compared setting -> what sets it before a call; the speed-up is the first's over the
    second's (the classic emitters' over XLA's default ones; the width's over the library's settings)."""

    def emitters(value):
        def apply():
            os.environ[VARIABLE] = value

        return apply

    def width(bits):
        def apply():
            if bits is None:
                xla_options.LIBRARY_OPTIONS.pop(WIDTH, None)
            else:
                xla_options.LIBRARY_OPTIONS[WIDTH] = (bits, None, "cpu")

        return apply

    if vector_width is None:
        return {"classic": emitters("1"), "default": emitters("0")}
    return {f"width {vector_width}": width(vector_width), "library": width(None)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--vector-width", type=int, help="compare the library's settings with this width")
    parser.add_argument("--method", help="tune-figure1's sweep of this registered method instead")
    parser.add_argument("--horizon", type=int, default=1500, help="rounds of --method's sweep")
    parser.add_argument("--seeds", type=int, default=10, help="tuning seeds of --method's sweep")
    args = parser.parse_args(argv)
    modes = settings(args.vector_width)
    first_mode, other_mode = modes
    if args.method:
        call, runs = common.figure1_tuning(args.method, args.horizon, args.seeds)
        sweeps = {f"{args.method} tuning": (call, runs, args.horizon)}
    else:
        sweeps = grid_sweep.sweeps(jb, 2000, 1000, False, 25)
    rows = []
    for name, (call, runs, T) in sweeps.items():
        fns, first, results = {}, {}, {}
        for mode, apply in modes.items():

            def run(apply=apply, call=call):
                apply()
                return call()

            t = time.perf_counter()
            results[mode] = run()
            first[mode] = time.perf_counter() - t
            fns[mode] = run
        best = common.interleaved_best(fns, args.repeats)
        equal = all(
            np.array_equal(results[first_mode].data[f], results[other_mode].data[f])
            for f in results[first_mode].data
        )
        rows.append(
            dict(
                sweep=name,
                runs=runs,
                rounds=T,
                **{mode: runs * T / best[mode] for mode in modes},
                speedup=best[other_mode] / best[first_mode],
                **{f"first {mode}": first[mode] for mode in modes},
                bitwise=equal,
            )
        )
        print(f"{name}: " + ", ".join(f"{m} {runs * T / best[m]:.3g}/s" for m in modes), flush=True)
    os.environ.pop(VARIABLE, None)
    xla_options.LIBRARY_OPTIONS.pop(WIDTH, None)
    print(f"\nagent-rounds per second, best of {args.repeats}, interleaved; first: first call, compiling;")
    print(f"speedup: {first_mode} against {other_mode}\n")
    columns = [("sweep", ""), ("runs", ""), ("rounds", "")]
    columns += [(m, ".3g") for m in modes] + [("speedup", ".2f")]
    columns += [(f"first {m}", ".1f") for m in modes] + [("bitwise", "")]
    common.print_table(rows, columns)
    path = common.write_json("cpu_emitters", {"rows": rows, "args": vars(args)})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
