"""Environments: the paper's random linear bandit and a replay of user-supplied arrays.

Reward model eq:reward: r_t = ⟨X_t, θ*⟩ + η_t + c_t; pseudo-regret max_x ⟨x, θ*⟩ − ⟨X_t, θ*⟩.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import _validation as V
from . import corruption as corruption_lib
from ._numeric import as_float, float_dtype
from .base import Environment, Feedback
from .linalg import dot, norm
from .noise import NoiseFamily

Array = jax.Array


class EnvState(NamedTuple):
    """θ* `[d]` and the adversary's state (corruption spent so far)."""

    theta_star: Array
    adversary: Array


def _check_adversary(corruption):
    """The adversary (default: none), refusing anything that is not a ``jb.corruption`` adversary."""
    if corruption is None:
        return corruption_lib.none()
    return V.check_instance("corruption", corruption, corruption_lib.Adversary,
                            "a jb.corruption adversary (e.g. jb.corruption.flip(budget=100.0)) or None")


def uniform_sphere(key, shape, radius) -> Array:
    """Points uniform on the sphere of ``radius`` in ℝ^d: ``shape`` `[..., d]`."""
    g = jax.random.normal(key, shape, dtype=float_dtype())
    return as_float(radius) * g / norm(g)[..., None]


def _feedback(means, action, eta, c, nu):
    chosen = means[action]
    return Feedback(reward=chosen + eta + c, nu=nu, regret=jnp.max(means) - chosen, corruption=c)


def linear(dim: int, num_arms: int, *, noise: NoiseFamily, corruption=None, S=1.0, L=1.0,
           eps=None) -> Environment:
    """The paper's Section 6 environment (d = 10, K = 20, S = L = 1 there).

    θ* uniform on the sphere of radius ``S``; each round ``num_arms`` contexts i.i.d. uniform on the
    sphere of radius ``L``; noise from ``noise``; corruption from an adversary (default none).
    ``eps``: the moment order at which ν_t = s_t·noise.moment_bound(eps) is revealed each round; None
    reveals no ν_t (then only algorithms with a constant ``nu`` can run on it).
    """
    dim = V.check_int("dim", dim)
    num_arms = V.check_int("num_arms", num_arms)
    V.check_positive("S", S, required=True, why="the norm of θ*")
    V.check_positive("L", L, required=True, why="the norm of every context")
    V.check_instance("noise", noise, NoiseFamily, "a jb.noise family (e.g. jb.noise.student_t(3.0))")
    adversary = _check_adversary(corruption)
    if eps is not None:
        noise.check_moment(eps)
        nu_base = noise.moment_bound(eps)

    def init(key) -> EnvState:
        return EnvState(uniform_sphere(key, (dim,), S), adversary.init())

    def contexts(key, state, t):
        return uniform_sphere(key, (num_arms, dim), L)

    def respond(key, state, X, action, t):
        eta, scale = noise.sample(key, t)
        means = dot(X, state.theta_star)
        c, spent = adversary.corrupt(state.adversary, means, action, eta, t)
        nu = scale * nu_base if eps is not None else jnp.full((), jnp.nan, float_dtype())
        return state._replace(adversary=spent), _feedback(means, action, eta, c, nu)

    return Environment(init=init, contexts=contexts, respond=respond, dim=dim, num_arms=num_arms,
                       horizon=None, reveals_nu=eps is not None)


def replay(*, theta_star, contexts, noise, corruption=None, nu=None) -> Environment:
    """A run on arrays the user supplies, so any external implementation sees identical streams.

    Args:
      theta_star: `[d]`.
      contexts: `[T, K, d]`, the decision sets of rounds 1..T.
      noise: `[T]`, η_t added to the chosen arm's mean.
      corruption: an adversary (default none); it sees the same means, actions and noise.
      nu: revealed ν_t, a scalar or `[T]` (default: none revealed).
    Keys passed to ``init``/``contexts``/``respond`` are ignored.
    """
    if V.is_traced((theta_star, contexts, noise, nu)):
        th, X, eta = theta_star, contexts, noise
    else:
        X = np.asarray(V.check_finite_array("contexts", contexts))
        if X.ndim != 3:
            raise ValueError(f"contexts has shape {X.shape}: expected [T, K, d] (horizon, arms, dim)")
        T, K, d = X.shape
        if T < 1 or K < 1 or d < 1:
            raise ValueError(f"contexts has shape {X.shape}: T, K and d must each be >= 1")
        th = np.asarray(V.check_finite_array("theta_star", theta_star))
        if th.shape != (d,):
            raise ValueError(f"theta_star has shape {th.shape}, expected ({d},) to match the dim d={d} of "
                             f"contexts [T, K, d] = {list(X.shape)}")
        eta = V._as_float_array("noise", noise, "an array of real numbers")
        if eta.shape != (T,):
            raise ValueError(f"noise has shape {eta.shape}, expected ({T},) to match the horizon T={T} of "
                             f"contexts [T, K, d] = {list(X.shape)}")
        if np.any(np.isnan(eta)):
            raise ValueError(f"noise[{int(np.argmax(np.isnan(eta)))}]=nan is invalid: noise must not "
                             "contain NaN (±inf is allowed: the algorithms clamp rewards)")
        if nu is not None:
            nu_arr = V._as_float_array("nu", nu, "an array of real numbers")
            if nu_arr.shape not in ((), (T,)):
                raise ValueError(f"nu has shape {nu_arr.shape}, expected () or ({T},) to match the horizon "
                                 f"T={T} of contexts")
            V.check_positive("nu", nu_arr)
    T, K, d = jnp.shape(X)
    X = as_float(X)
    th = as_float(th)
    eta = as_float(eta)
    nus = None if nu is None else jnp.broadcast_to(as_float(nu), (T,))
    adversary = _check_adversary(corruption)

    def init(key) -> EnvState:
        return EnvState(th, adversary.init())

    def contexts_fn(key, state, t):
        return X[t]

    def respond(key, state, X_t, action, t):
        means = dot(X_t, state.theta_star)
        c, spent = adversary.corrupt(state.adversary, means, action, eta[t], t)
        nu_t = jnp.full((), jnp.nan, float_dtype()) if nus is None else nus[t]
        return state._replace(adversary=spent), _feedback(means, action, eta[t], c, nu_t)

    return Environment(init=init, contexts=contexts_fn, respond=respond, dim=int(d), num_arms=int(K),
                       horizon=int(T), reveals_nu=nu is not None)
