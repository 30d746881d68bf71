"""The types every algorithm and environment shares.

An algorithm is ``Algorithm(init, select, update)``: pure functions over a ``NamedTuple`` state, written
for one stream of experience and batched only with ``vmap`` (rlax, optax style). An environment is
``Environment(init, contexts, respond)`` with the key first (gymnax style). Neither sees the other's
state: an algorithm never sees θ*, an environment never sees an algorithm's state.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax

Array = jax.Array
PRNGKey = jax.Array
State = Any


class Algorithm(NamedTuple):
    """A bandit algorithm as pure functions.

    - ``init() -> state``: the state before round 1; every leaf has its final dtype.
    - ``select(state, contexts) -> action``: ``contexts`` `[K, d]`; the chosen index (int32 scalar),
      ties to the lowest index.
    - ``update(state, x, reward, nu) -> state``: ``x`` `[d]` the chosen context, ``reward`` the observed
      (corrupted) reward r_t, ``nu`` the moment bound ν_t the environment reveals (ignored by algorithms
      that do not use it).
    - ``uses_revealed_nu``: True when ``update`` needs a real ν_t (the known-ν_t setting), so a
      simulator can refuse an environment that reveals none.
    """

    init: Callable[[], State]
    select: Callable[[State, Array], Array]
    update: Callable[[State, Array, Array, Array], State]
    uses_revealed_nu: bool = False


class Feedback(NamedTuple):
    """What one round produces. The algorithm sees only ``reward`` and ``nu``."""

    reward: Array      # r_t = <X_t, θ*> + η_t + c_t  (eq:reward)
    nu: Array          # ν_t revealed this round (NaN where the environment reveals none)
    regret: Array      # max_x <x, θ*> − <X_t, θ*>
    corruption: Array  # c_t


class Environment(NamedTuple):
    """A linear contextual bandit environment.

    - ``init(key) -> env_state``: draws θ* and resets the adversary (the key is consumed).
    - ``contexts(key, env_state, t) -> contexts`` `[K, d]` for round index ``t`` (0-based).
    - ``respond(key, env_state, contexts, action, t) -> (env_state, Feedback)``.
    - ``dim``, ``num_arms``: static shapes; ``horizon``: the longest run it supports (None: any);
      ``reveals_nu``: whether ``Feedback.nu`` carries a real ν_t.
    """

    init: Callable[[PRNGKey], State]
    contexts: Callable[[PRNGKey, State, Array], Array]
    respond: Callable[[PRNGKey, State, Array, Array, Array], tuple]
    dim: int
    num_arms: int
    horizon: int | None = None
    reveals_nu: bool = True


class Trajectory(NamedTuple):
    """Per-round record of one run, each `[T]` (leading batch axes under ``vmap``)."""

    regret: Array      # pseudo-regret max_x <x, θ*> − <X_t, θ*>
    action: Array      # index of the chosen arm
    corruption: Array  # c_t added by the adversary
    reward: Array      # observed reward r_t
