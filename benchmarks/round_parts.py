"""Where a round of CR-Hvt-UCB's 16-point grid goes on a CPU: its parts timed apart, in one process.

A CPU profile does not answer this: the profiler's cost per event inflates a round of a few hundred
small kernels about fourfold. So each part runs as a compiled program of its own over the grid's
layout (``--seeds`` seeds × 16 ``beta_scale`` values, d = 10, K = 20: a ``vmap`` over the seeds of one
over the β values, as ``jb.sweep`` vmaps streams, then lanes; its solver loops' batching rule on), and the
programs are timed interleaved (best of ``--repeats``, after compilation):

- ``select``: the UCB scores and the arm (eq:arm_selection) of every run, round after round;
- ``select + update``: the agent's round: the arm, then Algorithm 1's update (projection included) on
  its context and reward ⟨x, θ*⟩ + η (θ* on the unit sphere, Student-t₃ noise, no adversary);
- ``select + update, no projection``: the same with ``project_ball_in_metric`` left out (θ̃ kept);
- ``sweep, do-nothing agent`` and ``sweep, CR-Hvt-UCB``: ``jb.sweep`` of the paper's environment
  (Student-t₃, the flip adversary with C = 100) with ``common.null_agent`` and with CR-Hvt-UCB — the
  environment's and the bookkeeping's share, and the whole round.

The parts need not add up to the sweep (each program fuses and schedules its own kernels), but their
ratios say what is worth making faster. The contexts are drawn once on the host, so the parts read
them from memory.

    python benchmarks/round_parts.py [--seeds 25] [--horizon 2000] [--repeats 5]
"""

from __future__ import annotations

import argparse

import common
import jax
import jax.numpy as jnp
import numpy as np

import jaxbandit as jb
from jaxbandit.agents import cr_hvt_ucb as cr_module
from jaxbandit.core import batching

BETAS = common.grid_betas()


def agent_parts(T: int, seeds: int) -> dict:
    """name -> a function of nothing that runs that part for every run over T rounds (compiled on its
    first call)."""
    rng = np.random.default_rng(0)
    d, K = common.D, common.K
    X = rng.normal(size=(T, seeds, K, d))
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    theta_star = rng.normal(size=(seeds, d))
    theta_star /= np.linalg.norm(theta_star, axis=-1, keepdims=True)
    noise = rng.standard_t(3.0, size=(T, seeds))
    X, noise = jnp.asarray(X, jnp.float32), jnp.asarray(noise, jnp.float32)
    theta_star = jnp.asarray(theta_star, jnp.float32)
    betas = jnp.asarray(BETAS, jnp.float32)

    def program(update: bool, project: bool):
        def one_run(beta, theta_star, X, eta):
            alg = common.paper_alg(T, beta_scale=beta)

            def round_(state, inputs):
                contexts, noise = inputs
                arm = alg.select(state, contexts)
                if update:
                    x = contexts[arm]
                    state = alg.update(state, x, jb.linalg.dot(x, theta_star) + noise, jnp.float32(1.0))
                else:  # keep the scores' work alive: the next round's state depends on the arm
                    state = state._replace(t=state.t + arm)
                return state, (arm, state.theta[0])

            return jax.lax.scan(round_, alg.init(), (X, eta))[1]

        # the seeds (streams) outside, the β values (lanes) inside, sharing their stream's data
        runs = jax.vmap(jax.vmap(one_run, (0, None, None, None)), (None, 0, 1, 1))

        def traced(betas, theta_star, X, eta):
            real = cr_module.project_ball_in_metric
            if not project:
                cr_module.project_ball_in_metric = lambda theta, A, S, n: theta
            try:
                with batching.stragglers_one_by_one(True):
                    return runs(betas, theta_star, X, eta)
            finally:
                cr_module.project_ball_in_metric = real

        compiled = jax.jit(traced)
        return lambda: jax.block_until_ready(compiled(betas, theta_star, X, noise))

    return {
        "select": program(update=False, project=True),
        "select + update": program(update=True, project=True),
        "select + update, no projection": program(update=True, project=False),
    }


def sweep_parts(T: int, seeds: int) -> dict:
    grid = {"C": [100.0], "beta_scale": BETAS}

    def make_env(p):
        return common.paper_env(p["C"])

    def cr(p):
        return common.paper_alg(T, corruption=p["C"], beta_scale=p["beta_scale"])

    def call(make_alg):
        return lambda: np.asarray(
            jb.sweep(make_alg, make_env, grid, horizon=T, seeds=seeds, record=T).final_regret
        )

    return {"sweep, do-nothing agent": call(lambda p: common.null_agent()), "sweep, CR-Hvt-UCB": call(cr)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=25)
    parser.add_argument("--horizon", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    T = args.horizon
    parts = {**agent_parts(T, args.seeds), **sweep_parts(T, args.seeds)}
    for run in parts.values():
        run()  # compiles
    best = common.interleaved_best(parts, args.repeats)
    whole = best["sweep, CR-Hvt-UCB"]
    rows = [
        dict(part=name, us_per_round=seconds / T * 1e6, of_the_sweep=seconds / whole)
        for name, seconds in best.items()
    ]
    runs = len(BETAS) * args.seeds
    print(f"\n{runs} runs ({len(BETAS)} beta_scale x {args.seeds} seeds) x {T} rounds; best of interleaved")
    common.print_table(rows, [("part", ""), ("us_per_round", ".1f"), ("of_the_sweep", ".2f")])
    path = common.write_json("round_parts", {"runs": runs, **vars(args), "rows": rows})
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
