"""Adaptive (pseudo-)Huber regression over all past rounds, solved to a tolerance under ``jit``.

Heavy-OFUL (Huang et al. 2023) and GAdaOFUL (Yu et al.) refit, every round,

    θ̂ = argmin_{‖θ‖₂ ≤ S}  (reg/2)‖θ‖² + Σ_{s ≤ n} ρ_{τ_s}((r_s − ⟨X_s, θ⟩)/σ_s)

over the whole history, with ρ the Huber loss (Heavy-OFUL) or the pseudo-Huber loss (GAdaOFUL). The
objective is reg-strongly convex, so the minimiser is unique.

The history lives in fixed buffers, N = the horizon rounded up to a multiple of ``BLOCK``, filled up
to ``filled``; the contexts are stored by component, `[d, N]`, so that a block's rows of one component
are contiguous (see :class:`History`). Sums over it run block by block up to the last filled block only (a
``fori_loop`` with a traced trip count), so a refit at round t costs O(t d²) per Newton iteration: the
per-round cost grows with t, as it does for these estimators in the papers.

Solver: projected Newton with a backtracking Armijo line search (the proximal Newton method). At θ, with
gradient g and (generalised) Hessian H of the objective, the quadratic model is minimised exactly over
the ball: θ̄ = argmin_{‖θ'‖≤S} ‖θ' − (θ − H⁻¹g)‖_H — the Newton point θ − H⁻¹g itself (a Cholesky
solve) when it lies in the ball, else its projection (:func:`project_ball_eig`, on an eigendecomposition
of H) — a descent direction Δ = θ̄ − θ. It stops when
‖Δ‖₂ ≤ ``tol`` and returns θ̄ (the full step). Otherwise it tries θ + sΔ for s = 1, ½, …, 2^{1−LINE_SEARCH}
in turn, one pass over the history each, and moves to the first with sufficient (Armijo) decrease; a
pass returns the value, gradient and Hessian together, so the pass that accepts a step also gives the
next Newton direction — near the solution, where s = 1 is accepted, a Newton iteration is one pass. It
also stops when no step decreases the objective beyond rounding, or after ``max_iters`` accepted steps.
Convergence is quadratic (pseudo-Huber, smooth) or finite once the clipped set settles (Huber, piecewise
quadratic), so the returned θ is typically far closer than ``tol`` to the exact minimiser (about 1e-15
against a SciPy solve in the tests).

Warm starts across rounds (:func:`solve`, used by GAdaOFUL): the objective is a sum of per-round terms
whose σ_s, τ_s never change once appended, so value, gradient and Hessian at a point θₑ over the history
of t rounds are those over t − 1 rounds plus round t's term (:func:`add_row`, O(d²)). A :class:`Point`
carried from the previous refit (the last point where it evaluated the objective) therefore starts the
next refit without a pass over the history: a refit whose first Newton step is accepted costs one pass.
The solution and the stopping rule are the same as from a cold start; only the work is saved.

Batch invariance: a run's refit is bitwise the same alone (jitted) and as one lane of any ``vmap``
batch, on the CPU, for d ≤ ``linalg.DOT_UNROLL_MAX_DIM``. Three things XLA does differently in a batch
are avoided:

- dots and reductions, whose summation order and vectorisation XLA picks by the batched shapes: sums
  over d are ``linalg.dot``'s fixed order, and a block of history rows is summed by
  :func:`pairwise_sum`, a fixed tree of elementwise adds;
- fused multiply–adds, which LLVM forms or not depending on how the program around them was fused:
  every product that is summed passes through :func:`rounded`;
- rewrites of batched values against a scalar shared by the batch (x/s → x·(1/s), (c·x)·s → x·(c·s)):
  the shared ball radius enters by an explicit reciprocal, and no constant·x·shared-scalar chain is
  formed.

``jnp.linalg.eigh`` and the Newton step's Cholesky solve (``linalg.spd_solve``) are LAPACK calls, one per
matrix alone and in a batch, bitwise the same.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..core import batching, linalg

Array = jax.Array

BLOCK = 256  #: rows of history summed per block (256–512 measured fastest on CPU)
#: A block's rows are summed in this many pieces (a power of two): see :func:`value_grad_hess`. Measured
#: fastest of 1–64 on a 2-core CPU (docs/performance.md, *History sums*); the sums are the same for any.
PIECES = 16
LINE_SEARCH = 12  #: step sizes tried per Newton direction: 1, 1/2, ..., 2^-11
ARMIJO = 1e-4  #: sufficient-decrease constant


class History(NamedTuple):
    """Past rounds: the contexts by component XT `[d, N]` (column s is X_s), r `[N]`, σ `[N]`, τ `[N]` and
    the number of rows filled (int32).

    Stored transposed because every sum over the history runs along the rows: the per-row terms of a
    block (:func:`value_grad_hess`) then read each component's rows as one contiguous vector, where from
    `[N, d]` XLA's CPU code gathered them at stride d, one scalar at a time (a pass 2.3–3× slower, the
    same bits; docs/performance.md, *History sums*)."""

    XT: Array
    r: Array
    sigma: Array
    tau: Array
    filled: Array

    @property
    def X(self) -> Array:
        """The contexts `[N, d]` (row s is X_s), a view of XT."""
        return jnp.swapaxes(self.XT, -1, -2)


class Point(NamedTuple):
    """A point θ `[d]` with the objective's value, gradient `[d]` and Hessian `[d, d]` there, over the
    history it was evaluated on (:func:`evaluate`, :func:`initial_point`, :func:`add_row`)."""

    theta: Array
    value: Array
    grad: Array
    hess: Array


class RefitResult(NamedTuple):
    """The refit θ̂ `[d]`, Newton directions computed, the last step norm ‖Δ‖₂, passes over the
    history, and the last point where the objective was evaluated (θ̂ is within ``step`` of it): the
    warm start of the next refit once the next round is added with :func:`add_row`."""

    theta: Array
    iters: Array
    step: Array
    passes: Array
    point: Point


def buffer_rows(horizon: int) -> int:
    """N: the horizon rounded up to a multiple of the block size."""
    block = min(BLOCK, horizon)
    return -(-horizon // block) * block


def empty_history(horizon: int, dim: int, dtype) -> History:
    """Buffers for ``horizon`` rounds; unused rows hold X = 0, r = 0, σ = τ = 1 (they add nothing)."""
    n = buffer_rows(horizon)
    return History(
        XT=jnp.zeros((dim, n), dtype),
        r=jnp.zeros((n,), dtype),
        sigma=jnp.ones((n,), dtype),
        tau=jnp.ones((n,), dtype),
        filled=jnp.zeros((), jnp.int32),
    )


def append(hist: History, x, r, sigma, tau) -> History:
    """The history with (x, r, σ, τ) written at row ``filled`` (x as column ``filled`` of XT)."""
    i = hist.filled
    dtype = hist.r.dtype
    return History(
        XT=hist.XT.at[:, i].set(x.astype(dtype)),
        r=hist.r.at[i].set(jnp.asarray(r, dtype)),
        sigma=hist.sigma.at[i].set(jnp.asarray(sigma, dtype)),
        tau=hist.tau.at[i].set(jnp.asarray(tau, dtype)),
        filled=i + 1,
    )


# A loss maps (z, τ) to (ρ_τ(z), ρ'_τ(z), ρ''_τ(z)), elementwise.
Loss = Callable[[Array, Array], tuple]


def huber(z: Array, tau: Array):
    """Huber loss f_τ(z) = z²/2 for |z| ≤ τ, τ|z| − τ²/2 beyond; f' = clip(z, ±τ), f'' = 1{|z| ≤ τ}."""
    inside = jnp.abs(z) <= tau
    value = jnp.where(inside, 0.5 * z * z, tau * jnp.abs(z) - 0.5 * tau * tau)
    return value, jnp.clip(z, -tau, tau), inside.astype(z.dtype)


