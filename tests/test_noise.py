"""Noise families: zero means and (1+ε)-moment bounds against Monte Carlo and scipy quadrature."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

import jaxbandit as jb

N = 400_000


def draws(family, n=N, seed=0):
    keys = jax.random.split(jax.random.key(seed), n)
    eta, scale = jax.vmap(lambda k: family.sample(k, jnp.int32(0)))(keys)
    return np.asarray(eta, np.float64), np.asarray(scale, np.float64)


@pytest.mark.parametrize(
    "family, eps",
    [
        (jb.noise.gaussian(0.7), 1.0),
        (jb.noise.gaussian(2.0), 0.3),
        (jb.noise.student_t(3.0), 1.0),
        (jb.noise.student_t(5.0, scale=0.5), 0.5),
        (jb.noise.symmetric_pareto(4.0, scale=1.0), 1.0),
        (jb.noise.pareto(4.0, 1.0), 1.0),
    ],
)
def test_light_enough_tails_match_monte_carlo(family, eps):
    """Families with a finite (2+2ε)-moment: the CLT applies to |η|^{1+ε}, so compare within 5 SE."""
    eta, _ = draws(family)
    p = 1 + eps
    assert abs(eta.mean()) <= 5 * eta.std() / np.sqrt(N)
    m = np.abs(eta) ** p
    nu = float(family.moment_bound(eps))
    assert abs(m.mean() - nu**p) <= 5 * m.std() / np.sqrt(N), (m.mean(), nu**p)


def test_closed_forms_against_scipy():
    assert float(jb.noise.student_t(3.0).moment_bound(1.0)) == pytest.approx(np.sqrt(3.0), rel=1e-6)
    for df, eps, scale in [(3.0, 1.0, 1.0), (2.5, 0.4, 2.0), (1.8, 0.5, 1.0)]:
        p = 1 + eps
        want = scale * integrate.quad(lambda x: abs(x) ** p * stats.t.pdf(x, df), -np.inf, np.inf)[0] ** (
            1 / p
        )
        got = float(jb.noise.student_t(df, scale).moment_bound(eps))
        assert got == pytest.approx(want, rel=1e-5)
    for sigma, eps in [(1.0, 1.0), (0.3, 0.2)]:
        p = 1 + eps
        want = integrate.quad(lambda x: abs(x) ** p * stats.norm.pdf(x, scale=sigma), -np.inf, np.inf)[0] ** (
            1 / p
        )
        assert float(jb.noise.gaussian(sigma).moment_bound(eps)) == pytest.approx(want, rel=1e-5)
    for a, eps in [(1.5, 0.4), (3.0, 1.0)]:
        p = 1 + eps
        dens = lambda x: 0.5 * a * (1 + abs(x)) ** (-a - 1)
        want = (2 * integrate.quad(lambda x: x**p * dens(x), 0, np.inf)[0]) ** (1 / p)
        assert float(jb.noise.symmetric_pareto(a).moment_bound(eps)) == pytest.approx(want, rel=1e-5)


@pytest.mark.parametrize("a, xm, eps", [(1.5, 1.0, 0.4), (1.5, 1.0, 0.2), (2.5, 0.5, 1.0), (1.2, 2.0, 0.1)])
def test_centred_pareto_moment_against_scipy_quad(x64, a, xm, eps):
    p = 1 + eps
    mu = a * xm / (a - 1)
    dens = lambda x: a * xm**a / x ** (a + 1)
    lower = integrate.quad(lambda x: (mu - x) ** p * dens(x), xm, mu, epsabs=0, epsrel=1e-12)[0]
    upper = integrate.quad(lambda x: (x - mu) ** p * dens(x), mu, np.inf, epsabs=0, epsrel=1e-12, limit=500)[
        0
    ]
    want = (lower + upper) ** (1 / p)
    got = float(jb.noise.pareto(a, xm).moment_bound(eps))
    assert got == pytest.approx(want, rel=1e-8)


def test_paper_pareto_nu_is_the_uncentred_bound():
    assert float(jb.noise.raw_pareto_moment_bound(1.5, 1.0, 0.4)) == pytest.approx(15 ** (1 / 1.4), rel=1e-6)
    # the centred moment is smaller, so the paper's ν is a valid (loose) bound
    assert float(jb.noise.pareto(1.5, 1.0).moment_bound(0.4)) < 15 ** (1 / 1.4)


def test_heavy_pareto_mean_is_zero_and_tail_is_pareto():
    """Pareto(1.5) has infinite variance; check the mean with a robust tolerance and the tail law."""
    eta, _ = draws(jb.noise.pareto(1.5, 1.0), n=1_000_000, seed=3)
    assert abs(eta.mean()) < 0.05
    x = eta + 3.0
    for q in (10.0, 100.0, 1000.0):
        frac = np.mean(x > q)
        assert frac == pytest.approx(q**-1.5, rel=5 * np.sqrt(1 / (frac * x.size)) + 0.02)


def test_heteroscedastic_reveals_its_scale():
    fam = jb.noise.heteroscedastic(jb.noise.gaussian(1.0), low=0.5, high=2.0)
    eta, scale = draws(fam, n=200_000)
    assert scale.min() >= 0.5 - 1e-6 and scale.max() <= 2.0 + 1e-6
    z = eta / scale
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1.0) < 0.01
    sched = jb.noise.heteroscedastic(
        jb.noise.gaussian(1.0), low=0.5, high=2.0, schedule=lambda t: 1.0 + t / 100.0
    )
    _, s = sched.sample(jax.random.key(0), jnp.int32(50))
    assert float(s) == pytest.approx(1.5)
    _, s = sched.sample(jax.random.key(0), jnp.int32(500))
    assert float(s) == pytest.approx(2.0)


def test_environment_reveals_scaled_nu():
    fam = jb.noise.heteroscedastic(jb.noise.student_t(3.0), low=0.5, high=2.0)
    env = jb.envs.linear(5, 3, noise=fam, eps=1.0)
    state = env.init(jax.random.key(0))
    rnd = env.stream.draw(jax.random.key(1), state.theta_star, jnp.int32(0))
    _, fb = env.respond(state, rnd, jnp.int32(0), jnp.int32(0))
    _, s = fam.sample(jax.random.split(jax.random.key(1))[1], jnp.int32(0))  # the round's noise key
    assert float(fb.nu) == pytest.approx(float(s) * np.sqrt(3.0), rel=1e-5)


def test_float32_draws_are_finite_for_extreme_tails():
    for fam in (jb.noise.student_t(1.01), jb.noise.pareto(1.01), jb.noise.symmetric_pareto(1.01)):
        eta, _ = draws(fam, n=200_000, seed=5)
        assert np.all(np.isfinite(eta))


def _student_t_trips(key):
    """How many iterations the Student-t sampler's rejection loop makes for ``key``: its pairs drawn as
    the sampler draws them, counted until one lies inside the unit disc (written here from the method)."""

    def cond(c):
        return c[2] >= 1.0

    def body(c):
        key, n, _ = c
        key, sub = jax.random.split(key)
        uv = jax.random.uniform(sub, (2,), minval=-1.0, maxval=1.0)
        w = uv[0] * uv[0] + uv[1] * uv[1]
        return key, n + 1, jnp.where(w > 0.0, w, 1.0)

    return jax.lax.while_loop(cond, body, (key, 0, jnp.ones(())))[1]


@pytest.mark.parametrize("x64", [False, True])
def test_rejection_steps_peeled_before_the_loop_change_no_bit(x64):
    """The trace option ``peeled_rejection_steps`` (a GPU's option: the Student-t sampler's first
    iterations made by every draw before its loop) gives bitwise the loop's draws: batched (3 peeled:
    draws needing fewer and more iterations; 12: every draw done before the loop) and alone, typed and
    raw keys; a bad value is named."""
    from jaxbandit.core.lowering import options

    fam = jb.noise.student_t(3.0)
    # a new jit each time: a jitted function's cache does not see the trace context
    sample = lambda keys: jax.jit(jax.vmap(lambda k: fam.sample(k, jnp.int32(0))[0]))(keys)
    with jax.enable_x64(x64):
        typed = jax.random.split(jax.random.key(11), 3000)
        raw = jax.random.split(jax.random.PRNGKey(11), 3000)
        trips = np.asarray(jax.vmap(_student_t_trips)(typed))
        assert trips.min() == 1 and 3 < trips.max() < 12
        every = lambda: [np.asarray(x) for x in (sample(typed), sample(raw), fam.sample(typed[0], 0)[0])]
        loop = every()
        for peel in (3, 12):
            with options.tracing(peeled_rejection_steps=peel):
                for peeled, looped in zip(every(), loop):
                    np.testing.assert_array_equal(peeled, looped)
                traced = str(jax.make_jaxpr(lambda k: fam.sample(k, jnp.int32(0)))(typed[0]))
            assert traced != str(jax.make_jaxpr(lambda k: fam.sample(k, jnp.int32(0)))(typed[0]))
        with pytest.raises(ValueError, match=r"options\.peeled_rejection_steps=-2 is invalid"):
            with options.tracing(peeled_rejection_steps=-2):
                pass
