"""One run of an algorithm in an environment: a ``lax.scan`` over rounds, jit- and vmap-able.

Randomness, keys split by role: ``key`` gives an environment key (θ*, ``split(key)[0]``), a round key
(``split(key)[1]``) and an agent key (``fold_in(key, 2)``). Round t's stream uses
``fold_in(round_key, t)`` (the stream splits it into a contexts key and a noise key); a randomised
algorithm gets ``fold_in(agent_key, t)``, split into a select key and an update key. A run's stream
therefore depends only on its key and the round index — not on the algorithm, its batch, or how the
rounds are chunked — so every algorithm of a comparison sees the same θ*, contexts and noise (common
random numbers), and an algorithm's own randomness never shifts the stream.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..core import validation as V
from ..core.lowering.xla_options import library_jit
from ..core.types import Algorithm, Environment, Round, Trajectory, select_action, update_state

Array = jax.Array


#: ``fold_in(key, AGENT_KEY)`` is a run's agent key: the third key of ``split(key, 3)``, beside the
#: environment and round keys of ``split(key)``.
AGENT_KEY = 2


class Carry(NamedTuple):
    """Everything a run carries between rounds."""

    alg_state: Any
    env_state: Any
    round_key: Array
    agent_key: Array


def as_key(key) -> Array:
    """An int seed or a typed/raw PRNG key, as a typed key; anything else is a ``ValueError``."""
    if isinstance(key, (bool, np.bool_)):
        raise ValueError(f"key={key!r} is invalid: it must be an int seed or a jax.random.key")
    if isinstance(key, (int, np.integer)):
        seed = int(key)
        threefry = jax.config.jax_default_prng_impl == "threefry2x32"  # type: ignore[attr-defined]
        if 0 <= seed < 2**31 and threefry:
            # jax.random.key(seed)'s data, made on the host: jax.random.key compiles two programs
            # the first time (~0.1 s before a sweep's first result); tested equal
            return jax.random.wrap_key_data(jax.device_put(np.array([0, seed], np.uint32)))
        return jax.random.key(seed)
    try:
        dtype = jnp.asarray(key).dtype
    except TypeError:
        dtype = None
    if dtype is not None and jnp.issubdtype(dtype, jax.dtypes.prng_key):
        return key
    if dtype != jnp.uint32:
        raise ValueError(
            f"key={key!r} is invalid: it must be an int seed, a jax.random.key or a raw "
            "uint32 key (jax.random.PRNGKey)"
        )
    return jax.random.wrap_key_data(key)


def check_pair(alg: Algorithm, env: Environment, horizon) -> int:
    """Eager checks shared by ``simulate`` and ``sweep``; returns the horizon as ``int``."""
    if not isinstance(alg, Algorithm):
        raise ValueError(f"alg={alg!r} is invalid: it must be a jb.Algorithm (e.g. jb.cr_hvt_ucb(...))")
    if not isinstance(env, Environment):
        raise ValueError(f"env={env!r} is invalid: it must be a jb.Environment (e.g. jb.envs.linear(...))")
    horizon = V.check_int("horizon", horizon)
    if alg.dim is not None and alg.dim != env.dim:
        raise ValueError(
            f"the algorithm and the environment disagree on the dimension: algorithm dim={alg.dim}, "
            f"environment dim={env.dim}; build both with the same dim"
        )
    if env.horizon is not None and horizon > env.horizon:
        raise ValueError(
            f"horizon={horizon} is invalid: the environment holds only {env.horizon} rounds "
            f"(valid range [1, {env.horizon}])"
        )
    if alg.horizon is not None and horizon > alg.horizon:
        raise ValueError(
            f"horizon={horizon} is invalid: the algorithm was built for horizon={alg.horizon} (its "
            f"constants and buffers are sized by it; valid range [1, {alg.horizon}]); build it with "
            f"horizon >= {horizon}"
        )
    if alg.uses_revealed_nu and not env.reveals_nu:
        raise ValueError(
            "nu='revealed' needs an environment that reveals nu_t: pass eps= to "
            "jb.envs.linear, or nu= to jb.envs.replay (or give the algorithm a constant nu)"
        )
    return horizon


def init_carry(alg: Algorithm, env: Environment, key) -> Carry:
    """The carry before round 1; the key is consumed."""
    key = as_key(key)
    key_env, key_rounds = jax.random.split(key)
    return Carry(alg.init(), env.init(key_env), key_rounds, jax.random.fold_in(key, AGENT_KEY))


def agent_keys(agent_key: Array, t) -> tuple[Array, Array]:
    """Round ``t``'s (select, update) keys of a randomised algorithm."""
    k_select, k_update = jax.random.split(jax.random.fold_in(agent_key, t))
    return k_select, k_update


