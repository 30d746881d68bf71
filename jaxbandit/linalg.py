"""Linear-algebra pieces shared by the UCB algorithms.

Every function is written for one run (no batch axis) and is jit- and vmap-safe: no Python branching on
values, fixed iteration counts. ``A`` always denotes an inverse Gram matrix V⁻¹ `[d, d]` (symmetric
positive definite).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

Array = jax.Array


def ellipsoid_norm(A: Array, x: Array) -> Array:
    """‖x‖_A = √(xᵀ A x) for ``x`` `[..., d]` and ``A`` `[d, d]`; returns `[...]`."""
    quad = jnp.einsum("...i,ij,...j->...", x, A, x)
    return jnp.sqrt(jnp.maximum(quad, 0.0))


def sherman_morrison(A: Array, u: Array, weight: Array) -> Array:
    """(A⁻¹ + weight·u uᵀ)⁻¹ from A = V⁻¹ in O(d²) (Sherman–Morrison).

    The result is symmetric whenever ``A`` is: it is ``A − c·v vᵀ`` with the single vector v = A u.
    """
    v = A @ u
    c = weight / (1.0 + weight * jnp.dot(u, v))
    return A - c * jnp.outer(v, v)


TIE_ULPS = 16


def argmax_lowest(scores: Array, scale: Array) -> Array:
    """Lowest index whose score is within ``TIE_ULPS`` ulps of ``scale`` of the maximum; int32.

    Exact ties are common, not rare: in round 1 every unit context has the same bonus β₀/√λ, and float
    rounding alone would otherwise pick the arm, differently in every implementation.
    """
    tol = TIE_ULPS * jnp.finfo(scores.dtype).eps * scale
    return jnp.argmax(scores >= jnp.max(scores) - tol).astype(jnp.int32)


def select_ucb(contexts: Array, theta: Array, A: Array, beta: Array) -> Array:
    """argmax of the UCB scores ⟨x, θ⟩ + β‖x‖_A (eq:arm_selection), ties to the lowest index."""
    mean = contexts @ theta
    bonus = beta * ellipsoid_norm(A, contexts)
    return argmax_lowest(mean + bonus, jnp.max(jnp.abs(mean) + jnp.abs(bonus)))


def project_ball_in_metric(theta_tilde: Array, A: Array, radius: Array, num_iters: int = 30) -> Array:
    """argmin_{‖θ‖₂ ≤ radius} ‖θ − θ̃‖_V with V = A⁻¹ (the second line of def:theta_OMD2).

    Inside the ball the answer is θ̃. Outside, KKT gives θ(μ) = (V + μI)⁻¹Vθ̃ = (I + μA)⁻¹θ̃ with the
    multiplier μ > 0 solving ‖θ(μ)‖ = radius. With A = Q diag(a) Qᵀ and c = Qᵀθ̃,
    ‖θ(μ)‖² = Σ cᵢ²/(1 + μaᵢ)², and g(μ) = 1/‖θ(μ)‖ − 1/radius is increasing and concave, so Newton
    from μ = 0 climbs monotonically to the root without overshoot (the Moré–Sorensen secular
    equation); ``num_iters`` O(d) iterations follow one eigendecomposition.
    """
    a, Q = jnp.linalg.eigh(A)
    a = jnp.maximum(a, 0.0)
    c = Q.T @ theta_tilde
    c2 = c * c
    norm_tilde = jnp.sqrt(jnp.sum(c2))
    outside = norm_tilde > radius

    def newton(mu, _):
        q = 1.0 / (1.0 + mu * a)
        n2 = jnp.sum(c2 * q * q)
        dn2 = -2.0 * jnp.sum(c2 * a * q * q * q)       # d‖θ‖²/dμ
        n = jnp.sqrt(n2)
        g = 1.0 / n - 1.0 / radius
        dg = -0.5 * dn2 / (n2 * n)
        step = jnp.where(dg > 0, g / dg, 0.0)
        return jnp.maximum(mu - step, 0.0), None

    mu, _ = jax.lax.scan(newton, jnp.zeros_like(norm_tilde), None, length=num_iters)
    theta = Q @ (c / (1.0 + mu * a))
    return jnp.where(outside, theta, theta_tilde)
