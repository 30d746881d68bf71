"""Linear-algebra pieces shared by the UCB algorithms.

Every function is written for one run (no batch axis) and is jit- and vmap-safe: no Python branching on
values, fixed iteration counts. ``A`` always denotes an inverse Gram matrix V⁻¹ `[d, d]` (symmetric
positive definite).
"""
from __future__ import annotations

import functools

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


#: Up to this dimension the projection's Cholesky factorisations and triangular solves are unrolled
#: into scalar operations, which ``vmap`` turns into long vector operations over the batch (one LAPACK
#: call per matrix is several times slower for d = 10); above it, LAPACK keeps compile time bounded.
UNROLL_MAX_DIM = 16


def _cholesky_unrolled(M):
    """Lower Cholesky factor of ``M`` `[d, d]` as nested lists of scalars (d static and small)."""
    d = M.shape[-1]
    L = [[None] * d for _ in range(d)]
    for j in range(d):
        diag = M[j, j] - sum((L[j][k] * L[j][k] for k in range(j)), 0.0)
        L[j][j] = jnp.sqrt(diag)
        inv = 1.0 / L[j][j]
        for i in range(j + 1, d):
            L[i][j] = (M[i, j] - sum((L[i][k] * L[j][k] for k in range(j)), 0.0)) * inv
    return L


def _forward_unrolled(L, b):
    y = []
    for i in range(len(L)):
        y.append((b[i] - sum((L[i][k] * y[k] for k in range(i)), 0.0)) / L[i][i])
    return y


def _backward_unrolled(L, y):
    d = len(L)
    x = [None] * d
    for i in reversed(range(d)):
        x[i] = (y[i] - sum((L[k][i] * x[k] for k in range(i + 1, d)), 0.0)) / L[i][i]
    return x


def _shifted_cholesky(A):
    """``(factor, forward, backward)`` for I + μA: ``factor(mu)`` returns its lower Cholesky factor L,
    ``forward(L, b)`` solves L y = b and ``backward(L, y)`` solves Lᵀx = y, on `[d]` arrays. Unrolled into
    scalar operations for d ≤ ``UNROLL_MAX_DIM``, LAPACK above."""
    d = A.shape[-1]
    eye = jnp.eye(d, dtype=A.dtype)
    if d <= UNROLL_MAX_DIM:
        def factor(mu):
            return _cholesky_unrolled(eye + mu * A)

        def forward(L, b):
            return jnp.stack(_forward_unrolled(L, [b[i] for i in range(d)]))

        def backward(L, y):
            return jnp.stack(_backward_unrolled(L, [y[i] for i in range(d)]))
    else:
        tri = jax.scipy.linalg.solve_triangular

        def factor(mu):
            return jnp.linalg.cholesky(eye + mu * A)

        def forward(L, b):
            return tri(L, b, lower=True)

        def backward(L, y):
            return tri(L, y, lower=True, trans=1)

    return factor, forward, backward


@functools.partial(jax.jit, static_argnames="num_iters")
def project_ball_in_metric(theta_tilde: Array, A: Array, radius: Array, num_iters: int = 8) -> Array:
    """argmin_{‖θ‖₂ ≤ radius} ‖θ − θ̃‖_V with V = A⁻¹ (the second line of def:theta_OMD2).

    Inside the ball the answer is θ̃. Outside, KKT gives θ(μ) = (V + μI)⁻¹Vθ̃ = (I + μA)⁻¹θ̃ with the
    multiplier μ > 0 solving ‖θ(μ)‖ = radius. g(μ) = 1/‖θ(μ)‖ − 1/radius is increasing and concave on
    μ ≥ 0 (the Moré–Sorensen secular equation), so Newton started left of the root climbs to it
    monotonically, without overshoot. The start μ₀ = (‖θ̃‖/radius − 1)/‖A‖_F is left of the root because
    ‖θ(μ)‖ ≥ ‖θ̃‖/(1 + μ‖A‖₂).

    What an iteration needs is one Cholesky factor L of the well-conditioned I + μA (eigenvalues in
    [1, 1 + μ‖A‖]) and three triangular solves — no eigendecomposition: y = L⁻¹θ̃, θ = L⁻ᵀy, z = L⁻¹θ,
    and since (I + μA)θ = θ̃ gives Aθ = (θ̃ − θ)/μ, d‖θ‖²/dμ = −2θᵀ(I + μA)⁻¹Aθ = −2zᵀ(y − z)/μ. (That
    derivative loses relative accuracy when μ‖A‖ is tiny, which only slows Newton; its root is set by
    ‖θ‖ alone.) The loop runs ``num_iters`` + 1 times and returns θ(μ) of the last iterate, so one loop
    body serves both. Eight iterations reach float64 precision when cond(A) ≤ 10⁴ (the paper's settings
    need four); take more for worse-conditioned V (about twelve at 10⁸). In float32 the answer is as
    accurate as forming I + μA allows (about d·eps·μ‖A‖ relative) and always feasible.
    """
    factor, forward, backward = _shifted_cholesky(A)
    norm_tilde = jnp.linalg.norm(theta_tilde)
    outside = norm_tilde > radius
    mu0 = jnp.maximum(norm_tilde / radius - 1.0, 0.0) / jnp.linalg.norm(A)
    tiny = jnp.finfo(A.dtype).tiny

    def newton(carry, _):
        mu, _ = carry
        L = factor(mu)
        y = forward(L, theta_tilde)
        theta = backward(L, y)
        z = forward(L, theta)
        n2 = jnp.sum(theta * theta)
        dn2 = -2.0 * jnp.sum(z * (y - z)) / jnp.maximum(mu, tiny)
        n = jnp.sqrt(n2)
        g = 1.0 / n - 1.0 / radius
        dg = -0.5 * dn2 / (n2 * n)
        step = jnp.where(dg > 0, g / dg, 0.0)
        return (jnp.maximum(mu - step, 0.0), theta), None

    (_, theta), _ = jax.lax.scan(newton, (mu0, theta_tilde), None, length=num_iters + 1)
    # Feasibility is a hard constraint of the analysis; rounding may leave ‖θ‖ a hair above the radius,
    # so clip radially — a change at the rounding level that keeps ‖θ̂‖ ≤ S exactly.
    theta = theta * jnp.minimum(1.0, radius / jnp.linalg.norm(theta))
    return jnp.where(outside, theta, theta_tilde)
