"""An algorithm of your own in one file: written, checked by ``jb.testing``, registered, and run in
``jb.sweep`` beside a built-in on the same streams.

The algorithm is ε-greedy ridge regression: in round t, with probability ε_t = min(1, cK/t) a uniformly
random arm, else the arm of highest ⟨x, θ̂_{t−1}⟩ (ties to the lowest index), with θ̂ the ridge estimate
(the εₙ-greedy schedule cK/(d²n) of Auer, Cesa-Bianchi & Fischer 2002, with their gap parameter d = 1).
It is randomised (``select`` and ``update`` take the round's key) and its policy is ``"mixed"`` (some
rounds ignore the contexts), the two flags ``jb.testing.check_algorithm`` reads to check it fairly.

    python examples/own_algorithm.py                          # T = 2000, 8 seeds
    python examples/own_algorithm.py --horizon 100 --seeds 2  # small: what the tests run
    jaxbandit bench --plugin examples/own_algorithm.py --algorithms eps_greedy,oful --quick

Importing the module registers the algorithm as ``eps_greedy`` (so ``--plugin`` puts it on the command
line, the benchmark included); running it checks the algorithm, then sweeps it against OFUL over a grid
of its constant c and prints each one's mean final regret.
"""

from __future__ import annotations

import argparse
import numbers
from typing import NamedTuple

import jax
import jax.numpy as jnp

import jaxbandit as jb


class EpsGreedyState(NamedTuple):
    """State after t rounds: V_t⁻¹ `[d, d]`, b_t = Σ r_s X_s `[d]`, t (int32 scalar)."""

    V_inv: jax.Array
    b: jax.Array
    t: jax.Array


def _check_number(name, value, low, low_open, what):
    """A concrete ``value`` outside its range raises a ``ValueError`` naming it; a traced one (a sweep's
    grid axis) is not checked."""
    if isinstance(value, numbers.Real) and not (value > low if low_open else value >= low):
        bound = f"> {low}" if low_open else f">= {low}"
        raise ValueError(f"{name}={value!r} is invalid: {what} must be {bound}")


def eps_greedy(horizon: int, dim: int, *, c=1.0, lam=1.0) -> jb.Algorithm:
    """ε-greedy ridge regression, ε_t = min(1, cK/t) for K arms.

    Args:
      horizon: T, rounds per run (static).
      dim: d, the contexts' dimension (static).
      c: the exploration constant c ≥ 0 (0: greedy from round 1); may be traced.
      lam: the ridge parameter λ > 0; may be traced.
    """
    for name, value in (("horizon", horizon), ("dim", dim)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name}={value!r} is invalid: it must be an integer >= 1")
    _check_number("c", c, 0.0, False, "the exploration constant")
    _check_number("lam", lam, 0.0, True, "the ridge parameter")

    def init() -> EpsGreedyState:
        dtype = jnp.result_type(float)  # float32, or float64 under jax.enable_x64
        lam_ = jnp.asarray(lam, dtype)
        return EpsGreedyState(
            jnp.eye(dim, dtype=dtype) / lam_, jnp.zeros(dim, dtype), jnp.zeros((), jnp.int32)
        )

    def select(state: EpsGreedyState, contexts: jax.Array, key: jax.Array) -> jax.Array:
        num_arms = contexts.shape[0]
        k_explore, k_arm = jax.random.split(key)
        t = (state.t + 1).astype(state.b.dtype)  # this round, 1-based
        explore = jax.random.uniform(k_explore, dtype=t.dtype) < jnp.minimum(1.0, c * num_arms / t)
        theta = jb.linalg.matvec(state.V_inv, state.b)
        scores = jb.linalg.dot(contexts, theta)  # [K]; batch-invariant sums: bitwise alone and in a sweep
        greedy = jb.linalg.argmax_lowest(scores, jnp.max(jnp.abs(scores)))
        return jnp.where(explore, jax.random.randint(k_arm, (), 0, num_arms, jnp.int32), greedy)

    def update(state: EpsGreedyState, x, reward, nu, key) -> EpsGreedyState:  # ν_t and the key unused
        r = jb.linalg.clamp_reward(reward, state.b.dtype)  # ±inf rewards keep b finite
        V_inv = jb.linalg.sherman_morrison(state.V_inv, x, jnp.ones((), x.dtype))
        return EpsGreedyState(V_inv, state.b + r * x, state.t + 1)

    return jb.Algorithm(init, select, update, randomized=True, dim=dim, horizon=horizon, policy="mixed")


jb.registry.register(
    jb.registry.AlgorithmSpec(
        name="eps_greedy",
        label="eps-greedy",
        factory=eps_greedy,
        build=lambda problem, h: eps_greedy(problem.horizon, problem.dim, c=h["c"]),
        theory=lambda problem: {"c": 1.0},
        grid={"c": (0.1, 0.3, 1.0, 3.0)},
        cost="O(1)",
        knowledge=(),
        source="examples/own_algorithm.py (Auer, Cesa-Bianchi & Fischer 2002's schedule)",
    )
)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizon", type=int, default=2000, help="rounds per run (default 2000)")
    parser.add_argument("--seeds", type=int, default=8, help="runs per grid point (default 8)")
    args = parser.parse_args(argv)
    for name in ("horizon", "seeds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}={getattr(args, name)} is invalid: it must be an integer >= 1")

    # The contract, property by property: raises AssertionError naming the first that fails.
    jb.testing.check_algorithm(lambda p: eps_greedy(64, 3, c=p["c"]), {"c": 0.5}, dim=3, num_arms=5)
    print("eps_greedy passes jb.testing.check_algorithm")

    T, d, K = args.horizon, 10, 20
    problem = jb.registry.Problem(horizon=T, dim=d, eps=1.0, nu=3**0.5)
    mine, oful = jb.registry.algorithm("eps_greedy"), jb.registry.algorithm("oful")
    res = jb.sweep(
        {  # one compiled sweep: both algorithms on the same streams, every c at once
            mine.label: lambda p: mine.make(problem, c=p["c"]),
            oful.label: lambda p: oful.make(problem, beta_scale=1e-2),
        },
        jb.envs.linear(d, K, noise=jb.noise.student_t(3.0)),
        {"c": list(mine.grid["c"])},
        horizon=T,
        seeds=args.seeds,
        record=("log", 10),
    )
    final = res.final_regret.mean(axis=-1)  # [algorithm, c]: the mean over seeds
    print(f"mean final regret over {args.seeds} seeds, T = {T} (OFUL does not read c)")
    for name, row in zip(res.coords["algorithm"], final):
        print(f"  {name:<10}", "  ".join(f"c={c:g}: {r:7.1f}" for c, r in zip(res.coords["c"], row)))


if __name__ == "__main__":
    main()