def pseudo_huber(z: Array, tau: Array):
    """Pseudo-Huber φ_τ(z) = τ²(√(1 + (z/τ)²) − 1), φ' = τz/√(τ² + z²), φ'' = τ³/(τ² + z²)^{3/2}.

    The value is computed as z²/(√(1 + u²) + 1), u = z/τ, which has no cancellation for small z. For a
    residual so large that u² or z² overflows (a heavy-tailed or adversarial reward near the clamp),
    √(1 + u²) is |u| to working precision and the value is |z|·(|z|/(|u| + 1)): finite, with the
    derivatives φ' = τ·sign(z), φ'' = 0 of the linear tail, instead of inf/inf.
    """
    u = z / tau
    root = jnp.where(jnp.abs(u) > _HUGE, jnp.abs(u), jnp.sqrt(1.0 + u * u))
    value = jnp.where(jnp.isfinite(z * z), z * z / (root + 1.0), jnp.abs(z) * (jnp.abs(z) / (root + 1.0)))
    return value, z / root, 1.0 / (root * root * root)


_HUGE = 2.0**60  #: beyond it, 1 + u² rounds to u² in float32 and float64, and u² may overflow


def num_blocks(hist: History, block: int):
    """The number of blocks of ``block`` rows that hold filled rows."""
    return (hist.filled + block - 1) // block


