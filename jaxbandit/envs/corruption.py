"""Adversaries adding c_t to the stochastic reward (eq:reward), with total corruption Σ|c_t|.

An adversary is ``jb.core.types.Adversary(name, init, corrupt, budget)``: ``init() -> state`` (here a
scalar, the corruption spent so far) and ``corrupt(state, view) -> (c_t, state)``, where ``view`` is the
round as the adversary sees it (contexts, θ*, the arms' means, the learner's action, the noise η_t and the
round index; Section 3.1: c_t may depend on 𝒳_t, X_t and r'_t). ``budget()`` returns the bound on
Σ|c_t| it guarantees.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ..core import validation as V
from ..core.dtypes import as_float, float_dtype
from ..core.types import Adversary, AdversaryView

Array = jax.Array

__all__ = ["Adversary", "AdversaryView", "flip", "flip_rounds", "none"]


def _nothing_spent() -> Array:
    return jnp.zeros((), float_dtype())


def none() -> Adversary:
    """No corruption: c_t = 0."""

    def corrupt(spent: Array, view: AdversaryView) -> tuple[Array, Array]:
        return jnp.zeros((), float_dtype()), spent

    return Adversary("none", _nothing_spent, corrupt, budget=_nothing_spent)


def flip(budget: ArrayLike) -> Adversary:
    """θ-flipping with an exact budget C (Bogunovic et al. 2021, the paper's Section 6).

    c_t = −sign(⟨X_t,θ*⟩)·min(2|⟨X_t,θ*⟩|, C − spent): the mean reward is flipped to −⟨X_t,θ*⟩ until the
    budget runs out, the last corrupted round is a partial flip, and Σ|c_t| ≤ C always. ``budget`` may be
    ``inf`` (flip every round) and may be traced.
    """
    V.check_nonnegative(
        "budget",
        budget,
        allow_inf=True,
        required=True,
        why="the total corruption C = Σ|c_t|; inf flips every round",
    )
    C = as_float(budget)

    def corrupt(spent: Array, view: AdversaryView) -> tuple[Array, Array]:
        m = view.means[view.action]
        c = -jnp.sign(m) * jnp.minimum(2.0 * jnp.abs(m), jnp.maximum(C - spent, 0.0))
        return c, spent + jnp.abs(c)

    return Adversary("flip", _nothing_spent, corrupt, budget=lambda: C)


def flip_rounds(rounds: ArrayLike) -> Adversary:
    """Flip the sign of ⟨X_t,θ*⟩ in the first ``rounds`` rounds, whatever that costs.

    This is what public baseline code does when it is given "C": a count of flipped rounds, not a
    budget on Σ|c_t| (which then reaches up to 2·rounds·S·L; no ``budget`` is declared). ``rounds`` may
    be traced.
    """
    V.check_whole("rounds", rounds)
    n = as_float(rounds)

    def corrupt(spent: Array, view: AdversaryView) -> tuple[Array, Array]:
        m = view.means[view.action]
        c = jnp.where(as_float(view.t) < n, -2.0 * m, 0.0)
        return c, spent + jnp.abs(c)

    return Adversary("flip_rounds", _nothing_spent, corrupt)
