"""Which kernels a sweep's round is made of: one traced call of a CR-Hvt-UCB grid sweep (16
``beta_scale`` values × seeds × rounds, the paper's environment; with ``--sweep independent``, 10 × seeds
independent runs of 1000 rounds, one lane a stream), or with ``--method NAME`` the sweep
``tune-figure1`` runs for that registered method (its registry grid × C ∈ {0, 100} × ``--seeds`` tuning
seeds, the first noise setting), its kernels' events summed by kernel.

Prints the kernels per round, the kernel time per round and the kernels that take the most of it (name,
launches per round, microseconds per round, share, the jax operation it was made from). On a GPU the
kernels are the device's events. With command buffers, the profiler does not see every iteration of a
loop inside a graph (the noise sampler's rejection loop, the projection's Newton loop): profile with
``JAXBANDIT_COMMAND_BUFFERS=0`` to count them. On a CPU they are XLA's thunks on the host
(``--xla_cpu_enable_xprof_traceme``), each counted for its own time, not that of the thunks inside it (a
loop's own time is its bookkeeping), with the runtime's own events (``ThunkExecutor``) as rows of their
own. The profiler's cost per event inflates a round of many small kernels (about fourfold for
CR-Hvt-UCB's, ``round_parts.py``): on a CPU trust the shares of large kernels (a history pass, a batched
``eigh``), not the wall time.

    python benchmarks/kernel_profile.py [--seeds 10000] [--horizon 500] [--sweep independent] [--top 30]
    python benchmarks/kernel_profile.py --method gadaoful --seeds 10 --horizon 1500    # a CPU

``--hlo-out`` keeps the optimised chunk program (gzipped text), to read its fusions after the lease.
``--timeline-out`` keeps the trace's events (each line's: name, start, duration; device and host), and the
device's idle time is printed by the kernels it falls between, in the whole call and in its middle tenth
(steady rounds): whether a round waits for launches, for a loop's condition, or for nothing.
"""

from __future__ import annotations

import os
import shutil
import tempfile

# The optimised chunk program is dumped as text, to name each kernel's source operation, and on a machine
# without an NVIDIA GPU XLA:CPU traces its thunks (set before jax starts a backend; only there, so that a
# GPU machine's XLA never meets a CPU flag it might not know).
DUMP = tempfile.mkdtemp(prefix="jaxbandit-hlo-")
CPU_TRACE = "" if shutil.which("nvidia-smi") else " --xla_cpu_enable_xprof_traceme=true"
os.environ["XLA_FLAGS"] = (
    f"{os.environ.get('XLA_FLAGS', '')} --xla_dump_to={DUMP} --xla_dump_hlo_as_text "
    f"--xla_dump_hlo_module_re=.*run_chunk.*{CPU_TRACE}"
).strip()

import argparse  # noqa: E402
import collections  # noqa: E402
import glob  # noqa: E402
import gzip  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
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


def kernel_events(xplane: str):
    """(line name, event name, its own duration in ns) of every kernel event of the trace: a device
    plane's events, or where the trace has no device plane (a CPU), the host's XLA events (not the
    Python ones, named ``$…``), each less the events nested in it on its line."""
    planes = list(ProfileData.from_file(xplane).planes)
    devices = [p for p in planes if p.name.startswith("/device:")]
    for plane in devices or [p for p in planes if p.name == "/host:CPU"]:
        for line in plane.lines:
            events = [(e.start_ns, e.duration_ns, e.name) for e in line.events if _kernel_or_runtime(e.name)]
            yield from own_times(line.name, events)


def _kernel_or_runtime(name: str) -> bool:
    """Whether a host event is XLA's: not a Python one (``$…``), nor a thread waiting for a program."""
    return not name.startswith("$") and "wait for completion" not in name


def own_times(line: str, events: list):
    """(line, name, own ns) of ``events`` (start, duration, name) on one line, where an event that lies
    inside another is nested in it (a thunk in a loop's thunk) and counted out of its time."""
    open_events: list[list] = []  # [end, name, own ns], innermost last
    for start, duration, name in sorted(events, key=lambda e: (e[0], -e[1])):
        while open_events and open_events[-1][0] <= start:
            _, done, own = open_events.pop()
            yield line, done, own
        if open_events:
            open_events[-1][2] -= duration
        open_events.append([start + duration, name, duration])
    for _, done, own in reversed(open_events):
        yield line, done, own


def timeline(xplane: str, window=(0.0, 1.0)) -> dict:
    """The trace's events (device and host; not Python's) that start in ``window`` (fractions of the span
    of the device's events, or on a CPU of XLA's): {plane: {line: [[start ns, duration ns, name], ...]}}."""
    every = list(ProfileData.from_file(xplane).planes)
    planes = [p for p in every if p.name.startswith("/device:")] + [p for p in every if p.name == "/host:CPU"]
    lines = {
        (p.name, ln.name): [e for e in ln.events if _kernel_or_runtime(e.name)]
        for p in planes
        for ln in p.lines
    }
    timed = [
        e for (plane, line), evs in lines.items() for e in evs if plane == planes[0].name and line != "python"
    ]
    first, last = min(e.start_ns for e in timed), max(e.start_ns + e.duration_ns for e in timed)
    lo, hi = first + window[0] * (last - first), first + window[1] * (last - first)
    out: dict = collections.defaultdict(dict)
    for (plane, line), evs in lines.items():
        out[plane][line] = [[e.start_ns, e.duration_ns, e.name] for e in evs if lo <= e.start_ns < hi]
    return out


