"""Heavy-OFUL (Huang, Zhong, Wang & Yang 2023, "Tackling heavy-tailed rewards in reinforcement learning
with function approximation: minimax optimal and instance-dependent regret bounds", Algorithm 1).

The heavy-tailed baseline that is not corruption-aware: adaptive Huber regression refit over all past
rounds every round. In round t (1-based):

- choose X_t = argmax_x ⟨x, θ̂_{t−1}⟩ + β_{t−1}‖x‖_{H_{t−1}⁻¹}, ties to the lowest index;
- σ_t = max{ν_t, σ_min, ‖X_t‖_{H_{t−1}⁻¹}/c₀, √‖X_t‖_{H_{t−1}⁻¹}/(2c₁κ)^{1/4}},
  w_t = ‖X_t‖_{H_{t−1}⁻¹}/σ_t, τ_t = τ₀ √(1 + w_t²)/w_t · t^e with e = (1 − ε)/(2(1 + ε))
  (the σ_t/τ_t shape of the seed paper's Lemma huang_C.2, which quotes their Lemma C.2);
- θ̂_t = argmin_{‖θ‖ ≤ S} (λ/2)‖θ‖² + Σ_{s≤t} f_{τ_s}((r_s − ⟨X_s, θ⟩)/σ_s), f the Huber loss
  (def:huber_loss1 of the seed paper), solved by ``robust_regression.refit`` to ``tol``;
- H_t = H_{t−1} + X_tX_tᵀ/σ_t² (H₀ = λI), H⁻¹ by Sherman–Morrison.

Constants, as in the authors' public experiment script (a ``heavy_oful`` function next to MENU and TOFU),
whose formulas we take over with B = S:

- κ = d log(1 + TL²/(dλσ_min²)), τ₀ = √(2κ)(log 3T)^e / (log(2T²/δ))^{1/(1+ε)};
- c₀ = 1/√(23 log(2T²/δ)), c₁ = (log 3T)^{(1−ε)/(1+ε)} / (48 (log(2T²/δ))^{2/(1+ε)});
- β_t = 3√λ S + 24 t^e √(2κ) (log 3T)^e (log(2T²/δ))^{ε/(1+ε)}, with 0⁰ = 1 at t = 0;
- defaults λ = d/S², σ_min = 1/√T, δ = 1/T. The script itself uses λ = d/100, δ = 0.01, divides β_t
  by 10⁴ (``beta_scale=1e-4``), constrains ‖θ‖² ≤ 1.1 and warm-starts every solve at the true θ*;
  we warm-start at θ̂_{t−1} and constrain ‖θ‖ ≤ S.
- The script's √‖X_t‖ term in σ_t has no S in it (its B is 1); for S ≠ 1 check the paper's
  Algorithm 1 before relying on it.

``nu`` is a constant ν (a bound on the (1+ε)-th central moment's 1/(1+ε) power) or ``"revealed"`` to use
the environment's ν_t each round. ``beta_scale`` multiplies β_t; ``beta`` replaces it by a constant.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ..core import validation as V
from ..core.dtypes import as_float, float_dtype
from ..core.linalg import clamp_reward, ellipsoid_norm, keep_finite, select_ucb, sherman_morrison
from ..core.types import Algorithm
from . import registry, robust
from . import robust_regression as rr

Array = jax.Array


class HeavyOFULState(NamedTuple):
    """State after t rounds: H_t⁻¹ `[d, d]`, θ̂_t `[d]`, the history buffers (the contexts by component
    `[d, N]`, as ``robust_regression.History`` keeps them; r, σ, τ `[N]`) and t."""

    H_inv: Array
    theta: Array
    XT_hist: Array
    r_hist: Array
    sigma_hist: Array
    tau_hist: Array
    t: Array

    @property
    def X_hist(self) -> Array:
        """The history's contexts `[N, d]` (row s is X_s)."""
        return jnp.swapaxes(self.XT_hist, -1, -2)


class HeavyOFULConstants(NamedTuple):
    lam: Array
    delta: Array
    sigma_min: Array
    kappa: Array
    tau0: Array
    c0: Array
    c1: Array
    exponent: Array


