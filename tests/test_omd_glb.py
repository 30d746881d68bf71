"""GLB-OMD (identity link) against the float64 NumPy loop of tests/reference_baselines.py, and against the
closed form it must reduce to (recursive ridge least squares when η = 1 and the ball is never left)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import reference_baselines as ref
from conftest import assert_same_arms, random_stream, replay_run

import jaxbandit as jb

K, D, T = 20, 10, 400
TRACES = []


@functools.partial(jax.jit, static_argnames=("T", "constant"))
def _run(th, X, eta_noise, budget, lam, eta, sigma, S, L, delta, beta_scale, beta, *, T, constant):
    TRACES.append(1)
    alg = jb.omd_glb(
        T,
        D,
        lam=lam,
        eta=eta,
        sigma=sigma,
        S=S,
        L=L,
        delta=delta,
        beta_scale=beta_scale,
        beta=beta if constant else None,
    )
    return replay_run(alg, th, X, eta_noise, budget)


CASES = [  # lam, eta, sigma, S, L, delta, beta_scale, beta, budget, noise, theta norm
    (None, 1.0, 1.0, 1.0, 1.0, None, 1.0, None, 0.0, "t3", 1.0),  # the theory settings
    (None, 1.0, 1.0, 1.0, 1.0, None, 0.05, None, 50.0, "t3", 1.0),  # a tuned-sized radius, corrupted
    (1.0, 2.0, 0.5, 0.4, 1.0, 0.05, 0.02, None, 0.0, "gauss", 1.0),  # η ≠ 1, the ball binding
    (2.0, 0.5, 2.0, 0.6, 1.5, 0.01, 0.1, None, 20.0, "pareto", 0.5),
    (None, 1.0, 1.0, 0.3, 1.0, None, 1.0, 0.5, 0.0, "t3", 1.0),  # constant radius, ball binding
]


@pytest.mark.parametrize("case", CASES)
def test_matches_the_float64_reference_every_round(x64, case):
    lam, eta, sigma, S, L, delta, beta_scale, beta, budget, noise, norm = case
    th, X, eta_noise = random_stream(41, T, K, D, noise)
    th = th * norm
    X = X * L
    args = [1.0 if v is None else v for v in (lam, eta, sigma, S, L, delta, beta_scale, beta)]
    if lam is None:
        args[0] = float(D)
    if delta is None:
        args[5] = 1.0 / T
    got = _run(th, X, eta_noise, budget, *args, T=T, constant=beta is not None)
    want = ref.omd_glb(
        th,
        X,
        eta_noise,
        lam=lam,
        eta=eta,
        sigma=sigma,
        S=S,
        L=L,
        delta=delta,
        beta=beta,
        beta_scale=beta_scale,
        budget=budget,
    )
    assert_same_arms(got, want)


def test_new_hyperparameter_values_do_not_recompile(x64):
    th, X, eta_noise = random_stream(42, 50, K, D)
    TRACES.clear()
    for scale in (0.1, 0.2, 0.3):
        _run(th, X, eta_noise, 0.0, 10.0, 1.0, 1.0, 1.0, 1.0, 0.02, scale, 0.0, T=50, constant=False)
    assert len(TRACES) == 1


def test_unit_step_without_projection_is_recursive_ridge(x64):
    """η = 1 and a ball never reached: θ_{t+1} = (λI + Σ xxᵀ/σ²)⁻¹ Σ r x/σ² and H_{t+1} = λI + Σ xxᵀ/σ²."""
    rng = np.random.default_rng(7)
    lam, sigma, n = 3.0, 0.7, 30
    xs = rng.normal(size=(n, D)) / np.sqrt(D)
    rs = rng.normal(size=n)
    alg = jb.omd_glb(n, D, lam=lam, sigma=sigma, S=1e6)
    state = alg.init()
    for x, r in zip(xs, rs):
        state = alg.update(state, jnp.asarray(x), jnp.asarray(r), jnp.nan)
    H = lam * np.eye(D) + xs.T @ xs / sigma**2
    np.testing.assert_allclose(np.asarray(state.H_inv), np.linalg.inv(H), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(np.asarray(state.theta), np.linalg.solve(H, xs.T @ rs / sigma**2), rtol=1e-9)


def test_projection_keeps_theta_in_the_ball_and_is_the_H_tilde_projection(x64):
    """One large reward from θ = 0 pushes θ' out of a small ball; θ must be the H̃-norm projection."""
    lam, eta, S = 1.0, 2.0, 0.1
    x = np.zeros(D)
    x[:2] = [0.6, 0.8]
    alg = jb.omd_glb(10, D, lam=lam, eta=eta, S=S)
    state = alg.update(alg.init(), jnp.asarray(x), jnp.asarray(5.0), jnp.nan)
    H_tilde = lam * np.eye(D) + eta * np.outer(x, x)
    theta_prime = eta * np.linalg.solve(H_tilde, 5.0 * x)
    assert np.linalg.norm(theta_prime) > S
    want = ref.project_v_ball(theta_prime, H_tilde, S)
    np.testing.assert_allclose(np.asarray(state.theta), want, rtol=1e-9)
    assert np.linalg.norm(np.asarray(state.theta)) <= S * (1 + 1e-12)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(lam=0.0), "lam=0.0"),
        (dict(eta=-1.0), "eta=-1.0"),
        (dict(sigma=0.0), "sigma=0.0"),
        (dict(S=np.nan), "S=nan"),
        (dict(L=0.0), "L=0.0"),
        (dict(delta=1.0), "delta=1.0"),
        (dict(beta=-0.5), "beta=-0.5"),
        (dict(beta_scale=0.0), "beta_scale=0.0"),
        (dict(newton_iters=0), "newton_iters=0"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match.replace("(", r"\(")):
        jb.omd_glb(100, 4, **kwargs)
