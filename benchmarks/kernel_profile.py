"""Which device kernels a grid sweep's round is made of: one traced call of a CR-Hvt-UCB grid sweep (16
``beta_scale`` values × seeds × rounds, the paper's environment), its device events summed by kernel.

Prints the kernels per round, the device time per round and the kernels that take the most of it (name,
launches per round, microseconds per round, share, the jax operation it was made from). Meant for a GPU
(on a CPU no device events are traced). With command buffers, the profiler does not see every iteration
of a loop inside a graph (the noise sampler's rejection loop, the projection's Newton loop): profile
with ``JAXBANDIT_COMMAND_BUFFERS=0`` to count them.

    python benchmarks/kernel_profile.py [--seeds 10000] [--horizon 500] [--top 30] [--hlo-out F.txt.gz]

``--hlo-out`` keeps the optimised chunk program (gzipped text), to read its fusions after the lease.
"""

from __future__ import annotations

import os
import tempfile

# The optimised chunk program is dumped as text, to name each kernel's source operation (set before jax
# starts a backend).
DUMP = tempfile.mkdtemp(prefix="jaxbandit-hlo-")
os.environ["XLA_FLAGS"] = (
    f"{os.environ.get('XLA_FLAGS', '')} --xla_dump_to={DUMP} --xla_dump_hlo_as_text "
    "--xla_dump_hlo_module_re=.*run_chunk.*"
).strip()

import argparse  # noqa: E402
import collections  # noqa: E402
import glob  # noqa: E402
import gzip  # noqa: E402
import re  # noqa: E402
import time  # noqa: E402

import common  # noqa: E402
import grid_sweep  # noqa: E402
import jax  # noqa: E402
from jax.profiler import ProfileData  # noqa: E402

import jaxbandit as jb  # noqa: E402

# The chunk's own nesting (the jit, its scans over blocks and rounds), which every kernel of a round shares.
_CHUNK_PREFIX = re.compile(r"^jit\(_run_chunk\)/(?:vmap\(\)/)?(?:while/body/)*")
_INSTRUCTION = re.compile(r'^\s+%([\w.\-]+) = .*?metadata=\{[^}]*?op_name="([^"]*)"')


def source_operations(dump: str) -> dict:
    """Kernel name (as the profiler writes it: '.' as '_') -> the jax operation it was made from, read
    from the optimised chunk program's text."""
    names = {}
    for path in glob.glob(f"{dump}/*run_chunk*after_optimizations.txt"):
        with open(path) as f:
            for line in f:
                match = _INSTRUCTION.match(line)
                if match:
                    op = _CHUNK_PREFIX.sub("", match.group(2)).replace("eval_jaxpr/", "")
                    names[match.group(1).replace(".", "_")] = op
    return names


def device_events(xplane: str):
    """(line name, event name, duration in ns) of every event on a device plane of the trace."""
    for plane in ProfileData.from_file(xplane).planes:
        if plane.name.startswith("/device:"):
            for line in plane.lines:
                for event in line.events:
                    yield line.name, event.name, event.duration_ns


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10000)
    parser.add_argument("--horizon", type=int, default=500, help="rounds (the projection rarely acts early)")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--hlo-out", help="write the optimised chunk program here (gzipped text)")
    args = parser.parse_args(argv)
    T = args.horizon
    # grid_sweep.py's 16-point grid (its sweeps return the results on the host: each call has finished)
    run, runs, _ = grid_sweep.sweeps(jb, T, T, False, args.seeds)["grid16"]

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
    print(f"{jax.devices()[0].device_kind}: {runs} runs × {T} rounds, wall {wall:.3f} s")
    print("device lines (events):", dict(by_line) or "none (no device plane in the trace)")
    print(
        f"kernels per round {launches / T:.1f}, kernel time per round {busy_ns / T / 1e3:.1f} us, "
        f"wall per round {wall / T * 1e6:.1f} us ({runs * T / wall:.3g} agent-rounds/s)\n"
    )
    sources = source_operations(DUMP)
    rows = [
        dict(
            kernel=name[:90],
            per_round=n / T,
            us_per_round=ns / T / 1e3,
            share=ns / max(busy_ns, 1),
            source=sources.get(name, "")[-110:],
        )
        for name, (n, ns) in sorted(kernels.items(), key=lambda kv: -kv[1][1])
    ]
    common.print_table(
        rows[: args.top],
        [("kernel", ""), ("per_round", ".2f"), ("us_per_round", ".1f"), ("share", ".3f"), ("source", "")],
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
    if args.hlo_out:
        with gzip.open(args.hlo_out, "wt") as out:
            for dumped in sorted(glob.glob(f"{DUMP}/*run_chunk*after_optimizations.txt")):
                with open(dumped) as f:
                    out.write(f"// {os.path.basename(dumped)}\n{f.read()}")
        print(f"wrote {args.hlo_out}")


if __name__ == "__main__":
    main()