def block_rows(hist: History, i, block: int):
    """Block ``i`` of the buffers — its contexts by component `[d, block]`, r, σ, τ `[block]` — and the
    mask of its filled rows."""
    start = i * block
    sl = lambda a: jax.lax.dynamic_slice_in_dim(a, start, block, axis=a.ndim - 1)
    mask = (start + jnp.arange(block)) < hist.filled
    return sl(hist.XT), sl(hist.r), sl(hist.sigma), sl(hist.tau), mask


def rounded(x: Array) -> Array:
    """``x`` (NaN stays NaN), in a form no later add can fuse with the product that made it.

    XLA's CPU backend lets LLVM contract a product and the add or subtract that consumes it into one
    fused multiply–add when the product has no other use, and whether it has depends on how the program
    around it was compiled, which differs between a run alone and a ``vmap`` batch. Seen here: XLA
    compiles a small ``while`` loop (the projection's Newton iterations) as one LLVM function; alone its
    code is straight-line scalar code, where LLVM merges the identical products that several fusions
    recompute (several uses: no contraction), while in a batch every fusion is a loop of its own (one
    use: contracted). Σ c_i²q_i² then rounded differently, and μ, θ̂ and every later round with it. A
    select on ``x == x`` is not a product, so an add that consumes it is a plain add in every program
    (``jax.lax.optimization_barrier`` would not do: XLA removes it before fusion)."""
    return jnp.where(x == x, x, x + x)


def rounded_dot(a: Array, b: Array) -> Array:
    """Σ_i a[..., i]·b[..., i]: ``linalg.dot``'s sum in index order, of products rounded first (see
    :func:`rounded`; multiplying them by 1 is exact, so what is summed is exactly the products)."""
    p = rounded(a * b)
    return linalg.dot(p, jnp.ones_like(p))


def rounded_dot_components(a_t: Array, b_t: Array) -> Array:
    """:func:`rounded_dot` over the *leading* axis (vectors held components first, `[d, ...]`): the same
    products and the same sum, without moving the components to the back and then to the front again
    (XLA materialised that transposed product array for every block of the history)."""
    p = rounded(a_t * b_t)
    return linalg.dot_components(p, jnp.ones_like(p))


def rounded_matvec(A: Array, x: Array) -> Array:
    """A x for ``A`` `[m, d]` and ``x`` `[d]`: row by row :func:`rounded_dot`."""
    return rounded_dot(A, x[None, :])


def _norm(x: Array) -> Array:
    """‖x‖₂ as √(:func:`rounded_dot`(x, x))."""
    return jnp.sqrt(rounded_dot(x, x))


def pairwise_sum(x: Array, axis: int = 0) -> Array:
    """Σ over ``axis`` of ``x`` (its length n static), as a balanced tree of elementwise adds: the first
    half plus the second half, level by level (an odd length padded with zeros at the end, which add
    exactly nothing). The summation order is fixed by n alone, so a run rounds the same alone and in any
    ``vmap`` batch — unlike ``jnp.sum`` or a dot, whose order XLA picks by the batched shapes — and the
    error grows like log n, not n. The sums are the same along any axis; along the last (contiguous)
    one XLA's CPU code runs them about twice as fast."""
    if isinstance(axis, bool) or not isinstance(axis, int) or not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis={axis!r} is invalid: it must be an integer in [{-x.ndim}, {x.ndim - 1}]")
    axis = axis % x.ndim
    while x.shape[axis] > 1:
        n = x.shape[axis]
        if n % 2:
            pad = [(0, 0)] * x.ndim
            pad[axis] = (0, 1)
            x, n = jnp.pad(x, pad), n + 1
        h = n // 2
        x = jax.lax.slice_in_dim(x, 0, h, axis=axis) + jax.lax.slice_in_dim(x, h, n, axis=axis)
    return jnp.squeeze(x, axis)


