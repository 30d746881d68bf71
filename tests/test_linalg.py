"""Shared linear algebra: Sherman–Morrison against a direct inverse, the V-norm projection's KKT."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from reference import project_v_ball

from jaxbandit.core.linalg import (
    TIE_ULPS,
    argmax_lowest,
    ellipsoid_norm,
    project_ball_in_metric,
    sherman_morrison,
    sherman_morrison_given,
)
from jaxbandit.core.linalg import dot as linalg_dot


def random_spd(rng, d, spread):
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    eig = np.exp(rng.uniform(0, np.log(spread), size=d))
    return (Q * eig) @ Q.T


def kkt_residuals(theta, theta_tilde, V, S):
    """Stationarity V(θ − θ̃) + μθ = 0 with μ ≥ 0, feasibility, complementary slackness."""
    g = V @ (theta - theta_tilde)
    n = np.linalg.norm(theta)
    mu = -float(g @ theta) / max(n * n, 1e-300)
    stationarity = np.linalg.norm(g + mu * theta) / max(np.linalg.norm(g), 1e-300)
    return mu, stationarity, n


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize(
    "d, spread, iters", [(10, 10.0, 8), (10, 1e4, 8), (10, 1e6, 11), (3, 1e4, 8), (24, 1e3, 8)]
)  # d = 24 takes the LAPACK path
def test_projection_kkt_outside(x64, seed, d, spread, iters):
    rng = np.random.default_rng(seed)
    S = 1.0
    V = random_spd(rng, d, spread)
    theta_tilde = rng.normal(size=d) * np.exp(rng.uniform(-2, 2, size=d))
    theta_tilde *= rng.uniform(1.01, 100.0) / np.linalg.norm(theta_tilde)
    A = np.linalg.inv(V)
    theta = np.asarray(project_ball_in_metric(jnp.asarray(theta_tilde), jnp.asarray((A + A.T) / 2), S, iters))
    mu, stationarity, n = kkt_residuals(theta, theta_tilde, V, S)
    # solving with I + μA costs about cond·eps of accuracy; exact to 1e-12 up to cond 1e4
    tol = max(1e-12, 1e-16 * spread)
    assert mu > 0
    assert abs(n - S) <= tol
    assert stationarity <= 1e3 * tol
    np.testing.assert_allclose(theta, project_v_ball(theta_tilde, V, S), rtol=0, atol=1e2 * tol)


def test_projection_identity_inside_the_ball(x64):
    rng = np.random.default_rng(0)
    V = random_spd(rng, 6, 100.0)
    theta_tilde = rng.normal(size=6)
    theta_tilde *= 0.9 / np.linalg.norm(theta_tilde)
    out = project_ball_in_metric(jnp.asarray(theta_tilde), jnp.asarray(np.linalg.inv(V)), 1.0)
    np.testing.assert_array_equal(np.asarray(out), theta_tilde)


@settings(max_examples=40, deadline=None)
@example(seed=414, scale=1.5, S=4.0, log_spread=4.0)  # once beyond a tolerance not derived from the bounds
@given(
    seed=st.integers(0, 10**6),
    scale=st.floats(0.01, 100.0),
    S=st.floats(0.1, 10.0),
    log_spread=st.floats(0.0, 6.0),
)
def test_projection_properties(seed, scale, S, log_spread):
    """KKT (float32 precision), idempotence and the identity inside the ball, for random inputs."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 12))
    V = random_spd(rng, d, 10**log_spread)
    A = jnp.asarray(np.linalg.inv(V), jnp.float32)
    theta_tilde = jnp.asarray(rng.normal(size=d) * scale, jnp.float32)
    theta = project_ball_in_metric(theta_tilde, A, S)
    n = float(jnp.linalg.norm(theta))
    assert n <= S * (1 + 1e-6)
    if float(jnp.linalg.norm(theta_tilde)) <= S:
        np.testing.assert_array_equal(np.asarray(theta), np.asarray(theta_tilde))
    else:
        # float32 accuracy is limited by forming I + μA: relative error about d·eps·μ‖A‖ (the documented
        # bound), with μ the exact multiplier of the problem float32 actually poses.
        V32 = np.linalg.inv(np.asarray(A, np.float64))
        V32 = (V32 + V32.T) / 2
        tt = np.asarray(theta_tilde, np.float64)
        exact = project_v_ball(tt, V32, S)
        mu = -float((V32 @ (exact - tt)) @ exact) / (S * S)
        bound = 1e-6 + 4 * d * np.finfo(np.float32).eps * mu * np.linalg.norm(np.asarray(A, np.float64), 2)
        assert abs(n - S) <= bound * S
        np.testing.assert_allclose(np.asarray(theta), exact, atol=10 * bound * max(S, 1.0))

        def objective(th):
            return float((th - tt) @ V32 @ (th - tt))

        # f(θ) − f(θ*) = −2μ θ*ᵀδ + δᵀVδ for δ = θ − θ* (KKT: V(θ* − θ̃) = −μθ*), and θ*ᵀδ =
        # (‖θ‖² − S² − ‖δ‖²)/2: with the two bounds asserted above, the excess is at most
        # 2μS·|‖θ‖ − S| + (μ + ‖V‖)‖δ‖².
        delta_max = d * (10 * bound * max(S, 1.0)) ** 2
        excess = 2 * mu * S * (bound * S) + (mu + np.linalg.norm(V32, 2)) * delta_max
        assert objective(np.asarray(theta, np.float64)) <= objective(exact) + excess + 1e-9
    again = project_ball_in_metric(theta, A, S)  # idempotent: a feasible point stays put
    np.testing.assert_allclose(np.asarray(again), np.asarray(theta), atol=1e-5 * S)


