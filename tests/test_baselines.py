"""OFUL, CW-OFUL, Heavy-OFUL and GAdaOFUL against the float64 NumPy loops of tests/reference_baselines.py.

Each algorithm runs through ``jb.simulate`` on a ``jb.envs.replay`` of NumPy-drawn streams, inside one
jitted runner per (algorithm, code path) whose numeric hyperparameters and streams are traced
arguments: the comparisons therefore also check that every numeric hyperparameter traces, and the
trace counters check that new values do not recompile.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import reference_baselines as ref
from conftest import assert_same_arms, random_stream, replay_run
from scipy.optimize import minimize

import jaxbandit as jb
from jaxbandit.agents import robust_regression as rr

K, D = 20, 10
TRACES = {}


def _count(name):
    TRACES[name] = TRACES.get(name, 0) + 1


# One runner per code path; everything numeric is a traced argument.


@functools.partial(jax.jit, static_argnames="T")
def oful_theory(th, X, eta, budget, lam, S, L, R, delta, beta_scale, *, T):
    _count("oful_theory")
    alg = jb.oful(T, D, lam=lam, S=S, L=L, R=R, delta=delta, beta_scale=beta_scale)
    return replay_run(alg, th, X, eta, budget)


@functools.partial(jax.jit, static_argnames="T")
def oful_const(th, X, eta, budget, lam, beta, *, T):
    _count("oful_const")
    return replay_run(jb.oful(T, D, lam=lam, beta=beta), th, X, eta, budget)


@functools.partial(jax.jit, static_argnames="T")
def cw_const(th, X, eta, budget, lam, beta, alpha, *, T):
    _count("cw_const")
    return replay_run(jb.cw_oful(T, D, lam=lam, beta=beta, alpha=alpha), th, X, eta, budget)


@functools.partial(jax.jit, static_argnames=("T", "known"))
def cw_theory(th, X, eta, budget, C, R, lam, beta_scale, *, T, known):
    _count(f"cw_theory_{known}")
    alg = jb.cw_oful(T, D, corruption=C, known_corruption=known, R=R, lam=lam, beta_scale=beta_scale)
    return replay_run(alg, th, X, eta, budget)


@functools.partial(jax.jit, static_argnames="T")
def heavy_const_nu(th, X, eta, budget, eps, nu, beta_scale, *, T):
    _count("heavy_const_nu")
    return replay_run(jb.heavy_oful(T, D, eps=eps, nu=nu, beta_scale=beta_scale), th, X, eta, budget)


@functools.partial(jax.jit, static_argnames="T")
def heavy_revealed(th, X, eta, nus, budget, eps, beta, lam, *, T):
    _count("heavy_revealed")
    alg = jb.heavy_oful(T, D, eps=eps, nu="revealed", beta=beta, lam=lam)
    return replay_run(alg, th, X, eta, budget, nus)


@functools.partial(jax.jit, static_argnames=("T", "constants"))
def gada(th, X, eta, budget, nu, C, beta_scale, *, T, constants):
    _count(f"gada_{constants}")
    # The closed-form UCB for every preset: this runner checks the constants and the refit; the authors'
    # arm rule (their presets' default) is checked against SLSQP below.
    alg = jb.gadaoful(
        T, D, nu=nu, corruption=C, constants=constants, beta_scale=beta_scale, arm_rule="ellipsoid"
    )
    return replay_run(alg, th, X, eta, budget)


@functools.partial(jax.jit, static_argnames=("T", "arm_rule"))
def gada_identity(th, X, eta, budget, beta, *, T, arm_rule):
    alg = jb.gadaoful(T, D, nu=1.0, corruption=0.0, constants="public_identity", beta=beta, arm_rule=arm_rule)
    return replay_run(alg, th, X, eta, budget)


def _stream(seed, T, noise="t3", norm=1.0):
    th, X, eta = random_stream(seed, T, K, D, noise)
    return th * norm, X, eta


# ------------------------------------------------------------------------------------------------
# OFUL and CW-OFUL: every arm equal to the reference's
# ------------------------------------------------------------------------------------------------

T_RIDGE = 400


@pytest.mark.parametrize(
    "kw",
    [
        dict(lam=1.0, S=1.0, L=1.0, R=1.0, delta=None, beta_scale=1.0, budget=0.0),
        dict(lam=2.0, S=1.5, L=1.0, R=0.5, delta=0.05, beta_scale=1.0, budget=30.0),
        dict(lam=0.5, S=1.0, L=2.0, R=1.0, delta=0.01, beta_scale=0.3, budget=100.0),
    ],
)
def test_oful_theory_radius_matches_reference(x64, kw):
    th, X, eta = _stream(21, T_RIDGE)
    kw = dict(kw)
    budget = kw.pop("budget")
    delta = 1.0 / T_RIDGE if kw["delta"] is None else kw["delta"]
    got = oful_theory(
        th, X, eta, budget, kw["lam"], kw["S"], kw["L"], kw["R"], delta, kw["beta_scale"], T=T_RIDGE
    )
    assert_same_arms(got, ref.oful(th, X, eta, budget=budget, **kw))


def test_oful_default_delta_is_one_over_T(x64):
    th, X, eta = _stream(22, 100)
    got = replay_run(jb.oful(100, D, R=0.5), th, X, eta, 0.0)
    assert_same_arms(got, ref.oful(th, X, eta, R=0.5, delta=1.0 / 100))


@pytest.mark.parametrize("lam, beta, budget", [(1.0, 1.0, 0.0), (0.5, 2.0, 50.0), (3.0, 0.0, 0.0)])
def test_oful_constant_radius_matches_reference(x64, lam, beta, budget):
    th, X, eta = _stream(23, T_RIDGE)
    got = oful_const(th, X, eta, budget, lam, beta, T=T_RIDGE)
    assert_same_arms(got, ref.cw_oful(th, X, eta, lam=lam, beta=beta, alpha=np.inf, budget=budget))


@pytest.mark.parametrize(
    "lam, beta, alpha, budget, noise",
    [
        (1.0, 1.5, 0.2, 50.0, "t3"),  # the public CW-OFUL notebook's constants
        (0.5, 1.0, 0.05, 100.0, "t3"),
        (2.0, 0.7, 1.0, 20.0, "gauss"),
        (1.0, 1.5, np.inf, 50.0, "t3"),  # α = ∞: every weight 1, OFUL
    ],
)
def test_cw_oful_constants_match_reference(x64, lam, beta, alpha, budget, noise):
    th, X, eta = _stream(24, T_RIDGE, noise)
    got = cw_const(th, X, eta, budget, lam, beta, alpha, T=T_RIDGE)
    assert_same_arms(got, ref.cw_oful(th, X, eta, lam=lam, beta=beta, alpha=alpha, budget=budget))


@pytest.mark.parametrize(
    "C, budget, known, R, lam, beta_scale",
    [
        (50.0, 50.0, True, 1.0, 1.0, 1.0),  # Theorem 4.2, C known
        (0.0, 0.0, True, 1.0, 1.0, 1.0),  # C = 0: α = ∞, OFUL with a constant radius
        (100.0, 40.0, False, 0.5, 4.0, 0.5),  # Theorem 4.9, C̄ ≥ C
        (10.0, 40.0, False, 1.0, 1.0, 1.0),  # C̄ < C
    ],
)
def test_cw_oful_theory_constants_match_reference(x64, C, budget, known, R, lam, beta_scale):
    th, X, eta = _stream(25, T_RIDGE)
    got = cw_theory(th, X, eta, budget, C, R, lam, beta_scale, T=T_RIDGE, known=known)
    assert_same_arms(
        got,
        ref.cw_oful_theory(th, X, eta, C=C, known=known, R=R, lam=lam, beta_scale=beta_scale, budget=budget),
    )


def test_cw_oful_unknown_corruption_defaults_to_sqrt_T(x64):
    th, X, eta = _stream(26, 200)
    got = replay_run(jb.cw_oful(200, D), th, X, eta, 30.0)
    assert_same_arms(got, ref.cw_oful_theory(th, X, eta, C=None, known=False, budget=30.0))


def test_cw_oful_weights_use_the_gram_matrix_before_the_update(x64):
    # One update from Σ₀ = λI: w = min(1, α√λ/‖x‖), so Σ₁ = λI + w xxᵀ and b₁ = w r x exactly.
    lam, alpha = 2.0, 0.3
    x = jnp.asarray([0.6, 0.8] + [0.0] * (D - 2))
    alg = jb.cw_oful(50, D, lam=lam, beta=1.0, alpha=alpha)
    state = alg.update(alg.init(), x, jnp.asarray(1.7), jnp.nan)
    w = min(1.0, alpha * np.sqrt(lam) / 1.0)
    np.testing.assert_allclose(
        np.linalg.inv(np.asarray(state.Sigma_inv)), lam * np.eye(D) + w * np.outer(x, x), atol=1e-12
    )
    np.testing.assert_allclose(np.asarray(state.b), w * 1.7 * np.asarray(x), atol=1e-15)


# ------------------------------------------------------------------------------------------------
# The refit: against a SciPy solve of the constrained problem, in float64
# ------------------------------------------------------------------------------------------------


def _problem(seed, n, d=6, rows=400, junk=True):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    th = rng.normal(size=d)
    th *= 0.9 / np.linalg.norm(th)
    r = X @ th + 2.0 * rng.standard_t(2.0, size=n)
    sigma = rng.uniform(0.5, 2.0, size=n)
    tau = rng.uniform(0.3, 3.0, size=n)
    N = rr.buffer_rows(rows)
    fill = (lambda shape: rng.normal(size=shape) * 50.0) if junk else np.zeros
    pad = lambda a, shape: np.concatenate([a, fill((N - n,) + shape[1:])])
    hist = rr.History(
        XT=jnp.asarray(pad(X, (n, d)).T),
        r=jnp.asarray(pad(r, (n,))),
        sigma=jnp.asarray(np.concatenate([sigma, np.ones(N - n)])),
        tau=jnp.asarray(np.concatenate([tau, np.ones(N - n)])),
        filled=jnp.asarray(n, jnp.int32),
    )
    return X, r, sigma, tau, hist


@functools.partial(jax.jit, static_argnames="kind")
def _refit(theta0, hist, reg, radius, *, kind):
    _count(f"refit_{kind}")
    return rr.refit(theta0, hist, reg, radius, rr.huber if kind == "huber" else rr.pseudo_huber)


@pytest.mark.parametrize("kind", ["huber", "pseudo_huber"])
@pytest.mark.parametrize(
    "n, S, reg",
    [(1, 1.0, 0.1), (7, 1.0, 0.1), (60, 1.0, 1.0), (300, 0.5, 0.05), (300, 5.0, 0.05), (257, 1.0, 1e-3)],
)
def test_refit_matches_scipy_constrained_solve(x64, kind, n, S, reg):
    X, r, sigma, tau, hist = _problem(7 * n + int(10 * S) + (kind == "huber"), n)
    exact = ref.robust_fit(X, r, sigma, tau, reg, S, kind)
    for theta0 in (np.zeros(6), np.full(6, 0.3)):  # the warm start does not matter
        fit = _refit(jnp.asarray(theta0), hist, reg, S, kind=kind)
        assert int(fit.iters) < 50
        np.testing.assert_allclose(np.asarray(fit.theta), exact, rtol=0, atol=1e-9)
    assert np.linalg.norm(exact) <= S * (1 + 1e-12)

    # The KKT reference itself against SciPy's SLSQP on the constrained problem.
    def fun(th):
        return ref.robust_objective(th, X, r, sigma, tau, reg, kind)[:2]

    slsqp = minimize(
        fun,
        np.zeros(6),
        jac=True,
        method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda th: S**2 - th @ th, "jac": lambda th: -2 * th}],
        options={"ftol": 1e-14, "maxiter": 1000},
    )
    assert fun(exact)[0] <= fun(slsqp.x)[0] + 1e-9 * (1 + abs(fun(slsqp.x)[0]))
    np.testing.assert_allclose(exact, slsqp.x, atol=1e-4)


@pytest.mark.parametrize("case", ["inside", "outside", "cholesky fails"])
def test_newton_direction_inside_outside_and_where_cholesky_fails(x64, case):
    """The refit's projected-Newton target against a float64 NumPy computation: the Newton point θ − H⁻¹g
    inside the ball; its H-norm projection onto the ball outside (KKT: H(θ̄ − θ̃) + μθ̄ = 0, μ ≥ 0,
    ‖θ̄‖ = S); and where H is not numerically positive definite (a Cholesky factor of NaN), the Newton
    point from the eigendecomposition with eigenvalues floored at reg."""
    rng = np.random.default_rng(3)
    d, reg = 4, 0.5
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    eig = np.array([4.0, 2.0, 1.0, -1e-3 if case == "cholesky fails" else 0.7])
    H = (Q * eig) @ Q.T
    theta = 0.1 * rng.normal(size=d)
    g = rng.normal(size=d)
    floored = (Q * np.maximum(eig, reg)) @ Q.T
    newton = theta - np.linalg.solve(floored, g)
    S = 0.5 * np.linalg.norm(newton) if case == "outside" else 2.0 * np.linalg.norm(newton)
    point = rr.Point(jnp.asarray(theta), jnp.asarray(0.0), jnp.asarray(g), jnp.asarray(H))
    target, delta, step = jax.jit(rr._direction, static_argnums=3)(point, reg, S, 30)
    target = np.asarray(target, np.float64)
    tol = 1e-12 if x64 else 1e-5
    if case != "outside":
        np.testing.assert_allclose(target, newton, rtol=tol, atol=tol)
    else:
        assert abs(np.linalg.norm(target) - S) <= tol * S
        residual = H @ (target - newton)
        mu = -residual @ target / (target @ target)
        assert mu > 0
        np.testing.assert_allclose(residual + mu * target, 0.0, atol=10 * tol * np.linalg.norm(residual))
    np.testing.assert_allclose(np.asarray(delta), target - theta, rtol=tol, atol=tol)
    np.testing.assert_allclose(float(step), np.linalg.norm(target - theta), rtol=tol, atol=tol)


def test_refit_does_not_recompile_for_new_data(x64):
    for seed in range(3):
        _, _, _, _, hist = _problem(seed, 10 + seed)
        _refit(jnp.zeros(6), hist, 0.1 + seed, 1.0, kind="huber")
    assert TRACES["refit_huber"] == 1


@pytest.mark.parametrize("kind", ["huber", "pseudo_huber"])
def test_warm_start_carried_across_rounds_is_exact(x64, kind):
    """GAdaOFUL's warm start: the point a refit returns, brought up to date by add_row, holds the value,
    gradient and Hessian of the objective over the longer history, and solve from it reaches the
    constrained minimiser of that history (against the SciPy reference), in one pass or two."""
    loss = rr.huber if kind == "huber" else rr.pseudo_huber
    X, r, sigma, tau, hist = _problem(11, 120, junk=False)
    short = hist._replace(filled=jnp.asarray(119, jnp.int32))
    first = rr.refit(jnp.zeros(6), short, 0.1, 1.0, loss)
    carried = rr.add_row(first.point, X[119], r[119], sigma[119], tau[119], loss)
    z = (r - X @ np.asarray(first.point.theta)) / sigma
    rho, d1, d2 = ref.loss_terms(z, tau, kind)
    th = np.asarray(first.point.theta)
    np.testing.assert_allclose(float(carried.value), 0.05 * th @ th + rho.sum(), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(carried.grad), 0.1 * th - X.T @ (d1 / sigma), atol=1e-10)
    np.testing.assert_allclose(
        np.asarray(carried.hess), 0.1 * np.eye(6) + (X * (d2 / sigma**2)[:, None]).T @ X, atol=1e-10
    )
    fit = rr.solve(carried, hist, 0.1, 1.0, loss)
    np.testing.assert_allclose(
        np.asarray(fit.theta), ref.robust_fit(X, r, sigma, tau, 0.1, 1.0, kind), rtol=0, atol=1e-9
    )
    assert 1 <= int(fit.passes) <= 3 and float(fit.step) <= 1e-10
    # the initial point is the objective over an empty history at θ = 0
    start = rr.initial_point(6, 0.1, jnp.float64)
    empty = hist._replace(filled=jnp.asarray(0, jnp.int32))
    for a, b in zip(start, rr.evaluate(jnp.zeros(6), empty, 0.1, loss)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _numpy_tree_sum(values: np.ndarray) -> np.floating:
    """The sum of a 1-D float32 array by the halving tree, written recursively: the length padded to even
    with a zero, element i plus element i + n/2, then the sum of those n/2 partial sums the same way;
    every add rounds to float32."""
    if values.size == 1:
        return values[0]
    if values.size % 2:
        values = np.append(values, np.float32(0.0))
    h = values.size // 2
    firsts = values[:h] + values[h:]
    return _numpy_tree_sum(firsts)


@pytest.mark.parametrize("n", [1, 2, 7, 256, 300])
def test_pairwise_sum_is_the_halving_tree_along_either_axis(n):
    """pairwise_sum's order is the halving tree (level by level: element i plus element i + n/2), bitwise,
    along the leading and the last axis alike (the history sums use the last, contiguous one)."""
    rng = np.random.default_rng(n)
    x = (rng.standard_cauchy(size=(n, 5)) * 10.0 ** rng.integers(-6, 6, size=(n, 5))).astype(np.float32)
    expected = np.array([_numpy_tree_sum(x[:, j]) for j in range(5)], np.float32)
    along_rows = np.asarray(jax.jit(rr.pairwise_sum)(jnp.asarray(x)))
    along_last = np.asarray(jax.jit(lambda a: rr.pairwise_sum(a, axis=1))(jnp.asarray(x.T)))
    np.testing.assert_array_equal(along_rows, expected)
    np.testing.assert_array_equal(along_last, expected)
    for bad in (2, -3, 1.0, True):
        with pytest.raises(ValueError, match=r"axis=.* is invalid: it must be an integer in \[-2, 1\]"):
            rr.pairwise_sum(jnp.asarray(x), axis=bad)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("horizon", [600, 100, 37])
def test_history_sums_in_pieces_are_the_halving_tree_of_each_block(dtype, horizon):
    """value_grad_hess adds a block's rows in pieces (for speed); its sums must be bitwise those of the
    plain definition: per block, the halving tree over the rows of the rounded per-row terms ρ_s,
    X_s·ρ'_s/σ_s and (X_si X_sj)·ρ''_s/σ_s², blocks added in order, under vmap as alone."""
    with jax.enable_x64(dtype == "float64"):
        rng = np.random.default_rng(horizon)
        d, n = 5, rr.buffer_rows(horizon)
        hist = rr.History(
            XT=jnp.asarray(rng.normal(size=(3, d, n)), dtype),
            r=jnp.asarray(3.0 * rng.standard_t(2.0, size=(3, n)), dtype),
            sigma=jnp.asarray(rng.uniform(0.5, 2.0, size=(3, n)), dtype),
            tau=jnp.asarray(rng.uniform(0.5, 3.0, size=(3, n)), dtype),
            filled=jnp.asarray([horizon, horizon // 2 + 1, 1], jnp.int32),
        )
        theta = jnp.asarray(0.3 * rng.normal(size=(3, d)), dtype)
        got = jax.vmap(lambda th, h: rr.value_grad_hess(th, h, 0.5, rr.pseudo_huber))(theta, hist)
        block = min(rr.BLOCK, n)
        pairs = [(i, j) for i in range(d) for j in range(i, d)]

        @functools.partial(jax.jit, static_argnums=2)
        def definition(th, h, blocks):
            f, g, H = jnp.zeros((), dtype), jnp.zeros(d, dtype), jnp.zeros(len(pairs), dtype)
            for b in range(blocks):
                XT, r, s, tau, mask = rr.block_rows(h, b, block)
                rho, w1, w2 = rr._block_terms(th, XT, r, s, tau, mask, rr.pseudo_huber)
                X = XT.T
                cross = jnp.stack([X[:, i] * X[:, j] for i, j in pairs], axis=1)
                terms = jnp.concatenate([rho[:, None], X * w1[:, None], cross * w2[:, None]], axis=1)
                sums = rr.pairwise_sum(rr.rounded(terms))
                f, g, H = f + sums[0], g - sums[1 : d + 1], H + sums[d + 1 :]
            value = f + rr.rounded(0.25 * rr.rounded_dot(th, th))
            return (
                value,
                g + rr.rounded(0.5 * th),
                rr._symmetric_from_upper(H, d) + 0.5 * jnp.eye(d, dtype=dtype),
            )

        for run in range(3):
            h = jax.tree.map(lambda a: a[run], hist)
            expected = definition(theta[run], h, -(-int(h.filled) // block))
            for a, b in zip(got, expected):
                np.testing.assert_array_equal(np.asarray(a[run]), np.asarray(b))


def test_block_residuals_sum_each_row_in_index_order():
    """A block's standardised residuals z_s = (r_s − ⟨X_s, θ⟩)/σ_s, its contexts held by component: the
    products X_si·θ_i rounded to float32 and added in index order (i = 0, 1, …), as a float32 NumPy loop
    does, bitwise — alone and under vmap (the order the batch-invariant sums rely on)."""
    rng = np.random.default_rng(11)
    d, n = 7, 48
    XT = rng.normal(size=(3, d, n)).astype(np.float32)
    theta = rng.normal(size=(3, d)).astype(np.float32)
    r = (5.0 * rng.standard_t(2.0, size=(3, n))).astype(np.float32)
    s = rng.uniform(0.5, 2.0, size=(3, n)).astype(np.float32)
    mask = np.ones(n, bool)

    def residuals(XT, theta, r, s):
        identity = lambda z, tau: (z, z, z)  # the loss's value is z itself
        return rr._block_terms(theta, XT, r, s, jnp.ones_like(r), mask, identity)[0]

    batched = np.asarray(jax.jit(jax.vmap(residuals))(XT, theta, r, s))
    for run in range(3):
        acc = XT[run, 0] * theta[run, 0]
        for i in range(1, d):
            acc = acc + XT[run, i] * theta[run, i]
        expected = (r[run] - acc) / s[run]
        alone = np.asarray(jax.jit(residuals)(XT[run], theta[run], r[run], s[run]))
        np.testing.assert_array_equal(alone, expected)
        np.testing.assert_array_equal(batched[run], expected)


@pytest.mark.parametrize("kind", ["huber", "pseudo_huber"])
def test_refit_in_float32_is_close_to_float64(kind):
    with jax.enable_x64(True):
        X, r, sigma, tau, hist64 = _problem(5, 200, junk=False)
        exact = ref.robust_fit(X, r, sigma, tau, 0.1, 1.0, kind)
    hist32 = rr.History(
        *(jnp.asarray(np.asarray(a), jnp.float32) for a in hist64[:4]), filled=jnp.asarray(200, jnp.int32)
    )
    fit = rr.refit(
        jnp.zeros(6, jnp.float32), hist32, 0.1, 1.0, rr.huber if kind == "huber" else rr.pseudo_huber
    )
    assert fit.theta.dtype == jnp.float32
    np.testing.assert_allclose(np.asarray(fit.theta), exact, atol=1e-4)


# ------------------------------------------------------------------------------------------------
# Heavy-OFUL and GAdaOFUL: every arm equal to the reference's
# ------------------------------------------------------------------------------------------------

T_ROBUST = 200


@pytest.mark.parametrize(
    "eps, nu, beta_scale, noise, budget",
    [
        (1.0, 3**0.5, 1e-3, "t3", 20.0),
        (0.4, 15 ** (1 / 1.4), 1e-2, "pareto", 0.0),
    ],
)
def test_heavy_oful_matches_reference(x64, eps, nu, beta_scale, noise, budget):
    th, X, eta = _stream(31, T_ROBUST, noise, norm=0.6)
    got = heavy_const_nu(th, X, eta, budget, eps, nu, beta_scale, T=T_ROBUST)
    assert_same_arms(got, ref.heavy_oful(th, X, eta, eps=eps, nu=nu, beta_scale=beta_scale, budget=budget))


def test_heavy_oful_revealed_nu_matches_reference(x64):
    th, X, eta = _stream(32, T_ROBUST, "gauss", norm=0.6)
    nus = np.exp(np.random.default_rng(3).uniform(-1.0, 1.0, size=T_ROBUST))
    eta = eta * nus
    got = heavy_revealed(th, X, eta, nus, 10.0, 0.8, 1.0, 2.0, T=T_ROBUST)
    assert_same_arms(
        got, ref.heavy_oful(th, X, eta, eps=0.8, nu=None, nus=nus, beta=1.0, lam=2.0, budget=10.0)
    )


@pytest.mark.parametrize(
    "constants, nu, C, beta_scale, budget",
    [
        ("public", 3**0.5, 100.0, 1.0, 50.0),  # √C κ^{-1/4} is the larger term of α_C here
        ("public_identity", 1.0, 100.0, 1.0, 50.0),  # α_C = 1 whatever C
        ("theory", 3**0.5, 20.0, 3e-3, 20.0),
    ],
)
def test_gadaoful_matches_reference(x64, constants, nu, C, beta_scale, budget):
    th, X, eta = _stream(33, T_ROBUST, norm=0.6)
    got = gada(th, X, eta, budget, nu, C, beta_scale, T=T_ROBUST, constants=constants)
    assert_same_arms(
        got,
        ref.gadaoful(
            th,
            X,
            eta,
            nu=nu,
            C=C,
            constants=constants,
            beta_scale=beta_scale,
            budget=budget,
            arm_rule="ellipsoid",
        ),
    )


def test_gadaoful_ellipsoid_ball_rule_matches_the_authors_slsqp_rule(x64):
    """The authors' presets default to arm_rule="ellipsoid_ball", which picks, every round, the arm whose
    maximum of ⟨x, θ⟩ over the confidence ellipsoid and the ball ‖θ‖ ≤ S is largest, as SLSQP per arm
    finds it (the authors' rule); with a radius that reaches past the ball it differs from the
    ellipsoid-only rule. Contexts of unequal norms:
    with unit contexts every arm whose ball maximiser lies in the ellipsoid would tie at S."""
    T = 30
    th, X, eta = _stream(36, T, norm=0.95)
    X = X * np.random.default_rng(1).uniform(0.3, 1.0, size=(T, K, 1))
    got = gada_identity(th, X, eta, 5.0, 6.0, T=T, arm_rule=None)  # the preset's default: the authors' rule
    want = ref.gadaoful(
        th,
        X,
        eta,
        nu=1.0,
        C=0.0,
        constants="public_identity",
        beta=6.0,
        budget=5.0,
        arm_rule="ellipsoid_ball",
    )
    assert_same_arms(got, want)
    ellipsoid_only = gada_identity(th, X, eta, 5.0, 6.0, T=T, arm_rule="ellipsoid")
    assert np.sum(np.asarray(ellipsoid_only[0]) != want[0]) >= 5


def test_new_hyperparameter_values_do_not_recompile(x64):
    th, X, eta = _stream(34, T_ROBUST, norm=0.6)
    cw_const(th, X, eta, 0.0, 1.0, 1.5, 0.2, T=T_ROBUST)
    gada(th, X, eta, 0.0, 1.0, 0.0, 1.0, T=T_ROBUST, constants="public")
    before = dict(TRACES)
    for i in range(2):
        cw_const(th, X, eta * (i + 2), 10.0 * i, 0.5 + i, 2.0 + i, 0.1 * (i + 1), T=T_ROBUST)
        gada(th, X, eta, 5.0 * i, 2.0 + i, 3.0 * i, 0.5 + i, T=T_ROBUST, constants="public")
    assert TRACES["cw_const"] == before["cw_const"]
    assert TRACES["gada_public"] == before["gada_public"]


# ------------------------------------------------------------------------------------------------
# Learning: clearly sublinear regret on an easy Gaussian problem (float32, the default)
# ------------------------------------------------------------------------------------------------

T_EASY, D_EASY, SEEDS = 400, 5, 6


def _easy_streams():
    rng = np.random.default_rng(2024)
    th = rng.normal(size=(SEEDS, D_EASY))
    th /= np.linalg.norm(th, axis=1, keepdims=True)
    X = rng.normal(size=(SEEDS, T_EASY, K, D_EASY))
    X /= np.linalg.norm(X, axis=-1, keepdims=True)
    eta = 0.5 * rng.normal(size=(SEEDS, T_EASY))
    return th, X, eta


EASY = {
    "oful": lambda: jb.oful(T_EASY, D_EASY, R=0.5),
    "cw_oful": lambda: jb.cw_oful(T_EASY, D_EASY, lam=1.0, beta=1.5, alpha=0.2),
    "heavy_oful": lambda: jb.heavy_oful(T_EASY, D_EASY, eps=1.0, nu=0.5, beta=1.0),
    "gadaoful": lambda: jb.gadaoful(T_EASY, D_EASY, nu=0.5, corruption=0.0),
}


@pytest.mark.parametrize("name", list(EASY))
def test_regret_is_clearly_sublinear_on_an_easy_problem(name):
    alg = EASY[name]()

    @jax.jit
    @jax.vmap
    def regret(th, X, eta):
        env = jb.envs.replay(theta_star=th, contexts=X, noise=eta)
        return jb.simulate(alg, env, jax.random.key(0), horizon=T_EASY).regret

    r = np.asarray(regret(*(jnp.asarray(a, jnp.float32) for a in _easy_streams())))
    assert r.dtype == np.float32 and np.all(np.isfinite(r))
    first, second = r[:, : T_EASY // 2].sum(), r[:, T_EASY // 2 :].sum()
    assert second < 0.5 * first, (first, second)
    # and far below a policy that ignores the data (mean gap of a random arm ≈ E max − E mean)
    _, X, _ = _easy_streams()
    th = _easy_streams()[0]
    means = np.einsum("stkd,sd->stk", X, th)
    random_regret = (means.max(-1) - means.mean(-1)).sum()
    assert r.sum() < 0.2 * random_regret


# ------------------------------------------------------------------------------------------------
# Eager validation
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: jb.oful(0, D), "horizon=0"),
        (lambda: jb.oful(100, D, lam=0.0), r"lam=0\.0.*\(0, inf"),
        (lambda: jb.oful(100, D, beta=-1.0), "beta=-1.0"),
        (lambda: jb.oful(100, D, delta=1.0), r"delta=1\.0.*\(0, 1\)"),
        (lambda: jb.oful(100, D, R=np.nan), "R=nan"),
        (lambda: jb.cw_oful(100, D, alpha=0.0), r"alpha=0\.0"),
        (lambda: jb.cw_oful(100, D, corruption=-1.0), r"corruption=-1\.0.*\[0, inf"),
        (lambda: jb.cw_oful(100, D, beta_scale=0.0), "beta_scale=0.0"),
        (lambda: jb.cw_oful(100, D, known_corruption="yes"), "known_corruption"),
        (lambda: jb.heavy_oful(100, D, eps=1.5, nu=1.0), r"eps=1\.5.*\(0, 1\]"),
        (lambda: jb.heavy_oful(100, D, eps=1.0, nu="known"), "nu='known'"),
        (lambda: jb.heavy_oful(100, D, eps=1.0, nu=-2.0), "nu=-2.0"),
        (lambda: jb.heavy_oful(100, D, eps=1.0, nu=1.0, tol=0.0), "tol=0.0"),
        (lambda: jb.heavy_oful(100, D, eps=1.0, nu=1.0, max_newton_iters=0), "max_newton_iters=0"),
        (lambda: jb.gadaoful(100, D, nu=1.0, corruption=0.0, constants="paper"), "constants='paper'"),
        (lambda: jb.gadaoful(100, D, nu=1.0, corruption=0.0, arm_rule="ball"), "arm_rule='ball'"),
        (lambda: jb.gadaoful(100, D, nu=1.0, corruption=np.inf), "corruption=inf"),
        (lambda: jb.gadaoful(100, D, nu=1.0, corruption=0.0, m0=0.0), "m0=0.0"),
        (
            lambda: jb.gadaoful(100, D, nu=1.0, corruption=0.0, lam=[1.0, -1.0]),
            r"lam=.*-1\.0.*an element of lam",
        ),
    ],
)
def test_factories_reject_invalid_values(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_alpha_may_be_infinite_and_revealed_nu_is_flagged():
    assert not jb.cw_oful(10, D, alpha=np.inf).uses_revealed_nu
    assert jb.heavy_oful(10, D, eps=1.0, nu="revealed").uses_revealed_nu
    assert jb.gadaoful(10, D, nu="revealed", corruption=1.0).uses_revealed_nu
    assert not jb.gadaoful(10, D, nu=1.0, corruption=1.0).uses_revealed_nu
    env = jb.envs.linear(D, 4, noise=jb.noise.gaussian())  # reveals no ν_t
    with pytest.raises(ValueError, match="nu='revealed'"):
        jb.simulate(jb.gadaoful(10, D, nu="revealed", corruption=0.0), env, 0, horizon=10)


def test_states_have_final_dtypes_and_shapes():
    for alg in (
        jb.oful(30, 4),
        jb.cw_oful(30, 4, beta=1.0, alpha=0.5),
        jb.heavy_oful(300, 4, eps=0.5, nu=1.0),
        jb.gadaoful(300, 4, nu=1.0, corruption=1.0),
    ):
        state = alg.init()
        assert state.t.dtype == jnp.int32
        for leaf in jax.tree_util.tree_leaves(state)[:-1]:
            assert leaf.dtype == jnp.float32
    state = jb.gadaoful(300, 4, nu=1.0, corruption=1.0).init()
    assert state.XT_hist.shape == (4, rr.buffer_rows(300)) and rr.buffer_rows(300) >= 300
    assert state.X_hist.shape == (rr.buffer_rows(300), 4)
