"""Zero-mean noise families η_t, each reporting its (1+ε)-moment bound ν (Assumption ass:noise).

A family is a ``NoiseFamily(sample, moment_bound, max_order)``:

- ``sample(key, t) -> (eta, scale)``: one draw η_t for round index ``t`` and the round's scale s_t
  (1 for homoscedastic families); the key is consumed.
- ``moment_bound(eps) -> nu``: ν with E|η|^{1+ε} ≤ ν^{1+ε} for a unit-scale round, so a round of scale s_t
  has ν_t = s_t·ν. Closed forms where they exist (Gaussian, Student-t, symmetric Pareto), an accurate
  quadrature otherwise (centred Pareto). ``eps`` may be traced.
- ``max_order``: the sup of the finite moment orders p (the moment E|η|^p is finite iff p < max_order,
  or for every p when it is ``inf``); ``check_moment(eps)`` raises for 1 + ε ≥ max_order.

Draws are clamped to ±√(float max) so that sums of squared rewards stay finite in float32; for every family
here the probability of reaching the clamp is below 1e-19 per draw.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln

from . import _validation as V
from ._numeric import as_float, float_dtype

Array = jax.Array

_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(96)


class NoiseFamily(NamedTuple):
    """A zero-mean noise family; see the module docstring."""

    name: str
    sample: Callable[[jax.Array, Array], tuple]
    moment_bound: Callable[[Array], Array]
    max_order: object  # float or array of floats (per grid point when validated with arrays)

    def check_moment(self, eps, name: str = "eps"):
        """Raise ``ValueError`` when the (1+ε)-moment is infinite; returns ``eps``."""
        V.check_eps(eps, name)
        if V.is_traced(eps) or V.is_traced(self.max_order):
            return eps
        p = 1.0 + np.asarray(eps, dtype=np.float64)
        bad = ~(p < np.asarray(self.max_order, dtype=np.float64))
        if np.any(bad):
            e = float(np.broadcast_to(np.asarray(eps, np.float64), bad.shape)[bad].flat[0])
            m = float(np.broadcast_to(np.asarray(self.max_order, np.float64), bad.shape)[bad].flat[0])
            raise ValueError(f"{name}={e!r} is invalid for {self.name}: its (1+eps)-moment is infinite "
                             f"unless 1+{name} < {m:g}, i.e. {name} in (0, {min(m - 1.0, 1.0):g})")
        return eps


def _clamp(x):
    big = jnp.sqrt(jnp.finfo(x.dtype).max)
    return jnp.clip(x, -big, big)


def _standard_exponential(key) -> Array:
    """Exp(1) from 64 random bits: u = (hi + (lo + ½)/2³²)/2³² keeps the far tail (u down to 2.7e-20)
    in float32, where a 24-bit uniform would truncate it at −log 2⁻²⁴ ≈ 16.6."""
    bits = jax.random.bits(key, (2,), jnp.uint32)
    dtype = float_dtype()
    two32 = jnp.asarray(2.0 ** -32, dtype)
    u = (bits[0].astype(dtype) + (bits[1].astype(dtype) + 0.5) * two32) * two32
    return -jnp.log(u)


def _abs_moment_gaussian(p, scale):
    return scale ** p * jnp.exp(0.5 * p * jnp.log(2.0) + gammaln((p + 1.0) / 2.0)) / jnp.sqrt(jnp.pi)


def gaussian(scale=1.0) -> NoiseFamily:
    """N(0, scale²); E|η|^p = scale^p 2^{p/2} Γ((p+1)/2)/√π."""
    V.check_positive("scale", scale)
    scale_ = as_float(scale)

    def sample(key, t):
        return _clamp(scale_ * jax.random.normal(key, dtype=float_dtype())), jnp.ones((), float_dtype())

    def moment_bound(eps):
        p = 1.0 + as_float(eps)
        return _abs_moment_gaussian(p, scale_) ** (1.0 / p)

    return NoiseFamily("gaussian", sample, moment_bound, np.inf)


def student_t(df, scale=1.0) -> NoiseFamily:
    """scale·t_df (df > 1 for a mean); E|η|^p = scale^p df^{p/2} Γ((p+1)/2) Γ((df−p)/2)/(√π Γ(df/2)), p < df.

    The paper's ε = 1 noise is t₃: ν = √3 at ε = 1.
    """
    V.check_range("df", df, 1.0, None, low_open=True, allow_inf=False)
    V.check_positive("scale", scale)
    df_ = as_float(df)
    scale_ = as_float(scale)

    def sample(key, t):
        eta = scale_ * jax.random.t(key, df_, dtype=float_dtype())
        return _clamp(eta), jnp.ones((), float_dtype())

    def moment_bound(eps):
        p = 1.0 + as_float(eps)
        log_m = (p * jnp.log(scale_) + 0.5 * p * jnp.log(df_) + gammaln((p + 1.0) / 2.0)
                 + gammaln((df_ - p) / 2.0) - 0.5 * jnp.log(jnp.pi) - gammaln(df_ / 2.0))
        return jnp.exp(log_m / p)

    return NoiseFamily(f"student_t(df={_fmt(df)})", sample, moment_bound, df)


def pareto(shape, x_min=1.0) -> NoiseFamily:
    """Centred Pareto: X − E[X] with X ~ Pareto(shape a, x_min), E[X] = a·x_min/(a−1) (a > 1).

    ``moment_bound`` is the true centred (1+ε)-moment bound E|X − μ|^p (p < a), computed as a Beta
    function for the part above μ and a 96-point Gauss–Legendre quadrature for [x_min, μ]. The paper
    instead takes ν = (E X^p)^{1/p} = (a x_min^p/(a−p))^{1/p} (15^{1/1.4} for a = 1.5, ε = 0.4), an upper
    bound; ``raw_moment_bound`` below gives it.
    """
    V.check_range("shape", shape, 1.0, None, low_open=True)
    V.check_positive("x_min", x_min)
    a = as_float(shape)
    xm = as_float(x_min)
    mean = a * xm / (a - 1.0)

    def sample(key, t):
        x = xm * jnp.exp(_standard_exponential(key) / a)
        return _clamp(x - mean), jnp.ones((), float_dtype())

    def moment_bound(eps):
        p = 1.0 + as_float(eps)
        log_norm = jnp.log(a) + a * jnp.log(xm)
        # ∫_μ^∞ (x−μ)^p a xm^a x^{−a−1} dx = a xm^a μ^{p−a} B(a−p, p+1)   (substitute x = μ/v)
        upper = jnp.exp(log_norm + (p - a) * jnp.log(mean)
                        + gammaln(a - p) + gammaln(p + 1.0) - gammaln(a + 1.0))
        # ∫_{xm}^μ (μ−x)^p a xm^a x^{−a−1} dx by Gauss–Legendre on [xm, μ]
        nodes = as_float(_GL_NODES)
        weights = as_float(_GL_WEIGHTS)
        half = 0.5 * (mean - xm)
        x = xm + half * (nodes + 1.0)
        lower = half * jnp.sum(weights * (mean - x) ** p * jnp.exp(log_norm - (a + 1.0) * jnp.log(x)))
        return (upper + lower) ** (1.0 / p)

    return NoiseFamily(f"pareto(shape={_fmt(shape)})", sample, moment_bound, shape)


def raw_pareto_moment_bound(shape, x_min, eps):
    """(E X^{1+ε})^{1/(1+ε)} of the *uncentred* Pareto: the ν the paper uses (15^{1/1.4} at a=1.5, ε=0.4)."""
    V.check_eps(eps)
    p = 1.0 + as_float(eps)
    a = as_float(shape)
    return (a * as_float(x_min) ** p / (a - p)) ** (1.0 / p)


def symmetric_pareto(shape, scale=1.0) -> NoiseFamily:
    """Symmetric Pareto (two-sided Lomax): η = ±scale·(U^{−1/a} − 1), density ∝ (1 + |x|/scale)^{−a−1}.

    Zero mean for a > 1; E|η|^p = scale^p Γ(p+1) Γ(a−p)/Γ(a) for p < a.
    """
    V.check_range("shape", shape, 1.0, None, low_open=True)
    V.check_positive("scale", scale)
    a = as_float(shape)
    scale_ = as_float(scale)

    def sample(key, t):
        k_sign, k_mag = jax.random.split(key)
        sign = jnp.where(jax.random.bernoulli(k_sign), 1.0, -1.0).astype(float_dtype())
        magnitude = scale_ * jnp.expm1(_standard_exponential(k_mag) / a)
        return _clamp(sign * magnitude), jnp.ones((), float_dtype())

    def moment_bound(eps):
        p = 1.0 + as_float(eps)
        log_m = p * jnp.log(scale_) + gammaln(p + 1.0) + gammaln(a - p) - gammaln(a)
        return jnp.exp(log_m / p)

    return NoiseFamily(f"symmetric_pareto(shape={_fmt(shape)})", sample, moment_bound, shape)


def heteroscedastic(base: NoiseFamily, low=0.5, high=2.0, schedule=None) -> NoiseFamily:
    """Per-round scale s_t times a base family: η_t = s_t·ξ_t, revealed as ν_t = s_t·ν_base.

    s_t is log-uniform on [low, high] each round, or ``clip(schedule(t), low, high)`` for a user
    function of the 0-based round index. ``moment_bound`` is that of the base family (unit scale); the
    bound valid for every round, for a constant-ν algorithm, is ``high * moment_bound(eps)``.
    """
    V.check_positive("low", low)
    V.check_positive("high", high)
    if not V.is_traced((low, high)) and np.any(np.asarray(high, float) < np.asarray(low, float)):
        raise ValueError(f"high={high!r} is invalid: it must be >= low={low!r}")
    lo = as_float(low)
    hi = as_float(high)

    def sample(key, t):
        k_scale, k_base = jax.random.split(key)
        if schedule is None:
            u = jax.random.uniform(k_scale, dtype=float_dtype())
            s = jnp.exp(jnp.log(lo) + u * (jnp.log(hi) - jnp.log(lo)))
        else:
            s = jnp.clip(as_float(schedule(t)), lo, hi)
        eta, base_scale = base.sample(k_base, t)
        return _clamp(s * eta), s * base_scale

    return NoiseFamily(f"heteroscedastic({base.name})", sample, base.moment_bound, base.max_order)


def _fmt(x):
    return f"{float(x):g}" if not V.is_traced(x) and np.ndim(x) == 0 else "..."
