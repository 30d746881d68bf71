"""CW-OFUL (He, Zhou, Zhang & Gu 2022, "Nearly optimal algorithms for linear contextual bandits with
adversarial corruptions", Algorithm 1).

Weighted ridge regression with confidence-based weights. In round t, with Σ_{t−1} = λI + Σ_{s<t} w_sX_sX_sᵀ
and b_{t−1} = Σ_{s<t} w_s r_s X_s:

- choose X_t = argmax_x ⟨x, θ̂⟩ + β‖x‖_{Σ_{t−1}⁻¹} with θ̂ = Σ_{t−1}⁻¹b_{t−1} (line 5), ties to the lowest
  index;
- weight w_t = min{1, α/‖X_t‖_{Σ_{t−1}⁻¹}}, computed with Σ_{t−1}, before the update (line 6);
- Σ_t = Σ_{t−1} + w_tX_tX_tᵀ (Sherman–Morrison on Σ⁻¹), b_t = b_{t−1} + w_t r_t X_t.

Constants (their Section 4; K there is our horizon T, and the radius is constant over rounds):

- known C (Lemma 4.1, Theorem 4.2): α = (R√d + √λS)/C and β = R√(d log((1 + TL²/λ)/δ)) + αC + √λS.
  C = 0 gives α = ∞, every w_t = 1 and the αC term 0: OFUL with a constant radius (Remark 4.6).
- unknown C (Theorem 4.9), an estimate C̄: α = (R√d + √λS)/C̄ and
  β = 2R√(d log((1 + TL²/λ)/δ)) + 2√λS; ``corruption=None`` takes their suggested C̄ = √T.
- Theorem 4.2 also sets λ = R²/S², which is the default λ = 1 at the default R = S = 1.
- The public experiment code (uclaml/CW-OFUL, ``Corruption.ipynb``) uses λ = 1, β = 1.5, α = 0.2:
  ``cw_oful(T, d, lam=1.0, beta=1.5, alpha=0.2)``.

``beta_scale`` multiplies β (formula or constant); ``beta``/``alpha`` replace the formulas.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ..core import validation as V
from ..core.dtypes import as_float, float_dtype
from ..core.linalg import clamp_reward, ellipsoid_norm, matvec, select_ucb, sherman_morrison
from ..core.types import Algorithm
from . import registry
from .oful import validate_ridge

Array = jax.Array


class CWOFULState(NamedTuple):
    """State after t rounds: Σ_t⁻¹ `[d, d]`, b_t = Σ w_s r_s X_s `[d]`, t (int32 scalar)."""

    Sigma_inv: Array
    b: Array
    t: Array


def cw_oful_constants(
    *, horizon, dim, lam, corruption, known_corruption, S, L, R, delta, alpha=None, beta=None
):
    """(α, β) of He et al. (2022): Theorem 4.2 (known C) or 4.9 (unknown, C̄); β before ``beta_scale``."""
    T = as_float(horizon)
    lam = as_float(lam)
    R = as_float(R)
    S = as_float(S)
    C = jnp.sqrt(T) if corruption is None else as_float(corruption)
    bias = R * jnp.sqrt(as_float(dim)) + jnp.sqrt(lam) * S
    if alpha is None:
        alpha = bias / C  # C = 0: α = ∞, every weight 1
    alpha = as_float(alpha)
    if beta is None:
        log_term = jnp.sqrt(as_float(dim) * jnp.log((1.0 + T * as_float(L) ** 2 / lam) / as_float(delta)))
        if known_corruption and corruption is not None:
            beta = R * log_term + jnp.where(C > 0, alpha * C, 0.0) + jnp.sqrt(lam) * S
        else:
            beta = 2.0 * R * log_term + 2.0 * jnp.sqrt(lam) * S
    return alpha, as_float(beta)


def cw_oful(
    horizon: int,
    dim: int,
    *,
    lam: ArrayLike = 1.0,
    beta: ArrayLike | None = None,
    alpha: ArrayLike | None = None,
    corruption: ArrayLike | None = None,
    known_corruption: bool = True,
    beta_scale: ArrayLike = 1.0,
    S: ArrayLike = 1.0,
    L: ArrayLike = 1.0,
    R: ArrayLike = 1.0,
    delta: ArrayLike | None = None,
) -> Algorithm:
    """CW-OFUL, Algorithm 1 of He et al. (2022).

    Args:
      horizon: T, rounds per run (static).
      dim: d, the context dimension (static).

      lam: ridge parameter λ > 0 (default 1).
      beta: a constant radius ≥ 0 replacing the theorem's β.
      alpha: the weight threshold α > 0 (``inf`` allowed: OFUL) replacing (R√d + √λS)/C.
      corruption: C ≥ 0 (known) or an estimate C̄; default None: unknown C with C̄ = √T.
      known_corruption: with a given ``corruption``, True uses Theorem 4.2's β (C known), False
        Theorem 4.9's (C̄ an estimate). Static.
      beta_scale: multiplies β (default 1).
      S: the bound ‖θ*‖ ≤ S (default 1).
      L: the bound ‖X_t‖ ≤ L (default 1).
      R: the noise scale R (default 1).
      delta: confidence δ ∈ (0, 1) (default 1/T).

    Every numeric argument may be a traced scalar.
    """
    horizon, dim = validate_ridge(horizon, dim, lam, beta, beta_scale, S, L, R, delta)
    V.check_positive("alpha", alpha, allow_inf=True)
    V.check_nonnegative("corruption", corruption, why="C, or an estimate C̄; None: unknown, C̄ = √T")
    V.check_flag("known_corruption", known_corruption)
    lam_ = as_float(lam)
    delta_ = 1.0 / as_float(horizon) if delta is None else as_float(delta)
    alpha_, beta_ = cw_oful_constants(
        horizon=horizon,
        dim=dim,
        lam=lam_,
        corruption=corruption,
        known_corruption=known_corruption,
        S=S,
        L=L,
        R=R,
        delta=delta_,
        alpha=alpha,
        beta=beta,
    )
    radius = as_float(beta_scale) * beta_

    def init() -> CWOFULState:
        dtype = float_dtype()
        return CWOFULState(
            Sigma_inv=(jnp.eye(dim, dtype=dtype) / lam_).astype(dtype),
            b=jnp.zeros(dim, dtype=dtype),
            t=jnp.zeros((), jnp.int32),
        )

    def select(state: CWOFULState, contexts: Array) -> Array:
        theta = matvec(state.Sigma_inv, state.b)
        return select_ucb(contexts, theta, state.Sigma_inv, radius.astype(theta.dtype))

    def update(state: CWOFULState, x: Array, reward: Array, nu: Array) -> CWOFULState:
        dtype = state.b.dtype
        # line 6: the weight uses Σ_{t−1}, before this round's update; α/0 = ∞ gives w = 1
        w = jnp.minimum(1.0, alpha_.astype(dtype) / ellipsoid_norm(state.Sigma_inv, x))
        return CWOFULState(
            Sigma_inv=sherman_morrison(state.Sigma_inv, x, w),
            b=state.b + w * clamp_reward(reward, dtype) * x,
            t=state.t + 1,
        )

    return Algorithm(
        init=init, select=select, update=update, dim=dim, horizon=horizon, uses_revealed_nu=False
    )


def _theory(p: registry.Problem) -> dict:
    """Theorem 4.2's α = (R√d + √λS)/C (∞ at C = 0) with R = λ = 1, and β unscaled."""
    alpha, _ = cw_oful_constants(
        horizon=p.horizon,
        dim=p.dim,
        lam=1.0,
        corruption=p.corruption,
        known_corruption=True,
        S=p.S,
        L=p.L,
        R=1.0,
        delta=1.0 / p.horizon,
    )
    return {"beta_scale": 1.0, "alpha": alpha}


registry.register(
    registry.AlgorithmSpec(
        name="cw_oful",
        label="CW-OFUL",
        factory=cw_oful,
        build=lambda p, h: cw_oful(
            p.horizon,
            p.dim,
            corruption=p.corruption,
            known_corruption=True,
            S=p.S,
            L=p.L,
            beta_scale=h["beta_scale"],
            alpha=h["alpha"],
        ),
        theory=_theory,
        grid={"beta_scale": (1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1.0), "alpha": (0.005, 0.02, 0.1, 0.5, 2.0)},
        cost="O(1)",
        knowledge=("corruption", "S", "L"),
        source="He, Zhou, Zhang & Gu 2022, Algorithm 1 and Theorem 4.2",
        color="#117733",
    )
)
