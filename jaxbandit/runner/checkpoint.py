"""Checkpoint and resume of a running sweep.

After every chunk the sweep writes the carry of each compiled program (every run's state, environment and
keys) and the results kept so far, atomically: ``DIR/algorithms-<first>-<last>.npz`` for algorithms run
in lockstep (the default), ``DIR/algorithm-<index>.npz`` for one program per algorithm. Started again
with the same settings, it loads them and continues from the next chunk; because a run's random stream
depends only on its key and the round index, the result is identical to an uninterrupted run. A
fingerprint of the settings (factory names, grid, seeds, key, horizon, chunking, recording, dtype)
guards against resuming a different sweep; change the code of a factory and you must delete the
directory yourself.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import jax
import numpy as np

from ..report.results import atomic_savez

_KEY_PREFIX = "carry_key/"
_LEAF_PREFIX = "carry/"
_KEPT_PREFIX = "kept/"


def fingerprint(settings: dict) -> str:
    """A stable hash of JSON-serialisable ``settings``."""
    text = json.dumps(settings, sort_keys=True, default=lambda o: np.asarray(o).tolist())
    return hashlib.sha256(text.encode()).hexdigest()


def _is_key(leaf) -> bool:
    return jax.dtypes.issubdtype(getattr(leaf, "dtype", None), jax.dtypes.prng_key)


def gather(carry, host) -> dict:
    """The carry's leaves as host arrays keyed for :func:`save` (keys as their raw data). Call it in
    every process: on several hosts ``host`` is a collective."""
    arrays = {}
    for i, leaf in enumerate(jax.tree_util.tree_leaves(carry)):
        if _is_key(leaf):
            arrays[f"{_KEY_PREFIX}{i}"] = host(jax.random.key_data(leaf))
        else:
            arrays[f"{_LEAF_PREFIX}{i}"] = host(leaf)
    return arrays


def save(path: Path, *, carry_arrays: dict, kept: dict, next_round: int, finger: str) -> None:
    """Write the gathered carry (:func:`gather`) and the kept results, atomically."""
    arrays = {"next_round": np.asarray(next_round), "fingerprint": np.asarray(finger), **carry_arrays}
    for field, parts in kept.items():
        arrays[f"{_KEPT_PREFIX}{field}"] = np.concatenate(parts, axis=-1) if parts else np.zeros((0,))
    atomic_savez(path, **arrays)


def load(path: Path, *, template, finger: str):
    """``(carry_leaves_as_numpy, kept, next_round)`` from ``path``, or None if absent, from another
    sweep, or laid out differently from ``template`` (a freshly initialised carry giving the tree
    structure, every leaf's shape and dtype and the key types): a checkpoint written by a version of the
    library that kept an algorithm's state in another layout is not resumed into this one."""
    if not path.exists():
        return None
    with np.load(path, allow_pickle=False) as z:
        if str(z["fingerprint"]) != finger:
            return None
        leaves = []
        for i, leaf in enumerate(jax.tree_util.tree_leaves(template)):
            key = _is_key(leaf)
            name = f"{_KEY_PREFIX if key else _LEAF_PREFIX}{i}"
            if name not in z.files:
                return None
            stored = z[name]  # each access of an npz member reads it from the file again: once
            expected = jax.eval_shape(jax.random.key_data, leaf) if key else leaf
            if stored.shape != expected.shape or stored.dtype != expected.dtype:
                return None
            leaves.append(jax.random.wrap_key_data(stored, impl=jax.random.key_impl(leaf)) if key else stored)
        kept = {k[len(_KEPT_PREFIX) :]: [z[k]] for k in z.files if k.startswith(_KEPT_PREFIX)}
        next_round = int(z["next_round"])
    carry = jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(template), leaves)
    return carry, kept, next_round
