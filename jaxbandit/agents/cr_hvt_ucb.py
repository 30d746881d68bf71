"""CR-Hvt-UCB (Algorithm 1 of Tani & Futami) and Hvt-UCB (Wang et al. 2025), its C = 0 case.

Each round t (1-based): choose X_t by the UCB rule with β_{t−1} (eq:arm_selection); observe r_t and ν_t;
set the scale σ_t (eq:sigma_def), the weight w_t and threshold τ_t (eq:auxi_def, eq:tau_def), all from
V_{t−1}; update V_t = V_{t−1} + X_tX_tᵀ/(ασ_t²) (def:regular_func) by Sherman–Morrison on V⁻¹; take one
OMD step θ̃_{t+1} = θ̂_t − V_t⁻¹∇ℓ_t(θ̂_t) on the Huber loss of z_t = (r_t − ⟨X_t, θ̂_t⟩)/σ_t
(def:huber_loss2) and project onto {‖θ‖ ≤ S} in the V_t-norm (def:theta_OMD2); then β_t (def:beta).

Constants (Algorithm 1; theory defaults of thm:regret_instance):

- κ = d log(1 + L²T/(σ_min² λ α d)) — Algorithm 1's form; lem:conf_interval writes 4σ_min²λd in the
  denominator instead, and we keep Algorithm 1's.
- τ₀ = √(2κ)(log 3T)^e / (log(2T²/δ))^{1/(1+ε)} with e = (1−ε)/(2(1+ε))   (eq:auxi_def)
- β_t = beta_scale·(409 log(2T²/δ) τ₀ t^e + √(λ(2+4S²))), 0⁰ = 1   (def:beta)
- λ = d, σ_min = 1/√T, δ = 1/(8T), α = 8.

Knowledge settings (Section 4.2): ``corruption`` is C when known or an upper bound C̄ (col:regret_c);
``nu`` is a constant ν (known and constant, or an upper bound when ν_t is unknown: col:regret_nu,
col:regret_nu_c), or ``"revealed"`` to use the ν_t the environment reveals each round (the known-ν_t
setting of thm:regret_instance, e.g. heteroscedastic noise).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ..core import validation as V
from ..core.dtypes import as_float, float_dtype
from ..core.linalg import (
    clamp_reward,
    dot,
    keep_finite,
    matvec,
    project_ball_in_metric,
    select_ucb,
    sherman_morrison_given,
)
from ..core.types import Algorithm
from . import registry, robust

Array = jax.Array


class CRHvtUCBState(NamedTuple):
    """State after round t: V_t⁻¹ `[d, d]`, θ̂_{t+1} `[d]`, β_t (scalar), t (int32 scalar)."""

    V_inv: Array
    theta: Array
    beta: Array
    t: Array


class CRHvtUCBConstants(NamedTuple):
    """The derived constants of Algorithm 1's input line (scalars, possibly traced)."""

    lam: Array
    alpha: Array
    delta: Array
    sigma_min: Array
    kappa: Array
    tau0: Array
    exponent: Array  # e = (1 − ε)/(2(1 + ε))
    log_delta: Array  # log(2T²/δ)


def theory_constants(
    *, horizon, dim, eps, S=1.0, L=1.0, lam=None, alpha=8.0, delta=None, sigma_min=None, kappa=None, tau0=None
) -> CRHvtUCBConstants:
    """κ, τ₀ and the theory defaults of Algorithm 1 as ``jnp`` scalars; any may be overridden."""
    T = as_float(horizon)
    d = as_float(dim)
    eps = as_float(eps)
    lam = d if lam is None else as_float(lam)
    alpha = as_float(alpha)
    delta = 1.0 / (8.0 * T) if delta is None else as_float(delta)
    sigma_min = 1.0 / jnp.sqrt(T) if sigma_min is None else as_float(sigma_min)
    exponent = (1.0 - eps) / (2.0 * (1.0 + eps))
    if kappa is None:
        kappa = robust.kappa(dim=d, horizon=T, L=L, lam=lam, sigma_min=sigma_min, alpha=alpha)
    if tau0 is None:
        tau0 = (
            jnp.sqrt(2.0 * kappa)
            * jnp.log(3.0 * T) ** exponent
            / jnp.log(2.0 * T**2 / delta) ** (1.0 / (1.0 + eps))
        )
    return CRHvtUCBConstants(
        lam, alpha, delta, sigma_min, as_float(kappa), as_float(tau0), exponent, jnp.log(2.0 * T**2 / delta)
    )