def _upper_pairs(d: int) -> list[tuple[int, int]]:
    """The (i, j), i ≤ j, of a `[d, d]` upper triangle, row by row."""
    return [(i, j) for i in range(d) for j in range(i, d)]


def _symmetric_from_upper(flat: Array, d: int) -> Array:
    """The symmetric `[d, d]` matrix whose upper triangle, row by row, is ``flat`` `[d(d+1)/2]`."""
    pos = {p: k for k, p in enumerate(_upper_pairs(d))}
    idx = np.array([[pos[(min(i, j), max(i, j))] for j in range(d)] for i in range(d)])
    return flat[idx]


def _block_terms(theta: Array, XT: Array, r: Array, s: Array, tau: Array, mask: Array, loss: Loss):
    """One block's rows of the loss (contexts ``XT`` `[d, block]`): per row ρ, the gradient weight ρ'/σ
    and the Hessian weight ρ''/σ² (0 on rows past ``filled``)."""
    z = (r - rounded_dot_components(XT, theta[:, None])) / s
    rho, d1, d2 = loss(z, tau)
    return (jnp.where(mask, rho, 0.0), jnp.where(mask, d1, 0.0) / s, jnp.where(mask, d2, 0.0) / (s * s))


def value_grad_hess(theta: Array, hist: History, reg: Array, loss: Loss):
    """The objective, its gradient `[d]` and (generalised) Hessian `[d, d]` at θ.

    For d ≤ ``linalg.DOT_UNROLL_MAX_DIM`` every sum has an order fixed by the shapes of one run, so the
    result is bitwise the same alone and in any ``vmap`` batch: the sums over d are ``linalg``'s unrolled
    ones, and a block's rows are summed by :func:`pairwise_sum` over a `[1 + d + d(d+1)/2, rows]` array
    of per-row terms — ρ_s, the gradient terms X_s·ρ'_s/σ_s and the upper triangle of the Hessian terms
    (X_si X_sj)·ρ''_s/σ_s² (symmetric by construction, bitwise). That array is what a block costs in
    memory if XLA materialises it: 256 × 66 entries for d = 10, 256 × 561 for d = 32 (about 0.6 MB in
    float32 per run of a batch), against `[rows, d]` for a matrix product; its flops are those of the
    product (O(rows·d²) per block). Blocks are then added in order, one after the other. Above
    ``linalg.DOT_UNROLL_MAX_DIM`` the block sums are matrix products, as fast as XLA makes them and not
    batch-invariant (nor are ``linalg``'s sums there).
    """
    d = theta.shape[0]
    block = min(BLOCK, hist.r.shape[0])
    unrolled = d <= linalg.DOT_UNROLL_MAX_DIM
    pairs = _upper_pairs(d)
    ii = np.array([i for i, _ in pairs])
    jj = np.array([j for _, j in pairs])

    def body(i, acc):
        f, g, H = acc
        XT, r, s, tau, mask = block_rows(hist, i, block)
        rho, w1, w2 = _block_terms(theta, XT, r, s, tau, mask, loss)
        if not unrolled:
            return f + jnp.sum(rho), g - XT @ w1, H + (XT * w2[None, :]) @ XT.T
        # The per-row terms laid out [terms, rows], so that the sums run along the contiguous axis, and
        # made in pieces of consecutive rows whose first levels of the halving tree add whole pieces
        # (rows i and i + n/2 lie in pieces k and k + pieces/2): XLA then fuses the terms and those
        # levels into one loop instead of materialising the [terms, rows] array (2-4x faster).
        pieces = math.gcd(XT.shape[1], PIECES)
        rows = XT.shape[1] // pieces

        def piece(k):
            sl = slice(k * rows, (k + 1) * rows)
            XT_k = XT[:, sl]
            terms = [rho[None, sl], XT_k * w1[None, sl], (XT_k[ii] * XT_k[jj]) * w2[None, sl]]
            return jnp.concatenate([rounded(t) for t in terms], axis=0)

        parts = [piece(k) for k in range(pieces)]
        while len(parts) > 1:
            half = len(parts) // 2
            parts = [parts[k] + parts[k + half] for k in range(half)]
        sums = pairwise_sum(parts[0], axis=1)
        return f + sums[0], g - sums[1 : d + 1], H + sums[d + 1 :]

    zero = jnp.zeros((), theta.dtype)
    h0 = jnp.zeros(len(pairs) if unrolled else (d, d), theta.dtype)
    f, g, H = jax.lax.fori_loop(0, num_blocks(hist, block), body, (zero, jnp.zeros_like(theta), h0))
    if unrolled:
        H = _symmetric_from_upper(H, d)
    return (
        f + rounded(0.5 * reg * rounded_dot(theta, theta)),
        g + rounded(reg * theta),
        H + reg * jnp.eye(d, dtype=theta.dtype),
    )


