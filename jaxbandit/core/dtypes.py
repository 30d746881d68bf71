"""Dtype helpers: float32 by default, float64 when ``jax_enable_x64`` is on."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def float_dtype():
    """The default floating dtype (float64 under x64, else float32), read from the configuration: no
    array is made (an eager ``jnp.zeros(())`` costs ~0.2 ms, and inside a trace it adds an operation)."""
    return jax.dtypes.canonicalize_dtype(jnp.float64)


def as_float(x):
    """``x`` as an array of the default floating dtype (tracers pass through, cast)."""
    return jnp.asarray(x, dtype=float_dtype())


def as_index(x):
    """A grid value holding a whole number (possibly traced: a ``jb.sweep`` axis of indices) as an
    int32 index."""
    return jnp.round(jnp.asarray(x)).astype(jnp.int32)
