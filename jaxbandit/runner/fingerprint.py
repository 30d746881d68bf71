"""What a sweep computes, as the fingerprint its checkpoints and its ``out=`` store carry, so that a sweep
resumes only what it would compute itself.

A fingerprint is a dict ``component -> SHA-256``: the settings that shape the result (horizon, grid,
seeds, key, recorded rounds, chunk size, float dtype (x64), the algorithms' names and grouping, the
checkpoint format); ``build``: the jax and jaxlib versions, the threefry mode
(``jax_threefry_partitionable``) and ``XLA_FLAGS``, each of which can change the bits a run computes
without changing its jaxpr (a sweep stopped under one and resumed under another would equal neither
run); and ``code``, a hash of what the factories compute: the jaxpr of one round — ``init``, the
stream's draw, ``select``, the adversary's ``corrupt`` and ``update`` — of each algorithm with the
environment, traced with the grid's values as arguments, with its constants' bytes. A value a
factory closes over (Student-t ``df = 3`` or ``5`` under the same factory names), a changed default or
a changed library algorithm changes it; renaming a factory or moving it to another module does not.
It is traced for one run, outside the sweep's batching, so it does not depend on the device count, the
CPU workers or the chunk layout (a checkpoint resumes across them); it does depend on the JAX version
and, where the library traces another program for another backend, on the backend (``jb.envs.linear``'s
contexts are drawn flat on a CPU, ``ExecutionOptions.flat_sphere_bits``: its CPU checkpoints are refused on
a GPU). The sweep driver's own code is covered by ``format`` (``runner.program.LAYOUT``).

:func:`differences` names the components that differ, so that a refusal says what changed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shlex
from collections.abc import Callable, Mapping
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..core.dtypes import float_dtype
from .simulate import init_carry, round_step

#: What each component is, as a refusal names it.
LABELS = {
    "horizon": "the horizon",
    "grid": "the grid",
    "seeds": "the seeds",
    "key": "the key",
    "record": "the recorded rounds (record=)",
    "chunking": "the chunk size (chunk_size=)",
    "dtype": "the float dtype (x64)",
    "build": "the JAX build and settings (jax/jaxlib versions, JAX_THREEFRY_PARTITIONABLE, XLA_FLAGS)",
    "algorithms": "the algorithms (names, lockstep)",
    "code": "the code (what the factories compute, as traced on this backend)",
    "format": "the checkpoint format (another jaxbandit version)",
    "store": "the out= store (not the one the checkpoint was written with)",
}


def digest(value) -> str:
    """SHA-256 of ``value`` as canonical JSON (arrays as their dtype and values)."""
    text = json.dumps(value, sort_keys=True, default=_jsonable)
    return hashlib.sha256(text.encode()).hexdigest()


def _jsonable(obj):
    arr = np.asarray(obj)
    return {"dtype": arr.dtype.str, "shape": list(arr.shape), "values": arr.tolist()}


def build() -> dict:
    """What, besides the program, decides the bits a run computes: the jax and jaxlib versions, the
    threefry mode (how ``jax.random`` splits its bits) and the ``XLA_FLAGS`` the process runs with (e.g.
    ``--xla_cpu_enable_fast_math``), but those that only place the computation (:data:`PLACEMENT_FLAGS`)."""
    import jaxlib

    threefry = getattr(jax.config, "jax_threefry_partitionable")  # noqa: B009 (missing from its stubs)
    return {
        "jax": jax.__version__,
        "jaxlib": getattr(jaxlib, "__version__", "?"),
        "threefry_partitionable": bool(threefry),
        "xla_flags": bit_flags(os.environ.get("XLA_FLAGS", "")),
    }


#: XLA flags that place a computation or report on it without changing its bits (a checkpoint resumes on
#: another device count): left out of :func:`build`.
PLACEMENT_FLAGS = ("--xla_force_host_platform_device_count", "--xla_dump")


def bit_flags(text: str) -> list[str]:
    """The flags of ``XLA_FLAGS`` ``text`` that may change the bits a program computes, sorted: all but
    :data:`PLACEMENT_FLAGS`."""
    return sorted(flag for flag in shlex.split(text) if not flag.startswith(PLACEMENT_FLAGS))


def make(**components) -> dict[str, str]:
    """A fingerprint: each component's :func:`digest`."""
    return {name: digest(value) for name, value in components.items()}