def test_projection_runs_stop_on_their_own_under_vmap():
    """Each run of a batch stops Newton when it converges: a batch mixing a run inside the ball, a
    barely-outside well-conditioned run and a far-outside ill-conditioned one (many iterations) gives
    every run bitwise the answer it gets alone, and the slow run as accurate as the exact projection."""
    rng = np.random.default_rng(11)
    d = 10
    Vs = [random_spd(rng, d, 2.0), random_spd(rng, d, 2.0), random_spd(rng, d, 1e3)]
    tts = []
    for scale in (0.5, 1.001, 50.0):
        t = rng.normal(size=d)
        tts.append(t * scale / np.linalg.norm(t))
    A = jnp.asarray(np.stack([np.linalg.inv(V) for V in Vs]), jnp.float32)
    A = (A + jnp.swapaxes(A, 1, 2)) / 2
    tt = jnp.asarray(np.stack(tts), jnp.float32)
    batched = np.asarray(jax.vmap(project_ball_in_metric, in_axes=(0, 0, None))(tt, A, 1.0))
    for i in range(3):
        alone = np.asarray(project_ball_in_metric(tt[i], A[i], 1.0))
        np.testing.assert_array_equal(batched[i], alone)
    np.testing.assert_array_equal(batched[0], np.asarray(tt[0]))
    V2 = np.linalg.inv(np.asarray(A[2], np.float64))
    exact = project_v_ball(np.asarray(tt[2], np.float64), (V2 + V2.T) / 2, 1.0)
    np.testing.assert_allclose(batched[2], exact, atol=1e-4)


