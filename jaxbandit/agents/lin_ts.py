"""LinTS: Thompson sampling with linear payoffs (Agrawal & Goyal 2013, "Thompson Sampling for Contextual
Bandits with Linear Payoffs", ICML 2013, Algorithm 1).

Before round t the posterior is N(μ̂_t, v²B_t⁻¹) with

    B_t = λI + Σ_{s<t} X_sX_sᵀ,   f_t = Σ_{s<t} r_sX_s,   μ̂_t = B_t⁻¹f_t

(the paper has λ = 1). Round t samples μ̃_t from it and plays argmax_x ⟨x, μ̃_t⟩, ties to the lowest
index. B⁻¹ is kept by Sherman–Morrison (O(d²) a round); f_t as ``b``.

The sample is drawn as μ̃_t = μ̂_t + v·L_t z_t with z_t ~ N(0, I_d) = ``jax.random.normal(key, (d,))``
from the round's select key and L_t the *lower* Cholesky factor of B_t⁻¹ (L_tL_tᵀ = B_t⁻¹), so that
Cov(μ̃_t) = v²B_t⁻¹ and a reference given the same z_t reproduces μ̃_t.

The scale is the paper's (Algorithm 1 and Theorem 1, for R-sub-Gaussian noise)

    v = R √(24/ε · d · ln(1/δ)),   ε ∈ (0, 1), δ ∈ (0, 1),

with defaults δ = 1/T and ε = 1/ln T, the choice that turns Theorem 1's √(T^{1+ε}) into √e·√T (for
T < 3, where 1/ln T ∉ (0, 1), ε = 1/ln 3). ``v`` replaces the formula; v = 0 is greedy ridge regression.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ..core import validation as V
from ..core.batching import lapack
from ..core.dtypes import as_float, float_dtype
from ..core.linalg import (
    UNROLL_MAX_DIM,
    _cholesky_unrolled,
    argmax_lowest,
    clamp_reward,
    dot,
    keep_finite,
    matvec,
    sherman_morrison,
)
from ..core.types import Algorithm
from . import registry

Array = jax.Array


class LinTSState(NamedTuple):
    """State after t rounds: B_t⁻¹ `[d, d]` (``V_inv``), f_t = Σ r_sX_s `[d]`, t (int32 scalar)."""

    V_inv: Array
    b: Array
    t: Array


def lin_ts_scale(dim, *, R, epsilon, delta):
    """v = R√(24/ε · d · ln(1/δ)) (Agrawal & Goyal 2013, Algorithm 1)."""
    return as_float(R) * jnp.sqrt(24.0 / as_float(epsilon) * as_float(dim) * jnp.log(1.0 / as_float(delta)))


def _default_epsilon(horizon: int) -> Array:
    """ε = 1/ln T (1/ln 3 for T < 3)."""
    return 1.0 / jnp.log(as_float(max(horizon, 3)))


def cholesky_times(A: Array, z: Array) -> Array:
    """L z for the lower Cholesky factor L of a symmetric positive definite ``A`` `[d, d]`, ``z`` `[d]`.

    Unrolled into scalar operations for d ≤ ``UNROLL_MAX_DIM`` (batch-invariant under ``vmap``), whose
    floored pivots keep an ``A`` that rounding made slightly indefinite from giving NaN; LAPACK above,
    where such an ``A`` falls back to the factor √diag(A) (floored likewise).
    """
    d = A.shape[-1]
    if d <= UNROLL_MAX_DIM:
        L, _ = _cholesky_unrolled(A)
        return jnp.stack([sum((L[i][k] * z[k] for k in range(1, i + 1)), L[i][0] * z[0]) for i in range(d)])
    L = lapack(jnp.linalg.cholesky, A)
    diagonal = jnp.diag(jnp.sqrt(jnp.maximum(jnp.diagonal(A), jnp.finfo(A.dtype).tiny)))
    return matvec(jnp.where(jnp.all(jnp.isfinite(L)), L, diagonal), z)


def lin_ts(
    horizon: int,
    dim: int,
    *,
    lam: ArrayLike = 1.0,
    v: ArrayLike | None = None,
    R: ArrayLike = 1.0,
    epsilon: ArrayLike | None = None,
    delta: ArrayLike | None = None,
) -> Algorithm:
    """Linear Thompson sampling with the paper's scale v unless ``v`` is given.

    Args:
      horizon: T, rounds per run (static); it only sets the default ε and δ.
      dim: d, the context dimension (static).

      lam: ridge parameter λ > 0 (default 1, the paper's B = I_d).
      v: a constant scale ≥ 0 replacing the formula (0 gives the greedy ridge baseline).
      R: the sub-Gaussian noise scale R > 0 (default 1).
      epsilon: ε ∈ (0, 1) of the formula (default 1/ln T, 1/ln 3 for T < 3).
      delta: δ ∈ (0, 1) of the formula (default 1/T).

    Randomised: ``select`` draws z from its key; ``update`` is deterministic and ignores its key and ν_t.
    Every numeric argument may be a traced scalar.
    """
    horizon = V.check_int("horizon", horizon)
    dim = V.check_int("dim", dim)
    V.check_positive("lam", lam, required=True)
    V.check_nonnegative("v", v)
    V.check_positive("R", R, required=True)
    V.check_range("epsilon", epsilon, 0.0, 1.0, low_open=True, high_open=True)
    V.check_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    lam_ = as_float(lam)
    if v is None:
        eps_ = _default_epsilon(horizon) if epsilon is None else as_float(epsilon)
        delta_ = 1.0 / as_float(horizon) if delta is None else as_float(delta)
        v_ = lin_ts_scale(dim, R=R, epsilon=eps_, delta=delta_)
    else:
        v_ = as_float(v)

    def init() -> LinTSState:
        dtype = float_dtype()
        return LinTSState(
            V_inv=(jnp.eye(dim, dtype=dtype) / lam_).astype(dtype),
            b=jnp.zeros(dim, dtype=dtype),
            t=jnp.zeros((), jnp.int32),
        )

    def select(state: LinTSState, contexts: Array, key: Array) -> Array:
        dtype = state.b.dtype
        mu_hat = matvec(state.V_inv, state.b)
        z = jax.random.normal(key, (dim,), dtype)
        mu_tilde = mu_hat + v_.astype(dtype) * cholesky_times(state.V_inv, z)
        scores = dot(contexts, mu_tilde)
        return argmax_lowest(scores, jnp.max(jnp.abs(scores)))

    def update(state: LinTSState, x: Array, reward: Array, nu: Array, key: Array) -> LinTSState:
        del nu, key  # the posterior update is deterministic and uses r_t alone
        dtype = state.b.dtype
        # Last-resort guards: a round whose arithmetic overflowed leaves B⁻¹ (in Sherman–Morrison) and f
        # as they were.
        V_inv = sherman_morrison(state.V_inv, x, jnp.ones((), dtype))
        b = keep_finite(state.b + clamp_reward(reward, dtype) * x, state.b)
        return LinTSState(V_inv=V_inv, b=b, t=state.t + 1)

    return Algorithm(
        init=init,
        select=select,
        update=update,
        dim=dim,
        horizon=horizon,
        uses_revealed_nu=False,
        randomized=True,
    )


def _theory(p: registry.Problem) -> dict:
    """The paper's v with ε = 1/ln T, δ = 1/T and R = 1, and its λ = 1 (B = I_d)."""
    with jax.ensure_compile_time_eval():
        return {
            "v": lin_ts_scale(
                p.dim, R=1.0, epsilon=_default_epsilon(p.horizon), delta=1.0 / as_float(p.horizon)
            ),
            "lam": 1.0,
        }


registry.register(
    registry.AlgorithmSpec(
        name="lin_ts",
        label="LinTS",
        factory=lin_ts,
        build=lambda p, h: lin_ts(p.horizon, p.dim, v=h["v"], lam=h["lam"]),
        theory=_theory,
        grid={"v": (1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3, 1.0), "lam": registry.RIDGE_FACTORS},
        cost="O(1)",
        knowledge=(),
        source="Agrawal & Goyal 2013, Algorithm 1",
        color="#AA4499",
    )
)