def theory_radius(t, *, consts: CRHvtUCBConstants, S):
    """β_t of def:beta before ``beta_scale``: 409 log(2T²/δ) τ₀ t^e + √(λ(2 + 4S²)), 0⁰ = 1."""
    # log(2T²/δ) comes precomputed: computed here, inside a jitted program, XLA would constant-fold it
    # with the host's libm, whose last bit can differ from the compiled log an eager call uses.
    # The constant factors are one opaque value, so that XLA cannot regroup the product with the
    # round's t^e differently in a vmap batch than in a run alone (see robust.opaque).
    growth = robust.opaque(409.0 * consts.log_delta * consts.tau0) * jnp.power(as_float(t), consts.exponent)
    return growth + jnp.sqrt(consts.lam * (2.0 + 4.0 * as_float(S) ** 2))


def _validate(
    horizon,
    dim,
    eps,
    nu,
    corruption,
    S,
    L,
    lam,
    alpha,
    delta,
    sigma_min,
    beta_scale,
    beta,
    kappa,
    tau0,
    newton_iters,
):
    horizon = V.check_int("horizon", horizon)
    dim = V.check_int("dim", dim)
    V.check_eps(eps)
    robust.check_nu(nu)
    V.check_nonnegative(
        "corruption", corruption, required=True, why="the corruption level C, or an upper bound on it"
    )
    for name, value in (("S", S), ("L", L), ("alpha", alpha), ("beta_scale", beta_scale)):
        V.check_positive(name, value, required=True)
    for name, value in (
        ("lam", lam),
        ("sigma_min", sigma_min),
        ("beta", beta),
        ("kappa", kappa),
        ("tau0", tau0),
    ):
        V.check_positive(name, value)
    V.check_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    newton_iters = V.check_int("newton_iters", newton_iters)
    return horizon, dim, newton_iters


def cr_hvt_ucb(
    horizon: int,
    dim: int,
    *,
    eps: ArrayLike,
    nu: ArrayLike | str,
    corruption: ArrayLike,
    S: ArrayLike = 1.0,
    L: ArrayLike = 1.0,
    lam: ArrayLike | None = None,
    alpha: ArrayLike = 8.0,
    delta: ArrayLike | None = None,
    sigma_min: ArrayLike | None = None,
    beta_scale: ArrayLike = 1.0,
    beta: ArrayLike | None = None,
    kappa: ArrayLike | None = None,
    tau0: ArrayLike | None = None,
    newton_iters: int = 8,
) -> Algorithm:
    """CR-Hvt-UCB, Algorithm 1, with the theory constants unless overridden.

    Args:
      horizon: T, rounds per run (static).
      dim: d, the context dimension (static).
      eps: the moment order ε ∈ (0, 1] (Assumption ass:noise).
      nu: ν > 0 used in σ_t every round, or ``"revealed"`` to use the environment's ν_t.
      corruption: C (known) or an upper bound C̄ ≥ 0 (col:regret_c).
      S: the norm bound ‖θ*‖ ≤ S (Assumption ass:norm).
      L: the norm bound ‖X_t‖ ≤ L on contexts (Assumption ass:norm).
      lam: λ (default d).
      alpha: α (default 8).
      delta: δ (default 1/(8T)).
      sigma_min: σ_min (default 1/√T).
      beta_scale: multiplies β_t everywhere it appears (UCB bonus and σ_t).
      beta: a constant radius replacing def:beta (still multiplied by ``beta_scale``).
      kappa: overrides the derived κ.
      tau0: overrides the derived τ₀.
      newton_iters: the projection's cap on Newton iterations (static; each run stops on its own once
        converged, after two or three in the paper's settings).

    Every numeric argument may be a traced scalar (a ``vmap`` axis of a sweep).
    """
    horizon, dim, newton_iters = _validate(
        horizon,
        dim,
        eps,
        nu,
        corruption,
        S,
        L,
        lam,
        alpha,
        delta,
        sigma_min,
        beta_scale,
        beta,
        kappa,
        tau0,
        newton_iters,
    )
    consts = theory_constants(
        horizon=horizon,
        dim=dim,
        eps=eps,
        S=S,
        L=L,
        lam=lam,
        alpha=alpha,
        delta=delta,
        sigma_min=sigma_min,
        kappa=kappa,
        tau0=tau0,
    )
    uses_revealed = isinstance(nu, str)
    nu_const = None if uses_revealed else as_float(nu)
    C = as_float(corruption)
    S_ = as_float(S)

    radius = robust.radius_schedule(
        lambda t: theory_radius(t, consts=consts, S=S), beta=beta, beta_scale=beta_scale
    )

    def init() -> CRHvtUCBState:
        dtype = float_dtype()
        return CRHvtUCBState(
            V_inv=jnp.eye(dim, dtype=dtype) / consts.lam,
            theta=jnp.zeros(dim, dtype=dtype),
            beta=radius(0).astype(dtype),
            t=jnp.zeros((), jnp.int32),
        )

    def select(state: CRHvtUCBState, contexts: Array) -> Array:
        return select_ucb(contexts, state.theta, state.V_inv, state.beta)

    def update(state: CRHvtUCBState, x: Array, reward: Array, nu_t: Array) -> CRHvtUCBState:
        t = state.t + 1
        t_pow = jnp.power(as_float(t), consts.exponent)
        v = matvec(state.V_inv, x)  # V_{t−1}⁻¹ X_t
        q = jnp.maximum(dot(x, v), 0.0)
        x_norm = jnp.sqrt(q)  # ‖X_t‖_{V_{t−1}⁻¹}
        nu_used = as_float(nu_t) if nu_const is None else nu_const
        sqrt_alpha = jnp.sqrt(consts.alpha)
        dtype = state.theta.dtype
        # Constant factors grouped into one opaque value, and β_{t−1} multiplied by a reciprocal: the
        # same operations in a run alone and in a vmap batch (see robust.opaque).
        two_over = 2.0 / (robust.opaque(consts.tau0 * sqrt_alpha) * t_pow)
        sigma = robust.adaptive_scale(  # eq:sigma_def
            nu_used,
            consts.sigma_min,
            jnp.sqrt(state.beta * two_over) * x_norm,
            robust.opaque(jnp.sqrt(C) * consts.kappa**-0.25) * jnp.sqrt(x_norm),
            alpha=consts.alpha,
        )
        w = robust.weight(x_norm, sigma, sqrt_alpha)  # eq:auxi_def
        tau = robust.huber_threshold(consts.tau0, w, t_pow)  # eq:tau_def
        # V_t⁻¹ by Sherman–Morrison (an update that could overflow is not applied), and V_t⁻¹X_t from the
        # same v
        V_inv, V_inv_x = sherman_morrison_given(state.V_inv, v, q, 1.0 / (consts.alpha * sigma**2))
        z = (clamp_reward(reward, dtype) - dot(x, state.theta)) / sigma
        # θ̃ = θ̂ − V_t⁻¹∇ℓ_t(θ̂) with ∇ℓ_t(θ̂) = −clip(z, ±τ)·X_t/σ_t (def:huber_gra)
        theta_tilde = state.theta + V_inv_x * (jnp.clip(z, -tau, tau) / sigma)
        theta = project_ball_in_metric(theta_tilde, V_inv, S_, newton_iters)
        # Last-resort guard: a round whose arithmetic overflowed (only reachable with extreme input, see
        # tests/test_numerics.py) leaves θ̂ as it was instead of making it inf/NaN.
        theta = keep_finite(theta, state.theta)
        return CRHvtUCBState(V_inv=V_inv, theta=theta, beta=radius(t).astype(state.beta.dtype), t=t)

    return Algorithm(
        init=init, select=select, update=update, dim=dim, horizon=horizon, uses_revealed_nu=uses_revealed
    )