@pytest.mark.parametrize("d", [4, 20])
def test_newton_steps_peeled_before_the_loop_change_no_bit(d):
    """The trace option ``peeled_newton_steps`` (a GPU's option: Newton steps made by every run before
    the projection's loop) gives bitwise the loop's answers, in a batch mixing runs inside, barely outside
    and far outside (many iterations) and for a run alone; unrolled factorisations (d = 4 ≤
    ``UNROLL_MAX_DIM``, small: each program compiles in a second, not three as at d = 10) and LAPACK's
    (d = 20)."""
    from jaxbandit.core.lowering import options

    rng = np.random.default_rng(5)
    Vs = [random_spd(rng, d, spread) for spread in (2.0, 2.0, 1e3, 50.0)]
    tts = [
        t * scale / np.linalg.norm(t) for t, scale in zip(rng.normal(size=(4, d)), (0.5, 1.001, 50.0, 3.0))
    ]
    A = jnp.asarray(np.stack([np.linalg.inv(V) for V in Vs]), jnp.float32)
    A = (A + jnp.swapaxes(A, 1, 2)) / 2
    tt = jnp.asarray(np.stack(tts), jnp.float32)
    project = jax.vmap(project_ball_in_metric, in_axes=(0, 0, None))
    loop, loop_alone = np.asarray(project(tt, A, 1.0)), np.asarray(project_ball_in_metric(tt[3], A[3], 1.0))
    assert not np.array_equal(loop[1:], np.asarray(tt[1:]))  # runs outside moved
    for peel in (1, 2):
        with options.tracing(peeled_newton_steps=peel):
            np.testing.assert_array_equal(np.asarray(project(tt, A, 1.0)), loop)
            np.testing.assert_array_equal(np.asarray(project_ball_in_metric(tt[3], A[3], 1.0)), loop_alone)
            peeled = jax.make_jaxpr(lambda *args: project(*args))(tt, A, 1.0)  # a new function: a new trace
        assert str(peeled) != str(jax.make_jaxpr(lambda *args: project(*args))(tt, A, 1.0))
    with pytest.raises(ValueError, match=r"options\.peeled_newton_steps=-1 is invalid"):
        with options.tracing(peeled_newton_steps=-1):
            pass


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), weight=st.floats(1e-6, 1e3))
def test_sherman_morrison_matches_direct_inverse(seed, weight):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 12))
    V = random_spd(rng, d, 100.0)
    u = rng.normal(size=d)
    A = np.linalg.inv(V)
    A = (A + A.T) / 2
    with jax.enable_x64(True):
        got = np.asarray(sherman_morrison(jnp.asarray(A), jnp.asarray(u), weight))
    want = np.linalg.inv(V + weight * np.outer(u, u))
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-12 * np.abs(want).max())
    np.testing.assert_array_equal(got, got.T)


def test_an_update_that_would_overflow_leaves_the_inverse_as_it_was():
    """The guard decides from O(d) numbers; checked against the update made entry by entry in NumPy."""
    A = np.diag(np.float32([1e-3, 2e-3, 5e-4])) + np.float32(1e-4)
    cases = {  # v, q, weight (c = 1/(1/weight + q))
        "overflows": (np.float32([1e20, 1.0, -2.0]), 0.0, 1.0),
        "large but finite": (np.float32([1e18, 1.0, -2.0]), 0.0, 1.0),
        "nan": (np.float32([np.nan, 1.0, 0.0]), 0.0, 1.0),
        "infinite weight": (np.float32([0.0, 0.0, 0.0]), 0.0, np.inf),  # c = 1/0, 0·inf
        "ordinary": (np.float32([0.3, -0.1, 0.2]), 0.05, 2.0),
    }
    vs = np.stack([c[0] for c in cases.values()])
    qs = np.float32([c[1] for c in cases.values()])
    ws = np.float32([c[2] for c in cases.values()])
    batched, _ = jax.jit(jax.vmap(sherman_morrison_given, in_axes=(None, 0, 0, 0)))(A, vs, qs, ws)
    for i, label in enumerate(cases):
        single, _ = jax.jit(sherman_morrison_given)(A, vs[i], qs[i], ws[i])
        np.testing.assert_array_equal(np.asarray(batched[i]), np.asarray(single), err_msg=label)
        with np.errstate(all="ignore"):
            c = np.float32(1.0) / (np.float32(1.0) / ws[i] + qs[i])
            direct = A - c * (vs[i][:, None] * vs[i][None, :])
        if label in ("overflows", "nan", "infinite weight"):  # left bit for bit as it was
            assert not np.all(np.isfinite(direct))
            np.testing.assert_array_equal(np.asarray(single), A, err_msg=label)
        else:
            np.testing.assert_allclose(np.asarray(single), direct, rtol=1e-6, atol=0, err_msg=label)
            assert not np.array_equal(np.asarray(single), A)
    # An inverse whose entries are already near the float max (V ⪰ λI with a subnormal λ): the update's
    # own size passes the check, and the entries that would still overflow keep their old values.
    big = np.float32([[3.3e38, 3.3e38], [3.3e38, 3.3e38]])
    v = np.float32([-6e18, 6e18])
    got = np.asarray(jax.jit(sherman_morrison_given)(big, v, np.float32(0.0), np.float32(1.0))[0])
    with np.errstate(over="ignore"):
        direct = big - v[:, None] * v[None, :]
    assert np.all(np.isfinite(np.diag(direct))) and not np.any(np.isfinite(np.diag(direct[::-1])))
    np.testing.assert_array_equal(np.diag(got), np.diag(direct))
    np.testing.assert_array_equal(np.diag(got[::-1]), np.diag(big[::-1]))