def default_tol(dtype) -> float:
    """1e-10 in float64, 1e-5 in float32 (static: it depends only on the dtype)."""
    return 1e-10 if jnp.dtype(dtype) == jnp.float64 else 1e-5


def project_ball_eig(h: Array, Q: Array, theta_tilde: Array, radius, num_iters: int = 30) -> Array:
    """argmin_{‖θ‖ ≤ radius} ‖θ − θ̃‖_H for H = Q diag(h) Qᵀ (h > 0).

    Outside the ball, KKT gives θ(μ) = (H + μI)⁻¹Hθ̃ = Q diag(h/(h + μ)) Qᵀθ̃ with μ > 0 solving
    ‖θ(μ)‖ = radius. g(μ) = 1/‖θ(μ)‖ − 1/radius is increasing and concave (the Moré–Sorensen secular
    equation), so Newton from μ₀ = h_min(‖θ̃‖/radius − 1), left of the root since
    ‖θ(μ)‖ ≥ ‖θ̃‖h_min/(h_min + μ), climbs to it monotonically; each iteration is O(d).

    Batch-invariant for d ≤ ``linalg.DOT_UNROLL_MAX_DIM``: sums over d are :func:`rounded_dot`'s, and
    ``radius`` enters through its reciprocal only, multiplied explicitly: XLA rewrites x/s into x·(1/s)
    when s is broadcast — a radius shared by the whole batch, but not the same radius in a run alone —
    and the two round differently.
    """
    c = rounded_matvec(Q.T, theta_tilde)
    c2 = c * c
    norm_tilde = _norm(c)
    outside = norm_tilde > radius
    h_min = jnp.min(h)
    inv_radius = 1.0 / radius
    ones = jnp.ones_like(c)

    def newton(mu, _):
        q = h / (h + mu)
        n2 = rounded_dot(c2 * q, q)
        dn2 = -2.0 * linalg.dot(c2 * q * q / (h + mu), ones)  # d‖θ(μ)‖²/dμ (sums quotients)
        n = jnp.sqrt(n2)
        g = 1.0 / n - inv_radius
        dg = -0.5 * dn2 / (n2 * n)
        step = jnp.where(dg > 0, g / dg, 0.0)
        return jnp.maximum(mu - step, 0.0), None

    mu0 = h_min * jnp.maximum(norm_tilde * inv_radius - 1.0, 0.0)
    mu, _ = jax.lax.scan(newton, mu0, None, length=num_iters)
    return jnp.where(outside, rounded_matvec(Q, c * h / (h + mu)), theta_tilde)


def evaluate(theta: Array, hist: History, reg, loss: Loss) -> Point:
    """The objective's value, gradient and Hessian at θ over ``hist``: one pass, O(filled·d²)."""
    reg = jnp.asarray(reg, theta.dtype)
    return Point(theta, *value_grad_hess(theta, hist, reg, loss))


def initial_point(dim: int, reg, dtype) -> Point:
    """The point θ = 0 over an empty history: value 0, gradient 0, Hessian reg·I."""
    return Point(
        theta=jnp.zeros(dim, dtype),
        value=jnp.zeros((), dtype),
        grad=jnp.zeros(dim, dtype),
        hess=jnp.asarray(reg, dtype) * jnp.eye(dim, dtype=dtype),
    )


