"""TOFU, truncation for online least squares on the whole history (Shao, Yu, King & Lyu 2018, "Almost
optimal algorithms for linear stochastic bandits with heavy-tailed payoffs", NeurIPS), O(t d²) per round.

Every round re-truncates all past rewards, coordinate by coordinate, in the whitened basis of V_t:

    V_t = λI + Σ_{s≤t} X_sX_sᵀ,   M = V_t^{−1/2} [X_1 … X_t]   `[d, t]`,
    u_i = Σ_{s≤t} M_is · y_s · 1{|y_s M_is| ≤ b_t},   θ̂_t = V_t^{−1/2} u,
    b_t = (v / log(2T/δ))^{1/2} · t^{(1−ε)/(2(1+ε))},
    β_t = 4√d · v^{1/(1+ε)} · (log(2dT/δ))^{ε/(1+ε)} · t^{(1−ε)/(2(1+ε))} + √λ S,

with v = ν^{1+ε} the bound on E|η|^{1+ε}; each round picks argmax ⟨x, θ̂_{t−1}⟩ + β_{t−1}‖x‖_{V_{t−1}⁻¹}
(β_0 = √λS), ties to the lowest index. The paper's text was not available to us: b_t, β_t, λ = 1 and
δ = 0.01 are those of the public code of Xue et al. (2020, reused by Zhong et al. 2021), which divides β
by 5 (``beta_scale=0.2``); that code computes b_t before counting the current round (t − 1 for t; the
same at ε = 1), here t counts it, as the formula reads. V_t^{−1/2} comes from the eigendecomposition of
V_t⁻¹ (kept by Sherman–Morrison); the history lives in fixed buffers (contexts `[d, T]`) of which only
the filled blocks are visited (``robust_regression``), and every sum has a fixed order, so a run is
bitwise the same alone and in a ``vmap`` batch.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ..core import validation as V
from ..core.batching import lapack
from ..core.dtypes import as_float, float_dtype
from ..core.linalg import clamp_reward, matvec, select_ucb, sherman_morrison
from ..core.types import Algorithm
from . import registry
from . import robust_regression as rr

Array = jax.Array


class TOFUState(NamedTuple):
    """State after t rounds: V_t⁻¹ `[d, d]`, θ̂_t `[d]` and the history (rewards y_s in ``hist.r``, σ and
    τ unused; t = ``hist.filled``)."""

    V_inv: Array
    theta: Array
    hist: rr.History


def tofu_radius(t, *, dim, horizon, eps, nu, lam, S, delta):
    """β_t = 4√d ν (log(2dT/δ))^{ε/(1+ε)} t^{(1−ε)/(2(1+ε))} + √λS after t ≥ 1 rounds (ν = v^{1/(1+ε)})."""
    eps = as_float(eps)
    p = 1.0 + eps
    log_term = jnp.log(2.0 * dim * horizon / as_float(delta))
    growth = jnp.power(as_float(t), (1.0 - eps) / (2.0 * p))
    scale = 4.0 * jnp.sqrt(as_float(dim)) * as_float(nu) * jnp.power(log_term, eps / p)
    return scale * growth + jnp.sqrt(as_float(lam)) * as_float(S)


def whitened_truncated_sum(V_inv: Array, hist: rr.History, threshold: Array):
    """(V^{−1/2}, u) with u_i = Σ_s M_is y_s 1{|y_s M_is| ≤ b}, M = V^{−1/2}Xᵀ over the filled rows."""
    w, Q = lapack(jnp.linalg.eigh, V_inv)  # V^{-1} = Q diag(w) Qᵀ, so V^{-1/2} = Q diag(√w) Qᵀ
    B = Q * jnp.sqrt(jnp.maximum(w, 0.0))[None, :]
    R = rr.rounded_dot(Q[:, None, :], B[None, :, :])  # R_ij = Σ_k B_ik Q_jk, fixed order
    R = 0.5 * (R + R.T)
    block = min(rr.BLOCK, hist.r.shape[0])

    def body(i, u):
        XT, y, _, _, mask = rr.block_rows(hist, i, block)
        # [d, block], M_is = (R x_s)_i: the sums over rows run along the contiguous axis (faster)
        M = rr.rounded_dot_components(R.T[:, :, None], XT[:, None, :])
        terms = rr.rounded(M * y[None, :])
        keep = mask[None, :] & (jnp.abs(terms) <= threshold)
        return u + rr.pairwise_sum(jnp.where(keep, terms, jnp.zeros((), terms.dtype)), axis=1)

    u = jax.lax.fori_loop(0, rr.num_blocks(hist, block), body, jnp.zeros(V_inv.shape[0], V_inv.dtype))
    return R, u


def tofu(
    horizon: int,
    dim: int,
    *,
    eps: ArrayLike,
    nu: ArrayLike | str,
    lam: ArrayLike = 1.0,
    S: ArrayLike = 1.0,
    beta: ArrayLike | None = None,
    beta_scale: ArrayLike = 1.0,
    delta: ArrayLike = 0.01,
) -> Algorithm:
    """TOFU (see the module docstring for the equations).

    Args:
      horizon: T, rounds per run (static); it sizes the history and enters b_t and β_t.
      dim: d, the context dimension (static).
      eps: the moment order ε ∈ (0, 1].
      nu: ν > 0 with E|η|^{1+ε} ≤ ν^{1+ε} (a known constant: ``"revealed"`` is refused).
      lam: ridge λ > 0 (default 1).
      S: the bound ‖θ*‖ ≤ S (default 1).
      beta: a constant radius ≥ 0 replacing β_t.
      beta_scale: multiplies the radius (default 1).
      delta: confidence δ ∈ (0, 1) (default 0.01, the public code's).

    Every numeric argument may be a traced scalar. The per-round cost is O(t d²).
    """
    horizon = V.check_int("horizon", horizon)
    dim = V.check_int("dim", dim)
    V.check_eps(eps)
    for name, value in (("nu", nu), ("lam", lam), ("S", S), ("beta_scale", beta_scale)):
        V.check_positive(name, value, required=True)
    V.check_nonnegative("beta", beta)
    V.check_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    lam_ = as_float(lam)
    p = 1.0 + as_float(eps)
    threshold_scale = jnp.sqrt(jnp.power(as_float(nu), p) / jnp.log(2.0 * horizon / as_float(delta)))
    growth_power = (1.0 - as_float(eps)) / (2.0 * p)

    def radius(t):
        if beta is not None:
            return as_float(beta_scale) * as_float(beta)
        r = tofu_radius(t, dim=dim, horizon=horizon, eps=eps, nu=nu, lam=lam_, S=S, delta=delta)
        return as_float(beta_scale) * jnp.where(t > 0, r, jnp.sqrt(lam_) * as_float(S))

    def init() -> TOFUState:
        dtype = float_dtype()
        return TOFUState(
            V_inv=(jnp.eye(dim, dtype=dtype) / lam_).astype(dtype),
            theta=jnp.zeros(dim, dtype),
            hist=rr.empty_history(horizon, dim, dtype),
        )

    def select(state: TOFUState, contexts: Array) -> Array:
        beta_t = radius(state.hist.filled).astype(state.theta.dtype)
        return select_ucb(contexts, state.theta, state.V_inv, beta_t)

    def update(state: TOFUState, x: Array, reward: Array, nu_t: Array) -> TOFUState:
        dtype = state.theta.dtype
        one = jnp.ones((), dtype)
        hist = rr.append(state.hist, x, clamp_reward(reward, dtype), one, one)
        V_inv = sherman_morrison(state.V_inv, x, one)
        threshold = (threshold_scale * jnp.power(as_float(hist.filled), growth_power)).astype(dtype)  # b_t
        R, u = whitened_truncated_sum(V_inv, hist, threshold)
        return TOFUState(V_inv=V_inv, theta=matvec(R, u), hist=hist)

    return Algorithm(
        init=init, select=select, update=update, dim=dim, horizon=horizon, uses_revealed_nu=False
    )


registry.register(
    registry.AlgorithmSpec(
        name="tofu",
        label="TOFU",
        factory=tofu,
        build=lambda p, h: tofu(
            p.horizon, p.dim, eps=p.eps, nu=p.nu, S=p.S, lam=h["lam"], beta_scale=h["beta_scale"]
        ),
        theory=lambda p: {"beta_scale": 1.0, "lam": 1.0},
        grid={"beta_scale": registry.BETA_SCALES, "lam": registry.RIDGE_FACTORS},
        cost="O(t)",
        knowledge=("eps", "nu", "S"),
        source="Shao et al. 2018 (NeurIPS), as in Xue et al. 2020's public code",
        color="#44AA99",
    )
)
