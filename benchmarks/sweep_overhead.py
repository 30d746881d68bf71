"""What ``jb.sweep`` costs over a hand-written ``jit(vmap(jb.simulate))`` of the same independent runs.

In one process, interleaved, best of ``--repeats`` (CR-Hvt-UCB, paper environment, β × 1e-4, flip
C = 100): the hand-written program under XLA's defaults and with the library's command-buffer option;
``jb.sweep`` over seeds (final regret kept) with its default chunking and in one chunk.

    python benchmarks/sweep_overhead.py [--runs 100000] [--rounds 1000]
"""

from __future__ import annotations

import argparse
import time

import common
import jax

import jaxbandit as jb
from jaxbandit.core.lowering.xla_options import COMMAND_BUFFER


def library(T: int, runs: int, chunk_size: int | None):
    grid = {"C": [100.0], "beta_scale": [1e-4]}

    def make_alg(p):
        return jb.cr_hvt_ucb(T, common.D, eps=1.0, nu=3**0.5, corruption=p["C"], beta_scale=p["beta_scale"])

    def make_env(p):
        return common.paper_env(p["C"])

    return lambda: jb.sweep(make_alg, make_env, grid, horizon=T, seeds=runs, record=T, chunk_size=chunk_size)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    T, n = args.rounds, args.runs
    alg, env = common.paper_alg(T), common.paper_env()
    command_buffers = {"xla_gpu_enable_command_buffer": COMMAND_BUFFER}
    fns = {
        "vmap(simulate), XLA defaults": common.batched_runner(alg, env, T, n),
        "vmap(simulate), command buffers": common.batched_runner(alg, env, T, n, command_buffers),
        "jb.sweep": library(T, n, None),
        "jb.sweep, one chunk": library(T, n, T),
    }
    for fn in fns.values():
        t = time.perf_counter()
        fn()
        print(f"first call {time.perf_counter() - t:.1f} s", flush=True)
    best = common.interleaved_best(fns, args.repeats)
    rows = [dict(variant=k, rate=n * T / s) for k, s in best.items()]
    for r in rows:
        r["vs_first"] = r["rate"] / rows[0]["rate"]
    print(f"\n{n} runs × {T} rounds on {jax.devices()[0].device_kind}; agent-rounds per second\n")
    common.print_table(rows, [("variant", ""), ("rate", ".3g"), ("vs_first", ".2f")])
    common.write_json("sweep_overhead", {"runs": n, "rounds": T, "rows": rows})


if __name__ == "__main__":
    main()
