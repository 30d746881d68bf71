"""A registered algorithm inside your own ``jax.jit`` + ``lax.scan`` loop, with your own environment.

The library's algorithms are pure functions (``init``, ``select``, ``update``) over a state of arrays, so
they run inside any JAX program: here CR-Hvt-UCB, taken from the registry with its theory constants and
a traced ``beta_scale``, plays an environment written in a few lines of ``jax.random`` (θ* and K contexts
uniform on the unit sphere, Gaussian noise, no corruption) in a ``lax.scan`` over rounds, ``vmap``-ped
over seeds and over a grid of ``beta_scale`` values: one compiled program for every run.

The program is compiled with ``jb.compiler_options()``, the XLA options the library compiles its own
programs with (on a CPU, XLA's classic fusion emitters: about half the compile time of a plain
``jax.jit``, the same numbers). ``--plain`` compiles without them, to compare.

    python examples/own_jit_loop.py                          # T = 2000, 32 seeds, 4 beta_scale values
    python examples/own_jit_loop.py --horizon 40 --seeds 2   # small: what the tests run
    python examples/own_jit_loop.py --plain                  # a plain jax.jit, for its compile time

It prints the compile time, the run time and each ``beta_scale``'s mean final regret over the seeds.
"""

from __future__ import annotations

import argparse
import math
import time

import jax
import jax.numpy as jnp

import jaxbandit as jb

DIM, ARMS, NOISE_SCALE = 10, 20, 0.5
BETA_SCALES = (1e-5, 1e-4, 1e-3, 1e-2)


def make_run(horizon: int):
    """``run(key, beta_scale) -> regret [T]``: one run of CR-Hvt-UCB on the environment below.

    Everything the algorithm needs to know about the problem is the registry's ``Problem``: T, d, the
    noise's moment order ε = 1 and bound ν (here the Gaussian's standard deviation: E|η|² = ν²), no
    corruption. ``beta_scale`` may be traced: a grid of it is a ``vmap`` axis.
    """
    spec = jb.registry.algorithm("cr_hvt_ucb")
    problem = jb.registry.Problem(horizon=horizon, dim=DIM, eps=1.0, nu=NOISE_SCALE, corruption=0.0)

    def unit_vectors(key, shape):
        # Drawn as one flat vector, then shaped: the same distribution, and XLA:CPU compiles the random
        # bits' loop over a flat vector about twice as fast as over a [K, d] shape under vmap.
        g = jax.random.normal(key, (math.prod(shape),)).reshape(shape)
        return g / jnp.linalg.norm(g, axis=-1, keepdims=True)

    def run(key, beta_scale):
        alg = spec.make(problem, beta_scale=beta_scale)  # a jb.Algorithm; not randomized: no keys
        k_theta, k_rounds = jax.random.split(key)
        theta_star = unit_vectors(k_theta, (DIM,))

        def step(state, t):
            k_contexts, k_noise = jax.random.split(jax.random.fold_in(k_rounds, t))
            contexts = unit_vectors(k_contexts, (ARMS, DIM))  # [K, d]
            means = contexts @ theta_star  # [K]
            arm = alg.select(state, contexts)
            reward = means[arm] + NOISE_SCALE * jax.random.normal(k_noise)
            state = alg.update(state, contexts[arm], reward, jnp.nan)  # ν_t: none revealed
            return state, jnp.max(means) - means[arm]

        _, regret = jax.lax.scan(step, alg.init(), jnp.arange(horizon))
        return regret

    return run


def make_program(horizon: int):
    """``program(keys [S], beta_scales [B]) -> regret [B, S, T]``: every run, vmapped (not yet jitted)."""
    run = make_run(horizon)
    over_seeds = jax.vmap(run, in_axes=(0, None))
    return jax.vmap(over_seeds, in_axes=(None, 0))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=2000, help="rounds per run (default 2000)")
    parser.add_argument("--seeds", type=int, default=32, help="runs per beta_scale (default 32)")
    parser.add_argument("--plain", action="store_true", help="compile without jb.compiler_options()")
    args = parser.parse_args(argv)
    for name in ("horizon", "seeds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}={getattr(args, name)} is invalid: it must be an integer >= 1")

    keys = jax.random.split(jax.random.key(0), args.seeds)
    betas = jnp.asarray(BETA_SCALES)
    options = {} if args.plain else jb.compiler_options()

    t0 = time.perf_counter()
    compiled = jax.jit(make_program(args.horizon)).lower(keys, betas).compile(compiler_options=options)
    t1 = time.perf_counter()
    regret = jax.block_until_ready(compiled(keys, betas))
    t2 = time.perf_counter()

    final = regret.sum(axis=-1).mean(axis=-1)  # [B]: cumulative regret at T, mean over seeds
    print(f"compiled in {t1 - t0:.1f} s with options {options}")
    print(f"ran {regret.shape[0] * regret.shape[1]} runs of T = {args.horizon} in {t2 - t1:.2f} s")
    for b, r in zip(BETA_SCALES, final.tolist()):
        print(f"beta_scale={b:g}: mean final regret {r:.1f}")


if __name__ == "__main__":
    main()