def heavy_oful_constants(
    *,
    horizon,
    dim,
    eps,
    S=1.0,
    L=1.0,
    lam=None,
    delta=None,
    sigma_min=None,
    kappa=None,
    tau0=None,
    c0=None,
    c1=None,
) -> HeavyOFULConstants:
    """The constants of Huang et al.'s Algorithm 1 as ``jnp`` scalars (see the module docstring)."""
    T = as_float(horizon)
    d = as_float(dim)
    eps = as_float(eps)
    lam = d / as_float(S) ** 2 if lam is None else as_float(lam)
    delta = 1.0 / T if delta is None else as_float(delta)
    sigma_min = 1.0 / jnp.sqrt(T) if sigma_min is None else as_float(sigma_min)
    e = (1.0 - eps) / (2.0 * (1.0 + eps))
    log_delta = jnp.log(2.0 * T**2 / delta)
    kappa = (
        robust.kappa(dim=d, horizon=T, L=L, lam=lam, sigma_min=sigma_min)
        if kappa is None
        else as_float(kappa)
    )
    if tau0 is None:
        tau0 = jnp.sqrt(2.0 * kappa) * jnp.log(3.0 * T) ** e / log_delta ** (1.0 / (1.0 + eps))
    if c0 is None:
        c0 = 1.0 / jnp.sqrt(23.0 * log_delta)
    if c1 is None:
        c1 = jnp.log(3.0 * T) ** ((1.0 - eps) / (1.0 + eps)) / (48.0 * log_delta ** (2.0 / (1.0 + eps)))
    return HeavyOFULConstants(lam, delta, sigma_min, kappa, as_float(tau0), as_float(c0), as_float(c1), e)


def heavy_oful_radius(t, *, horizon, eps, consts: HeavyOFULConstants, S):
    """β_t = 3√λS + 24 t^e √(2κ)(log 3T)^e (log(2T²/δ))^{ε/(1+ε)}, 0⁰ = 1."""
    T = as_float(horizon)
    eps = as_float(eps)
    e = consts.exponent
    return 3.0 * jnp.sqrt(consts.lam) * as_float(S) + 24.0 * jnp.power(as_float(t), e) * jnp.sqrt(
        2.0 * consts.kappa
    ) * jnp.log(3.0 * T) ** e * jnp.log(2.0 * T**2 / consts.delta) ** (eps / (1.0 + eps))


