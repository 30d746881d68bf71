"""Eager input checks: a ``ValueError`` naming the parameter, its value and the valid range.

Checks run only on concrete values (Python numbers, NumPy or JAX arrays). A traced value (inside a
user's ``jit``/``vmap``) passes unchecked, so the factories stay traceable; ``sweep`` validates its grid
by calling the factories once with the whole grid as concrete arrays.
"""
from __future__ import annotations

import math
import numbers

import jax
import numpy as np


def is_traced(value) -> bool:
    """True when ``value`` is (or contains) a JAX tracer, so its numbers are unknown now."""
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(value))


def _as_float_array(name: str, value) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r} is not a number") from None
    return arr


def _interval(low, high, low_open, high_open) -> str:
    left = "(" if low_open else "["
    right = ")" if high_open else "]"
    lo = "-inf" if low is None else f"{low:g}"
    hi = "inf" if high is None else f"{high:g}"
    return f"{left}{lo}, {hi}{right}"


def check_range(name: str, value, low=None, high=None, *, low_open=False, high_open=False,
                allow_inf=False):
    """Raise ``ValueError`` unless every element of ``value`` lies in the interval.

    NaN is always rejected; ±inf only where ``allow_inf`` and the interval admits it. Returns ``value``.
    """
    if value is None or is_traced(value):
        return value
    arr = _as_float_array(name, value)
    bad = np.isnan(arr)
    if not allow_inf:
        bad |= np.isinf(arr)
    if low is not None:
        bad |= (arr <= low) if low_open else (arr < low)
    if high is not None:
        bad |= (arr >= high) if high_open else (arr > high)
    if np.any(bad):
        shown = arr.flat[int(np.argmax(bad.ravel()))] if arr.ndim else arr.item()
        where = "" if arr.ndim == 0 else f" (an element of {name})"
        rng = _interval(low, high, low_open, high_open)
        raise ValueError(f"{name}={shown!r}{where} is invalid: it must be a finite number in {rng}"
                         if not allow_inf else
                         f"{name}={shown!r}{where} is invalid: it must be a number in {rng}")
    return value


def check_positive(name: str, value, *, allow_inf=False):
    """``value`` > 0 (and finite unless ``allow_inf``)."""
    return check_range(name, value, 0.0, None, low_open=True, allow_inf=allow_inf)


def check_nonnegative(name: str, value, *, allow_inf=False):
    """``value`` ≥ 0 (and finite unless ``allow_inf``)."""
    return check_range(name, value, 0.0, None, allow_inf=allow_inf)


def check_eps(value, name: str = "eps"):
    """The moment order ε of Assumption ass:noise: ε ∈ (0, 1]."""
    return check_range(name, value, 0.0, 1.0, low_open=True)


def check_int(name: str, value, low: int = 1) -> int:
    """A static integer ≥ ``low`` (shapes, horizons, iteration counts). Returns it as ``int``."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        if isinstance(value, (float, np.floating)) and math.isfinite(value) and float(value).is_integer():
            value = int(value)
        else:
            raise ValueError(f"{name}={value!r} is invalid: it must be an integer >= {low}")
    if value < low:
        raise ValueError(f"{name}={value!r} is invalid: it must be an integer >= {low}")
    return int(value)


def check_finite_array(name: str, value, shape=None):
    """A concrete array with only finite entries and, if given, this exact shape."""
    if is_traced(value):
        return value
    arr = np.asarray(value)
    if shape is not None and tuple(arr.shape) != tuple(shape):
        raise ValueError(f"{name} has shape {tuple(arr.shape)}, expected {tuple(shape)}")
    if not np.issubdtype(arr.dtype, np.number) or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite numbers")
    return value
