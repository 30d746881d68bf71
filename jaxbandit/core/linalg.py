"""Linear-algebra pieces shared by the UCB algorithms.

Every function is written for one run (no batch axis) and is jit- and vmap-safe: no Python branching on
values, bounded iteration counts. ``A`` always denotes an inverse Gram matrix V⁻¹ `[d, d]` (symmetric
positive definite). LAPACK routines are called through ``batching.lapack`` (also importable from
here, with ``lapack_per_matrix``, as before).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .lowering import batching, options
from .lowering.batching import lapack as lapack
from .lowering.batching import lapack_per_matrix as lapack_per_matrix

Array = jax.Array


#: Up to this dimension, sums over the last axis (dot products, matrix–vector products, norms) are
#: unrolled into a fixed sequence of elementwise adds. XLA's reductions and dots pick their summation
#: order (and vectorisation) by the shapes of the whole batch, so under ``vmap`` a run's last bits would
#: depend on how many other runs share its batch; elementwise operations round the same in every lane.
#: The same unrolling is what makes the projection fast under ``vmap`` (see ``UNROLL_MAX_DIM``).
DOT_UNROLL_MAX_DIM = 32


def dot(a: Array, b: Array) -> Array:
    """Σ_i a[..., i]·b[..., i] (broadcasting the leading axes), summed in index order.

    Bitwise independent of the batch a run shares under ``vmap`` for d ≤ ``DOT_UNROLL_MAX_DIM``.
    """
    d = a.shape[-1]
    if d > DOT_UNROLL_MAX_DIM:
        return jnp.sum(a * b, axis=-1)
    # Components first (`[d, ...]`): each term is then a contiguous slab, not a stride-d gather.
    return dot_components(_components(a), _components(b))


def dot_components(a_t: Array, b_t: Array) -> Array:
    """Σ_i a_t[i]·b_t[i] over the *leading* axis, in index order: :func:`dot`'s sum for vectors held
    components first (`[d, ...]`), as the robust regressions keep their history (above
    ``DOT_UNROLL_MAX_DIM`` a ``jnp.sum``, as in :func:`dot`)."""
    if jnp.ndim(a_t) < 1 or jnp.ndim(b_t) < 1 or a_t.shape[0] != b_t.shape[0] or a_t.shape[0] < 1:
        raise ValueError(
            f"a_t of shape {jnp.shape(a_t)} and b_t of shape {jnp.shape(b_t)} are invalid: both must have a "
            "leading (component) axis of the same length >= 1"
        )
    if a_t.shape[0] > DOT_UNROLL_MAX_DIM:
        return jnp.sum(a_t * b_t, axis=0)
    acc = lax.mul(_entry(a_t, 0), _entry(b_t, 0))
    for i in range(1, a_t.shape[0]):
        acc = lax.add(acc, lax.mul(_entry(a_t, i), _entry(b_t, i)))
    return acc


def _components(x: Array) -> Array:
    """``x`` `[..., d]` as `[d, ...]`."""
    return jnp.moveaxis(x, -1, 0)


def _entry(a: Array, *index: int) -> Array:
    """``a[index]`` for static integers on ``a``'s leading axes: the slice and squeeze of jnp's indexing."""
    ends = tuple(i + 1 for i in index) + a.shape[len(index) :]
    starts = index + (0,) * (a.ndim - len(index))
    return lax.squeeze(lax.slice(a, starts, ends), tuple(range(len(index))))


def matvec(A: Array, x: Array) -> Array:
    """A x for ``A`` `[m, d]` and ``x`` `[..., d]`; returns `[..., m]` (batch-invariant, like :func:`dot`)."""
    d = A.shape[-1]
    if d > DOT_UNROLL_MAX_DIM:
        return jnp.einsum("ij,...j->...i", A, x)
    acc = x[..., 0:1] * A[:, 0]
    for j in range(1, d):
        acc = acc + x[..., j : j + 1] * A[:, j]
    return acc


def norm(x: Array) -> Array:
    """‖x‖₂ over the last axis (batch-invariant, like :func:`dot`)."""
    return jnp.sqrt(dot(x, x))


def ellipsoid_norm(A: Array, x: Array) -> Array:
    """‖x‖_A = √(xᵀ A x) for ``x`` `[..., d]` and a symmetric ``A`` `[d, d]`; returns `[...]`.

    For d ≤ ``DOT_UNROLL_MAX_DIM`` the form is Σ_i x_i (A_ii x_i + 2 Σ_{j>i} A_ij x_j) over the components
    of x (upper triangle only; batch-invariant like :func:`dot`). Rounding can make xᵀAx of a
    (numerically) singular A slightly negative: it is clamped at 0.
    """
    d = x.shape[-1]
    if d > DOT_UNROLL_MAX_DIM:
        return jnp.sqrt(jnp.maximum(dot(x, matvec(A, x)), 0.0))
    x_t = _components(x)
    terms = []
    for i in range(d):
        inner = lax.mul(_entry(A, i, i), _entry(x_t, i))
        for j in range(i + 1, d):
            inner = lax.add(inner, lax.mul(lax.mul(2.0, _entry(A, i, j)), _entry(x_t, j)))
        terms.append(lax.mul(_entry(x_t, i), inner))
    quad = terms[0]
    for term in terms[1:]:
        quad = lax.add(quad, term)
    return lax.sqrt(lax.max(quad, 0.0))


def sherman_morrison(A: Array, u: Array, weight: Array) -> Array:
    """(A⁻¹ + weight·u uᵀ)⁻¹ from A = V⁻¹ in O(d²) (Sherman–Morrison).

    The result is symmetric whenever ``A`` is: it is ``A − c·v vᵀ`` with the single vector v = A u, and
    c = 1/(1/weight + uᵀv) rather than weight/(1 + weight·uᵀv), so that ``weight`` = ∞ (a round with
    σ → 0) gives the limit c = 1/uᵀv instead of ∞/∞, and ``weight`` = 0 gives c = 0. An update that
    could overflow is not applied (see :func:`sherman_morrison_given`).
    """
    v = matvec(A, u)
    return sherman_morrison_given(A, v, dot(u, v), weight)[0]


def sherman_morrison_given(A: Array, v: Array, q: Array, weight: Array) -> tuple[Array, Array]:
    """:func:`sherman_morrison` for a caller that already has v = A u and q = uᵀv (an algorithm needs
    ‖u‖²_A = q anyway): returns the new inverse and its product with u, v/(1 + weight·q), for free.

    A last-resort guard: a round whose update could overflow (only reachable with extreme input, see
    tests/test_numerics.py) leaves ``A`` as it was instead of making it inf/NaN. It is decided from O(d)
    numbers, so that it costs no pass over the matrix (and no read of its diagonal, which on a GPU is
    nearly one): |c·v_i v_j| ≤ |c|·‖v‖²/2, so if 4|c|·‖v‖² is finite (NaN in v or c is not) no new entry
    overflows unless an old one already exceeds 7/8 of the float max — impossible for V ⪰ λI, whose
    inverse's entries are at most 1/λ, unless λ is subnormal. For that case alone an entry that still
    overflowed keeps its old value.
    """
    c = 1.0 / (1.0 / weight + q)
    updated = A - c * (v[:, None] * v[None, :])
    updated = jnp.where(jnp.isfinite(4.0 * jnp.abs(c) * dot(v, v)), updated, A)
    return jnp.where(jnp.isfinite(updated), updated, A), v / (1.0 + weight * q)


def clamp_reward(r: Array, dtype) -> Array:
    """r_t clamped to ±√(float max): a heavy-tailed or adversarial reward (even ±inf) then keeps sums
    such as b = Σ r_s X_s and squared residuals finite. NaN stays NaN (it is an input error)."""
    big = jnp.sqrt(jnp.finfo(dtype).max).astype(dtype)
    return jnp.clip(jnp.asarray(r, dtype), -big, big)


def sigma_floor(dtype, alpha=1.0) -> Array:
    """The smallest scale σ for which 1/(α σ²) stays finite in ``dtype`` (about 1e-19 in float32)."""
    return 4.0 * jnp.sqrt(jnp.finfo(dtype).tiny / jnp.minimum(jnp.asarray(alpha, dtype), 1.0))


def keep_finite(new, old):
    """``new`` where every entry is finite, else ``old``: a last-resort guard so that one round whose
    arithmetic overflowed leaves the state as it was instead of poisoning it with inf/NaN."""
    return jnp.where(jnp.all(jnp.isfinite(new)), new, old)


#: Scores within this many ulps of ``scale`` of the maximum are tied (see :func:`argmax_lowest`).
TIE_ULPS = 4


def argmax_lowest(scores: Array, scale: Array) -> Array:
    """Lowest index whose score is within ``TIE_ULPS`` ulps of ``scale`` of the maximum; int32.

    ``scale`` bounds the magnitudes the scores are computed from (for a UCB score ⟨x, θ̂⟩ + β‖x‖_A:
    max |mean| + |bonus|). Ties that the model makes exact are common, not rare: in round 1 (θ̂ = 0,
    V = λI) every unit context has the same bonus β₀/√λ, and rounding alone would otherwise pick the
    arm, differently in every implementation.

    Why the window is safe: a score is computed with an error below 2 ulps of ``scale`` (measured: at
    most 1.7 ulps over random states, d = 2…100, β up to 3·10⁴; ``test_linalg`` holds it below 2), so
    two scores that are equal in exact arithmetic land within 4 ulps of each other and are merged, while
    arms whose computed scores differ by more than 4 ulps, a gap rounding cannot have made, never are.
    A wider window changes which arm is played wherever β is large: 16 ulps of a theory radius
    (β_t ~ 10⁴) is ~0.02 of reward, and it raised CR-Hvt-UCB's float32 regret 6 % above x64's
    (``benchmarks/float32_agreement.py``).
    """
    tol = TIE_ULPS * jnp.finfo(scores.dtype).eps * scale
    return jnp.argmax(scores >= jnp.max(scores) - tol).astype(jnp.int32)


def select_ucb(contexts: Array, theta: Array, A: Array, beta: Array) -> Array:
    """argmax of the UCB scores ⟨x, θ⟩ + β‖x‖_A (eq:arm_selection), ties to the lowest index."""
    mean = dot(contexts, theta)
    bonus = beta * ellipsoid_norm(A, contexts)
    return argmax_lowest(mean + bonus, jnp.max(jnp.abs(mean) + jnp.abs(bonus)))


#: Up to this dimension the projection's Cholesky factorisations and triangular solves are unrolled
#: into scalar operations, which ``vmap`` turns into long vector operations over the batch (one LAPACK
#: call per matrix is several times slower for d = 10); above it, LAPACK keeps compile time bounded.
UNROLL_MAX_DIM = 16


def _minus_products(first, pairs) -> Array:
    """``first − Σ a·b`` over ``pairs`` in order, the sum from 0.0 as Python's ``sum`` makes it.

    The unrolled solvers below are written in ``lax`` operations, which stage exactly the equations
    their jnp forms did (the same program, the same bits) but trace several times faster: a jnp
    operation is a jitted function inlined into the trace, and a projection's Newton step has ~1100 of
    them (0.2 s of a small sweep's first call)."""
    total: Array | float = 0.0
    for a, b in pairs:
        total = lax.add(total, lax.mul(a, b))
    return lax.sub(first, total)


def _cholesky_unrolled(M):
    """Lower Cholesky factor of ``M`` `[d, d]` as nested lists of scalars (d static and small), with the
    reciprocals of its diagonal: ``(L, inv)``. The solves multiply by ``inv``; a division costs several
    multiply-adds on a vector unit."""
    d = M.shape[-1]
    L: list[list[Any]] = [[None] * d for _ in range(d)]
    inv: list[Any] = [None] * d
    for j in range(d):
        diag = _minus_products(_entry(M, j, j), ((L[j][k], L[j][k]) for k in range(j)))
        # I + μA is positive definite in exact arithmetic; the floor keeps a V⁻¹ that rounding made
        # slightly indefinite (after an extreme weight) from producing NaN.
        L[j][j] = lax.sqrt(lax.max(diag, jnp.finfo(diag.dtype).tiny))
        inv[j] = lax.div(1.0, L[j][j])
        for i in range(j + 1, d):
            rest = _minus_products(_entry(M, i, j), ((L[i][k], L[j][k]) for k in range(j)))
            L[i][j] = lax.mul(rest, inv[j])
    return L, inv


def _forward_unrolled(factor, b):
    """Solves L y = b for :func:`_cholesky_unrolled`'s ``factor`` and ``b`` a list of d scalars."""
    L, inv = factor
    y: list[Array] = []
    for i in range(len(L)):
        y.append(lax.mul(_minus_products(b[i], ((L[i][k], y[k]) for k in range(i))), inv[i]))
    return y


def _backward_unrolled(factor, y):
    """Solves Lᵀx = y for :func:`_cholesky_unrolled`'s ``factor`` and ``y`` a list of d scalars."""
    L, inv = factor
    d = len(L)
    x: list[Any] = [None] * d
    for i in reversed(range(d)):
        x[i] = lax.mul(_minus_products(y[i], ((L[k][i], x[k]) for k in range(i + 1, d))), inv[i])
    return x


def _lapack_cholesky_parts():
    """``(factor, forward, backward)`` by LAPACK (through ``batching.lapack``): ``factor(M)`` returns the
    lower Cholesky factor L of a `[d, d]` symmetric positive definite M, ``forward(L, b)`` solves L y = b
    and ``backward(L, y)`` solves Lᵀx = y, on `[d]` arrays."""
    tri = jax.scipy.linalg.solve_triangular

    def factor(M):
        return lapack(jnp.linalg.cholesky, M)

    def forward(L, b):
        return lapack(functools.partial(tri, lower=True), L, b)

    def backward(L, y):
        return lapack(functools.partial(tri, lower=True, trans=1), L, y)

    return factor, forward, backward


def _shifted_cholesky(A):
    """``(factor, forward, backward)`` for I + μA: ``factor(mu)`` returns its lower Cholesky factor L (in
    a form ``forward``/``backward`` take), ``forward(L, b)`` solves L y = b and ``backward(L, y)`` solves
    Lᵀx = y, on `[d]` arrays. Unrolled into scalar operations for d ≤ ``UNROLL_MAX_DIM``, LAPACK above."""
    d = A.shape[-1]
    # a constant of the program, not a traced value: a solver loop (``batching.while_loop``) would take
    # a traced one as an operand and copy it to every lane of the batch, every round
    eye = np.eye(d, dtype=A.dtype)
    if d > UNROLL_MAX_DIM:
        factor, forward, backward = _lapack_cholesky_parts()
        return (lambda mu: factor(eye + mu * A)), forward, backward

    def forward_unrolled(L, b):
        return jnp.stack(_forward_unrolled(L, [_entry(b, i) for i in range(d)]))

    def backward_unrolled(L, y):
        return jnp.stack(_backward_unrolled(L, [_entry(y, i) for i in range(d)]))

    return (lambda mu: _cholesky_unrolled(eye + mu * A)), forward_unrolled, backward_unrolled


def spd_solve(A: Array, b: Array) -> Array:
    """A⁻¹b for ``A`` `[d, d]` symmetric positive definite and ``b`` `[d]`: LAPACK's Cholesky factorisation
    and two triangular solves, one matrix a call under ``vmap`` or one batched call (``batching.lapack``):
    the same routine on the same bits either way, so a lane's result is its result alone. (NaN where
    rounding left A not positive definite.) Not unrolled as :func:`_shifted_cholesky` is for small d:
    that form ran 2× faster on a 500-lane batch of 10 × 10 matrices, but took 1.0 s to compile against
    0.1 s, per copy in a program."""
    d = jnp.shape(A)[-1] if jnp.ndim(A) else 0
    if jnp.ndim(A) != 2 or jnp.shape(A) != (d, d) or d < 1 or jnp.shape(b) != (d,):
        raise ValueError(
            f"A of shape {jnp.shape(A)} and b of shape {jnp.shape(b)} are invalid: A must be a square "
            "[d, d] matrix with d >= 1 and b a [d] vector (one run's; vmap for a batch)"
        )
    factor, forward, backward = _lapack_cholesky_parts()
    L = factor(A)
    return backward(L, forward(L, b))


def project_ball_in_metric(theta_tilde: Array, A: Array, radius: Array, num_iters: int = 8) -> Array:
    """argmin_{‖θ‖₂ ≤ radius} ‖θ − θ̃‖_V with V = A⁻¹ (the second line of def:theta_OMD2).

    Inside the ball the answer is θ̃. Outside, KKT gives θ(μ) = (V + μI)⁻¹Vθ̃ = (I + μA)⁻¹θ̃ with the
    multiplier μ > 0 solving ‖θ(μ)‖ = radius. g(μ) = 1/‖θ(μ)‖ − 1/radius is increasing and concave on
    μ ≥ 0 (the Moré–Sorensen secular equation), so Newton started left of the root climbs to it
    monotonically, without overshoot. The start μ₀ = (‖θ̃‖/radius − 1)/‖A‖_F is left of the root because
    ‖θ(μ)‖ ≥ ‖θ̃‖/(1 + μ‖A‖₂).

    What an iteration needs is one Cholesky factor L of the well-conditioned I + μA (eigenvalues in
    [1, 1 + μ‖A‖]) and four triangular solves — no eigendecomposition: θ = L⁻ᵀL⁻¹θ̃, and since
    (I + μA)θ = θ̃ gives Aθ = (θ̃ − θ)/μ, u = (I + μA)⁻¹Aθ = (θ − L⁻ᵀL⁻¹θ)/μ = −dθ/dμ and
    d‖θ‖²/dμ = −2θᵀu. (u loses relative accuracy when μ‖A‖ is tiny, which only slows Newton; its root is
    set by ‖θ‖ alone.)

    Each run stops on its own once a Newton step Δμ moves θ by less than √eps relative (|Δμ|·‖A‖_F ≤
    √eps): Newton is then in its quadratic regime and θ at the new iterate is θ − Δμ·u to within eps, with
    no further factorisation. Inside the ball there is no iteration at all. The paper's settings
    (cond(V) ≈ 2) stop after two or three factorisations; at most ``num_iters`` + 1 are made (then θ(μ) of
    the last iterate is returned), enough for float64 precision up to cond(A) ≈ 10⁴; take more for
    worse-conditioned V (about twelve at 10⁸). Under ``vmap`` the loop runs until the slowest run stops,
    and a stopped run's values no longer change, so every run's answer is independent of its batch. In
    float32 the answer is as accurate as forming I + μA allows (about d·eps·μ‖A‖ relative) and always
    feasible.

    Inside ``batching.stragglers_one_by_one()`` (``jb.sweep`` on one CPU device) the loop is
    ``batching.while_loop`` for d ≤ ``UNROLL_MAX_DIM``, where a run computes the same in any batch: in a
    sweep of the paper's setting about 2 % of a run's rounds leave the ball (5 of 400 runs in a round of
    the 16-point grid, on average), so the runs outside iterate in groups of 16 (the whole batch first
    while more than a quarter of it is outside) instead of the whole batch iterating for them: a Newton
    iteration is ~90 small kernels whatever the batch, so a group costs little more than one run
    (docs/performance.md, *Stragglers one by one*). A batch of fewer than
    ``ExecutionOptions.straggler_min_lanes`` runs keeps the plain loop.
    """
    return _project_ball_in_metric(theta_tilde, A, radius, num_iters, options.current())


@functools.partial(jax.jit, static_argnames=("num_iters", "traced_with"))
def _project_ball_in_metric(
    theta_tilde, A, radius, num_iters: int, traced_with: options.TraceOptions
) -> Array:
    """:func:`project_ball_in_metric`, jitted; ``traced_with``: the caller's trace options
    (``lowering.options.current()``, which the body's calls read too), part of the trace's key, as the
    trace follows the caller's rules. Its ``peeled_newton_steps`` Newton steps are made before the loop, by
    every run (a run inside the ball, or stopped, keeps its values): the same answer, without the loop's
    condition and body launch for them on a GPU."""
    factor, forward, backward = _shifted_cholesky(A)
    norm_tilde = norm(theta_tilde)
    outside = norm_tilde > radius
    ones = jnp.ones_like(theta_tilde)
    # ‖A‖_F from A's column slices, as matvec reads them (Σ_j A_ij², then Σ_i): a transposed view of A here
    # would make XLA store a sweep's V⁻¹ transposed and transpose it back every round (on a GPU)
    frobenius = jnp.sqrt(dot(matvec(A * A, ones), ones))
    # × 1/radius, not ÷ radius: a vmap batch whose runs share the radius computes it so (XLA rewrites a
    # division by a broadcast scalar), and a run alone must round the same
    mu0 = jnp.maximum(norm_tilde * (1.0 / radius) - 1.0, 0.0) / frobenius
    tiny = jnp.finfo(A.dtype).tiny
    sqrt_eps = jnp.sqrt(jnp.finfo(A.dtype).eps)

    def evaluate(mu):
        """θ(μ), u = −dθ/dμ at μ, and the next Newton iterate."""
        L = factor(mu)
        theta = backward(L, forward(L, theta_tilde))
        z = forward(L, theta)
        u = (theta - backward(L, z)) / jnp.maximum(mu, tiny)  # (I + μA)⁻¹Aθ = −dθ/dμ
        n2 = dot(theta, theta)
        n = jnp.sqrt(n2)
        g = 1.0 / n - 1.0 / radius
        dg = dot(theta, u) / (n2 * n)
        step = jnp.where(dg > 0, g / dg, 0.0)
        return theta, u, jnp.maximum(mu - step, 0.0)

    def unfinished(carry):
        k, _, _, done = carry
        return (k <= num_iters) & ~done

    def newton(carry):
        k, mu, _, _ = carry
        theta, u, mu_next = evaluate(mu)
        delta = mu_next - mu
        # A step that moves θ by less than √eps (relative) is in Newton's quadratic regime: θ at the next
        # iterate is then θ − Δμ·(I + μA)⁻¹Aθ to within eps, without another factorisation.
        done = jnp.abs(delta) * frobenius <= sqrt_eps
        theta = jnp.where(done, theta - delta * u, theta)
        return k + 1, mu_next, theta, done

    # The counter starts batched like the other carries (under vmap the loop runs until the slowest run
    # stops, so it ends up batched anyway): vmap then batches the loop's body once, not twice.
    k0 = jnp.where(outside, 0, 0).astype(jnp.int32)
    carry = (k0, mu0, theta_tilde, ~outside)
    # above UNROLL_MAX_DIM the plain loop (each iteration calls LAPACK)
    one_by_one = traced_with.stragglers_one_by_one and A.shape[-1] <= UNROLL_MAX_DIM
    with batching.stragglers_one_by_one(one_by_one):
        _, _, theta, _ = batching.while_loop(
            unfinished,
            newton,
            carry,
            straggler_fraction=1 / 4,
            straggler_group=16,
            peel=traced_with.peeled_newton_steps,
        )
    # Feasibility is a hard constraint of the analysis; rounding may leave ‖θ‖ a hair above the radius,
    # so clip radially — a change at the rounding level that keeps ‖θ̂‖ ≤ S exactly.
    theta = theta * jnp.minimum(1.0, radius / norm(theta))
    # A V⁻¹ that is singular (an infinite weight) or indefinite by rounding can leave no root (the
    # component of θ̃ along V⁻¹'s null space cannot shrink) and Newton diverges: fall back to the
    # Euclidean projection, feasible and finite. Never taken for positive definite V⁻¹.
    radial = theta_tilde * jnp.minimum(1.0, radius / norm(theta_tilde))
    theta = jnp.where(jnp.all(jnp.isfinite(theta)), theta, radial)
    return jnp.where(outside, theta, theta_tilde)


#: Iterations of :func:`ellipsoid_ball_scores`: bisection steps on log μ₂ per dtype (the bracket spans
#: e^±30 around the problem's scale: 32 halvings reach float32's resolution, 60 float64's) and, in each,
#: Newton steps on the trust-region secular equation for μ₁ (monotone, quadratic near the root).
BALL_BISECTION_STEPS = {"float32": 32, "float64": 60}
BALL_NEWTON_STEPS = 10


def ellipsoid_ball_scores(contexts: Array, theta: Array, A: Array, beta: Array, S: Array) -> Array:
    """max ⟨x, θ'⟩ over {θ' : ‖θ' − θ‖_H ≤ β, ‖θ'‖ ≤ S} for each row x of ``contexts`` `[K, d]`; `[K]`.

    ``A`` = H⁻¹ `[d, d]`. The exact optimistic value over the confidence ellipsoid intersected with the
    ball, which the GAdaOFUL authors compute with SLSQP per arm. If the ellipsoid's maximiser
    θ + βAx/‖x‖_A lies in the ball the value is ⟨x, θ⟩ + β‖x‖_A. Otherwise, by Lagrange duality on the
    ball, θ'(μ₂) = argmax_{‖θ'−θ‖_H ≤ β} ⟨x, θ'⟩ − μ₂‖θ'‖² (a trust-region problem: its multiplier μ₁ ≥ 0
    solves the secular equation ‖θ'−θ‖_H = β, by Newton's method on 1/‖θ'−θ‖_H − 1/β from μ₁ = 0,
    monotone) has a norm that falls as μ₂ grows; bisection on log μ₂ finds ‖θ'‖ = S. All in H's
    eigenbasis, O(d) per step. If the ellipsoid and the ball do not meet, the ellipsoid's value is
    returned.
    """
    dtype = theta.dtype
    tiny = jnp.finfo(dtype).tiny
    omega, Q = lapack(jnp.linalg.eigh, A)  # A = Q diag(ω) Qᵀ, H = Q diag(1/ω) Qᵀ
    lam = 1.0 / jnp.maximum(omega, tiny)
    a = matvec(Q.T, contexts)  # [K, d]
    c = matvec(Q.T, theta)  # [d]
    x_norm_A = ellipsoid_norm(A, contexts)
    ellipsoid_value = dot(contexts, theta) + beta * x_norm_A
    z_e = c + beta * (omega * a) / jnp.maximum(x_norm_A, tiny)[:, None]
    inside_ball = dot(z_e, z_e) <= S * S

    def penalised(mu2):
        """argmax over the ellipsoid of ⟨a, z⟩ − μ₂‖z‖², `[K, d]`, for μ₂ `[K]`."""
        p = 0.5 * a - mu2[:, None] * c

        def newton(_, mu1):
            denom = mu1[:, None] * lam + mu2[:, None]
            phi = dot(lam * p, p / (denom * denom))  # ‖z − c‖²_H
            dphi = -2.0 * dot(lam * lam * p, p / (denom * denom * denom))
            psi = jax.lax.rsqrt(phi) - 1.0 / beta
            dpsi = -0.5 * dphi * jax.lax.rsqrt(phi) / phi
            return jnp.maximum(mu1 - psi / dpsi, 0.0)

        mu1 = jax.lax.fori_loop(0, BALL_NEWTON_STEPS, newton, jnp.zeros_like(mu2))
        return (0.5 * a + (mu1[:, None] * lam) * c) / (mu1[:, None] * lam + mu2[:, None])

    scale = jnp.log(jnp.maximum(norm(contexts), tiny) / (2.0 * S))
    lo, hi = scale - 30.0, scale + 30.0

    def bisect(_, bracket):
        lo, hi = bracket
        mid = 0.5 * (lo + hi)
        z = penalised(jnp.exp(mid))
        outside = dot(z, z) > S * S  # still outside the ball: a larger μ₂
        return jnp.where(outside, mid, lo), jnp.where(outside, hi, mid)

    lo, hi = jax.lax.fori_loop(0, BALL_BISECTION_STEPS[jnp.dtype(dtype).name], bisect, (lo, hi))
    z = penalised(jnp.exp(hi))
    meet = dot(z, z) <= S * S * (1.0 + 16.0 * jnp.finfo(dtype).eps)
    return jnp.where(inside_ball | ~meet, ellipsoid_value, dot(a, z))