def heavy_oful(
    horizon: int,
    dim: int,
    *,
    eps: ArrayLike,
    nu: ArrayLike | str,
    S: ArrayLike = 1.0,
    L: ArrayLike = 1.0,
    lam: ArrayLike | None = None,
    delta: ArrayLike | None = None,
    sigma_min: ArrayLike | None = None,
    kappa: ArrayLike | None = None,
    tau0: ArrayLike | None = None,
    c0: ArrayLike | None = None,
    c1: ArrayLike | None = None,
    beta: ArrayLike | None = None,
    beta_scale: ArrayLike = 1.0,
    tol: ArrayLike | None = None,
    max_newton_iters: int = 50,
) -> Algorithm:
    """Heavy-OFUL with the constants of Huang et al. (2023) unless overridden.

    Args:
      horizon: T, rounds per run (static).
      dim: d, the context dimension (static).

      eps: moment order ε ∈ (0, 1].
      nu: ν > 0 used every round, or ``"revealed"`` for the environment's ν_t.
      S: the bound ‖θ*‖ ≤ S, also the estimator's constraint (default 1).
      L: the bound ‖X_t‖ ≤ L (default 1).
      lam: λ (default d/S²).
      delta: δ (default 1/T).
      sigma_min: σ_min (default 1/√T).
      kappa: overrides the derived κ.
      tau0: overrides the derived τ₀.
      c0: overrides the derived c₀.
      c1: overrides the derived c₁.
      beta: a constant radius ≥ 0 replacing β_t.
      beta_scale: multiplies the radius (default 1).
      tol: the refit's stopping tolerance on the projected-Newton step ‖Δ‖₂ (default 1e-10 in float64,
        1e-5 in float32).
      max_newton_iters: the refit's iteration cap (static, default 50).

    Every numeric argument may be a traced scalar. The per-round cost is O(t d²) per Newton iteration.
    """
    horizon = V.check_int("horizon", horizon)
    dim = V.check_int("dim", dim)
    V.check_eps(eps)
    revealed = robust.check_nu(nu)
    for name, value in (("S", S), ("L", L), ("beta_scale", beta_scale)):
        V.check_positive(name, value, required=True)
    for name, optional in (
        ("lam", lam),
        ("sigma_min", sigma_min),
        ("kappa", kappa),
        ("tau0", tau0),
        ("c0", c0),
        ("c1", c1),
        ("tol", tol),
    ):
        V.check_positive(name, optional)
    V.check_nonnegative("beta", beta)
    V.check_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    max_newton_iters = V.check_int("max_newton_iters", max_newton_iters)
    consts = heavy_oful_constants(
        horizon=horizon,
        dim=dim,
        eps=eps,
        S=S,
        L=L,
        lam=lam,
        delta=delta,
        sigma_min=sigma_min,
        kappa=kappa,
        tau0=tau0,
        c0=c0,
        c1=c1,
    )
    nu_const = None if revealed else as_float(nu)
    S_ = as_float(S)

    radius = robust.radius_schedule(
        lambda t: heavy_oful_radius(t, horizon=horizon, eps=eps, consts=consts, S=S),
        beta=beta,
        beta_scale=beta_scale,
    )

    def init() -> HeavyOFULState:
        dtype = float_dtype()
        hist = rr.empty_history(horizon, dim, dtype)
        return HeavyOFULState(
            H_inv=(jnp.eye(dim, dtype=dtype) / consts.lam).astype(dtype),
            theta=jnp.zeros(dim, dtype),
            XT_hist=hist.XT,
            r_hist=hist.r,
            sigma_hist=hist.sigma,
            tau_hist=hist.tau,
            t=jnp.zeros((), jnp.int32),
        )

    def select(state: HeavyOFULState, contexts: Array) -> Array:
        return select_ucb(contexts, state.theta, state.H_inv, radius(state.t).astype(state.theta.dtype))

    def update(state: HeavyOFULState, x: Array, reward: Array, nu_t: Array) -> HeavyOFULState:
        dtype = state.theta.dtype
        t = state.t + 1
        x_norm = ellipsoid_norm(state.H_inv, x)  # ‖X_t‖_{H_{t−1}⁻¹}
        nu_used = as_float(nu_t) if nu_const is None else nu_const
        sigma = robust.adaptive_scale(
            nu_used,
            consts.sigma_min,
            x_norm / consts.c0,
            jnp.sqrt(x_norm) / (2.0 * consts.c1 * consts.kappa) ** 0.25,
        )
        w = robust.weight(x_norm, sigma)
        tau = robust.huber_threshold(consts.tau0, w, jnp.power(as_float(t), consts.exponent))
        hist = rr.append(
            rr.History(state.XT_hist, state.r_hist, state.sigma_hist, state.tau_hist, state.t),
            x,
            clamp_reward(reward, dtype),
            sigma,
            tau,
        )
        fit = rr.refit(state.theta, hist, consts.lam, S_, rr.huber, tol=tol, max_iters=max_newton_iters)
        H_inv = sherman_morrison(state.H_inv, x, (1.0 / sigma**2).astype(dtype))
        return HeavyOFULState(
            H_inv=H_inv,
            theta=keep_finite(fit.theta.astype(dtype), state.theta),
            XT_hist=hist.XT,
            r_hist=hist.r,
            sigma_hist=hist.sigma,
            tau_hist=hist.tau,
            t=t,
        )

    return Algorithm(
        init=init, select=select, update=update, dim=dim, horizon=horizon, uses_revealed_nu=revealed
    )


registry.register(
    registry.AlgorithmSpec(
        name="heavy_oful",
        label="Heavy-OFUL",
        factory=heavy_oful,
        build=lambda p, h: heavy_oful(
            p.horizon, p.dim, eps=p.eps, nu=p.nu, S=p.S, L=p.L, lam=h["lam"], beta_scale=h["beta_scale"]
        ),
        theory=lambda p: {"beta_scale": 1.0, "lam": p.dim / p.S**2},
        grid={
            "beta_scale": (3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2),
            "lam": tuple(10.0 * f for f in registry.RIDGE_FACTORS),
        },
        cost="O(t)",
        knowledge=("eps", "nu", "S", "L"),
        source="Huang, Zhong, Wang & Yang 2023, Algorithm 1",
        color="#DDCC77",
    )
)
