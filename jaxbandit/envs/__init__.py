"""Environments: an exogenous stream (θ*, contexts, noise) and an adversary (``jb.corruption``).

``jb.envs.linear`` is the paper's Section 6 environment, ``jb.envs.replay`` replays arrays you supply;
both are ``jb.Environment(stream, adversary)``, and their streams are ``linear_stream`` and
``replay_stream``; ``sp500_stream`` draws real contexts (stock returns). Noise families are
``jb.noise``, adversaries ``jb.corruption``.
"""

from __future__ import annotations

from jax.typing import ArrayLike

from ..core import validation as V
from ..core.types import Adversary, Environment, EnvState
from . import corruption, datasets, noise
from .noise import NoiseFamily
from .streams import linear_stream, replay_stream, sp500_stream, uniform_sphere


def _adversary(adversary) -> Adversary:
    """The adversary (default: none), refusing anything that is not a ``jb.corruption`` adversary."""
    if adversary is None:
        return corruption.none()
    return V.check_instance(
        "corruption",
        adversary,
        Adversary,
        "a jb.corruption adversary (e.g. jb.corruption.flip(budget=100.0)) or None",
    )


def linear(
    dim: int,
    num_arms: int,
    *,
    noise: NoiseFamily | None = None,
    corruption: Adversary | None = None,
    S: ArrayLike = 1.0,
    L: ArrayLike = 1.0,
    eps: ArrayLike | None = None,
) -> Environment:
    """The paper's Section 6 environment: :func:`linear_stream` and an adversary (default none).

    ``jb.envs.linear(10, 20)`` is the paper's uncorrupted setting: θ* and 20 contexts a round uniform on
    the unit sphere of R^10, and ``noise`` by default ``jb.noise.student_t(3.0)`` (Student-t with 3
    degrees of freedom, Section 6's noise at ε = 1). ``corruption``: a ``jb.corruption`` adversary, e.g.
    ``jb.corruption.flip(100.0)``; ``S``, ``L``, ``eps``: as :func:`linear_stream`.
    """
    stream = linear_stream(dim, num_arms, noise=noise, S=S, L=L, eps=eps)
    return Environment(stream, _adversary(corruption))


def replay(
    *,
    theta_star: ArrayLike,
    contexts: ArrayLike,
    noise: ArrayLike,
    corruption: Adversary | None = None,
    nu: ArrayLike | None = None,
) -> Environment:
    """:func:`replay_stream` of the arrays you supply and an adversary (default none), which sees the
    same means, actions and noise as in any other environment."""
    stream = replay_stream(theta_star=theta_star, contexts=contexts, noise=noise, nu=nu)
    return Environment(stream, _adversary(corruption))


__all__ = [
    "EnvState",
    "Environment",
    "corruption",
    "datasets",
    "linear",
    "linear_stream",
    "noise",
    "replay",
    "replay_stream",
    "sp500_stream",
    "uniform_sphere",
]
