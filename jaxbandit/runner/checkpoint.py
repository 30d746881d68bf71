"""Checkpoint and resume of a running sweep.

After every chunk the sweep writes the carry of each compiled program (every run's state, environment and
keys) and the results kept so far, atomically: ``DIR/algorithms-<first>-<last>.npz`` for algorithms run
in lockstep (the default), ``DIR/algorithm-<index>.npz`` for one program per algorithm. Started again
with the same settings, it loads them and continues from the next chunk; because a run's random stream
depends only on its key and the round index, the result is identical to an uninterrupted run.

The streams are saved as one batch (the CPU workers' groups concatenated), so a checkpoint resumes with
any device count and any number of groups: the padding streams repeat the last stream, so the batch is
cut or padded with copies of its last stream to the new size. Each file carries the sweep's
:mod:`~jaxbandit.runner.fingerprint`; a sweep that would compute something else (changed grid, seeds,
horizon, recording, chunk size, code) is refused with a ``ValueError`` that says what differs, and the
checkpoint is left as it is. ``jb.sweep(..., overwrite=True)`` starts over.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

import jax
import numpy as np

from ..persist.atomic import atomic_savez, error_reason
from . import fingerprint as fingerprint_lib

_KEY_PREFIX = "carry_key/"
_LEAF_PREFIX = "carry/"
_KEPT_PREFIX = "kept/"
#: The files a sweep writes in its checkpoint directory.
FILE = re.compile(r"algorithms?-\d+(-\d+)?\.npz")


def _is_key(leaf) -> bool:
    return jax.dtypes.issubdtype(getattr(leaf, "dtype", None), jax.dtypes.prng_key)


def gather(carries: list, host) -> dict:
    """The leaves of the groups' carries ``carries`` (each leaf's leading axis the streams), each
    concatenated over the groups, as host arrays keyed for :func:`save` (keys as their raw data). Call
    it in every process: on several hosts ``host`` is a collective."""
    arrays = {}
    per_group = [jax.tree_util.tree_leaves(c) for c in carries]
    for i, leaves in enumerate(zip(*per_group)):
        if _is_key(leaves[0]):
            arrays[f"{_KEY_PREFIX}{i}"] = np.concatenate([host(jax.random.key_data(x)) for x in leaves])
        else:
            arrays[f"{_LEAF_PREFIX}{i}"] = np.concatenate([host(x) for x in leaves])
    return arrays


def save(
    path: Path, *, carry_arrays: dict, kept: dict, next_round: int, finger: dict, reach: dict | None = None
) -> None:
    """Write the gathered carry (:func:`gather`) and the kept results, atomically; ``reach``: how far the
    ``out=`` store reaches (:meth:`~jaxbandit.runner.store.StoreWriter.reach`), checked on resume."""
    arrays = {
        "next_round": np.asarray(next_round),
        "fingerprint": np.asarray(json.dumps(finger, sort_keys=True)),
        "store_reach": np.asarray(json.dumps(reach, sort_keys=True)),
        **carry_arrays,
    }
    for field, parts in kept.items():
        arrays[f"{_KEPT_PREFIX}{field}"] = np.concatenate(parts, axis=-1) if parts else np.zeros((0,))
    atomic_savez(path, **arrays)


def check(path: Path, finger: dict) -> None:
    """Before anything runs: ``ValueError`` if ``path`` holds a damaged checkpoint, or one of a sweep
    whose fingerprint differs from ``finger`` (the file is not touched). Nothing there passes."""
    if not (path.exists() or path.is_symlink()):
        return
    with _reading(path) as z:
        stored = fingerprint_lib.parse(z["fingerprint"])
        int(z["next_round"])
    diff = fingerprint_lib.differences(stored, finger)
    if diff:
        raise Refused(
            f"checkpoint={str(path.parent)!r} holds {path.name}, written by another sweep: "
            f"{fingerprint_lib.describe(diff)} differ{'s' if len(diff) == 1 else ''}; to start over, pass "
            f"overwrite=True to jb.sweep or delete {str(path.parent)!r} (to resume, run the sweep as it was)"
        )


def store_reach(path: Path) -> dict | None:
    """How far the ``out=`` store reached when the checkpoint at ``path`` was written (None: no
    checkpoint there, or one of a sweep without a store); ``ValueError`` for a damaged checkpoint."""
    if not (path.exists() or path.is_symlink()):
        return None
    with _reading(path) as z:
        reach = json.loads(str(z["store_reach"])) if "store_reach" in z.files else None
    if reach is not None and not (
        isinstance(reach, dict) and isinstance(reach.get("journal_lines"), int) and "journal_sha256" in reach
    ):
        raise _damaged(path, ValueError(f"its store_reach is not one: {reach!r}"))
    return reach


def load(path: Path, *, template: list, finger: dict):
    """``(carries, kept, next_round)`` from ``path`` (one carry per group of ``template``, on the default
    device), or None if there is none. ``template``:
    the groups' freshly initialised carries, giving the tree structure, every leaf's shape and dtype,
    the key types and each group's streams. ``ValueError`` (the file untouched) for a checkpoint that
    :func:`check` refuses, or whose state is laid out otherwise than ``template``'s (written by a version
    of the library that kept an algorithm's state in another layout)."""
    if not (path.exists() or path.is_symlink()):
        return None
    check(path, finger)
    groups = [jax.tree_util.tree_leaves(t) for t in template]
    sizes = [leaves[0].shape[0] for leaves in groups]
    with _reading(path) as z:
        split = []  # per leaf, its groups' parts
        for i, leaf in enumerate(groups[0]):
            key = _is_key(leaf)
            name = f"{_KEY_PREFIX if key else _LEAF_PREFIX}{i}"
            stored = z[name] if name in z.files else None  # each access of a member reads it again: once
            expected = jax.eval_shape(jax.random.key_data, leaf) if key else leaf
            if stored is None or stored.shape[1:] != expected.shape[1:] or stored.dtype != expected.dtype:
                raise Refused(
                    f"checkpoint={str(path.parent)!r} holds {path.name}, whose state is laid out otherwise "
                    "(written by another version of jaxbandit); to start over, pass overwrite=True to "
                    f"jb.sweep or delete {str(path.parent)!r}"
                )
            # placed here, on the sweep's thread: its JAX settings (jax.enable_x64 is per thread) hold,
            # where the CPU workers' threads would convert a float64 NumPy leaf to float32
            parts = [jax.device_put(p) for p in np.split(_resized(stored, sum(sizes)), np.cumsum(sizes)[:-1])]
            split.append(
                [jax.random.wrap_key_data(p, impl=jax.random.key_impl(leaf)) for p in parts] if key else parts
            )
        kept = {
            k[len(_KEPT_PREFIX) :]: [_resized(z[k], sum(sizes))]
            for k in z.files
            if k.startswith(_KEPT_PREFIX)
        }
        next_round = int(z["next_round"])
    carries = [
        jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(t), [parts[g] for parts in split])
        for g, t in enumerate(template)
    ]
    return carries, kept, next_round