def test_ellipsoid_norm_batches_over_arms():
    rng = np.random.default_rng(1)
    A = random_spd(rng, 5, 10.0)
    X = rng.normal(size=(7, 5))
    want = np.sqrt(np.einsum("ki,ij,kj->k", X, A, X))
    np.testing.assert_allclose(np.asarray(ellipsoid_norm(jnp.asarray(A), jnp.asarray(X))), want, rtol=1e-5)


def test_ties_go_to_the_lowest_index():
    scores = jnp.asarray([0.5, 1.0, 1.0 - 1e-9, 0.2], jnp.float32)  # index 2 equals index 1 in float32
    assert int(argmax_lowest(scores, jnp.float32(1.0))) == 1
    scores = jnp.asarray([0.5, 1.0 - 1e-8, 1.0, 0.2], jnp.float32)
    assert int(argmax_lowest(scores, jnp.float32(1.0))) == 1
    assert int(argmax_lowest(jnp.asarray([0.1, 0.3, 0.2]), jnp.float32(1.0))) == 1


@jax.jit
def _ucb_scores(X, theta, A, beta):
    """The scores select_ucb ranks and its tie scale, computed as it computes them."""
    mean = linalg_dot(X, theta)
    bonus = beta * ellipsoid_norm(A, X)
    return mean + bonus, jnp.max(jnp.abs(mean) + jnp.abs(bonus))


@pytest.mark.parametrize("d", [2, 10, 17, 50])
def test_tie_window_is_the_scores_rounding_error(d):
    """argmax_lowest's window (TIE_ULPS ulps of the scale) is twice the most a score's rounding moves it:
    each float32 score lies within TIE_ULPS/2 ulps of the exact score of the same float32 inputs (a float64
    NumPy computation), so scores equal in exact arithmetic are merged; and round 1's structural tie
    (θ̂ = 0, V = λI, unit contexts: every bonus β/√λ) is one."""
    rng = np.random.default_rng(d)
    eps32 = float(np.finfo(np.float32).eps)
    worst = 0.0
    for _ in range(60):
        X = rng.normal(size=(20, d)).astype(np.float32)
        X = np.asarray(X / jnp.linalg.norm(jnp.asarray(X), axis=1, keepdims=True))  # unit in float32
        n = int(rng.integers(0, 200))
        U, w = rng.normal(size=(n, d)) / np.sqrt(d), rng.exponential(5.0, size=n)
        A = np.linalg.inv(d * np.eye(d) + (U.T * w) @ U)
        A = ((A + A.T) / 2).astype(np.float32)
        theta = (rng.normal(size=d) * 0.3 / np.sqrt(d)).astype(np.float32)
        beta = np.float32(10 ** rng.uniform(0, 4.5))
        got, scale = _ucb_scores(X, theta, A, beta)
        X64, A64 = X.astype(np.float64), A.astype(np.float64)
        bonus = float(beta) * np.sqrt(np.einsum("ki,ij,kj->k", X64, A64, X64))
        error = np.max(np.abs(np.asarray(got, np.float64) - (X64 @ theta.astype(np.float64) + bonus)))
        worst = max(worst, float(error) / (eps32 * float(scale)))
        first, scale1 = _ucb_scores(X, np.zeros(d, np.float32), np.eye(d, dtype=np.float32) / d, beta)
        assert int(argmax_lowest(first, scale1)) == 0, "round 1's tie was not merged"
    assert worst <= TIE_ULPS / 2, f"a score rounded {worst:.2f} ulps from its exact value"


def test_tie_window_keeps_scores_that_really_differ():
    """Scores that differ by more than the window are never merged, however large the scale: with β ~ 10⁴
    (theory radii), a mean gap of 0.01 decides the arm."""
    bonus = np.float32(1.0e4)
    scores = jnp.asarray([bonus, bonus + np.float32(0.01), bonus - np.float32(1.0)], jnp.float32)
    assert int(argmax_lowest(scores, jnp.float32(bonus))) == 1
    gap = (TIE_ULPS + 2) * np.finfo(np.float32).eps * float(bonus)
    scores = jnp.asarray([bonus, bonus + np.float32(gap)], jnp.float32)
    assert int(argmax_lowest(scores, jnp.float32(bonus))) == 1


