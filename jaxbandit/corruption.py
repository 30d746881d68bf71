"""Adversaries adding c_t to the stochastic reward (eq:reward), with total corruption Σ|c_t|.

An adversary is ``Adversary(init, corrupt)``:

- ``init() -> state`` (a scalar: the corruption spent so far);
- ``corrupt(state, means, action, eta, t) -> (c_t, state)`` where ``means`` `[K]` are ⟨x, θ*⟩ of this
  round's arms, ``action`` the learner's choice, ``eta`` the noise and ``t`` the 0-based round index.
  The adversary may use all of them (Section 3.1: c_t may depend on 𝒳_t, X_t and r'_t).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from . import _validation as V
from ._numeric import as_float, float_dtype

Array = jax.Array


class Adversary(NamedTuple):
    """A corruption mechanism; see the module docstring."""

    name: str
    init: Callable[[], Array]
    corrupt: Callable[[Array, Array, Array, Array, Array], tuple]


def none() -> Adversary:
    """No corruption: c_t = 0."""

    def corrupt(spent, means, action, eta, t):
        return jnp.zeros((), float_dtype()), spent

    return Adversary("none", lambda: jnp.zeros((), float_dtype()), corrupt)


def flip(budget) -> Adversary:
    """θ-flipping with an exact budget C (Bogunovic et al. 2021, the paper's Section 6).

    c_t = −sign(⟨X_t,θ*⟩)·min(2|⟨X_t,θ*⟩|, C − spent): the mean reward is flipped to −⟨X_t,θ*⟩ until the
    budget runs out, the last corrupted round is a partial flip, and Σ|c_t| ≤ C always. ``budget`` may be
    ``inf`` (flip every round) and may be traced.
    """
    V.check_nonnegative("budget", budget, allow_inf=True, required=True,
                        why="the total corruption C = Σ|c_t|; inf flips every round")
    C = as_float(budget)

    def corrupt(spent, means, action, eta, t):
        m = means[action]
        c = -jnp.sign(m) * jnp.minimum(2.0 * jnp.abs(m), jnp.maximum(C - spent, 0.0))
        return c, spent + jnp.abs(c)

    return Adversary("flip", lambda: jnp.zeros((), float_dtype()), corrupt)


def flip_rounds(rounds) -> Adversary:
    """Flip the sign of ⟨X_t,θ*⟩ in the first ``rounds`` rounds, whatever that costs.

    This is what public baseline code does when it is given "C": a count of flipped rounds, not a
    budget on Σ|c_t| (which then reaches up to 2·rounds·S·L). ``rounds`` may be traced.
    """
    V.check_whole("rounds", rounds)
    n = as_float(rounds)

    def corrupt(spent, means, action, eta, t):
        m = means[action]
        c = jnp.where(as_float(t) < n, -2.0 * m, 0.0)
        return c, spent + jnp.abs(c)

    return Adversary("flip_rounds", lambda: jnp.zeros((), float_dtype()), corrupt)
