"""Solver loops with their stragglers run one by one (``jaxbandit.core.batching``), against the batched loop,
in one process.

GAdaOFUL's and Heavy-OFUL's refits are ``while`` loops that almost every run leaves after one iteration;
the projection of CR-Hvt-UCB (and OMD-GLB), ``linalg.project_ball_in_metric``, one that most runs never
enter (about 2 % of a run's rounds leave the ball in the paper's setting); batched, a loop runs until its
slowest lane stops. On one CPU device (``jaxbandit.runner.sweep.STRAGGLERS_ONE_BY_ONE``) ``jb.sweep``
runs the last lanes still going (a quarter of the batch or fewer), the refits' one by one and the
projection's in groups of 16, in batches of ``batching.MIN_LANES`` runs or more. Each sweep below runs
both ways (and with the previous code, ``--previous``, loaded beside the current one), compiled, timed
on later calls interleaved (best of ``--repeats``), compared bitwise:

- GAdaOFUL's Figure 1 tuning sweep for one noise setting (Student-t(3)): its 25 constants × C ∈
  {0, 100} × ``--seeds`` seeds, T = ``--horizon``;
- Heavy-OFUL (theory constants) in the paper's environment, C ∈ {0, 100} × ``--seeds`` × 25 seeds;
- CR-Hvt-UCB in the paper's environment, 16 ``beta_scale`` values × C ∈ {0, 100} × ``--seeds`` seeds,
  with S = 1 = ‖θ*‖ (the paper's: ~2 % of the runs outside the ball a round) and each S of ``--norm-bounds``
  below it (a norm bound that θ̃ keeps leaving: many runs outside).

With ``--previous``, also the projection alone (``jax.vmap`` of ``linalg.project_ball_in_metric`` over 400
runs inside ``stragglers_one_by_one()``, 50 calls in one jitted loop, d = 10, V⁻¹'s eigenvalues in
[0.05, 0.1]) with a given share of its runs outside the ball, now and with the previous code: µs a call.

    python benchmarks/stragglers.py [--horizon 1000] [--seeds 10] [--repeats 2] [--previous b9550e1]
                                    [--norm-bounds 0.5 0.3]
"""

from __future__ import annotations

import argparse
import functools
import importlib
import time

import common
import numpy as np


def tuning_sweep(lib, horizon: int, seeds: int):
    """GAdaOFUL's Figure 1 tuning grid for Student-t(3) noise (ε = 1, ν = √3; its registry grid × C ∈
    {0, 100} × ``seeds`` seeds) with the package ``lib``, as a function of nothing that returns the final
    regrets."""
    spec = lib.registry.algorithm("gadaoful")

    def make_alg(p):
        prob = lib.agents.registry.Problem(horizon, common.D, eps=1.0, nu=3**0.5, corruption=p["C"])
        return spec.build(prob, {n: p[n] for n in spec.grid})

    grid, make_env = {"C": [0.0, 100.0], **{k: list(v) for k, v in spec.grid.items()}}, _paper_env(lib)
    return lambda: (
        lib.sweep(make_alg, make_env, grid, horizon=horizon, seeds=seeds, progress=False).final_regret
    )


def _paper_env(lib):
    """The paper's environment (Student-t(3) noise, the flip adversary with budget ``p["C"]``) in ``lib``."""
    return lambda p: lib.envs.linear(
        common.D, common.K, noise=lib.noise.student_t(3.0), corruption=lib.corruption.flip(p["C"])
    )


def heavy_oful_sweep(lib, horizon: int, seeds: int):
    """Heavy-OFUL (Figure 1's theory build) in the paper's environment, C ∈ {0, 100}, ``25 · seeds`` seeds."""
    spec = lib.registry.algorithm("heavy_oful")

    def make_alg(p):
        prob = lib.agents.registry.Problem(horizon, common.D, eps=1.0, nu=3**0.5, corruption=p["C"])
        return spec.build(prob, spec.theory(prob))

    grid, make_env = {"C": [0.0, 100.0]}, _paper_env(lib)
    return lambda: (
        lib.sweep(make_alg, make_env, grid, horizon=horizon, seeds=25 * seeds, progress=False).final_regret
    )


def cr_grid_sweep(lib, horizon: int, seeds: int, S: float = 1.0):
    """CR-Hvt-UCB in the paper's environment, 16 ``beta_scale`` values × C ∈ {0, 100} × ``seeds`` seeds,
    norm bound ``S`` (the final regrets only kept: recording every round would time the output)."""

    def make_alg(p):
        return lib.cr_hvt_ucb(
            horizon, common.D, eps=1.0, nu=3**0.5, corruption=p["C"], beta_scale=p["beta_scale"], S=S
        )

    grid, make_env = {"C": [0.0, 100.0], "beta_scale": common.grid_betas()}, _paper_env(lib)
    return lambda: (
        lib.sweep(
            make_alg, make_env, grid, horizon=horizon, seeds=seeds, record=horizon, progress=False
        ).final_regret
    )


