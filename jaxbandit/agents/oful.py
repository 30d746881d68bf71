"""OFUL (Abbasi-Yadkori, Pál & Szepesvári 2011, "Improved algorithms for linear stochastic bandits").

Ridge regression θ̂_t = V_t⁻¹b_t with V_t = λI + Σ_{s≤t} X_sX_sᵀ and b_t = Σ_{s≤t} r_sX_s, V⁻¹ kept by
Sherman–Morrison; each round picks argmax_x ⟨x, θ̂_{t−1}⟩ + β_{t−1}‖x‖_{V_{t−1}⁻¹}, ties to the lowest
index (``linalg.select_ucb``).

The theory radius is the determinant-free form of their Theorem 2 (the confidence ellipsoid for
‖X_t‖ ≤ L), after t observations:

    β_t = R √(d log((1 + tL²/λ)/δ)) + √λ S,

the form He et al. (2022) use in their Lemma 4.1 (with C = 0, and the horizon in place of t). Theorem 2's
sharper form R√(2 log(det(V_t)^{1/2} det(λI)^{−1/2}/δ)) + √λS is not used. ``beta_scale`` multiplies the
radius; ``beta`` replaces it by a constant.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ..core import validation as V
from ..core.dtypes import as_float, float_dtype
from ..core.linalg import clamp_reward, matvec, select_ucb, sherman_morrison
from ..core.types import Algorithm
from . import registry

Array = jax.Array


class OFULState(NamedTuple):
    """State after t rounds: V_t⁻¹ `[d, d]`, b_t = Σ r_sX_s `[d]`, t (int32 scalar)."""

    V_inv: Array
    b: Array
    t: Array


def oful_radius(t, *, dim, lam, S, L, R, delta):
    """β_t = R√(d log((1 + tL²/λ)/δ)) + √λS (Abbasi-Yadkori et al. 2011, Theorem 2)."""
    t = as_float(t)
    lam = as_float(lam)
    return as_float(R) * jnp.sqrt(
        as_float(dim) * jnp.log((1.0 + t * as_float(L) ** 2 / lam) / as_float(delta))
    ) + jnp.sqrt(lam) * as_float(S)


def validate_ridge(horizon, dim, lam, beta, beta_scale, S, L, R, delta):
    """The eager checks OFUL and CW-OFUL share; returns (horizon, dim) as ints."""
    horizon = V.check_int("horizon", horizon)
    dim = V.check_int("dim", dim)
    V.check_positive("lam", lam, required=True)
    V.check_nonnegative("beta", beta)
    for name, value in (("beta_scale", beta_scale), ("S", S), ("L", L), ("R", R)):
        V.check_positive(name, value, required=True)
    V.check_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    return horizon, dim


def oful(
    horizon: int,
    dim: int,
    *,
    lam: ArrayLike = 1.0,
    beta: ArrayLike | None = None,
    beta_scale: ArrayLike = 1.0,
    S: ArrayLike = 1.0,
    L: ArrayLike = 1.0,
    R: ArrayLike = 1.0,
    delta: ArrayLike | None = None,
) -> Algorithm:
    """OFUL with the Theorem 2 radius unless ``beta`` is given.

    Args:
      horizon: T, rounds per run (static); it only sets the default δ.
      dim: d, the context dimension (static).

      lam: ridge parameter λ > 0 (default 1).
      beta: a constant radius ≥ 0 replacing β_t (0 gives the greedy ridge baseline).
      beta_scale: multiplies the radius, formula or constant (default 1).
      S: the bound ‖θ*‖ ≤ S (default 1).
      L: the bound ‖X_t‖ ≤ L (default 1).
      R: the sub-Gaussian noise scale R (default 1).
      delta: confidence δ ∈ (0, 1) of the radius (default 1/T).

    The radius used in round t is β_{t−1} (t−1 observations so far). Every numeric argument may be a
    traced scalar.
    """
    horizon, dim = validate_ridge(horizon, dim, lam, beta, beta_scale, S, L, R, delta)
    lam_ = as_float(lam)
    delta_ = 1.0 / as_float(horizon) if delta is None else as_float(delta)

    def radius(t):
        if beta is not None:
            return as_float(beta_scale) * as_float(beta)
        return as_float(beta_scale) * oful_radius(t, dim=dim, lam=lam_, S=S, L=L, R=R, delta=delta_)

    def init() -> OFULState:
        dtype = float_dtype()
        return OFULState(
            V_inv=(jnp.eye(dim, dtype=dtype) / lam_).astype(dtype),
            b=jnp.zeros(dim, dtype=dtype),
            t=jnp.zeros((), jnp.int32),
        )

    def select(state: OFULState, contexts: Array) -> Array:
        theta = matvec(state.V_inv, state.b)
        return select_ucb(contexts, theta, state.V_inv, radius(state.t).astype(theta.dtype))

    def update(state: OFULState, x: Array, reward: Array, nu: Array) -> OFULState:
        return OFULState(
            V_inv=sherman_morrison(state.V_inv, x, jnp.ones((), state.V_inv.dtype)),
            b=state.b + clamp_reward(reward, state.b.dtype) * x,
            t=state.t + 1,
        )

    return Algorithm(
        init=init, select=select, update=update, dim=dim, horizon=horizon, uses_revealed_nu=False
    )


registry.register(
    registry.AlgorithmSpec(
        name="oful",
        label="OFUL",
        factory=oful,
        build=lambda p, h: oful(p.horizon, p.dim, S=p.S, L=p.L, lam=h["lam"], beta_scale=h["beta_scale"]),
        theory=lambda p: {"beta_scale": 1.0, "lam": 1.0},
        grid={"beta_scale": registry.BETA_SCALES, "lam": registry.RIDGE_FACTORS},
        cost="O(1)",
        knowledge=("S", "L"),
        source="Abbasi-Yadkori, Pál & Szepesvári 2011, Theorem 2",
        color="#000000",
    )
)
