"""jb.datasets (vendored real series) and jb.noise.empirical (noise resampled from them)."""

import csv
import gzip
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import jaxbandit as jb

DATA = Path(jb.envs.datasets.__file__).parent


def _csv(name):
    with gzip.open(DATA / name, "rt", newline="") as f:
        return list(csv.DictReader(f))


def test_sp500_matches_the_vendored_file_read_independently():
    rows = _csv("sp500_returns.csv.gz")
    assert len(rows) == 1257
    all_ = jb.datasets.sp500_returns()
    assert all_.shape == (1257, 10) and all_.dtype == np.float64
    for j, ticker in enumerate(jb.datasets.SP500_TICKERS):
        want = np.array([float(r[ticker]) for r in rows])
        np.testing.assert_array_equal(all_[:, j], want)
        np.testing.assert_array_equal(jb.datasets.sp500_returns(ticker), want)
    two = jb.datasets.sp500_returns(["XOM", "AAPL"])
    np.testing.assert_array_equal(two, all_[:, [9, 0]])
    dates = jb.datasets.sp500_dates()
    assert str(dates[0]) == rows[0]["date"] == "2013-02-11" and str(dates[-1]) == "2018-02-06"
    assert np.all(np.diff(dates).astype(int) > 0)
    # The heavy tails the docs promise (Pearson kurtosis 6–22 across the ten stocks).
    kurt = stats.kurtosis(all_, axis=0, fisher=False)
    assert 6.0 < kurt.min() < 7.0 and 21.0 < kurt.max() < 23.0


def test_rand_doctor_visits_matches_the_vendored_file():
    rows = _csv("rand_doctor_visits.csv.gz")
    x = jb.datasets.rand_doctor_visits()
    np.testing.assert_array_equal(x, [float(r["mdvis"]) for r in rows])
    assert x.shape == (20190,) and x.min() == 0 and x.max() == 77 and np.all(x == np.round(x))


@pytest.mark.parametrize("bad", ["SPY", ["AAPL", "GOOG"], []])
def test_unknown_tickers_are_refused(bad):
    with pytest.raises(ValueError, match=r"tickers=.*AAPL, AMZN"):
        jb.datasets.sp500_returns(bad)


def _draws(family, n, seed=0):
    keys = jax.random.split(jax.random.key(seed), n)
    eta, scale = jax.vmap(lambda k: family.sample(k, jnp.int32(0)))(keys)
    return np.asarray(eta, np.float64), np.asarray(scale, np.float64)


def test_empirical_draws_are_uniform_over_the_centred_sample():
    x = np.array([3.0, -1.0, 0.5, 10.0, 2.5])
    family = jb.noise.empirical(x, scale=2.0)
    eta, scale = _draws(family, 50_000)
    support = 2.0 * (x - x.mean())
    idx = np.argmin(np.abs(eta[:, None] - support[None, :]), axis=1)
    np.testing.assert_allclose(eta, support[idx], rtol=1e-6)  # every draw is a centred sample value
    counts = np.bincount(idx, minlength=x.size)
    assert stats.chisquare(counts).pvalue > 1e-4  # equally likely
    assert np.all(scale == 1.0)


@pytest.mark.parametrize("eps", [1.0, 0.4, 0.1])
def test_empirical_moment_bound_is_the_distributions_moment(eps):
    x = jb.datasets.sp500_returns("WMT")
    family = jb.noise.empirical(x, name="WMT")
    p = 1.0 + eps
    exact = np.mean(np.abs(x - np.mean(x)) ** p) ** (1 / p)
    assert float(family.moment_bound(eps)) == pytest.approx(exact, rel=1e-6)
    traced = jax.jit(family.moment_bound)(jnp.float32(eps))  # a grid axis: computed in the float dtype
    assert float(traced) == pytest.approx(exact, rel=1e-5)
    # Monte Carlo: the draws' (1+ε)-moment and mean within 5 standard errors of the exact values.
    eta, _ = _draws(family, 200_000, seed=1)
    m = np.abs(eta) ** p
    assert abs(m.mean() - exact**p) <= 5 * m.std() / np.sqrt(m.size)
    assert abs(eta.mean()) <= 5 * eta.std() / np.sqrt(eta.size)
    assert "empirical(WMT, n=1257)" == family.name


def test_empirical_noise_runs_in_an_environment_and_passes_the_checker():
    env = jb.envs.linear(4, 6, noise=jb.noise.empirical(jb.datasets.rand_doctor_visits(), scale=0.5), eps=1.0)
    jb.testing.check_environment(env, horizon=20)


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: jb.noise.empirical([[1.0, 2.0], [3.0, 4.0]]), ["samples has shape (2, 2)", "1-D"]),
        (lambda: jb.noise.empirical([1.0]), ["samples has shape (1,)", "at least 2"]),
        (lambda: jb.noise.empirical([2.0, 2.0, 2.0]), ["samples is invalid", "all 3 values equal 2.0"]),
        (lambda: jb.noise.empirical([1.0, np.nan]), ["samples[1]=nan", "finite"]),
        (lambda: jb.noise.empirical([1.0, 2.0], scale=0.0), ["scale=0.0", "(0, inf)"]),
    ],
)
def test_empirical_bad_input(make, words):
    with pytest.raises(ValueError) as info:
        make()
    for w in words:
        assert w in str(info.value)
