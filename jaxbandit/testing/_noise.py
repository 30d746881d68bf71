"""``check_noise``: the contract of a ``jb.noise.NoiseFamily``, property by property.

A family promises zero mean and, for every moment order 1 + ε below its ``max_order``, E|η/s_t|^{1+ε} ≤
ν^{1+ε} with ν = ``moment_bound(ε)`` (s_t the round's scale, 1 for a homoscedastic family). Both are
statements about a distribution, so they are checked by statistical tests on ``SAMPLES`` draws from fixed
keys (deterministic: the same family passes or fails every time), each with a false-alarm rate of at most
``FALSE_ALARM`` for a family that keeps its declaration, whatever its distribution:

- ``moment_bound``: Y = min(|η/s_t|^{1+ε}, ``TRUNCATE``·ν^{1+ε}) has mean at most ν^{1+ε} under the
  declaration, values in [0, ``TRUNCATE``·ν^{1+ε}] and so variance at most ``TRUNCATE``·ν^{2(1+ε)}; by
  Bernstein's inequality its mean over n draws exceeds ν^{1+ε}(1 + √(2·TRUNCATE·log(1/δ)/n) +
  TRUNCATE·log(1/δ)/(3n)) with probability at most δ: the property fails when it does.
- ``zero_mean``: the median of block means (Bubeck, Cesa-Bianchi and Lugosi 2013, Lemma 2) is within
  (12 ν^{1+ε})^{1/(1+ε)} (16 log(e^{1/8}·2/δ)/n)^{ε/(1+ε)} of the mean with probability 1 − δ for any
  distribution whose (1+ε)-th absolute moment about its mean is at most ν^{1+ε}; the property fails when
  the median of means is further from 0 than the smallest such radius over the orders checked.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..core import validation as V
from ..core.dtypes import float_dtype
from ..envs.noise import NoiseFamily
from ._common import SEED, _check_name, _compiled, _first_line, _num, _Report, _rtol

#: Draws per statistical property, and where the moment test truncates |η|^{1+ε} (in units of ν^{1+ε}).
SAMPLES, TRUNCATE = 2**17, 16.0
#: The false-alarm rate of each statistical property for a family that keeps its declaration.
FALSE_ALARM = 1e-6
#: The moment orders 1 + ε checked, those below the family's ``max_order``.
EPS = (0.25, 0.5, 0.75, 1.0)


def check_noise(
    family: NoiseFamily, *, eps: Sequence[float] = EPS, name: str | None = None, samples: int = SAMPLES
) -> None:
    """Check that ``family`` is a conforming ``jb.noise.NoiseFamily``.

    Args:
      family: the family (``jb.noise.student_t(3.0)``, ``jb.registry.noise("pareto").build(0.5)``, yours).
      eps: the moment orders 1 + ε at which ``moment_bound`` is tested (those with 1 + ε < ``max_order``;
        at least one must be).
      name: the family's name in messages (default: ``family.name``).
      samples: draws per statistical property (≥ 4096; more draws detect smaller violations).

    The properties, in this order: ``noise_type`` (a ``NoiseFamily``, ``max_order`` > 1),
    ``sample_dtypes`` (``sample(key, t)`` gives two float scalars of the default dtype, the scale > 0,
    the same draw called twice and under ``jax.jit``), ``sample_uses_key`` (different keys give different
    draws), ``zero_mean`` and ``moment_bound`` (the statistical tests of the module docstring, each with a
    false-alarm rate ≤ ``FALSE_ALARM`` = 1e-6). Returns None; raises ``AssertionError`` naming the first
    that fails, ``ValueError`` for bad arguments.
    """
    V.check_instance("family", family, NoiseFamily, "a jb.noise family (e.g. jb.noise.student_t(3.0))")
    samples = V.check_int("samples", samples, low=4096)
    if isinstance(eps, (int, float)) or not isinstance(eps, Sequence) or not eps:
        raise ValueError(f"eps={eps!r} is invalid: give a non-empty sequence of moment orders in (0, 1]")
    for e in eps:
        V.check_eps(e, "eps")
    rep = _Report("check_noise", _check_name(name, str(family.name)))
    prop = "noise_type"
    if not callable(family.sample) or not callable(family.moment_bound):
        rep.fail(prop, "sample and moment_bound must be functions (see jb.noise.NoiseFamily)")
    try:
        max_order = float(family.max_order)
    except (TypeError, ValueError) as err:
        rep.fail(prop, f"max_order={family.max_order!r} is not a number", cause=err)
    if not max_order > 1.0:
        rep.fail(prop, f"max_order={max_order:g} must be > 1: the noise needs a finite (1+ε)-moment, ε > 0")
    orders = [float(e) for e in eps if 1.0 + float(e) < max_order]
    if not orders:
        raise ValueError(
            f"eps={tuple(eps)!r} is invalid for {family.name}: every 1 + eps is >= its max_order "
            f"{max_order:g}; give eps < {max_order - 1.0:g}"
        )
    _check_sample_dtypes(rep, family)
    xi = _draws(rep, family, jax.random.key(SEED), samples)
    _check_sample_uses_key(rep, family, xi)
    bounds = _moment_bounds(rep, family, orders)
    _check_zero_mean(rep, xi, bounds)
    _check_moment_bound(rep, family, xi, bounds)


def _draw(family: NoiseFamily):
    return _compiled(lambda key, t: family.sample(key, t))


def _check_sample_dtypes(rep: _Report, family: NoiseFamily) -> None:
    prop = "sample_dtypes"
    with rep.guard(prop):
        key, t = jax.random.key(SEED), jnp.int32(3)
        out = family.sample(key, t)
        if not (isinstance(out, tuple) and len(out) == 2):
            rep.fail(prop, f"sample(key, t) returned a {type(out).__name__}: it must be a pair (eta, scale)")
        for what, x in zip(("eta", "scale"), out):
            x = jnp.asarray(x)
            if x.shape != () or x.dtype != float_dtype():
                rep.fail(
                    prop,
                    f"sample(key, t)'s {what} has dtype {x.dtype} and shape {x.shape}: it must be a "
                    f"{np.dtype(float_dtype()).name} scalar (the default float dtype)",
                )
        if not float(out[1]) > 0:
            rep.fail(prop, f"sample(key, t)'s scale is {_num(out[1])}: it must be > 0")
        again, jitted = family.sample(key, t), _draw(family)(key, t)
        for what, x, tol in (("called again", again, 0.0), ("under jax.jit", jitted, _rtol())):
            # eager and jitted XLA may round differently in the last bits (fused multiply-adds)
            if not np.allclose(np.asarray(x[0]), np.asarray(out[0]), rtol=tol, atol=0.0, equal_nan=True):
                rep.fail(
                    prop,
                    f"sample(key, t) gave eta={_num(out[0])}, and {_num(x[0])} {what} with the same key "
                    "and t: it must be a function of (key, t) alone (no Python state, no branch on "
                    "isinstance(x, jax.core.Tracer))",
                )


def _draws(rep: _Report, family: NoiseFamily, key, n: int) -> np.ndarray:
    """η/s_t of ``n`` draws, rounds t = 0..n−1 (mod 1024), keys split from ``key``, as float64."""
    with rep.guard("sample_dtypes"):
        keys = jax.random.split(key, n)
        t = jnp.asarray(np.arange(n) % 1024, jnp.int32)
        eta, scale = _compiled(jax.vmap(lambda k, t: family.sample(k, t)))(keys, t)
        xi = np.asarray(eta, np.float64) / np.asarray(scale, np.float64)
    bad = np.flatnonzero(~np.isfinite(xi))
    if bad.size:
        rep.fail("sample_dtypes", f"draw {int(bad[0])} (round index {int(bad[0]) % 1024}) is not finite")
    return xi


def _check_sample_uses_key(rep: _Report, family: NoiseFamily, xi: np.ndarray) -> None:
    if np.all(xi == xi[0]):
        rep.fail(
            "sample_uses_key",
            f"every draw under {xi.size} different keys is {_num(xi[0])}: sample must draw η from its key",
        )


def _moment_bounds(rep: _Report, family: NoiseFamily, orders) -> dict:
    """{ε: ν = moment_bound(ε)} at every order, each finite and > 0 (property ``moment_bound``)."""
    bounds = {}
    for e in orders:
        try:
            with jax.ensure_compile_time_eval():
                nu = float(np.asarray(family.moment_bound(e)))
        except Exception as err:  # whatever the family's own code raises
            rep.fail(
                "moment_bound",
                f"moment_bound({e:g}) raised {type(err).__name__}: {_first_line(err)}",
                cause=err,
            )
        if not (np.isfinite(nu) and nu > 0):
            rep.fail(
                "moment_bound",
                f"moment_bound({e:g}) is {nu:g}, but 1 + {e:g} < max_order = {float(family.max_order):g}: "
                "it must be finite and > 0 there",
            )
        bounds[e] = nu
    return bounds


def _check_moment_bound(rep: _Report, family: NoiseFamily, xi: np.ndarray, bounds: dict) -> None:
    """``moment_bound``: the Bernstein test of the module docstring at every order."""
    n, log_term = xi.size, math.log(1 / FALSE_ALARM)
    allowed = 1 + math.sqrt(2 * TRUNCATE * log_term / n) + TRUNCATE * log_term / (3 * n)
    for e, nu in bounds.items():
        p = 1.0 + e
        mean = float(np.mean(np.minimum(np.abs(xi / nu) ** p, TRUNCATE)))
        if mean > allowed:
            rep.fail(
                "moment_bound",
                f"the declared E|eta|^{p:g} <= nu^{p:g} (nu = moment_bound({e:g}) = {nu:.4g}) contradicts "
                f"the draws: the mean of min(|eta|^{p:g}, {TRUNCATE:g}·nu^{p:g}) over {n} draws is "
                f"{mean:.4g}·nu^{p:g}, above the {allowed:.4g}·nu^{p:g} that a family keeping it exceeds "
                f"with probability at most {FALSE_ALARM:g}; is max_order = {float(family.max_order):g} too "
                "large, or moment_bound too small?",
            )


def _check_zero_mean(rep: _Report, xi: np.ndarray, bounds: dict) -> None:
    """``zero_mean``: the median-of-means test of the module docstring, at the order giving the
    tightest radius."""
    n = xi.size
    log_term = math.log(math.exp(1 / 8) * 2 / FALSE_ALARM)
    k = int(min(8 * log_term, n / 2))
    mom = float(np.median(xi[: n // k * k].reshape(k, -1).mean(axis=1)))
    radius, at = min(
        ((12 * nu ** (1 + e)) ** (1 / (1 + e)) * (16 * log_term / n) ** (e / (1 + e)), e)
        for e, nu in bounds.items()
    )
    if abs(mom) > radius:
        rep.fail(
            "zero_mean",
            f"the median of {k} block means of {n} draws is {mom:.4g}, further from 0 than {radius:.4g}, "
            f"which a zero-mean family with its declared moment_bound({at:g}) stays within but with "
            f"probability {FALSE_ALARM:g}: center the noise (subtract its mean)",
        )
