"""Exogenous streams: θ*, contexts, their means, η_t and ν_t as a function of (key, θ*, t) alone.

Round t's key splits into a contexts key and a noise key (``draw``), so a stream is the same whichever
learner faces it, however its rounds are chunked, and whatever else shares its batch.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from ..core import validation as V
from ..core.dtypes import as_float, float_dtype
from ..core.linalg import dot, norm
from ..core.lowering import options
from ..core.registry import register
from ..core.types import Round, Stream
from .datasets import sp500_returns
from .noise import NoiseFamily, student_t
from .registry import StreamSpec

Array = jax.Array


def uniform_sphere(key, shape, radius) -> Array:
    """Points uniform on the sphere of ``radius`` in ℝ^d: ``shape`` `[..., d]`, g/‖g‖ scaled, for
    g = ``jax.random.normal(key, shape)``.

    g is computed as ``jax.random.normal`` computes it (√2·erf⁻¹ of uniforms on (−1, 1)), the same numbers
    bitwise (tested), except that on a CPU the uniforms are drawn as one flat vector and then shaped (the
    trace option ``flat_sphere_bits``): JAX's random bits of a shape are those of its flat index (threefry in
    both modes, rbg), and XLA:CPU compiles the bit generator's loop on `[streams, K, d]` with d = 10 into code
    that took LLVM about a second, on a flat vector a tenth of that (``benchmarks/compile_time.py``).
    Shaping the normals instead would fuse the transform differently and round the points differently."""
    dtype = float_dtype()
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype), dtype=dtype)
    drawn = (math.prod(shape),) if options.current().flat_sphere_bits else tuple(shape)
    u = jax.random.uniform(key, drawn, dtype, lo, 1.0).reshape(shape)
    g = jax.lax.mul(np.array(np.sqrt(2), dtype), jax.lax.erf_inv(u))
    return as_float(radius) * g / norm(g)[..., None]


def _no_nu() -> Array:
    return jnp.full((), jnp.nan, float_dtype())


def linear_stream(
    dim: int,
    num_arms: int,
    *,
    noise: NoiseFamily | None = None,
    S: ArrayLike = 1.0,
    L: ArrayLike = 1.0,
    eps: ArrayLike | None = None,
) -> Stream:
    """The paper's Section 6 stream (d = 10, K = 20, S = L = 1 there).

    θ* uniform on the sphere of radius ``S``; each round ``num_arms`` contexts i.i.d. uniform on the
    sphere of radius ``L``; η_t from ``noise``, by default ``jb.noise.student_t(3.0)``: Student-t with 3
    degrees of freedom, the paper's Section 6 noise at ε = 1 (finite variance, ν = √3 at ε = 1), which
    the demo and the command line use too. ``eps``: the moment order at which
    ν_t = s_t·noise.moment_bound(eps) is revealed each round; None reveals no ν_t (then only algorithms
    with a constant ``nu`` can run on it).
    """
    dim = V.check_int("dim", dim)
    num_arms = V.check_int("num_arms", num_arms)
    if noise is None:
        noise = student_t(3.0)
    V.check_positive("S", S, required=True, why="the norm of θ*")
    V.check_positive("L", L, required=True, why="the norm of every context")
    V.check_instance("noise", noise, NoiseFamily, "a jb.noise family (e.g. jb.noise.student_t(3.0))")
    if eps is not None:
        noise.check_moment(eps)
        nu_base = noise.moment_bound(eps)

    def init(key) -> Array:
        return uniform_sphere(key, (dim,), S)

    def draw(key, theta_star, t) -> Round:
        k_contexts, k_noise = jax.random.split(key)
        X = uniform_sphere(k_contexts, (num_arms, dim), L)
        eta, scale = noise.sample(k_noise, t)
        nu = scale * nu_base if eps is not None else _no_nu()
        return Round(contexts=X, means=dot(X, theta_star), eta=eta, nu=nu)

    return Stream(init=init, draw=draw, dim=dim, num_arms=num_arms, horizon=None, reveals_nu=eps is not None)


def distinct_indices(key, n: int, k: int) -> Array:
    """``k`` distinct indices of ``range(n)``, every k-subset equally likely `[k]` (Floyd's algorithm:
    the i-th is uniform on [0, n − k + i], or n − k + i if drawn before): k random integers, where
    ``jax.random.choice`` without replacement sorts n random keys (see Performance, "Tried and not
    kept")."""
    n = V.check_int("n", n)
    k = V.check_int("k", k)
    if k > n:
        raise ValueError(f"k={k} is invalid: at most n={n} distinct indices exist")
    top = jnp.arange(n - k, n, dtype=jnp.int32)
    drawn = jax.random.randint(key, (k,), 0, top + 1, jnp.int32)

    def step(i, chosen):
        before = jnp.any((chosen == drawn[i]) & (jnp.arange(k) < i))
        return chosen.at[i].set(jnp.where(before, top[i], drawn[i]))

    return jax.lax.fori_loop(0, k, step, drawn)


def sp500_stream(num_arms: int, *, noise: NoiseFamily, S: ArrayLike = 1.0) -> Stream:
    """Real contexts, a semi-synthetic reward: each round's ``num_arms`` contexts are that many distinct
    trading days of ``jb.datasets.sp500_returns()`` (the ten stocks' daily returns, so d = 10), each
    scaled to unit norm; θ* uniform on the sphere of radius ``S``; η_t from ``noise``; no ν_t revealed.

    Unlike the paper's isotropic contexts, these are correlated: the ten stocks move with the market, and
    the days' average x·xᵀ has one eigenvalue of 0.31 and nine of 0.04–0.12, against 0.1 each for
    contexts uniform on the sphere (tested).
    """
    returns = sp500_returns()  # [days, 10]
    days, dim = returns.shape
    num_arms = V.check_int("num_arms", num_arms)
    if num_arms > days:
        raise ValueError(f"num_arms={num_arms} is invalid: at most {days}, the trading days the contexts are")
    V.check_positive("S", S, required=True, why="the norm of θ*")
    V.check_instance("noise", noise, NoiseFamily, "a jb.noise family (e.g. jb.noise.student_t(3.0))")
    unit_days = returns / np.linalg.norm(returns, axis=1, keepdims=True)

    def init(key) -> Array:
        return uniform_sphere(key, (dim,), S)

    def draw(key, theta_star, t) -> Round:
        k_days, k_noise = jax.random.split(key)
        X = jnp.asarray(unit_days, float_dtype())[distinct_indices(k_days, days, num_arms)]
        eta, _ = noise.sample(k_noise, t)
        return Round(contexts=X, means=dot(X, theta_star), eta=eta, nu=_no_nu())

    return Stream(init=init, draw=draw, dim=dim, num_arms=num_arms, horizon=None, reveals_nu=False)


def replay_stream(
    *, theta_star: ArrayLike, contexts: ArrayLike, noise: ArrayLike, nu: ArrayLike | None = None
) -> Stream:
    """A stream of arrays the user supplies, so any external implementation sees identical rounds.

    Args:
      theta_star: `[d]`.
      contexts: `[T, K, d]`, the decision sets of rounds 1..T.
      noise: `[T]`, η_t added to the chosen arm's mean (±inf allowed: the algorithms clamp rewards).
      nu: revealed ν_t, a scalar or `[T]` (default: none revealed).
    Keys are ignored.
    """
    if V.is_traced((theta_star, contexts, noise, nu)):
        th, X, eta = theta_star, contexts, noise
    else:
        th, X, eta = _check_replay_arrays(theta_star, contexts, noise, nu)
    T, K, d = jnp.shape(X)
    X = as_float(X)
    th = as_float(th)
    eta = as_float(eta)
    nus = None if nu is None else jnp.broadcast_to(as_float(nu), (T,))

    def init(key) -> Array:
        return th

    def draw(key, theta_star, t) -> Round:
        X_t = X[t]
        return Round(
            contexts=X_t, means=dot(X_t, theta_star), eta=eta[t], nu=_no_nu() if nus is None else nus[t]
        )

    return Stream(
        init=init, draw=draw, dim=int(d), num_arms=int(K), horizon=int(T), reveals_nu=nu is not None
    )


def _check_replay_arrays(theta_star, contexts, noise, nu):
    """Concrete replay arrays, checked against each other's shapes; returns (θ*, X, η) as NumPy."""
    X = np.asarray(V.check_finite_array("contexts", contexts))
    if X.ndim != 3:
        raise ValueError(f"contexts has shape {X.shape}: expected [T, K, d] (horizon, arms, dim)")
    T, K, d = X.shape
    if T < 1 or K < 1 or d < 1:
        raise ValueError(f"contexts has shape {X.shape}: T, K and d must each be >= 1")
    th = np.asarray(V.check_finite_array("theta_star", theta_star))
    if th.shape != (d,):
        raise ValueError(
            f"theta_star has shape {th.shape}, expected ({d},) to match the dim d={d} of "
            f"contexts [T, K, d] = {list(X.shape)}"
        )
    eta = V._as_float_array("noise", noise, "an array of real numbers")
    if eta.shape != (T,):
        raise ValueError(
            f"noise has shape {eta.shape}, expected ({T},) to match the horizon T={T} of "
            f"contexts [T, K, d] = {list(X.shape)}"
        )
    if np.any(np.isnan(eta)):
        raise ValueError(
            f"noise[{int(np.argmax(np.isnan(eta)))}]=nan is invalid: noise must not "
            "contain NaN (±inf is allowed: the algorithms clamp rewards)"
        )
    if nu is not None:
        nu_arr = V._as_float_array("nu", nu, "an array of real numbers")
        if nu_arr.shape not in ((), (T,)):
            raise ValueError(
                f"nu has shape {nu_arr.shape}, expected () or ({T},) to match the horizon T={T} of contexts"
            )
        V.check_positive("nu", nu_arr)
    return th, X, eta


def _sp500_for(dim: int, num_arms: int, noise: NoiseFamily) -> Stream:
    if dim != 10:
        raise ValueError(
            f"dim={dim} is invalid for the sp500 stream: its contexts are ten stocks' returns (10)"
        )
    return sp500_stream(num_arms, noise=noise)


# The streams the benchmark offers (``--stream``); it runs the paper's Section 6 one unless told another.
register(
    StreamSpec(
        "linear",
        lambda dim, num_arms, noise: linear_stream(dim, num_arms, noise=noise),
        "the paper's: θ* and the K contexts uniform on unit spheres",
    )
)
register(
    StreamSpec(
        "sp500", _sp500_for, "the K contexts distinct trading days of ten S&P 500 stocks' returns, unit norm"
    )
)
