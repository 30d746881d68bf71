"""The exogenous streams' draws against JAX's own samplers."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxbandit as jb
from jaxbandit.core.linalg import norm
from jaxbandit.core.lowering import options
from jaxbandit.envs.streams import uniform_sphere


def _reference_sphere(key, shape, radius):
    """``radius`` · g/‖g‖ for g = ``jax.random.normal(key, shape)``: the sphere as the paper defines it."""
    g = jax.random.normal(key, shape, dtype=jax.dtypes.canonicalize_dtype(np.float64))
    return radius * g / norm(g)[..., None]


@pytest.mark.parametrize("flat", [True, False, None])
@pytest.mark.parametrize("shape", [(20, 10), (3, 4, 5)])
@pytest.mark.parametrize(("precision", "partitionable"), [("float32", True), ("float64", False)])
def test_uniform_sphere_is_jax_normal_normalised_bitwise(flat, shape, precision, partitionable):
    """The uniforms under the normals drawn flat (a CPU's default) or shaped (the others') give
    jax.random.normal's numbers, op by op and in a jitted vmap (where the transform's fusion decides the
    rounding of the sphere's points), in both threefry modes."""
    chosen = {} if flat is None else {"flat_sphere_bits": flat}
    with (
        options.tracing(**chosen),
        jax.enable_x64(precision == "float64"),
        jax.threefry_partitionable(partitionable),
    ):
        keys = jax.random.split(jax.random.key(7), 3)
        got = jax.jit(jax.vmap(lambda k: uniform_sphere(k, shape, 2.0)))(keys)
        want = jax.jit(jax.vmap(lambda k: _reference_sphere(k, shape, 2.0)))(keys)
        assert got.dtype == np.dtype(precision)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        np.testing.assert_array_equal(
            np.asarray(uniform_sphere(keys[0], shape, 2.0)),
            np.asarray(_reference_sphere(keys[0], shape, 2.0)),
        )


def test_flat_sphere_bits_default_and_bad_value(monkeypatch):
    """The default draws flat on a CPU only (outside a sweep's trace, and in one); a value that is not a
    bool is named in a ValueError."""
    flat = lambda: jax.make_jaxpr(lambda k: uniform_sphere(k, (2, 3), 1.0))(jax.random.key(0))
    assert "shape=(6,)" in str(flat())  # the bits of 6 uniforms, drawn flat
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert not options.current().flat_sphere_bits and "shape=(6,)" not in str(flat())
    sweep_options = options.TraceOptions.resolve(jb.ExecutionOptions())
    assert not sweep_options.flat_sphere_bits
    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    assert options.current().flat_sphere_bits
    assert options.TraceOptions.resolve(jb.ExecutionOptions(flat_sphere_bits=False)).flat_sphere_bits is False
    with pytest.raises(ValueError, match=r"options\.flat_sphere_bits='yes' is invalid"):
        jb.ExecutionOptions(flat_sphere_bits="yes").validated()