def add_row(point: Point, x, r, sigma, tau, loss: Loss) -> Point:
    """``point`` over the history with one more row (x, r, σ, τ): adds that round's term of the
    objective, gradient and Hessian at ``point.theta`` — O(d²), no pass over the history.

    Batch-invariant like :func:`value_grad_hess`, whose per-row terms it forms the same way (the
    Hessian term (x_i x_j)·ρ''/σ², symmetric bitwise)."""
    dtype = point.theta.dtype
    x = jnp.asarray(x, dtype)
    sigma = jnp.asarray(sigma, dtype)
    z = (jnp.asarray(r, dtype) - rounded_dot(x, point.theta)) / sigma
    rho, d1, d2 = loss(z, jnp.asarray(tau, dtype))
    return Point(
        point.theta,
        point.value + rho,
        point.grad - rounded(x * (d1 / sigma)),
        point.hess + rounded((x[:, None] * x[None, :]) * (d2 / (sigma * sigma))),
    )


def _direction(point: Point, reg, radius, projection_iters: int):
    """The projected-Newton target θ̄ and step Δ = θ̄ − θ at ``point``, and ‖Δ‖₂.

    The Newton point θ − H⁻¹g by a Cholesky solve (``linalg.spd_solve``). Only where it lies outside the
    ball — rarely: 0.04 % of the refits' directions in Figure 1's GAdaOFUL tuning sweep at T = 1500 — is H
    decomposed (``eigh``) to project it (:func:`project_ball_eig`); under ``vmap`` just for the lanes
    outside (``batching.cond_any``). Where rounding left H too close to singular for the Cholesky factor,
    the Newton point comes from that decomposition too, its eigenvalues floored at reg (H ⪰ reg·I exactly).
    Batch-invariant: Cholesky, its solves and ``eigh`` are one LAPACK call per matrix on the CPU, the same
    routine on the same bits alone or in a batch (``eigh`` checked bitwise on batches of 2–12 SPD matrices
    of d = 3, 10, 20, float32 and float64), and the products with Q and Qᵀ are :func:`rounded_matvec`'s."""
    newton_point = point.theta - linalg.spd_solve(point.hess, point.grad)

    def projected(H, g, theta, newton_point, radius, reg):
        h, Q = batching.lapack(jnp.linalg.eigh, 0.5 * (H + H.T))
        h = jnp.maximum(h, reg)
        by_eigh = theta - rounded_matvec(Q, rounded_matvec(Q.T, g) / h)
        newton_point = jnp.where(jnp.all(jnp.isfinite(newton_point)), newton_point, by_eigh)
        return project_ball_eig(h, Q, newton_point, radius, projection_iters)

    inside = lambda H, g, theta, newton_point, radius, reg: newton_point
    outside = ~(_norm(newton_point) <= radius)  # NaN: a Cholesky factor that failed
    operands = (point.hess, point.grad, point.theta, newton_point, radius, reg)
    target = batching.cond_any(outside, projected, inside, *operands)
    delta = target - point.theta
    return target, delta, _norm(delta)


