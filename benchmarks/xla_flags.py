"""Compiler settings of a GPU sweep against each other: each variant (environment variables: XLA flags,
the library's opt-outs; a library constant) in a process of its own, running ``chunk_layout.py`` on the
16-point grid and independent runs; prints each variant's rate against the first and whether its results
hash the same (every recorded array, bitwise). The first variant runs again last, to show the spread
between processes.

    python benchmarks/xla_flags.py [--seeds 10000] [--independent 100000] [--variants NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import common

_CB = "--xla_gpu_enable_command_buffer="
#: name -> (environment variables, chunk_layout.py --set arguments)
VARIANTS = {
    "library": ({}, []),
    "peeled_newton_step": ({}, ["jaxbandit.core.linalg.PEELED_NEWTON_STEPS=1"]),
    # the Student-t sampler's rejection loop: its body unlaunched in ~99 % of a block's draws
    "peeled_rejection_steps": ({}, ["jaxbandit.envs.noise.PEELED_REJECTION_STEPS=12"]),
    # chunks of up to 2^27 outputs a field (the grid: 3 chunks, not 21; independent runs: 1, not 7)
    "larger_chunks": ({}, ["jaxbandit.runner.sweep.CHUNK_OUTPUTS=134217728"]),
    "no_command_buffers": ({"JAXBANDIT_COMMAND_BUFFERS": "0"}, []),
    # loops run by the host (their condition copied back each iteration), the rest in graphs
    "graphs_without_loops": ({"XLA_FLAGS": _CB + "FUSION,CUBLAS,CUSTOM_CALL,CONDITIONAL"}, []),
    "graphs_fusions_only": ({"XLA_FLAGS": _CB + "FUSION,CUBLAS,CUSTOM_CALL"}, []),
    "graph_min_size_1": ({"XLA_FLAGS": "--xla_gpu_graph_min_graph_size=1"}, []),
    "concurrent_regions": ({"XLA_FLAGS": "--xla_gpu_graph_enable_concurrent_region=true"}, []),
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10000)
    parser.add_argument("--independent", type=int, default=100000)
    parser.add_argument("--horizon", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=60, help="seconds a variant's process may take")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    args = parser.parse_args(argv)
    rows = []
    for name in [*args.variants, args.variants[0]]:
        env_vars, settings = VARIANTS[name]
        out = tempfile.mkdtemp(prefix=f"jaxbandit-{name}-")
        env = dict(os.environ, JAXBANDIT_BENCH_OUT=out, **env_vars)
        if "XLA_FLAGS" in env_vars:
            env["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {env_vars['XLA_FLAGS']}".strip()
        command = [sys.executable, "chunk_layout.py", "--layouts", "auto", "--seeds", str(args.seeds)]
        command += ["--independent", str(args.independent), "--horizon", str(args.horizon)]
        command += ["--repeats", str(args.repeats), "--sweeps", "grid16", "independent", "--set", *settings]
        start = time.perf_counter()
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=args.timeout)
            failed = done.returncode != 0 and done.stderr[-300:]
        except subprocess.TimeoutExpired:
            failed = f"over {args.timeout} s"
        seconds = time.perf_counter() - start
        if failed:
            print(f"{name}: failed after {seconds:.0f} s: {failed}", flush=True)
            continue
        with open(f"{out}/chunk_layout.json") as f:
            for row in json.load(f)["rows"]:
                rows.append(dict(variant=name, sweep=row["sweep"], rate=row["rate"], digest=row["digest"]))
                print(rows[-1], f"process {seconds:.0f} s", flush=True)
    for row in rows:
        first = next(r for r in rows if r["sweep"] == row["sweep"])
        row["vs_first"] = row["rate"] / first["rate"]
        row["same_results"] = row["digest"] == first["digest"]
    print(f"\nagent-rounds per second, best of {args.repeats}; {common.machine()}\n")
    common.print_table(
        rows, [("variant", ""), ("sweep", ""), ("rate", ".3g"), ("vs_first", ".2f"), ("same_results", "")]
    )
    print(f"\nwrote {common.write_json('xla_flags', {'rows': rows})}")


if __name__ == "__main__":
    main()
