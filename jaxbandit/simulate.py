"""One run of an algorithm in an environment: a ``lax.scan`` over rounds, jit- and vmap-able.

Randomness: ``key`` splits into an environment key (θ*) and a round key; round t uses
``fold_in(round_key, t)``, split into a contexts key and a response key. A run's stream therefore depends
only on its key and the round index — not on the algorithm, its batch, or how the rounds are chunked —
so every algorithm of a comparison sees the same θ*, contexts and noise (common random numbers).
"""
from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import _validation as V
from .base import Algorithm, Environment, Trajectory

Array = jax.Array


class Carry(NamedTuple):
    """Everything a run carries between rounds."""

    alg_state: Any
    env_state: Any
    round_key: Array


def as_key(key) -> Array:
    """An int seed or a typed/raw PRNG key, as a typed key; anything else is a ``ValueError``."""
    if isinstance(key, (bool, np.bool_)):
        raise ValueError(f"key={key!r} is invalid: it must be an int seed or a jax.random.key")
    if isinstance(key, (int, np.integer)):
        return jax.random.key(int(key))
    try:
        dtype = jnp.asarray(key).dtype
    except TypeError:
        dtype = None
    if dtype is not None and jnp.issubdtype(dtype, jax.dtypes.prng_key):
        return key
    if dtype != jnp.uint32:
        raise ValueError(f"key={key!r} is invalid: it must be an int seed, a jax.random.key or a raw "
                         "uint32 key (jax.random.PRNGKey)")
    return jax.random.wrap_key_data(key)


def check_pair(alg: Algorithm, env: Environment, horizon) -> int:
    """Eager checks shared by ``simulate`` and ``sweep``; returns the horizon as ``int``."""
    if not isinstance(alg, Algorithm):
        raise ValueError(f"alg={alg!r} is invalid: it must be a jb.Algorithm (e.g. jb.cr_hvt_ucb(...))")
    if not isinstance(env, Environment):
        raise ValueError(f"env={env!r} is invalid: it must be a jb.Environment (e.g. jb.envs.linear(...))")
    horizon = V.check_int("horizon", horizon)
    if env.horizon is not None and horizon > env.horizon:
        raise ValueError(f"horizon={horizon} is invalid: the environment holds only {env.horizon} rounds "
                         f"(valid range [1, {env.horizon}])")
    if alg.uses_revealed_nu and not env.reveals_nu:
        raise ValueError("nu='revealed' needs an environment that reveals nu_t: pass eps= to "
                         "jb.envs.linear, or nu= to jb.envs.replay (or give the algorithm a constant nu)")
    return horizon


def init_carry(alg: Algorithm, env: Environment, key) -> Carry:
    """The carry before round 1; the key is consumed."""
    key_env, key_rounds = jax.random.split(as_key(key))
    return Carry(alg.init(), env.init(key_env), key_rounds)


def rollout(alg: Algorithm, env: Environment, carry: Carry, rounds: Array):
    """Run the 0-based round indices ``rounds`` `[n]` from ``carry``; returns (carry, Trajectory `[n]`)."""

    def body(c: Carry, t):
        k_ctx, k_resp = jax.random.split(jax.random.fold_in(c.round_key, t))
        contexts = env.contexts(k_ctx, c.env_state, t)
        action = alg.select(c.alg_state, contexts)
        env_state, fb = env.respond(k_resp, c.env_state, contexts, action, t)
        alg_state = alg.update(c.alg_state, contexts[action], fb.reward, fb.nu)
        out = Trajectory(regret=fb.regret, action=action, corruption=fb.corruption, reward=fb.reward)
        return Carry(alg_state, env_state, c.round_key), out

    return jax.lax.scan(body, carry, rounds)


def simulate(alg: Algorithm, env: Environment, key, horizon: int) -> Trajectory:
    """One run of ``horizon`` rounds; returns a :class:`Trajectory` of `[T]` arrays.

    ``key``: a PRNG key or an int seed (consumed). Pure and traceable: ``jax.jit`` it with
    ``static_argnames="horizon"`` and ``jax.vmap`` it over keys or over arguments of the factories.

    The run is always one compiled program (called eagerly, it is jitted with ``alg`` and ``env``
    static): run op by op, XLA could not fuse, and its fused arithmetic (contracted multiply–adds,
    x/√y as x·rsqrt(y)) rounds differently, so an eager call would differ in the last bits from the
    same call under ``jit``.
    """
    horizon = check_pair(alg, env, horizon)
    return _simulate(alg, env, as_key(key), horizon)


@functools.partial(jax.jit, static_argnums=(0, 1, 3))
def _simulate(alg: Algorithm, env: Environment, key, horizon: int) -> Trajectory:
    _, traj = rollout(alg, env, init_carry(alg, env, key), jnp.arange(horizon, dtype=jnp.int32))
    return traj
