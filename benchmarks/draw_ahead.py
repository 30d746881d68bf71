"""Rounds drawn ahead in blocks against each round drawing in its own step, in one process.

``jb.sweep`` can draw a block of a stream's rounds at once (a ``vmap`` over the block's rounds) before
the rounds run, so the stream's loops (the Student-t sampler's rejection loop) run once a block, not once
a round. This times grid_sweep.py's sweeps (16 β × ``--seeds`` seeds, Figure 1's CR tuning grid,
``--independent`` runs) with each block size of ``--aheads`` (0: a round draws in its own step),
interleaved, best of ``--repeats``, and checks that every block size gives bitwise the same results.

    python benchmarks/draw_ahead.py [--aheads 0,16,96] [--seeds 25] [--independent 400] [--horizon 2000]
"""

from __future__ import annotations

import argparse
import time

import common
import grid_sweep
import jax
import numpy as np

import jaxbandit as jb
from jaxbandit.runner import sweep as sweep_module


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aheads", default="0,16,96", help="block sizes to compare (0: no block)")
    parser.add_argument("--seeds", type=int, default=25, help="seeds of the 16-point grid")
    parser.add_argument("--independent", type=int, default=400, help="independent runs × 1000 rounds")
    parser.add_argument("--horizon", type=int, default=2000, help="rounds of the 16-point grid")
    parser.add_argument("--tuning-horizon", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    aheads = [int(a) for a in args.aheads.split(",")]
    calls = grid_sweep.sweeps(jb, args.horizon, args.tuning_horizon, False, args.seeds, args.independent)
    rows = []
    for name, (fn, runs, horizon) in calls.items():

        def variant(ahead, fn=fn):
            sweep_module.DRAW_AHEAD = ahead
            return fn()

        first, results = {}, {}
        for a in aheads:
            t = time.perf_counter()
            results[a] = variant(a)
            first[a] = time.perf_counter() - t
        equal = all(
            np.array_equal(results[a].data[f], results[aheads[0]].data[f])
            for a in aheads
            for f in results[a].data
        )
        best = common.interleaved_best({a: (lambda a=a: variant(a)) for a in aheads}, args.repeats)
        for a in aheads:
            rows.append(
                dict(
                    sweep=name,
                    runs=runs,
                    rounds=horizon,
                    ahead=a,
                    rate=runs * horizon / best[a],
                    vs_first=best[aheads[0]] / best[a],
                    first_call_s=first[a],
                    bitwise_equal=equal,
                )
            )
            print(rows[-1], flush=True)
    sweep_module.DRAW_AHEAD = None  # the backend's default again
    print(f"\nagent-rounds per second, best of {args.repeats}, interleaved; {common.machine()}\n")
    common.print_table(
        rows,
        [
            ("sweep", ""),
            ("runs", ""),
            ("rounds", ""),
            ("ahead", ""),
            ("rate", ".3g"),
            ("vs_first", ".2f"),
            ("first_call_s", ".1f"),
            ("bitwise_equal", ""),
        ],
    )
    print(f"\nwrote {common.write_json('draw_ahead', {'rows': rows, 'devices': jax.device_count()})}")


if __name__ == "__main__":
    main()
