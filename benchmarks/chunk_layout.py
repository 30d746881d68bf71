"""Layouts of a sweep's chunk against each other, in one process: rounds drawn ahead, runs minor, the
contexts components first.

``jb.sweep`` can draw a block of a stream's rounds at once (a ``vmap`` over the block's rounds) before
the rounds run, so the stream's loops (the Student-t sampler's rejection loop) run once a block, not once
a round; it can carry the runs' states with the runs on the minor axes (`[..., S, G]`); and it can keep
each stream's contexts components first (`[d, K]`, ``CONTEXTS_BY_COMPONENT``). This times
grid_sweep.py's sweeps (16 β × ``--seeds`` seeds, Figure 1's CR tuning grid, ``--independent`` runs)
with each layout of ``--layouts`` (``AHEAD:MINOR[:BY_COMPONENT]``; AHEAD 0: a round draws in its own
step; MINOR 1: runs minor; BY_COMPONENT 1: the contexts components first; "auto" for any, and for a
BY_COMPONENT left out: the backend's default), interleaved, best of ``--repeats``, and checks that every
layout gives bitwise the same results (e.g. ``--layouts auto:auto:0,auto:auto:1`` on a GPU). ``--set
MODULE.NAME=VALUE`` sets a library constant first (e.g. ``jaxbandit.core.linalg.PEELED_NEWTON_STEPS=1``:
one read while a program is traced, so it is set for the whole process; ``xla_flags.py`` runs such
variants in processes of their own).

    python benchmarks/chunk_layout.py [--layouts 0:0,96:0,96:1] [--seeds 25] [--independent 400]
                                      [--sweeps grid16 tuning independent] [--set MODULE.NAME=VALUE ...]
"""

from __future__ import annotations

import argparse
import hashlib
import time

import common
import grid_sweep
import jax
import numpy as np

import jaxbandit as jb
from jaxbandit.runner import sweep as sweep_module


def digest(result) -> str:
    """A short hash of every recorded array of a sweep's result, to compare results across processes."""
    h = hashlib.sha256()
    for field in sorted(result.data):
        h.update(field.encode() + np.ascontiguousarray(result.data[field]).tobytes())
    return h.hexdigest()[:16]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layouts", default="0:0,96:0,96:1", help="AHEAD:MINOR layouts to compare")
    parser.add_argument("--seeds", type=int, default=25, help="seeds of the 16-point grid")
    parser.add_argument("--independent", type=int, default=400, help="independent runs × 1000 rounds")
    parser.add_argument("--horizon", type=int, default=2000, help="rounds of the 16-point grid")
    parser.add_argument("--tuning-horizon", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=2)
    names = ["grid16", "tuning", "independent"]
    parser.add_argument("--sweeps", nargs="+", default=names, choices=names, help="which sweeps to time")
    parser.add_argument("--set", nargs="*", default=[], help="library constants: MODULE.NAME=VALUE")
    args = parser.parse_args(argv)
    common.apply_settings(args.set)
    layouts = args.layouts.split(",")
    calls = grid_sweep.sweeps(jb, args.horizon, args.tuning_horizon, False, args.seeds, args.independent)
    calls = {name: call for name, call in calls.items() if name in args.sweeps}
    rows = []
    for name, (fn, runs, horizon) in calls.items():

        def variant(layout, fn=fn):
            ahead, minor, by_component = (layout.split(":") + ["auto"] * 2)[:3]
            sweep_module.DRAW_AHEAD = None if ahead == "auto" else int(ahead)
            sweep_module.RUNS_MINOR = None if minor == "auto" else bool(int(minor))
            sweep_module.CONTEXTS_BY_COMPONENT = None if by_component == "auto" else bool(int(by_component))
            return fn()

        first, results = {}, {}
        for a in layouts:
            t = time.perf_counter()
            results[a] = variant(a)
            first[a] = time.perf_counter() - t
        equal = all(
            np.array_equal(results[a].data[f], results[layouts[0]].data[f])
            for a in layouts
            for f in results[a].data
        )
        best = common.interleaved_best({a: (lambda a=a: variant(a)) for a in layouts}, args.repeats)
        for a in layouts:
            rows.append(
                dict(
                    sweep=name,
                    runs=runs,
                    rounds=horizon,
                    layout=a,
                    rate=runs * horizon / best[a],
                    vs_first=best[layouts[0]] / best[a],
                    first_call_s=first[a],
                    bitwise_equal=equal,
                    digest=digest(results[a]),
                )
            )
            print(rows[-1], flush=True)
    # the backend's defaults again
    sweep_module.DRAW_AHEAD = sweep_module.RUNS_MINOR = sweep_module.CONTEXTS_BY_COMPONENT = None
    print(f"\nagent-rounds per second, best of {args.repeats}, interleaved; {common.machine()}\n")
    common.print_table(
        rows,
        [
            ("sweep", ""),
            ("runs", ""),
            ("rounds", ""),
            ("layout", ""),
            ("rate", ".3g"),
            ("vs_first", ".2f"),
            ("first_call_s", ".1f"),
            ("bitwise_equal", ""),
        ],
    )
    print(f"\nwrote {common.write_json('chunk_layout', {'rows': rows, 'devices': jax.device_count()})}")


if __name__ == "__main__":
    main()