def projection_calls(lib, outside: float, runs: int = 400, calls: int = 50):
    """``calls`` projections of ``runs`` runs (d = 10) in one jitted loop, a share ``outside`` of them
    outside the unit ball (‖θ̃‖ = 1.3, the others 0.7), inside ``lib``'s ``stragglers_one_by_one()``: a
    function of nothing that returns the summed results."""
    import jax
    import jax.numpy as jnp

    d, rng = common.D, np.random.default_rng(0)
    Q = np.linalg.qr(rng.normal(size=(runs, d, d)))[0]
    A = jnp.asarray(np.einsum("nij,nj,nkj->nik", Q, rng.uniform(0.05, 0.1, (runs, d)), Q), jnp.float32)
    theta = rng.normal(size=(runs, d))
    theta *= (
        np.where(rng.uniform(size=runs) < outside, 1.3, 0.7)[:, None] / np.linalg.norm(theta, axis=1)[:, None]
    )
    theta = jnp.asarray(theta, jnp.float32)
    project = jax.vmap(lambda t, a: lib.linalg.project_ball_in_metric(t, a, 1.0))

    @jax.jit
    def run(theta, A):
        with lib.core.batching.stragglers_one_by_one():
            step = lambda i, acc: acc + project(theta * (1 + 1e-7 * i), A)
            return jax.lax.fori_loop(0, calls, step, jnp.zeros_like(theta))

    return lambda: run(theta, A).block_until_ready()


def with_flag(lib, value, fn):
    """``fn`` run with ``lib``'s ``STRAGGLERS_ONE_BY_ONE`` set to ``value``."""
    module = importlib.import_module(f"{lib.__name__}.runner.sweep")

    def run():
        old, module.STRAGGLERS_ONE_BY_ONE = module.STRAGGLERS_ONE_BY_ONE, value
        try:
            return fn()
        finally:
            module.STRAGGLERS_ONE_BY_ONE = old

    return run


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--previous", help="git revision of the previous code, loaded beside the current one")
    parser.add_argument("--norm-bounds", type=float, nargs="*", default=[0.5, 0.3])
    args = parser.parse_args(argv)
    jb = common.jb
    previous = common.load_previous(args.previous) if args.previous else None
    rows = []
    sweeps = [
        ("GAdaOFUL tuning sweep", tuning_sweep),
        ("Heavy-OFUL", heavy_oful_sweep),
        ("CR-Hvt-UCB grid", cr_grid_sweep),
    ] + [(f"CR-Hvt-UCB grid, S = {S:g}", functools.partial(cr_grid_sweep, S=S)) for S in args.norm_bounds]
    for name, sweep in sweeps:
        fns = {
            "batched": with_flag(jb, False, sweep(jb, args.horizon, args.seeds)),
            "one_by_one": with_flag(jb, None, sweep(jb, args.horizon, args.seeds)),
        }
        if previous:
            fns["previous"] = sweep(previous, args.horizon, args.seeds)
        first, outs = {}, {}
        for key, fn in fns.items():
            start = time.perf_counter()
            outs[key] = np.asarray(fn())
            first[key] = time.perf_counter() - start
        best = common.interleaved_best(fns, args.repeats)
        row = dict(
            sweep=name,
            runs=outs["batched"].size,
            batched_s=best["batched"],
            one_by_one_s=best["one_by_one"],
            speedup=best["batched"] / best["one_by_one"],
            first_call_batched_s=first["batched"],
            first_call_one_by_one_s=first["one_by_one"],
            bitwise=all(np.array_equal(outs["batched"], o) for o in outs.values()),
        )
        if args.previous:
            row.update(previous_s=best["previous"], vs_previous=best["previous"] / best["one_by_one"])
        rows.append(row)
    print(f"\nT = {args.horizon}, best of {args.repeats} interleaved calls after the first\n")
    columns = [
        ("sweep", ""),
        ("runs", "d"),
        ("batched_s", ".2f"),
        ("one_by_one_s", ".2f"),
        ("speedup", ".2f"),
        ("first_call_batched_s", ".1f"),
        ("first_call_one_by_one_s", ".1f"),
        ("bitwise", ""),
    ]
    if args.previous:
        columns[5:5] = [("previous_s", ".2f"), ("vs_previous", ".2f")]
    common.print_table(rows, columns)
    projections = []
    if previous:
        for outside in (0.02, 0.1, 0.3, 0.6, 1.0):
            fns = {"previous": projection_calls(previous, outside), "now": projection_calls(jb, outside)}
            for fn in fns.values():
                fn()
            best = common.interleaved_best(fns, 3 * args.repeats)
            row = {k + "_us": 1e6 * v / 50 for k, v in best.items()}
            projections.append(dict(outside=outside, **row, speedup=best["previous"] / best["now"]))
        print(f"\nThe projection alone, 400 runs, µs a call (best of {3 * args.repeats} interleaved)\n")
        common.print_table(
            projections, [("outside", ".2f"), ("previous_us", ".1f"), ("now_us", ".1f"), ("speedup", ".2f")]
        )
    payload = {"rows": rows, "projections": projections, "args": vars(args)}
    print(f"\nwrote {common.write_json('stragglers', payload)}")


if __name__ == "__main__":
    main()