def respond_and_learn(alg: Algorithm, env: Environment, alg_state, env_state, rnd: Round, t, keys):
    """Everything of a round after the stream's draw ``rnd``: the algorithm's choice, the adversary's c_t,
    the reward and the update. Returns ``(alg_state, env_state, Trajectory)``."""
    k_select, k_update = keys
    action = select_action(alg, alg_state, rnd.contexts, k_select)
    env_state, fb = env.respond(env_state, rnd, action, t)
    alg_state = update_state(alg, alg_state, rnd.contexts[action], fb.reward, fb.nu, k_update)
    # An arm outside [0, K) would be clamped by the indexing above: its round's regret and reward are NaN
    # instead (and so is every cumulative regret after it), which jb.sweep refuses; a select where, free.
    valid = (action >= 0) & (action < rnd.contexts.shape[0])
    nan = jnp.full((), jnp.nan, fb.regret.dtype)
    return (
        alg_state,
        env_state,
        Trajectory(
            regret=jnp.where(valid, fb.regret, nan),
            action=action,
            corruption=fb.corruption,
            reward=jnp.where(valid, fb.reward, nan),
        ),
    )


def round_step(alg: Algorithm, env: Environment):
    """The transition of one round, ``step(carry, t) -> (carry, Trajectory)`` for the 0-based index ``t``:
    the stream's round, then :func:`respond_and_learn`."""

    def step(c: Carry, t) -> tuple[Carry, Trajectory]:
        rnd = env.stream.draw(jax.random.fold_in(c.round_key, t), c.env_state.theta_star, t)
        alg_state, env_state, out = respond_and_learn(
            alg, env, c.alg_state, c.env_state, rnd, t, agent_keys(c.agent_key, t)
        )
        return c._replace(alg_state=alg_state, env_state=env_state), out

    return step


def rollout(alg: Algorithm, env: Environment, carry: Carry, rounds: Array):
    """Run the 0-based round indices ``rounds`` `[n]` from ``carry``; returns (carry, Trajectory `[n]`)."""
    return jax.lax.scan(round_step(alg, env), carry, rounds)


def simulate(alg: Algorithm, env: Environment, key, horizon: int) -> Trajectory:
    """One run of ``horizon`` rounds; returns a :class:`Trajectory` of `[T]` arrays.

    A round whose action is outside [0, K) (a broken ``select``) is never silently played as a clamped
    arm: its ``regret`` and ``reward`` are NaN, its ``action`` the index returned (``jb.sweep`` raises).

    ``key``: a PRNG key or an int seed (consumed). Pure and traceable: ``jax.jit`` it with
    ``static_argnames="horizon"`` and ``jax.vmap`` it over keys or over arguments of the factories.

    The run is always one compiled program (called eagerly, it is jitted with ``alg`` and ``env``
    static; a newly built ``alg`` or ``env`` with the same settings reuses it): run op by op, XLA could
    not fuse, and its fused arithmetic (contracted multiply–adds, x/√y as x·rsqrt(y)) rounds
    differently, so an eager call would differ in the last bits from the same call under ``jit``.
    """
    horizon = check_pair(alg, env, horizon)
    return _simulate(alg, env, as_key(key), horizon)


@library_jit(static_argnums=(0, 1, 3))
def _simulate(alg: Algorithm, env: Environment, key, horizon: int) -> Trajectory:
    _, traj = rollout(alg, env, init_carry(alg, env, key), jnp.arange(horizon, dtype=jnp.int32))
    return traj