def hvt_ucb(horizon: int, dim: int, *, eps: ArrayLike, nu: ArrayLike | str, **kwargs) -> Algorithm:
    """Hvt-UCB of Wang et al. (2025): CR-Hvt-UCB with C = 0, where σ_t loses its corruption term."""
    if "corruption" in kwargs:
        raise ValueError("hvt_ucb takes no corruption: it is cr_hvt_ucb with corruption=0")
    return cr_hvt_ucb(horizon, dim, eps=eps, nu=nu, corruption=0.0, **kwargs)


_UCB_SCALES = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1.0)
_ALPHAS = (0.5, 2.0, 8.0, 32.0, 128.0)

registry.register(
    registry.AlgorithmSpec(
        name="cr_hvt_ucb",
        label="CR-Hvt-UCB",
        factory=cr_hvt_ucb,
        build=lambda p, h: cr_hvt_ucb(
            p.horizon,
            p.dim,
            eps=p.eps,
            nu=p.nu,
            corruption=p.corruption,
            S=p.S,
            L=p.L,
            beta_scale=h["beta_scale"],
            alpha=h["alpha"],
        ),
        theory=lambda p: {"beta_scale": 1.0, "alpha": 8.0},
        grid={"beta_scale": _UCB_SCALES, "alpha": _ALPHAS},
        cost="O(1)",
        knowledge=("eps", "nu", "corruption", "S", "L"),
        source="Tani & Futami, Algorithm 1 (the seed paper)",
        color="#332288",
    )
)

registry.register(
    registry.AlgorithmSpec(
        name="hvt_ucb",
        label="Hvt-UCB",
        factory=hvt_ucb,
        build=lambda p, h: hvt_ucb(
            p.horizon, p.dim, eps=p.eps, nu=p.nu, S=p.S, L=p.L, beta_scale=h["beta_scale"], alpha=h["alpha"]
        ),
        theory=lambda p: {"beta_scale": 1.0, "alpha": 8.0},
        grid={"beta_scale": _UCB_SCALES, "alpha": _ALPHAS},
        cost="O(1)",
        knowledge=("eps", "nu", "S", "L"),
        source="Wang et al. 2025 (CR-Hvt-UCB with C = 0)",
        color="#88CCEE",
    )
)