# --- the batch-invariant sums and the robustness of Sherman–Morrison and the projection ---


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6), d=st.integers(1, 40), lead=st.integers(1, 5))
def test_unrolled_sums_match_numpy(seed, d, lead):
    """dot/matvec/norm (unrolled up to DOT_UNROLL_MAX_DIM = 32, XLA above) against float64 NumPy, and
    dot_components against dot."""
    from jaxbandit.core.linalg import DOT_UNROLL_MAX_DIM, dot, dot_components, matvec, norm

    rng = np.random.default_rng(seed)
    a = rng.normal(size=(lead, d))
    b = rng.normal(size=d)
    A = rng.normal(size=(d + 1, d))
    with jax.enable_x64(True):
        np.testing.assert_allclose(
            np.asarray(dot(jnp.asarray(a), jnp.asarray(b))), a @ b, rtol=1e-12, atol=1e-12
        )
        np.testing.assert_allclose(
            np.asarray(matvec(jnp.asarray(A), jnp.asarray(a))), a @ A.T, rtol=1e-12, atol=1e-12
        )
        np.testing.assert_allclose(np.asarray(norm(jnp.asarray(a))), np.linalg.norm(a, axis=-1), rtol=1e-13)
    got = np.asarray(dot(jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32)), np.float64)
    assert np.all(np.abs(got - a @ b) <= 4 * d * np.finfo(np.float32).eps * (np.abs(a) @ np.abs(b)) + 1e-6)
    # The same sums with the vectors held components first (`[d, lead]`): bitwise dot's in the unrolled
    # range, where its order is fixed (both compiled: XLA may contract a product and its add into an FMA
    # there, as it does not in eager operations); close to NumPy's above it.
    a32, b32 = jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32)
    by_components = np.asarray(jax.jit(dot_components)(a32.T, b32[:, None]), np.float64)
    if d <= DOT_UNROLL_MAX_DIM:
        np.testing.assert_array_equal(by_components, np.asarray(jax.jit(dot)(a32, b32), np.float64))
    assert np.all(
        np.abs(by_components - a @ b) <= 4 * d * np.finfo(np.float32).eps * (np.abs(a) @ np.abs(b)) + 1e-6
    )
    for bad in ((a32.T, b32[:-1, None]), (a32[0, 0], b32), (a32.T[:0], b32[:0, None])):
        with pytest.raises(ValueError, match=r"a_t of shape .* b_t of shape .* are invalid"):
            dot_components(*bad)


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    n=st.integers(1, 30),
    log_w=st.lists(st.floats(-6.0, 6.0), min_size=30, max_size=30),
)
def test_a_sequence_of_sherman_morrison_updates_matches_a_direct_inverse(seed, n, log_w):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 12))
    lam = float(rng.uniform(0.1, 10.0))
    U = rng.normal(size=(n, d))
    w = 10.0 ** np.asarray(log_w[:n])
    with jax.enable_x64(True):
        A = jnp.eye(d) / lam
        for i in range(n):
            A = sherman_morrison(A, jnp.asarray(U[i]), w[i])
        A = np.asarray(A)
    V = lam * np.eye(d) + (U.T * w) @ U
    want = np.linalg.inv(V)
    cond = np.linalg.cond(V)
    # An update V → V + w·uuᵀ cancels in A − c·vvᵀ by up to ‖V_new‖‖A_old‖ ≤ ‖V‖₂/λ, on top of cond(V):
    # each rounds at about eps times both; n of them add up.
    growth = np.linalg.norm(V, 2) / lam
    np.testing.assert_allclose(A, want, rtol=0, atol=(n + 1) * 4e-16 * growth * cond * np.abs(want).max())
    np.testing.assert_array_equal(A, A.T)


def test_projection_stays_finite_and_feasible_for_singular_metrics():
    """V⁻¹ with a zero eigenvalue (the limit of an infinite weight) or a slightly negative one (rounding
    after it): the answer must stay finite and inside the ball."""
    rng = np.random.default_rng(3)
    Q, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    for smallest in (0.0, -1e-7, -1e-3):
        A = jnp.asarray((Q * np.array([smallest, 1e-3, 0.1, 1.0, 1.0, 2.0])) @ Q.T, jnp.float32)
        for scale in (2.0, 1e3, 1e15):
            theta_tilde = jnp.asarray(rng.normal(size=6) * scale, jnp.float32)
            theta = np.asarray(project_ball_in_metric(theta_tilde, A, 1.0))
            assert np.all(np.isfinite(theta)), (smallest, scale)
            assert np.linalg.norm(theta) <= 1.0 + 1e-6


