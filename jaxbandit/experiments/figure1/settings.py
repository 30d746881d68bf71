"""Figure 1's setting (Section 6): the environment and the two noise panels."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import NamedTuple

import jax
import numpy as np

import jaxbandit as jb

from ...core import validation as V
from ...core.dtypes import as_float, as_index, float_dtype
from ...envs.noise import NoiseFamily

DIM, NUM_ARMS = 10, 20
C_VALUES = (0.0, 100.0)
TUNE_SEEDS = tuple(range(1000, 1010))
CONSTANTS = ("theory", "tuned", "both")
MIN_HORIZON = 4
NOISES = ("student_t", "pareto")


class NoiseSetting(NamedTuple):
    """One regret panel: its noise family, the moment order ε the algorithms are given, and ν."""

    key: str
    panel: str
    title: str
    family: str
    eps: float
    nu: float


@functools.cache
def _pareto_nu(dtype: str) -> float:
    """ν of panel (c) in the default float dtype ``dtype`` (the cache's key: computed once per dtype, as
    every grid point's factory asks for it and eager operations cost ~1 ms each)."""
    with jax.ensure_compile_time_eval():  # a number even when called inside a traced factory
        return float(jb.noise.raw_pareto_moment_bound(1.5, 1.0, 0.4))


def noise_settings() -> dict:
    """``{"student_t": (a), "pareto": (c)}`` in panel order."""
    pareto_nu = _pareto_nu(str(float_dtype()))
    return {
        "student_t": NoiseSetting(
            "student_t", "(a)", "ε = 1: Student-t(3) noise, ν = √3", "student_t(df=3)", 1.0, math.sqrt(3.0)
        ),
        "pareto": NoiseSetting(
            "pareto",
            "(c)",
            "ε = 0.4: centred Pareto(1.5, 1) noise, ν = 15^(1/1.4)",
            "pareto(shape=1.5, x_min=1), centred",
            0.4,
            pareto_nu,
        ),
    }


def eps_nu_values() -> tuple[list, list]:
    """ε and ν of each noise setting, in ``NOISES`` order (a traced noise index picks one)."""
    settings = noise_settings()
    return [settings[n].eps for n in NOISES], [settings[n].nu for n in NOISES]


index = as_index  # a noise-setting grid value 0.0/1.0 as an int32 index


def pick(values, i) -> jax.Array:
    """``values[i]`` for a (possibly traced) index, in the default float dtype."""
    return as_float(values)[i]


def selected_noise(setting) -> NoiseFamily:
    """The noise family of setting ``setting`` (0: Student-t(3), 1: centred Pareto(1.5, 1)), possibly
    traced (``jb.noise.select``: the stream is exactly that family's)."""
    if not V.is_traced(setting) and (np.ndim(setting) != 0 or float(setting) not in (0.0, 1.0)):
        raise ValueError(f"index={setting!r} is invalid: it must be 0 (Student-t(3)) or 1 (Pareto(1.5, 1))")
    return jb.noise.select((jb.noise.student_t(3.0), jb.noise.pareto(1.5, 1.0)), setting)


def environment(p) -> jb.Environment:
    """The Section 6 environment for grid point ``p`` (``p["noise"]``: 0 or 1, ``p["C"]``: budget)."""
    if not isinstance(p, Mapping) or "noise" not in p or "C" not in p:
        raise ValueError(f"p={p!r} is invalid: it must be a mapping with 'noise' (0 or 1) and 'C' (>= 0)")
    return jb.envs.linear(
        DIM, NUM_ARMS, noise=selected_noise(p["noise"]), corruption=jb.corruption.flip(p["C"])
    )