def test_sp500_stream_draws_distinct_trading_days_scaled_to_unit_norm():
    """Every context a row of the shipped returns divided by its norm (NumPy, float64), K distinct days a
    round, means = contexts·θ*; and the correlation the docstring states: the days' average x·xᵀ has one
    eigenvalue of 0.31 and nine of 0.04–0.12 (0.1 each for contexts uniform on the sphere)."""
    returns = np.loadtxt(
        jb.datasets.__path__[0] + "/sp500_returns.csv.gz", delimiter=",", skiprows=1, usecols=range(1, 11)
    )
    np.testing.assert_array_equal(returns, jb.datasets.sp500_returns())  # the file, read independently
    unit = returns / np.sqrt((returns**2).sum(axis=1, keepdims=True))
    eig = np.linalg.eigvalsh(unit.T @ unit / len(unit))
    assert eig[-1] == pytest.approx(0.31, abs=0.005) and 0.04 <= eig[0] and eig[-2] <= 0.125
    stream = jb.envs.sp500_stream(20, noise=jb.noise.gaussian(1.0))
    assert (stream.dim, stream.num_arms, stream.reveals_nu) == (10, 20, False)
    theta = np.asarray(stream.init(jax.random.key(0)), np.float64)
    assert np.linalg.norm(theta) == pytest.approx(1.0, rel=1e-6)
    for t in range(4):
        rnd = jax.jit(stream.draw)(jax.random.key(t), theta.astype(np.float32), np.int32(t))
        X = np.asarray(rnd.contexts, np.float64)
        rows = [int(np.argmin(np.abs(unit - x).sum(axis=1))) for x in X]
        np.testing.assert_allclose(X, unit[rows], rtol=0, atol=1e-7)
        assert len(set(rows)) == 20
        np.testing.assert_allclose(np.asarray(rnd.means), X @ theta, atol=1e-6)
    with pytest.raises(ValueError, match="num_arms=1258 is invalid: at most 1257"):
        jb.envs.sp500_stream(1258, noise=jb.noise.gaussian(1.0))
    with pytest.raises(ValueError, match=r"dim=3 is invalid for the sp500 stream"):
        jb.registry.stream("sp500").build(3, 5, jb.noise.gaussian(1.0))
    from jaxbandit.experiments import bench

    assert bench.make_settings(quick=True, stream="sp500").stream == "sp500"


def test_distinct_indices_draws_every_subset_equally_often():
    """Floyd's algorithm: k distinct indices, every k-subset equally likely — a chi-square test over the
    10 subsets of range(5) of size 2 (20 000 draws) and over the 1257 days the sp500 stream draws 20 of
    (2 000 draws), each at p > 1e-6 (fixed keys: the same draws every run)."""
    from scipy import stats

    from jaxbandit.envs.streams import distinct_indices

    draw = jax.jit(jax.vmap(distinct_indices, (0, None, None)), static_argnums=(1, 2))
    small = np.sort(np.asarray(draw(jax.random.split(jax.random.key(0), 20_000), 5, 2)), axis=1)
    assert np.all(small[:, 0] < small[:, 1])
    _, counts = np.unique(small[:, 0] * 5 + small[:, 1], return_counts=True)
    assert counts.size == 10 and stats.chisquare(counts).pvalue > 1e-6
    days = np.asarray(draw(jax.random.split(jax.random.key(1), 2_000), 1257, 20))
    assert all(len(set(row)) == 20 for row in days) and days.min() >= 0 and days.max() < 1257
    assert stats.chisquare(np.bincount(days.ravel(), minlength=1257)).pvalue > 1e-6
    with pytest.raises(ValueError, match="k=6 is invalid: at most n=5"):
        distinct_indices(jax.random.key(0), 5, 6)
    with pytest.raises(ValueError, match="k=0 is invalid"):
        distinct_indices(jax.random.key(0), 5, 0)


def test_linear_draws_student_t_3_noise_by_default():
    """``jb.envs.linear(d, K)`` with no ``noise``: η_t is Student-t with 3 degrees of freedom (the paper's
    Section 6 noise at ε = 1), checked against SciPy's t₃ distribution with a Kolmogorov–Smirnov test on
    4096 rounds' draws, and a Gaussian of the same variance (3) is rejected by the same test."""
    from scipy import stats

    env = jb.envs.linear(4, 3)
    assert env.stream.dim == 4 and env.stream.num_arms == 3 and env.adversary.name == "none"
    theta = env.init(jax.random.key(0)).theta_star
    keys = jax.random.split(jax.random.key(1), 4096)
    eta = np.asarray(
        jax.vmap(lambda k, t: env.stream.draw(k, theta, t).eta)(keys, jnp.arange(4096)), np.float64
    )
    assert stats.kstest(eta, stats.t(df=3).cdf).pvalue > 1e-3
    assert stats.kstest(eta, stats.norm(scale=np.sqrt(3.0)).cdf).pvalue < 1e-6
    assert jb.envs.linear_stream(4, 3).reveals_nu is False