def _resized(batch: np.ndarray, streams: int) -> np.ndarray:
    """``batch`` `[S, ...]` with ``streams`` streams: cut, or padded with copies of its last one (the
    padding streams repeat the last stream, so they hold its values)."""
    if batch.ndim == 0 or batch.shape[0] == 0 or batch.shape[0] >= streams:
        return batch[:streams] if batch.ndim else batch
    return np.concatenate([batch, np.repeat(batch[-1:], streams - batch.shape[0], axis=0)])


def remove(directory: Path) -> None:
    """Remove the checkpoint files of ``directory`` (``jb.sweep(..., overwrite=True)``), nothing else:
    process 0 removes them, and every process returns once they are gone."""
    if jax.process_index() == 0 and directory.is_dir():
        for path in directory.iterdir():
            if FILE.fullmatch(path.name) and path.is_file():
                path.unlink()
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices("jaxbandit.sweep checkpoints removed")


class Refused(ValueError):
    """A checkpoint of another sweep, or laid out otherwise: the message says what differs."""


@contextlib.contextmanager
def _reading(path: Path) -> Iterator:
    """``np.load(path)``; anything that makes it no readable checkpoint (``BadZipFile``, ``EOFError``,
    pickled data, a missing member, a directory of that name, ...) is one ``ValueError`` naming the file
    and the fix."""
    try:
        z = np.load(path, allow_pickle=False)
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise ValueError("a .npy array, not a .npz archive")
    except Exception as err:
        raise _damaged(path, err) from None
    with z:
        try:
            yield z
        except Refused:
            raise
        except Exception as err:
            raise _damaged(path, err) from None


def _damaged(path: Path, err: BaseException) -> ValueError:
    reason = error_reason(err)
    return ValueError(
        f"checkpoint={str(path.parent)!r} holds {path.name}, which is damaged or not a jaxbandit checkpoint "
        f"({type(err).__name__}: {reason}); to start over, pass overwrite=True to jb.sweep or delete it"
    )
