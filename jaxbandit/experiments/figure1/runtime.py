"""Panel (b): the wall-clock seconds one unbatched run takes to reach round t, after compilation."""

from __future__ import annotations

import functools
import math
import time

import jax
import jax.numpy as jnp
import numpy as np

from ...core.dtypes import float_dtype
from ...report.analysis import loglog_fit
from ...runner.simulate import init_carry, rollout
from .methods import figure_factory
from .settings import environment

RUNTIME_POINTS = 20  # checkpoints of the runtime curves


@functools.cache
def _runners(method: str, horizon: int, tuned: tuple | None):
    """Jitted ``init(key, params)`` and ``chunk(carry, params, rounds)`` for one (unbatched) run;
    ``params`` `[3]` = (noise index, C, variant)."""
    make = figure_factory(method, horizon, tuned)

    def build(params):
        p = {"noise": params[0], "C": params[1], "variant": params[2]}
        return make(p), environment(p)

    @jax.jit
    def init(key, params):
        alg, env = build(params)
        return init_carry(alg, env, key)

    @jax.jit
    def chunk(carry, params, rounds):
        alg, env = build(params)
        carry, traj = rollout(alg, env, carry, rounds)
        return carry, traj.regret.sum()

    return init, chunk


def checkpoints(horizon: int, points: int = RUNTIME_POINTS):
    """Chunk length c and the timed rounds c, 2c, …, ⌊T/c⌋c (the last equals T when c divides T)."""
    c = max(1, math.ceil(horizon / points))
    return c, np.arange(1, horizon // c + 1) * c


def time_runs(
    method: str, horizon: int, *, tuned: tuple | None, variant: float, C: float, repeats: int, bar=None
) -> tuple:
    """Seconds one run (ε = 1 setting, budget C) takes to reach each checkpoint round, for the seeds
    0..repeats−1 (the reported runs), after compilation. Returns ``(rounds [m], seconds [repeats, m])``.
    """
    init, chunk = _runners(method, horizon, tuned)
    c, rounds = checkpoints(horizon)
    params = jnp.asarray([0.0, C, variant], float_dtype())
    blocks = [jnp.arange(k * c, (k + 1) * c, dtype=jnp.int32) for k in range(rounds.size)]
    base = jax.random.key(0)
    # compile (and run one chunk) outside the timing
    jax.block_until_ready(chunk(init(jax.random.fold_in(base, 0), params), params, blocks[0]))
    seconds = np.zeros((repeats, rounds.size))
    for r in range(repeats):
        carry = jax.block_until_ready(init(jax.random.fold_in(base, r), params))
        start = time.perf_counter()
        for k, block in enumerate(blocks):
            carry, _ = chunk(carry, params, block)
            jax.block_until_ready(carry)
            seconds[r, k] = time.perf_counter() - start
        if bar is not None:
            bar.update(1)
    return rounds, seconds


def last_chunk_rate(rounds, seconds):
    """Seconds per round over the last timed chunk, per repeat `[repeats]`."""
    rounds = np.asarray(rounds, float)
    seconds = np.asarray(seconds, float).reshape(-1, rounds.size)
    if rounds.size == 1:
        return seconds[:, 0] / rounds[0]
    return (seconds[:, -1] - seconds[:, -2]) / (rounds[-1] - rounds[-2])


def runtime_slope(rounds, seconds) -> float:
    """Log–log slope of the median time against t over the checkpoints t ≥ T/2 (1: constant cost per
    round; 2: cost per round growing linearly in t)."""
    rounds = np.asarray(rounds, float)
    mid = np.median(np.asarray(seconds, float).reshape(-1, rounds.size), axis=0)
    window = rounds >= rounds[-1] / 2
    return float(loglog_fit(rounds[window], mid[window]))


# ------------------------------------------------------------------------------------------------
# The figure
# ------------------------------------------------------------------------------------------------