def idle_between(events: list) -> tuple[int, int, collections.Counter]:
    """(busy ns, idle ns, idle ns by (kernel before, kernel after)) of one stream's ``events`` ([start,
    duration, name]), the idle time being the gaps between one event's end and the next one's start."""
    busy, idle, pairs = 0, 0, collections.Counter()
    events = sorted(events)
    for (s0, d0, n0), (s1, _, n1) in itertools.pairwise(events):
        gap = s1 - (s0 + d0)
        if gap > 0:
            idle += gap
            pairs[(n0[:40], n1[:40])] += gap
    busy = sum(d for _, d, _ in events)
    return busy, idle, pairs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10000)
    parser.add_argument("--horizon", type=int, default=500, help="rounds (the projection rarely acts early)")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--hlo-out", help="write the optimised chunk program here (gzipped text)")
    parser.add_argument(
        "--sweep",
        choices=["grid16", "independent"],
        default="grid16",
        help="grid_sweep.py's sweep: the 16-point grid, or 10 × --seeds independent runs",
    )
    parser.add_argument("--timeline-out", help="write the middle tenth's events here (gzipped JSON)")
    parser.add_argument("--method", help="profile tune-figure1's sweep of this registered method instead")
    parser.add_argument(
        "--cpu-workers",
        type=int,
        default=1,
        help="jb.sweep's stream groups on a CPU (default 1: with more, LAPACK runs a matrix per call, an "
        "event each, and GAdaOFUL's trace at T = 1500 outgrew 24 GB)",
    )
    args = parser.parse_args(argv)
    jb.runner.sweep.CPU_WORKERS = args.cpu_workers
    T = args.horizon
    if args.method:
        run, runs = common.figure1_tuning(args.method, T, args.seeds)
    else:  # grid_sweep.py's 16-point grid (its sweeps return the results on the host: each call has finished)
        independent = args.seeds * 10 if args.sweep == "independent" else 0
        run, runs, T = grid_sweep.sweeps(jb, T, T, False, args.seeds, independent)[args.sweep]

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
    on_device = jax.default_backend() != "cpu"
    for line, name, ns in kernel_events(xplane):
        by_line[line] += 1
        if not on_device or "Stream" in line or "stream" in line:
            kernels[name][0] += 1
            kernels[name][1] += ns
    launches = sum(n for n, _ in kernels.values())
    busy_ns = sum(ns for _, ns in kernels.values())
    print(f"{jax.devices()[0].device_kind}: {runs} runs × {T} rounds, wall {wall:.3f} s")
    print("lines (events):", dict(by_line) or "none (no kernel events in the trace)")
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
            source=sources.get(name.replace(".", "_"), "")[-110:],
        )
        for name, (n, ns) in sorted(kernels.items(), key=lambda kv: -kv[1][1])
    ]
    common.print_table(
        rows[: args.top],
        [("kernel", ""), ("per_round", ".2f"), ("us_per_round", ".1f"), ("share", ".3f"), ("source", "")],
    )
    path = common.write_json(
        "kernel_profile_independent" if args.sweep == "independent" and not args.method else "kernel_profile",
        {
            "sweep": args.method or args.sweep,
            "cpu_workers": args.cpu_workers,
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
    if args.timeline_out:
        events = timeline(xplane)
        for part, window in (("the whole call", (0.0, 1.0)), ("its middle tenth", (0.45, 0.55))):
            for plane, lines in timeline(xplane, window).items():
                for line, evs in lines.items():
                    if plane.startswith("/device:") and "Compute" in line and len(evs) > 1:
                        busy, idle, pairs = idle_between(evs)
                        print(f"\n{plane} {line}, {part}: busy {busy / 1e6:.2f}, idle {idle / 1e6:.2f} ms")
                        print("idle time by the kernels it falls between (ms):")
                        for (before, after), ns in pairs.most_common(12):
                            print(f"  {ns / 1e6:7.3f}  {before} -> {after}")
        with gzip.open(args.timeline_out, "wt") as out:
            json.dump(events, out)
        print(f"wrote {args.timeline_out}")
    if args.hlo_out:
        with gzip.open(args.hlo_out, "wt") as out:
            for dumped in sorted(glob.glob(f"{DUMP}/*run_chunk*after_optimizations.txt")):
                with open(dumped) as f:
                    out.write(f"// {os.path.basename(dumped)}\n{f.read()}")
        print(f"wrote {args.hlo_out}")


if __name__ == "__main__":
    main()
