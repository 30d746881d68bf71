"""Recorded running sums (cumulative regret, corruption spent) never decrease and stay within float32
rounding of the exact float64 sum, however long the horizon."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandit as jb
from jaxbandit.runner import accumulate


def running(terms: np.ndarray) -> np.ndarray:
    def body(total, x):
        total = accumulate.add(total, x)
        return total, total.shown

    return np.asarray(
        jax.jit(lambda xs: jax.lax.scan(body, accumulate.zero(jnp.float32), xs)[1])(
            jnp.asarray(terms, jnp.float32)
        )
    )


@pytest.mark.parametrize("case", ["uniform", "heavy", "big then tiny", "zeros between"])
def test_running_sum_is_monotone_and_exact_to_rounding(case):
    rng = np.random.default_rng(3)
    n = 100_000
    terms = {
        "uniform": rng.uniform(0.0, 2.0, n),
        "heavy": rng.pareto(1.1, n),
        # a plain float32 sum would drop every term after the first (ulp(1e8) = 8)
        "big then tiny": np.concatenate([[1e8], np.full(n - 1, 0.3)]),
        "zeros between": np.where(rng.uniform(size=n) < 0.5, 0.0, rng.uniform(0.0, 1e-3, n)),
    }[case]
    terms = terms.astype(np.float32)
    shown = running(terms)
    exact = np.cumsum(terms.astype(np.float64))
    assert np.all(np.diff(shown) >= 0)
    np.testing.assert_allclose(shown, exact, rtol=1.2e-7, atol=0)
    naive = np.cumsum(terms)  # float32, for contrast
    if case == "big then tiny":
        assert abs(naive[-1] - exact[-1]) > 1e-4 * exact[-1]  # 1000x the compensated error


@pytest.mark.slow
def test_sweep_records_exact_non_decreasing_cumulative_regret_at_long_horizons():
    """T = 2·10⁵: the recorded cumulative regret equals the float64 sum of the recorded per-round
    regrets to 1e-6 and never decreases (so do the corruption totals)."""
    T, d, K = 200_000, 2, 3
    res = jb.sweep(
        lambda p: jb.oful(T, d, beta_scale=p["b"]),
        jb.envs.linear(d, K, noise=jb.noise.gaussian(0.1), corruption=jb.corruption.flip(500.0)),
        {"b": [0.05, 1.0]},
        horizon=T,
        seeds=2,
        record="all",
        chunk_size=50_000,
    )
    cum = res.cumulative_regret.astype(np.float64)
    exact = np.cumsum(res.regret.astype(np.float64), axis=-1)
    assert np.all(np.diff(res.cumulative_regret, axis=-1) >= 0)
    np.testing.assert_allclose(cum, exact, rtol=1e-6, atol=0)
    spent = np.cumsum(np.abs(res.corruption.astype(np.float64)), axis=-1)
    assert np.all(np.diff(res.corruption_spent, axis=-1) >= 0)
    np.testing.assert_allclose(res.corruption_spent.astype(np.float64), spent, rtol=1e-6, atol=1e-6)