def program(make_alg: Callable, make_env: Callable, names: tuple[str, ...], key) -> str:
    """SHA-256 of the jaxpr of one round of ``make_alg``'s algorithm in ``make_env``'s environment (the
    carry's ``init`` included), each grid name in ``names`` a traced scalar, ``key`` a PRNG key of the
    sweep's kind; the constants' dtypes, shapes and bytes included.

    Cached on the factory objects, as ``jax.jit`` caches the sweep's programs: a sweep run again with the
    same factories traces nothing again."""
    return _program(
        make_alg, make_env, tuple(names), jax.ShapeDtypeStruct(key.shape, key.dtype), float_dtype()
    )


@functools.lru_cache(maxsize=512)
def _program(make_alg: Callable, make_env: Callable, names: tuple[str, ...], key, dtype) -> str:
    values = {n: jax.ShapeDtypeStruct((), dtype) for n in names}

    def one_round(values, key, t):
        alg, env = make_alg(values), make_env(values)
        return round_step(alg, env)(init_carry(alg, env, key), t)

    closed = jax.make_jaxpr(one_round)(values, key, jax.ShapeDtypeStruct((), jnp.int32))
    h = hashlib.sha256(str(closed.jaxpr).encode())
    for const in closed.consts:
        if jax.dtypes.issubdtype(getattr(const, "dtype", None), jax.dtypes.prng_key):
            const = jax.random.key_data(const)
        arr = np.asarray(const)
        h.update(f"{arr.dtype.str}{arr.shape}".encode())
        h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


class Sweep(NamedTuple):
    """A sweep's fingerprints: its store's (``store``) and, by :meth:`group`, each checkpoint's."""

    settings: dict[str, str]  # the components every fingerprint of the sweep shares
    code: dict[str, str]  # algorithm name -> :func:`program`
    store: dict[str, str]
    with_store: bool  # whether the checkpoints name the store (out=)

    @classmethod
    def of(
        cls,
        make_algs: Mapping[str, Callable],
        make_env,
        names,
        axes,
        seeds,
        key,
        horizon,
        rounds_kept,
        per_round: bool,
        chunk_size,
        format,
        lead: bool,
        *,
        with_store: bool,
    ) -> Sweep:
        """The fingerprints of ``jb.sweep``'s settings; ``format``: the sweep driver's checkpoint format;
        ``lead``: whether the result has an ``algorithm`` axis."""
        settings = make(
            horizon=horizon,
            grid=[list(names), [np.asarray(a) for a in axes]],
            seeds=np.asarray(seeds),
            key=[str(jax.random.key_impl(key)), np.asarray(jax.random.key_data(key))],
            record=[np.asarray(rounds_kept), per_round],
            chunking=chunk_size,
            dtype=str(np.dtype(float_dtype())),
            build=build(),
            format=format,
        )
        code = {name: program(f, make_env, tuple(names), key) for name, f in make_algs.items()}
        store = {**settings, **make(algorithms=[list(make_algs), lead], code=code)}
        return cls(settings, code, store, with_store)

    def group(self, names_in_order: list[str], indices, store_id: str | None) -> dict[str, str]:
        """The fingerprint of the checkpoint of the algorithms ``indices`` (run in one program), written
        into the store ``store_id``."""
        group = [names_in_order[i] for i in indices]
        extra = {"store": store_id} if self.with_store else {}
        code = {n: self.code[n] for n in group}
        return {**self.settings, **make(algorithms=[group, list(indices)], code=code, **extra)}


def parse(text) -> dict | None:
    """A fingerprint stored as JSON; None if ``text`` is not one (written by another version)."""
    try:
        found = json.loads(str(text))
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def differences(stored: Mapping | None, current: Mapping[str, str]) -> list[str]:
    """The components of ``current`` whose digests ``stored`` does not match (every one if ``stored`` is
    None), in ``LABELS``' order."""
    if stored is None:
        return ["format"]
    names = [n for n in set(stored) | set(current) if stored.get(n) != current.get(n)]
    order = list(LABELS)
    return sorted(names, key=lambda n: order.index(n) if n in order else len(order))


def describe(names: list[str]) -> str:
    """The differing components as words: ``"the grid and the code"``."""
    words = [LABELS.get(n, n) for n in names]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]
