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

``--compile h100`` (or ``h200``, or a path) also compiles each program with XLA's GPU compiler for that
card's target config (``benchmarks/gpu_targets/``), still without a GPU: XLA's fusion, layout and
scheduling passes and PTX generation run as on the card, through a compile-only CUDA device. It needs
JAX's CUDA plugin installed beside the machine's jax (``pip install "jax[cuda12]==$(python -c 'import
jax; print(jax.__version__)')"`` in a virtual environment of its own, ~5 GB; run it with
``JAX_PLATFORMS=cpu``), and stops each sweep once its chunk program is lowered, so ``--runs`` and
``--horizon`` may be a card's sizes. It writes the optimised programs (``gpu_program_{code}{name}.hlo``)
and prints each one's compile time, its kernels (fusions and library calls) and its loops' bodies'
kernels (in the program's order; the JSON names each loop). The plugin's XLA is the installed jax's,
which need not be the card's: jax 0.10.2 here fused the projection's Newton step differently from the
H200's jax 0.11.2 (2026-11-28), so read the programs as that version's.
``--set MODULE.NAME=VALUE`` sets library constants for the current code only (as ``gpu_equal.py``).
``--every-algorithm`` (with ``--compile``) instead compiles every registered algorithm's sweep: nothing
should fail to compile on a card.

    python benchmarks/gpu_program.py --previous f5dd2fe [--sweep independent] [--runs 1024]
    JAX_PLATFORMS=cpu python benchmarks/gpu_program.py --compile h100 --sweep grid16 --runs 10000 \
        --horizon 2000 --previous .. --set jaxbandit.core.linalg.PEELED_NEWTON_STEPS=1
    JAX_PLATFORMS=cpu python benchmarks/gpu_program.py --compile h100 --every-algorithm --runs 64
"""

from __future__ import annotations

import argparse
import collections
import difflib
import re
import time
from pathlib import Path

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


class _Lowered(Exception):
    """Stops a sweep once its chunk program is lowered (``gpu_lowerings(..., stop=True)``)."""


def gpu_lowerings(sweep, stop: bool = False) -> dict:
    """name -> each of ``PROGRAMS`` that ``sweep()`` compiles, lowered for CUDA (JAX's lowering, whose
    ``as_text()`` is the StableHLO text and ``stablehlo()`` the module), the library believing that it
    runs on a GPU. ``stop``: the sweep is stopped once its chunk program is lowered (nothing runs)."""
    lowered: dict = {}
    # JAX's private lowering step, which every jitted call takes (the public jax.stages.Traced.lower misses
    # the direct calls of code older than the shared programs, bcb9ec7)
    lower, backend = pxla.lower_sharding_computation, jax.default_backend

    def hooked(closed_jaxpr, api_name, fun_name, *args, **kwargs):
        if any(name in fun_name for name in PROGRAMS) and fun_name not in lowered:
            cuda = dict(kwargs, lowering_platforms=("cuda",))
            lowered[fun_name] = lower(closed_jaxpr, api_name, fun_name, *args, **cuda)
            if stop and "_run_chunk" in fun_name:
                raise _Lowered
        return lower(closed_jaxpr, api_name, fun_name, *args, **kwargs)

    pxla.lower_sharding_computation, jax.default_backend = hooked, lambda: "gpu"
    try:
        sweep()
    except _Lowered:
        pass
    finally:
        pxla.lower_sharding_computation, jax.default_backend = lower, backend
    return lowered


def compile_only_gpu(target: str):
    """A compile-only CUDA device for the target config ``target`` (a name in ``gpu_targets/`` or a path):
    XLA's GPU compiler without a GPU (JAX's CUDA plugin must be installed)."""
    from jax.experimental import topologies

    path = (
        Path(target) if Path(target).is_file() else Path(__file__).parent / "gpu_targets" / f"{target}.txtpb"
    )
    try:
        topology = topologies.get_topology_desc(
            "cuda", platform="cuda", topology="1x1x1", target_config=path.read_text()
        )
    except Exception as error:  # no CUDA plugin, or one of another version
        raise SystemExit(
            f"--compile {target}: no compile-only CUDA device ({error}); install JAX's CUDA plugin of the "
            f"installed jax's version ({jax.__version__}): pip install 'jax[cuda12]=={jax.__version__}'"
        ) from error
    return topology.devices[0]


def compiled_for(device, lowered) -> tuple[str, float]:
    """The optimised program (HLO text) XLA's GPU compiler makes of ``lowered`` for ``device`` with the
    options the library compiles with on a GPU (``xla_options.compiler_options("gpu")``: command buffers),
    and the seconds it took (JAX's private compile step: a compile-only device cannot load what it
    compiles)."""
    from jax._src import compiler
    from jax._src.lib import xla_client as xc

    library = {name: str(value) for name, value in jb.runner.xla_options.compiler_options("gpu").items()}
    options = compiler.get_compile_options(num_replicas=1, num_partitions=1, env_options_overrides=library)
    start = time.perf_counter()
    executable = compiler.backend_compile_and_load(
        device.client, lowered.stablehlo(), xc.DeviceList((device,)), options, []
    )
    return executable.hlo_modules()[0].to_string(), time.perf_counter() - start


_COMPUTATION = re.compile(r"^(?:ENTRY )?%([\w.\-]+) .*\{$")
_FUSED = re.compile(r"\bfusion\(.*?calls=%([\w.\-]+)")


def kernels(hlo: str) -> dict:
    """Counts in an optimised GPU program: ``kernels``, its fusions and custom calls outside fused
    computations (each a launch where it runs), and ``loop_bodies``, the kernels of each while loop's body
    alone (its own loops' bodies not counted), in the program text's order, with the loop's ``op_name``
    (e.g. a grid's chunk: the projection's Newton loop, the sampler's rejection loop, the rounds)."""
    fused = set(_FUSED.findall(hlo))
    body: dict[str, int] = {}
    loops: list[tuple[str, str]] = []  # (body computation, op_name)
    current = None
    for line in hlo.splitlines():
        match = _COMPUTATION.match(line)
        if match:
            current = None if match.group(1) in fused else match.group(1)
            if current is not None:
                body[current] = 0
        elif current is not None:
            body[current] += bool(re.search(r" (fusion|custom-call)\(", line))
            loop = re.search(r" while\(.*?body=%([\w.\-]+).*?op_name=\"([^\"]*)\"", line)
            if loop:
                loops.append((loop.group(1), loop.group(2)))
    bodies = [(op_name, body.get(name, 0)) for name, op_name in loops]
    return {"kernels": sum(body.values()), "loop_bodies": bodies}


def loops_text(counts: dict) -> str:
    """:func:`kernels`' loop bodies as one column: their kernel counts, "5/4/23"."""
    return "/".join(str(n) for _, n in counts["loop_bodies"])


def every_algorithm(device, runs: int, horizon: int) -> list[dict]:
    """Each registered algorithm's sweep (2 × 2 points, the paper's environment, ``runs`` seeds) lowered
    and compiled for ``device``: the check before a lease that nothing fails to compile on a card."""
    rows = []
    for name in jb.registry.names():
        spec = jb.registry.algorithm(name)
        axis, values = next(iter(spec.grid.items()))

        def make_alg(p, spec=spec, axis=axis):
            problem = jb.registry.Problem(horizon, common.D, eps=1.0, nu=3**0.5, corruption=p["C"])
            return spec.make(problem, **{axis: p["h"]})

        def make_env(p):
            return common.paper_env(p["C"])

        grid = {"C": [0.0, 100.0], "h": list(values[:2])}
        sweep = lambda: jb.sweep(make_alg, make_env, grid, horizon=horizon, seeds=runs, record=10)
        for program, lowered in gpu_lowerings(sweep, stop=True).items():
            hlo, seconds = compiled_for(device, lowered)
            counts = kernels(hlo)
            loops = loops_text(counts)
            row = dict(
                algorithm=name, program=program, compile_s=round(seconds, 2), kernels=counts["kernels"]
            )
            rows.append({**row, "loops": loops})
            print(
                f"{name} {program}: {seconds:.1f} s, {counts['kernels']} kernels, loops {loops}", flush=True
            )
    return rows


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
    parser.add_argument("--horizon", type=int, default=200, help="rounds of the sweeps")
    parser.add_argument("--compile", metavar="TARGET", help="also compile for h100, h200 or a target config")
    parser.add_argument("--set", nargs="*", default=[], help="MODULE.NAME=VALUE for the current code only")
    parser.add_argument(
        "--every-algorithm", action="store_true", help="with --compile: every registered algorithm's sweep"
    )
    args = parser.parse_args(argv)
    device = compile_only_gpu(args.compile) if args.compile else None
    if args.every_algorithm:
        if device is None:
            parser.error("--every-algorithm needs --compile TARGET")
        rows = every_algorithm(device, args.runs, args.horizon)
        print(
            f"\nevery algorithm's sweep ({args.runs} seeds × 4 points, T = {args.horizon}), {args.compile}\n"
        )
        common.print_table(rows, [(k, "") for k in ("algorithm", "program", "compile_s", "kernels", "loops")])
        common.write_json("gpu_program_every_algorithm", {"compile": args.compile, "rows": rows})
        return
    libs = {"previous": common.load_previous(args.previous), "now": jb}
    programs, optimised = {}, {}
    for tag, lib in libs.items():
        if tag == "now":
            common.apply_settings(args.set)
        calls = grid_sweep.sweeps(lib, args.horizon, 100, False, args.runs, independent=args.runs)
        lowered = gpu_lowerings(calls[args.sweep][0], stop=device is not None)
        programs[tag] = {name: low.as_text() for name, low in lowered.items()}
        for name, text in programs[tag].items():
            path = common.results_dir() / f"gpu_program_{tag}{name}.mlir"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        if device is not None:
            optimised[tag] = {name: compiled_for(device, low) for name, low in lowered.items()}
            for name, (hlo, _) in optimised[tag].items():
                (common.results_dir() / f"gpu_program_{tag}{name}.hlo").write_text(hlo)
    rows = []
    for name in sorted(set(programs["now"]) | set(programs["previous"])):
        now, previous = programs["now"].get(name, ""), programs["previous"].get(name, "")
        count = lambda text: collections.Counter(_OP.findall(text))
        ops_now, ops_previous = count(now), count(previous)
        diff = difflib.unified_diff(normalised(previous), normalised(now), lineterm="", n=0)
        changed = sum(1 for line in diff if line[:1] in "+-" and line[:3] not in ("+++", "---"))
        differing = {op: (ops_previous[op], ops_now[op]) for op in sorted(set(ops_now) | set(ops_previous))}
        differing = {op: counts for op, counts in differing.items() if counts[0] != counts[1]}
        row = {
            "program": name,
            "lines_previous": len(previous.splitlines()),
            "lines_now": len(now.splitlines()),
            "lines_changed": changed,
            "ops_changed": ", ".join(f"{op} {a}→{b}" for op, (a, b) in differing.items()) or "none",
        }
        for tag in optimised:
            hlo, seconds = optimised[tag].get(name, ("", float("nan")))
            counts = kernels(hlo)
            row[f"kernels_{tag}"] = counts["kernels"]
            row[f"loops_{tag}"] = loops_text(counts)
            row[f"loop_names_{tag}"] = [op_name for op_name, _ in counts["loop_bodies"]]
            row[f"compile_s_{tag}"] = round(seconds, 2)
        rows.append(row)
    compiled = f"; compiled for {args.compile}" if device is not None else ""
    print(f"\n{args.sweep} sweep ({args.runs}), GPU lowering{compiled}; previous = {args.previous}\n")
    columns = ["program", "lines_previous", "lines_now", "lines_changed", "ops_changed"]
    for tag in optimised:
        columns += [f"kernels_{tag}", f"loops_{tag}", f"compile_s_{tag}"]
    common.print_table(rows, [(k, "") for k in columns])
    payload = {"sweep": args.sweep, "previous": args.previous, "compile": args.compile, "set": args.set}
    common.write_json("gpu_program", {**payload, "rows": rows})


if __name__ == "__main__":
    main()
