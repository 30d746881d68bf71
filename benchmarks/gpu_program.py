"""A sweep's programs as the library lowers them for a GPU, on any machine: now and the previous code.

With no GPU at hand, the library is told it runs on one (``jax.default_backend`` answers "gpu", so every
backend default — runs minor, rounds drawn ahead, no CPU worker groups, no stragglers one by one — takes
its GPU value), and each of ``jb.sweep``'s programs is lowered to StableHLO for CUDA beside its normal
CPU lowering (``jax``'s ``lowering_platforms``), which this machine needs no GPU for. The sweep still
runs on the CPU, so keep it small: what is compared is the program's text, not its speed. Prints the
operations whose counts differ and how many lines differ once SSA names and locations are dropped, and
writes each program to ``gpu_program_{code}{name}.mlir`` under the results folder, to diff.

It found, on a CPU, the one change in the GPU's independent-run program between two leases (the sphere's
uniforms drawn flat), where the H200 had measured a 0.94× slowdown between them.

    python benchmarks/gpu_program.py --previous f5dd2fe [--sweep independent] [--runs 1024]
"""

from __future__ import annotations

import argparse
import collections
import difflib
import re

import common
import grid_sweep
import jax
import jax._src.interpreters.pxla as pxla

import jaxbandit as jb

#: The library's programs whose GPU lowering is kept (by the name of the function jitted).
PROGRAMS = ("_run_chunk", "_init_streams")

_OP = re.compile(r"\b((?:stablehlo|chlo|mhlo)\.\w+|func\.call)\b")
#: (pattern, replacement): SSA names, locations, the numbered suffixes of private functions' names
_NOISE = [
    (re.compile(r"%[\w#:]+"), ""),
    (re.compile(r"loc\([^)]*\)"), ""),
    (re.compile(r"@(\w+?)_\d+\b"), r"@\1"),
]


def gpu_lowerings(sweep) -> dict[str, str]:
    """name -> StableHLO text for CUDA of each of ``PROGRAMS`` that ``sweep()`` compiles, the library
    believing that it runs on a GPU."""
    texts: dict[str, str] = {}
    # JAX's private lowering step, which every jitted call takes (the public jax.stages.Traced.lower misses
    # the direct calls of code older than the shared programs, bcb9ec7)
    lower, backend = pxla.lower_sharding_computation, jax.default_backend

    def hooked(closed_jaxpr, api_name, fun_name, *args, **kwargs):
        if any(name in fun_name for name in PROGRAMS) and fun_name not in texts:
            cuda = dict(kwargs, lowering_platforms=("cuda",))
            texts[fun_name] = lower(closed_jaxpr, api_name, fun_name, *args, **cuda).as_text()
        return lower(closed_jaxpr, api_name, fun_name, *args, **kwargs)

    pxla.lower_sharding_computation, jax.default_backend = hooked, lambda: "gpu"
    try:
        sweep()
    finally:
        pxla.lower_sharding_computation, jax.default_backend = lower, backend
    return texts


def normalised(text: str) -> list[str]:
    """The program's lines without SSA names, locations and the numbered suffixes of private functions."""
    lines = []
    for line in text.splitlines():
        for pattern, repl in _NOISE:
            line = pattern.sub(repl, line)
        lines.append(line)
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--previous", default="HEAD", help="git revision (or extracted folder) to compare")
    parser.add_argument("--sweep", default="independent", choices=["grid16", "tuning", "independent"])
    parser.add_argument("--runs", type=int, default=1024, help="independent runs, or the grid's seeds")
    args = parser.parse_args(argv)
    libs = {"now": jb, "previous": common.load_previous(args.previous)}
    programs = {}
    for tag, lib in libs.items():
        calls = grid_sweep.sweeps(lib, 200, 100, False, args.runs, independent=args.runs)
        programs[tag] = gpu_lowerings(calls[args.sweep][0])
        for name, text in programs[tag].items():
            path = common.results_dir() / f"gpu_program_{tag}{name}.mlir"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    rows = []
    for name in sorted(set(programs["now"]) | set(programs["previous"])):
        now, previous = programs["now"].get(name, ""), programs["previous"].get(name, "")
        count = lambda text: collections.Counter(_OP.findall(text))
        ops_now, ops_previous = count(now), count(previous)
        diff = difflib.unified_diff(normalised(previous), normalised(now), lineterm="", n=0)
        changed = sum(1 for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---"))
        differing = {op: (ops_previous[op], ops_now[op]) for op in sorted(set(ops_now) | set(ops_previous))}
        differing = {op: counts for op, counts in differing.items() if counts[0] != counts[1]}
        rows.append(
            {
                "program": name,
                "lines_previous": len(previous.splitlines()),
                "lines_now": len(now.splitlines()),
                "lines_changed": changed,
                "ops_changed": ", ".join(f"{op} {a}→{b}" for op, (a, b) in differing.items()) or "none",
            }
        )
    print(f"\n{args.sweep} sweep ({args.runs}), GPU lowering; previous = {args.previous}\n")
    common.print_table(
        rows,
        [(k, "") for k in ("program", "lines_previous", "lines_now", "lines_changed", "ops_changed")],
    )
    common.write_json("gpu_program", {"sweep": args.sweep, "previous": args.previous, "rows": rows})


if __name__ == "__main__":
    main()