def solve(
    point: Point,
    hist: History,
    reg,
    radius,
    loss: Loss,
    *,
    tol=None,
    max_iters: int = 50,
    projection_iters: int = 30,
) -> RefitResult:
    """argmin_{‖θ‖ ≤ radius} (reg/2)‖θ‖² + Σ_s ρ_{τ_s}((r_s − ⟨X_s,θ⟩)/σ_s), started from ``point``,
    which must hold the objective's value, gradient and Hessian over ``hist`` (:func:`evaluate`, or a
    previous result's ``point`` brought up to date with :func:`add_row`).

    ``reg``, ``radius`` and ``tol`` may be traced; ``max_iters`` and ``projection_iters`` are static.
    ``tol`` (default :func:`default_tol`) bounds the last projected-Newton step ‖Δ‖₂. Under ``vmap``
    the result of a lane is bitwise its result alone (module docstring), also when ``reg``, ``radius``
    or ``tol`` are shared by the batch; the point and the history are per-run data.

    One ``while_loop`` whose every iteration is one pass over the history at a trial point θ + sΔ:
    accepted, it is the next Newton iterate and its derivatives give the next direction; rejected, s
    halves. Under ``vmap`` the loop runs until every lane has stopped (lanes that have stopped are
    left unchanged), so a backtracking lane costs the others one pass per halving, and a batch whose
    lanes all accept the unit step pays nothing for the line search — except inside
    ``batching.stragglers_one_by_one()`` (``jb.sweep`` on one CPU device), where the last lanes still
    going (a quarter of the batch or fewer) finish one by one, alone (``batching.while_loop``; the
    same bits for d ≤ ``linalg.DOT_UNROLL_MAX_DIM``, where a lane computes the same alone and in a
    batch, and the plain loop above that).
    """
    dtype = point.theta.dtype
    reg = jnp.asarray(reg, dtype)
    radius = jnp.asarray(radius, dtype)
    tol = jnp.asarray(default_tol(dtype) if tol is None else tol, dtype)
    slack = 16.0 * jnp.finfo(dtype).eps
    min_step = 0.5 ** (LINE_SEARCH - 1)
    point = Point(*(jnp.asarray(a, dtype) for a in point))

    def cond(c):
        accepted, _, _, _, _, _, _, done, stalled = c
        return (accepted < max_iters) & ~done & ~stalled

    def body(c):
        accepted, passes, pt, target, delta, step, s, _, _ = c
        trial = evaluate(pt.theta + rounded(s * delta), hist, reg, loss)
        # sufficient decrease, up to rounding in f (near the optimum the decrease is below it)
        ok = trial.value - pt.value <= (
            rounded(ARMIJO * s * rounded_dot(pt.grad, delta)) + rounded(slack * (jnp.abs(pt.value) + 1.0))
        )
        new_pt = jax.tree_util.tree_map(lambda a, b: jnp.where(ok, a, b), trial, pt)
        n_target, n_delta, n_step = _direction(new_pt, reg, radius, projection_iters)
        keep = lambda a, b: jnp.where(ok, a, b)
        next_s = jnp.where(ok, jnp.ones_like(s), 0.5 * s)
        # no acceptable step: the optimum is reached up to rounding, so stop there
        stalled = ~ok & (next_s < min_step)
        return (
            accepted + ok.astype(jnp.int32),
            passes + 1,
            new_pt,
            keep(n_target, target),
            keep(n_delta, delta),
            keep(n_step, step),
            next_s,
            ok & (n_step <= tol),
            stalled,
        )

    target, delta, step = _direction(point, reg, radius, projection_iters)
    zero = jnp.zeros((), jnp.int32)
    init = (zero, zero, point, target, delta, step, jnp.ones((), dtype), step <= tol, jnp.zeros((), bool))
    # Stragglers one by one only where a lane computes the same alone and in a batch (module docstring).
    loop = batching.while_loop if point.theta.shape[-1] <= linalg.DOT_UNROLL_MAX_DIM else jax.lax.while_loop
    accepted, passes, point, target, _, step, _, done, _ = loop(cond, body, init)
    theta = jnp.where(done, target, point.theta)
    return RefitResult(theta=theta, iters=accepted + 1, step=step, passes=passes, point=point)


def refit(
    theta0: Array,
    hist: History,
    reg,
    radius,
    loss: Loss,
    *,
    tol=None,
    max_iters: int = 50,
    projection_iters: int = 30,
) -> RefitResult:
    """argmin_{‖θ‖ ≤ radius} (reg/2)‖θ‖² + Σ_s ρ_{τ_s}((r_s − ⟨X_s,θ⟩)/σ_s), warm-started at ``theta0``
    (one pass to evaluate the objective there, then :func:`solve`).

    ``reg``, ``radius`` and ``tol`` may be traced; ``max_iters`` and ``projection_iters`` are static.
    ``tol`` (default :func:`default_tol`) bounds the last projected-Newton step ‖Δ‖₂.
    """
    start = evaluate(theta0, hist, reg, loss)
    res = solve(
        start, hist, reg, radius, loss, tol=tol, max_iters=max_iters, projection_iters=projection_iters
    )
    return res._replace(passes=res.passes + 1)