def test_ellipsoid_ball_scores_match_slsqp(x64):
    """The exact maximum of ⟨x, θ'⟩ over the ellipsoid ‖θ' − θ‖_H ≤ β and the ball ‖θ'‖ ≤ S equals what
    SciPy's SLSQP finds (best of three starts) on random problems of all three cases."""
    from reference_baselines import ellipsoid_ball_value

    from jaxbandit.core.linalg import ellipsoid_ball_scores

    scores = jax.jit(ellipsoid_ball_scores)  # one compilation per d, not op by op
    rng = np.random.default_rng(5)
    cases = set()
    for _ in range(25):
        d = int(rng.integers(2, 6))
        M = rng.normal(size=(d, d))
        H = M @ M.T + rng.uniform(0.1, 5.0) * np.eye(d)
        theta = rng.normal(size=d) * rng.uniform(0.0, 1.0) / np.sqrt(d)
        beta, S = rng.uniform(0.05, 3.0), 1.0
        X = rng.normal(size=(4, d))
        got = np.asarray(scores(*map(jnp.asarray, (X, theta, np.linalg.inv(H), beta, S))))
        for x, value in zip(X, got):
            want = ellipsoid_ball_value(x, theta, H, beta, S)
            np.testing.assert_allclose(value, want, rtol=0, atol=1e-7)
            ellipsoid_max = theta + beta * np.linalg.solve(H, x) / np.sqrt(x @ np.linalg.solve(H, x))
            ball_max = S * x / np.linalg.norm(x)
            cases.add(
                "ellipsoid"
                if ellipsoid_max @ ellipsoid_max <= S * S
                else "ball"
                if (ball_max - theta) @ H @ (ball_max - theta) <= beta * beta
                else "both"
            )
    assert cases == {"ellipsoid", "ball", "both"}


def _textbook_forms():
    """The unrolled Cholesky factor, triangular solves, ellipsoid norm and component dot written with
    jnp's operators and indexing, as the library wrote them before it staged them with ``lax``."""

    def cholesky(M):
        d = M.shape[-1]
        L = [[None] * d for _ in range(d)]
        inv = [None] * d
        for j in range(d):
            diag = M[j, j] - sum((L[j][k] * L[j][k] for k in range(j)), 0.0)
            L[j][j] = jnp.sqrt(jnp.maximum(diag, jnp.finfo(diag.dtype).tiny))
            inv[j] = 1.0 / L[j][j]
            for i in range(j + 1, d):
                L[i][j] = (M[i, j] - sum((L[i][k] * L[j][k] for k in range(j)), 0.0)) * inv[j]
        return L, inv

    def solve(M, b):
        L, inv = cholesky(M)
        d = len(L)
        b = [b[i] for i in range(d)]
        y = []
        for i in range(d):
            y.append((b[i] - sum((L[i][k] * y[k] for k in range(i)), 0.0)) * inv[i])
        x = [None] * d
        for i in reversed(range(d)):
            x[i] = (y[i] - sum((L[k][i] * x[k] for k in range(i + 1, d)), 0.0)) * inv[i]
        return jnp.stack(x)

    def ellipsoid(A, x):
        x_t = jnp.moveaxis(x, -1, 0)
        terms = []
        for i in range(x.shape[-1]):
            inner = A[i, i] * x_t[i]
            for j in range(i + 1, x.shape[-1]):
                inner = inner + (2.0 * A[i, j]) * x_t[j]
            terms.append(x_t[i] * inner)
        quad = terms[0]
        for term in terms[1:]:
            quad = quad + term
        return jnp.sqrt(jnp.maximum(quad, 0.0))

    def components(a_t, b_t):
        acc = a_t[0] * b_t[0]
        for i in range(1, a_t.shape[0]):
            acc = acc + a_t[i] * b_t[i]
        return acc

    return solve, ellipsoid, components


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("batched", [False, True])
def test_unrolled_forms_stage_the_textbook_equations(x64, batched):
    """The unrolled solvers, ellipsoid norm and component dot are staged with ``lax`` operations (faster
    to trace than jnp's) and make exactly the equations of their jnp forms: the same programs, the same
    bits."""
    from jaxbandit.core import linalg

    solve, ellipsoid, components = _textbook_forms()

    def library_solve(M, b):
        factor = linalg._cholesky_unrolled(M)
        d = M.shape[-1]
        y = linalg._forward_unrolled(factor, [linalg._entry(b, i) for i in range(d)])
        return jnp.stack(linalg._backward_unrolled(factor, y))

    d, K, n = 6, 4, 3
    with jax.enable_x64(x64):
        dtype = jnp.float64 if x64 else jnp.float32
        M, A, b = jnp.eye(d, dtype=dtype), jnp.ones((d, d), dtype), jnp.ones(d, dtype)
        X, vt = jnp.ones((K, d), dtype), jnp.ones((d, K), dtype)
        pairs = [
            (solve, library_solve, (M, b)),
            (ellipsoid, linalg.ellipsoid_norm, (A, X)),
            (components, linalg.dot_components, (vt, vt)),
        ]
        for textbook, library, args in pairs:
            if batched:
                textbook, library = jax.vmap(textbook), jax.vmap(library)
                args = tuple(jnp.broadcast_to(a, (n, *a.shape)) for a in args)
            assert str(jax.make_jaxpr(library)(*args)) == str(jax.make_jaxpr(textbook)(*args))


