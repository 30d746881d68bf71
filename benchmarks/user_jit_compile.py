"""Seconds to compile CR-Hvt-UCB in a user's own ``jax.jit``, with and without ``jb.compiler_options()``,
against the library's own program of the same algorithm (``jb.sweep``), in one process.

Five programs, each the same CR-Hvt-UCB (the registry's theory constants, a traced grid of 4
``beta_scale`` values) × ``--seeds`` seeds × T rounds:

- ``own loop``: the ``lax.scan`` loop of ``examples/own_jit_loop.py`` with its own environment (θ* and
  contexts uniform on the sphere, Gaussian noise), vmapped over seeds and ``beta_scale``, in a plain
  ``jax.jit`` (``plain``) and in ``jax.jit(..., compiler_options=jb.compiler_options())`` (``options``);
- ``jit(vmap(simulate))``: ``jb.simulate`` of the same algorithm in ``jb.envs.linear`` (Gaussian noise
  of the same scale), vmapped the same way, in a user's plain ``jit`` and with the options;
- ``jb.sweep``: the library's program of that algorithm and environment over the same grid and seeds:
  its first call (tracing, lowering, compiling, running) less a second call at new ``beta_scale`` values
  of the same shape (running only).

A user's program's time is ``jax.jit(f).lower(...).compile(...)``: tracing, lowering and XLA's
compilation. ``trace``, ``lower`` and ``xla`` split it (``jax.monitoring``'s events, summed over the
programs compiled). Every program is new to the process: repeat r runs T + r rounds, so that no trace
or program is reused (the library shares programs by what they compute). A tiny program is compiled
first, with and without the options, so that XLA's one-time start-up is in none of them. The
programs' order rotates between repeats; the table shows each one's median over ``--repeats`` and
its ratio to ``jb.sweep``'s median (``vs_library``), and each one's fastest (``best``, which a shared
machine's load moves least) and its ratio to ``jb.sweep``'s fastest.

    python benchmarks/user_jit_compile.py [--horizon 200] [--seeds 4] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import common
import jax
import jax.numpy as jnp

import jaxbandit as jb

sys.path.insert(0, str(common.ROOT / "examples"))
import own_jit_loop

PHASES = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "xla",
}
PHASE_TOTALS = dict.fromkeys(PHASES.values(), 0.0)


def _record(event: str, seconds: float, **_) -> None:
    if event in PHASES:
        PHASE_TOTALS[PHASES[event]] += seconds


def _problem(horizon: int):
    return jb.registry.Problem(
        horizon=horizon, dim=own_jit_loop.DIM, eps=1.0, nu=own_jit_loop.NOISE_SCALE, corruption=0.0
    )


def _env():
    return jb.envs.linear(
        own_jit_loop.DIM, own_jit_loop.ARMS, noise=jb.noise.gaussian(own_jit_loop.NOISE_SCALE)
    )


def _simulate_program(horizon: int):
    """``jb.simulate`` of the same algorithm in ``jb.envs.linear``, vmapped over seeds and ``beta_scale``."""
    spec, problem, env = jb.registry.algorithm("cr_hvt_ucb"), _problem(horizon), _env()

    def run(key, beta_scale):
        return jb.simulate(spec.make(problem, beta_scale=beta_scale), env, key, horizon).regret

    return jax.vmap(jax.vmap(run, in_axes=(0, None)), in_axes=(None, 0))


def _user_jit(make, options: dict):
    def measure(horizon: int, seeds: int) -> float:
        keys = jax.random.split(jax.random.key(0), seeds)
        betas = jnp.asarray(own_jit_loop.BETA_SCALES)
        t = time.perf_counter()
        compiled = jax.jit(make(horizon)).lower(keys, betas).compile(compiler_options=options)
        seconds = time.perf_counter() - t
        jax.block_until_ready(compiled(keys, betas))
        return seconds

    return measure


def _library_sweep(horizon: int, seeds: int) -> float:
    spec, problem, env = jb.registry.algorithm("cr_hvt_ucb"), _problem(horizon), _env()
    algorithms = {"CR-Hvt-UCB": lambda p: spec.make(problem, beta_scale=p["beta_scale"])}
    times = []
    for betas in (own_jit_loop.BETA_SCALES, [2 * b for b in own_jit_loop.BETA_SCALES]):
        t = time.perf_counter()
        jb.sweep(algorithms, env, {"beta_scale": list(betas)}, horizon=horizon, seeds=seeds, record=10)
        times.append(time.perf_counter() - t)
    return times[0] - times[1]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    options = jb.compiler_options()
    programs = {
        "own loop, plain jit": _user_jit(own_jit_loop.make_program, {}),
        "own loop, jb.compiler_options()": _user_jit(own_jit_loop.make_program, options),
        "jit(vmap(simulate)), plain jit": _user_jit(_simulate_program, {}),
        "jit(vmap(simulate)), jb.compiler_options()": _user_jit(_simulate_program, options),
        "jb.sweep (the library's program)": _library_sweep,
    }
    for opts in ({}, options):  # XLA's one-time start-up, in neither program's time
        jax.jit(lambda x: jnp.sin(x) @ x).lower(jnp.ones((3, 3))).compile(compiler_options=opts)
    jax.monitoring.register_event_duration_secs_listener(_record)

    names = list(programs)
    seconds: dict = {name: [] for name in names}
    phases: dict = {name: [] for name in names}
    for r in range(args.repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            before = dict(PHASE_TOTALS)
            seconds[name].append(programs[name](args.horizon + r, args.seeds))
            phases[name].append({k: PHASE_TOTALS[k] - before[k] for k in PHASE_TOTALS})
            print(f"repeat {r}: {name}: {seconds[name][-1]:.2f} s", flush=True)

    library = statistics.median(seconds["jb.sweep (the library's program)"])
    library_best = min(seconds["jb.sweep (the library's program)"])
    rows = []
    for name in names:
        median, best = statistics.median(seconds[name]), min(seconds[name])
        row = {"program": name, "compile": median, "vs_library": median / library, "best": best}
        row.update(best_vs_library=best / library_best, runs=seconds[name])
        for phase in PHASE_TOTALS:
            row[phase] = statistics.median(p[phase] for p in phases[name])
        rows.append(row)
    by_name = {row["program"]: row["compile"] for row in rows}
    ratios = {
        "own loop: plain / options": by_name["own loop, plain jit"]
        / by_name["own loop, jb.compiler_options()"],
        "own loop with options / jb.sweep": by_name["own loop, jb.compiler_options()"] / library,
        "jit(vmap(simulate)): plain / options": by_name["jit(vmap(simulate)), plain jit"]
        / by_name["jit(vmap(simulate)), jb.compiler_options()"],
        "jit(vmap(simulate)) with options / jb.sweep": by_name["jit(vmap(simulate)), jb.compiler_options()"]
        / library,
    }
    print(
        f"\nCR-Hvt-UCB, {len(own_jit_loop.BETA_SCALES)} beta_scale x {args.seeds} seeds x T = {args.horizon} "
        f"(+ repeat); options {options}; medians of {args.repeats}\n"
    )
    common.print_table(
        rows,
        [
            ("program", ""),
            ("compile", ".2f"),
            ("vs_library", ".2f"),
            ("best", ".2f"),
            ("best_vs_library", ".2f"),
        ]
        + [(k, ".2f") for k in PHASE_TOTALS],
    )
    print()
    for name, value in ratios.items():
        print(f"{name}: {value:.2f}")
    path = common.write_json(
        "user_jit_compile",
        {
            "command": "python benchmarks/"
            + " ".join([__file__.rsplit("/", 1)[-1], *(argv or sys.argv[1:])]),
            "horizon": args.horizon,
            "seeds": args.seeds,
            "beta_scales": list(own_jit_loop.BETA_SCALES),
            "repeats": args.repeats,
            "compiler_options": options,
            "rows": rows,
            "ratios": ratios,
        },
    )
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
