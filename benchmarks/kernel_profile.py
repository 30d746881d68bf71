"""Which device kernels a grid sweep's round is made of: one traced call of a CR-Hvt-UCB grid sweep (16
``beta_scale`` values × seeds × rounds, the paper's environment), its device events summed by kernel.

Prints the kernels per round, the device time per round and the kernels that take the most of it (name,
launches per round, microseconds per round, share). Meant for a GPU (on a CPU the "kernels" are XLA's
thunks, and far fewer of them are traced).

    python benchmarks/kernel_profile.py [--seeds 10000] [--horizon 50] [--top 30]
"""

from __future__ import annotations

import argparse
import collections
import glob
import tempfile
import time

import common
import jax
import numpy as np
from jax.profiler import ProfileData

import jaxbandit as jb


def device_events(xplane: str):
    """(line name, event name, duration in ns) of every event on a device plane of the trace."""
    for plane in ProfileData.from_file(xplane).planes:
        print("plane", plane.name, {line.name: len(list(line.events)) for line in plane.lines})
        if not plane.name.startswith("/device:"):
            continue
        for line in plane.lines:
            for event in line.events:
                yield line.name, event.name, event.duration_ns


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10000)
    parser.add_argument("--betas", type=int, default=16)
    parser.add_argument("--horizon", type=int, default=50)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args(argv)
    T = args.horizon

    def make_env(p):
        return jb.envs.linear(
            common.D, common.K, noise=jb.noise.student_t(3.0), corruption=jb.corruption.flip(p["C"])
        )

    def make_alg(p):
        return jb.cr_hvt_ucb(T, common.D, eps=1.0, nu=3**0.5, corruption=p["C"], beta_scale=p["beta_scale"])

    grid = {"C": [100.0], "beta_scale": np.logspace(-6, 0, args.betas).tolist()}

    def run():
        res = jb.sweep(make_alg, make_env, grid, horizon=T, seeds=args.seeds, record=T)
        jax.block_until_ready(res.cumulative_regret)

    run()  # compiles
    trace_dir = tempfile.mkdtemp(prefix="jaxbandit-profile-")
    jax.profiler.start_trace(trace_dir)
    start = time.perf_counter()
    run()
    wall = time.perf_counter() - start
    jax.profiler.stop_trace()
    (xplane,) = glob.glob(f"{trace_dir}/**/*.xplane.pb", recursive=True)

    by_line = collections.Counter()
    kernels = collections.defaultdict(lambda: [0, 0])  # name -> [launches, ns]
    for line, name, ns in device_events(xplane):
        by_line[line] += 1
        if "Stream" in line or "stream" in line:
            kernels[name][0] += 1
            kernels[name][1] += ns
    launches = sum(n for n, _ in kernels.values())
    busy_ns = sum(ns for _, ns in kernels.values())
    runs = args.betas * args.seeds
    print(f"{jax.devices()[0].device_kind}: {runs} runs × {T} rounds, wall {wall:.3f} s")
    print("device lines (events):", dict(by_line))
    print(
        f"kernels per round {launches / T:.1f}, kernel time per round {busy_ns / T / 1e3:.1f} us, "
        f"wall per round {wall / T * 1e6:.1f} us ({runs * T / wall:.3g} agent-rounds/s)\n"
    )
    rows = [
        dict(
            kernel=name[:90],
            per_round=n / T,
            us_per_round=ns / T / 1e3,
            share=ns / max(busy_ns, 1),
        )
        for name, (n, ns) in sorted(kernels.items(), key=lambda kv: -kv[1][1])
    ]
    common.print_table(
        rows[: args.top],
        [("kernel", ""), ("per_round", ".2f"), ("us_per_round", ".1f"), ("share", ".3f")],
    )
    path = common.write_json(
        "kernel_profile",
        {
            "runs": runs,
            "horizon": T,
            "wall_s": wall,
            "kernels_per_round": launches / T,
            "kernel_us_per_round": busy_ns / T / 1e3,
            "lines": dict(by_line),
            "kernels": rows,
        },
    )
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