def test_the_projection_is_traced_again_for_lapack_one_matrix_a_call():
    """Above ``UNROLL_MAX_DIM`` the projection factors with LAPACK through ``batching.lapack``, inside a
    jitted function whose traces JAX caches: a trace made with batched calls must not be reused inside
    ``lapack_per_matrix`` (a sweep of several programs at once, which batched calls could hang), nor the
    reverse."""
    from jaxbandit.core import batching, linalg

    d = linalg.UNROLL_MAX_DIM + 1
    rng = np.random.default_rng(0)
    M = rng.standard_normal((3, d, d)).astype(np.float32)
    A = M @ np.swapaxes(M, 1, 2) / d + np.eye(d, dtype=np.float32)
    theta = np.full((3, d), 2.0, np.float32)

    def batched_lapack_calls() -> list[str]:
        project = jax.vmap(lambda t, a: linalg.project_ball_in_metric(t, a, jnp.float32(0.5)))
        text = jax.jit(project).lower(theta, A).as_text()  # a new jit: traced again, inner caches kept
        calls = [line for line in text.splitlines() if "custom_call @lapack_" in line]
        assert calls
        return [line for line in calls if 'num_batch_dims = "0"' not in line]

    assert batched_lapack_calls()
    with batching.lapack_per_matrix():
        assert not batched_lapack_calls()
    assert batched_lapack_calls()


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("d, spread", [(1, 10.0), (3, 1e3), (10, 1e4), (24, 1e3)])  # d = 24: LAPACK
def test_spd_solve_matches_numpy_and_is_the_same_in_a_batch(x64, d, spread):
    """A⁻¹b against NumPy's float64 solve, to the accuracy cond(A)·eps allows, and every lane of a
    ``vmap`` batch bitwise the lane alone."""
    from jaxbandit.core.linalg import spd_solve

    rng = np.random.default_rng(d)
    A = np.stack([random_spd(rng, d, spread) for _ in range(6)])
    b = rng.normal(size=(6, d))
    with jax.enable_x64(x64):
        dtype = jnp.float64 if x64 else jnp.float32
        got = np.asarray(jax.jit(jax.vmap(spd_solve))(jnp.asarray(A, dtype), jnp.asarray(b, dtype)))
        alone = jax.jit(spd_solve)
        for i in range(6):
            expected = np.linalg.solve(A[i], b[i])
            eps = np.finfo(dtype).eps
            assert np.linalg.norm(got[i] - expected) <= 20 * d * spread * eps * np.linalg.norm(expected)
            np.testing.assert_array_equal(
                got[i], np.asarray(alone(jnp.asarray(A[i], dtype), jnp.asarray(b[i], dtype)))
            )


def test_spd_solve_names_bad_shapes():
    from jaxbandit.core.linalg import spd_solve

    for A, b in [(jnp.ones((3, 2)), jnp.ones(3)), (jnp.eye(3), jnp.ones(2)), (jnp.ones(3), jnp.ones(3))]:
        with pytest.raises(ValueError, match=r"A of shape .* and b of shape .* are invalid: A must be"):
            spd_solve(A, b)
