"""The robust pieces CR-Hvt-UCB, Heavy-OFUL and GAdaOFUL share, written once.

All three weight round t by an adaptive scale σ_t and clip its standardised residual at a threshold τ_t
(the seed paper's eq:sigma_def, eq:auxi_def, eq:tau_def; Huang et al. 2023 and Yu et al. use the same
shape with their own constants):

- σ_t = max{ν_t, σ_min, floor, exploration terms} — :func:`adaptive_scale`; each algorithm supplies its
  exploration terms (multiples of ‖X_t‖ and √‖X_t‖ in the norm of its inverse Gram matrix);
- w_t = ‖X_t‖/(√α σ_t) — :func:`weight`; τ_t = τ₀ √(1 + w_t²)/w_t · t^e — :func:`huber_threshold`;
- κ = d log(1 + L²T/(σ_min² λ α d)) — :func:`kappa`;
- the confidence radius with ``beta_scale`` and a constant ``beta`` override — :func:`radius_schedule`.

Each carries the guard that keeps extreme input from overflowing float32: a floor on σ_t so that
1/(α σ_t²) stays finite, τ_t in a form with no overflow of w², capped at √(float max), κ as
d·softplus(log q) so that a σ_min² below the float range stays finite. Rewards are clamped by
``jaxbandit.core.linalg.clamp_reward``, a Sherman–Morrison update that could overflow is not applied,
and an estimate that still overflowed is rolled back by ``keep_finite``.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ..core import validation as V
from ..core.dtypes import as_float

Array = jax.Array

#: ``nu="revealed"``: use the ν_t the environment reveals each round (the known-ν_t setting).
REVEALED = "revealed"


def check_nu(nu) -> bool:
    """``nu``: a positive finite number (array) or ``"revealed"``; returns whether ν_t is revealed."""
    if isinstance(nu, str):
        if nu != REVEALED:
            raise ValueError(f"nu={nu!r} is invalid: it must be a finite number in (0, inf) or {REVEALED!r}")
        return True
    V.check_positive("nu", nu, required=True, why=f"the moment bound, or {REVEALED!r}")
    return False


def sigma_floor(dtype, alpha: ArrayLike = 1.0) -> Array:
    """The smallest scale σ for which 1/(α σ²) stays finite in ``dtype`` (about 1e-19 in float32)."""
    return 4.0 * jnp.sqrt(jnp.finfo(dtype).tiny / jnp.minimum(jnp.asarray(alpha, dtype), 1.0))


def adaptive_scale(nu: ArrayLike, sigma_min: ArrayLike, *terms: Array, alpha: ArrayLike = 1.0) -> Array:
    """σ_t = max{ν_t, σ_min, :func:`sigma_floor`, *terms} (eq:sigma_def's shape); ``terms`` are the
    algorithm's exploration terms. A maximum is exact, so the grouping does not change a bit."""
    dtype = jnp.result_type(*terms)
    base = jnp.maximum(jnp.maximum(nu, sigma_min), sigma_floor(dtype, alpha))
    explore = terms[0]
    for term in terms[1:]:
        explore = jnp.maximum(explore, term)
    return jnp.maximum(base, explore)


def weight(x_norm: Array, sigma: Array, sqrt_alpha: ArrayLike = 1.0) -> Array:
    """w_t = ‖X_t‖/(√α σ_t) (eq:auxi_def; α = 1 for Heavy-OFUL and GAdaOFUL)."""
    return x_norm / (sigma * sqrt_alpha)


def huber_threshold(tau0: Array, w: Array, t_pow: ArrayLike = 1.0) -> Array:
    """τ_t = τ₀ √(1 + w_t²)/w_t · t^e (eq:tau_def), written as τ₀ √(1 + 1/w_t²) · t^e so that a huge w_t
    cannot overflow w_t², and capped at √(float max) so that stored thresholds stay finite (τ = ∞ only
    at w = 0, a zero context, where clipping is moot)."""
    tau = opaque(tau0) * jnp.sqrt(1.0 + 1.0 / (w * w)) * t_pow
    return jnp.minimum(tau, jnp.sqrt(jnp.finfo(tau.dtype).max))


def opaque(constant: ArrayLike) -> Array:
    """``constant``, hidden from XLA's algebraic simplifier (a no-op at run time).

    A run must round the same alone and as a lane of a ``vmap`` batch. In a batch, values shared by every
    lane (a hyperparameter that is not a grid axis, the round's t^e) are broadcast scalars, and XLA's CPU
    simplifier rewrites two patterns that it leaves alone in an unbatched program: (c·x)·bcast(s) →
    x·bcast(c·s) for a literal constant c, and x / bcast(s) → x·bcast(1/s). The robust pieces therefore
    group constant factors into one opaque value and multiply per-run values by reciprocals, so that
    both programs perform the same operations; ``jb.testing.check_algorithm`` checks the outcome.
    """
    return jax.lax.optimization_barrier(jnp.asarray(constant))


def kappa(
    *,
    dim: ArrayLike,
    horizon: ArrayLike,
    L: ArrayLike,
    lam: ArrayLike,
    sigma_min: ArrayLike,
    alpha: ArrayLike = 1.0,
) -> Array:
    """κ = d log(1 + q), q = L²T/(σ_min² λ α d) (Algorithm 1's input line; α = 1 for Heavy-OFUL and
    GAdaOFUL), computed as d·softplus(log q): a σ_min whose square underflows gives the finite,
    exact-in-the-limit d·(log(L²T/(λαd)) − 2 log σ_min)."""
    d = as_float(dim)
    log_q = jnp.log(
        as_float(L) ** 2 * as_float(horizon) / (as_float(lam) * as_float(alpha) * d)
    ) - 2.0 * jnp.log(as_float(sigma_min))
    return d * jax.nn.softplus(log_q)


def radius_schedule(
    formula: Callable[[Array], Array], *, beta: ArrayLike | None, beta_scale: ArrayLike
) -> Callable[[ArrayLike], Array]:
    """t ↦ the confidence radius used after t observations: ``beta_scale``·formula(t), or
    ``beta_scale``·``beta`` when a constant ``beta`` replaces the formula (every algorithm's
    ``beta=``/``beta_scale=`` mean exactly this)."""
    scale = as_float(beta_scale)

    def radius(t: ArrayLike) -> Array:
        t_ = as_float(t)
        if beta is not None:
            return scale * as_float(beta) * jnp.ones_like(t_)
        return scale * formula(t_)

    return radius
