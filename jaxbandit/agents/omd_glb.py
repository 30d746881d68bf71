"""GLB-OMD with the identity link (Zhang, Xu, Zhao & Sugiyama 2025, "Generalized Linear Bandits: Almost
Optimal Regret with One-Pass Update", NeurIPS 2025; the seed paper's Table 1 row ``zhang2025generalized``).

One online-mirror-descent step per round on the loss ℓ_t(θ) = (r_t − ⟨X_t, θ⟩)²/(2σ²) (their Sec. 3.1
with m(z) = z²/2 and g(τ) = σ²; the Hessian ∇²ℓ_t = X_tX_tᵀ/σ² is the same at every θ), in the two-step
form of their App. A.3, eqs. (28a)–(28b):

    H̃_t = H_t + η∇²ℓ_t,   θ'_{t+1} = θ_t − η H̃_t⁻¹∇ℓ_t(θ_t),
    θ_{t+1} = argmin_{‖θ‖ ≤ S} ‖θ − θ'_{t+1}‖_{H̃_t},   H_{t+1} = H_t + ∇²ℓ_t(θ_{t+1}),

from θ_1 = 0, H_1 = λI; both inverses by Sherman–Morrison, the projection as CR-Hvt-UCB's
(``linalg.project_ball_in_metric``). The arm is argmax ⟨x, θ_t⟩ + β_t‖x‖_{H_t⁻¹} (their eq. (6)) with

    β_t = √(4λS² + 2η log(1/δ) + d(6η² + η) log(1 + tL²/(σ²λ)))     (Thm. 1, L_μ = 1 for the identity link)

in round t (1-based); they assume ‖X_t‖ ≤ L = 1, and L² enters as in the usual log-det bound. With the
identity link their self-concordance constant is R = 0, so their step size η = 1 + RS is 1 (then H̃_t =
H_{t+1} and the step is recursive least squares followed by the projection), and their λ = max{14dηR²,
6ηRSL_μ/g(τ)} is 0, which their Thm. 1 allows to be any λ > 0: the default λ = d is what their
experiments use (App. E.1). No official code exists and the public text of the paper lost its display
equations; β_t above is written from the terms of their proof (4λS² from Lemma 4, 2η log(1/δ) from Lemma
5, d(6η²+η) log(1 + t/(λg(τ))) from Lemma 6), whose constant we could not check against the printed
display: ``beta_scale`` scales it and ``beta`` replaces it. The noise enters only through σ (their exact
exponential-family rewards; the confidence set holds as well for σ-sub-Gaussian noise).
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
from . import registry

Array = jax.Array


class OMDGLBState(NamedTuple):
    """State after t rounds: θ_{t+1} `[d]`, H_{t+1}⁻¹ `[d, d]`, t (int32 scalar)."""

    theta: Array
    H_inv: Array
    t: Array


def omd_glb_radius(t, *, dim, lam, S, L, eta, sigma, delta):
    """β_t = √(4λS² + 2η log(1/δ) + d(6η²+η) log(1 + tL²/(σ²λ))) for round t (1-based)."""
    lam, eta = as_float(lam), as_float(eta)
    growth = as_float(t) * as_float(L) ** 2 / (as_float(sigma) ** 2 * lam)
    return jnp.sqrt(
        4.0 * lam * as_float(S) ** 2
        + 2.0 * eta * jnp.log(1.0 / as_float(delta))
        + as_float(dim) * (6.0 * eta**2 + eta) * jnp.log1p(growth)
    )


def omd_glb(
    horizon: int,
    dim: int,
    *,
    lam: ArrayLike | None = None,
    eta: ArrayLike = 1.0,
    sigma: ArrayLike = 1.0,
    S: ArrayLike = 1.0,
    L: ArrayLike = 1.0,
    beta: ArrayLike | None = None,
    beta_scale: ArrayLike = 1.0,
    delta: ArrayLike | None = None,
    newton_iters: int = 8,
) -> Algorithm:
    """GLB-OMD with the identity link (see the module docstring for the equations).

    Args:
      horizon: T, rounds per run (static); it only sets the default δ.
      dim: d, the context dimension (static).

      lam: λ > 0 of H_1 = λI (default d, the authors' experiments).
      eta: the OMD step size η > 0 (default 1 = 1 + RS with R = 0 for the identity link).
      sigma: the loss scale σ > 0, g(τ) = σ² (default 1).
      S: the radius of the ball θ is projected onto (‖θ*‖ ≤ S).
      L: the context bound ‖X_t‖ ≤ L.
      beta: a constant radius ≥ 0 replacing β_t.
      beta_scale: multiplies the radius (default 1).
      delta: confidence δ ∈ (0, 1) (default 1/T).
      newton_iters: the projection's cap on Newton iterations (static).

    Every numeric argument but ``newton_iters`` may be a traced scalar.
    """
    horizon = V.check_int("horizon", horizon)
    dim = V.check_int("dim", dim)
    V.check_positive("lam", lam)
    for name, value in (("eta", eta), ("sigma", sigma), ("S", S), ("L", L), ("beta_scale", beta_scale)):
        V.check_positive(name, value, required=True)
    V.check_nonnegative("beta", beta)
    V.check_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    newton_iters = V.check_int("newton_iters", newton_iters)
    lam_ = as_float(dim if lam is None else lam)
    eta_ = as_float(eta)
    inv_var = 1.0 / as_float(sigma) ** 2
    S_ = as_float(S)
    delta_ = 1.0 / as_float(horizon) if delta is None else as_float(delta)

    def radius(t):
        if beta is not None:
            return as_float(beta_scale) * as_float(beta)
        r = omd_glb_radius(t, dim=dim, lam=lam_, S=S_, L=L, eta=eta_, sigma=sigma, delta=delta_)
        return as_float(beta_scale) * r

    def init() -> OMDGLBState:
        dtype = float_dtype()
        return OMDGLBState(
            theta=jnp.zeros(dim, dtype),
            H_inv=(jnp.eye(dim, dtype=dtype) / lam_).astype(dtype),
            t=jnp.zeros((), jnp.int32),
        )

    def select(state: OMDGLBState, contexts: Array) -> Array:
        beta_t = radius(state.t + 1).astype(state.theta.dtype)  # round t + 1 (1-based)
        return select_ucb(contexts, state.theta, state.H_inv, beta_t)

    def update(state: OMDGLBState, x: Array, reward: Array, nu: Array) -> OMDGLBState:
        dtype = state.theta.dtype
        v = matvec(state.H_inv, x)  # H_t⁻¹X_t
        q = jnp.maximum(dot(x, v), 0.0)
        # H̃_t⁻¹ and H̃_t⁻¹X_t (28a); H_{t+1}⁻¹ from the same v and q
        H_tilde_inv, H_tilde_inv_x = sherman_morrison_given(state.H_inv, v, q, eta_ * inv_var)
        H_inv, _ = sherman_morrison_given(state.H_inv, v, q, inv_var)
        residual = clamp_reward(reward, dtype) - dot(x, state.theta)  # −σ²∇ℓ_t(θ_t) = residual·X_t
        theta_prime = state.theta + H_tilde_inv_x * (eta_ * inv_var * residual)
        theta = project_ball_in_metric(theta_prime, H_tilde_inv, S_, newton_iters)  # (28b)
        return OMDGLBState(theta=keep_finite(theta, state.theta), H_inv=H_inv, t=state.t + 1)

    return Algorithm(
        init=init, select=select, update=update, dim=dim, horizon=horizon, uses_revealed_nu=False
    )


registry.register(
    registry.AlgorithmSpec(
        name="omd_glb",
        label="GLB-OMD",
        factory=omd_glb,
        build=lambda p, h: omd_glb(p.horizon, p.dim, S=p.S, L=p.L, lam=h["lam"], beta_scale=h["beta_scale"]),
        theory=lambda p: {"beta_scale": 1.0, "lam": float(p.dim)},
        grid={"beta_scale": registry.BETA_SCALES, "lam": tuple(10.0 * f for f in registry.RIDGE_FACTORS)},
        cost="O(1)",
        knowledge=("S", "L"),
        source="Zhang, Xu, Zhao & Sugiyama 2025 (NeurIPS), Algorithm 1, identity link",
        color="#882255",
    )
)
