"""Figure 1's setting (Section 6): the environment, the two noise panels, and the provenance and argument
checks every part of the figure shares."""

from __future__ import annotations

import datetime
import functools
import math
import os
import platform
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


# --- provenance -------------------------------------------------------------------------------------


def versions() -> dict:
    """Package versions a result depends on."""
    import jaxlib
    import matplotlib

    return {
        "jaxbandit": jb.__version__,
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "numpy": np.__version__,
        "matplotlib": matplotlib.__version__,
        "python": platform.python_version(),
    }


def device_info() -> dict:
    """The devices and machine a result ran on."""
    devs = jax.devices()
    return {
        "backend": jax.default_backend(),
        "devices": [str(d) for d in devs],
        "device_kind": devs[0].device_kind,
        "cpu_count": os.cpu_count(),
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "system": f"{platform.system()} {platform.release()}",
        "dtype": str(np.dtype(float_dtype())),
    }


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def jsonable(x):
    """Floats that JSON cannot hold (inf, nan) as strings."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, (np.ndarray, np.generic, jax.Array)):
        return jsonable(np.asarray(x).tolist())
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return x


# --- argument checks --------------------------------------------------------------------------------


def check_int(name, value, low, high=None) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or value < low
        or (high is not None and value > high)
    ):
        rng = f"[{low}, {high}]" if high is not None else f"[{low}, inf)"
        raise ValueError(f"{name}={value!r} is invalid: it must be an integer in {rng}")
    return int(value)


def seed_list(seeds, name) -> list:
    """A count n (seeds 0..n−1) or distinct non-negative integer seeds, as a list."""
    if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
        check_int(name, seeds, 1)
        return list(range(int(seeds)))
    try:
        ids = [int(s) for s in seeds]
    except (TypeError, ValueError):
        raise ValueError(
            f"{name}={seeds!r} is invalid: give a count >= 1 or non-negative integer seeds"
        ) from None
    if (
        not ids
        or min(ids) < 0
        or len(set(ids)) != len(ids)
        or any(isinstance(s, bool) or not float(s).is_integer() for s in seeds)
    ):
        raise ValueError(
            f"{name}={seeds!r} is invalid: give a count >= 1 or distinct non-negative integer seeds"
        )
    return ids
