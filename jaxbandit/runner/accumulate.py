"""Running sums of non-negative per-round quantities (regret, |c_t|) that are exact to the dtype's rounding
over any horizon and never decrease.

A plain float32 sum of 10⁵ rounds drifts by ~10⁻⁵ relative, and a parallel prefix sum (``jnp.cumsum`` on
the CPU) can even make a running total of non-negative terms decrease by an ulp. Here the total is kept
as an unevaluated pair hi + lo (Knuth's TwoSum, then Fast2Sum to renormalise), which carries the
rounding error of every addition; the value shown is hi, the total rounded once (relative error ≤ eps/2
plus eps² per round), made non-decreasing by a running maximum — which moves it by at most that rounding,
since the exact total never decreases.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

Array = jax.Array


class RunningSum(NamedTuple):
    """A compensated running total: ``hi + lo`` is the sum so far, ``shown`` the value reported."""

    hi: Array
    lo: Array
    shown: Array


def zero(dtype) -> RunningSum:
    z = jnp.zeros((), dtype)
    return RunningSum(z, z, z)


def add(total: RunningSum, x: Array) -> RunningSum:
    """``total`` + ``x`` (``x`` ≥ 0), compensated; O(1) flops, no branches."""
    s = total.hi + x
    x_part = s - total.hi  # TwoSum: s + err = hi + x exactly
    err = (total.hi - (s - x_part)) + (x - x_part)
    err = err + total.lo
    hi = s + err  # Fast2Sum (|s| ≥ |err|): renormalise
    lo = err - (hi - s)
    return RunningSum(hi, lo, jnp.maximum(total.shown, hi))
