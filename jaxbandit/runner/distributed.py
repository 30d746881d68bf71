"""Sharding the run axis of a sweep over every device, on one host or many.

A sweep's runs (grid points × seeds) are one leading axis; it is split over a 1-D ``Mesh`` named
``"runs"`` with ``NamedSharding(mesh, P("runs"))``, so each device advances its own runs and no
communication happens until results are gathered. On several hosts, call
``jax.distributed.initialize()`` in every process first (see ``examples/cluster_sweep.py``); every
process then runs the same script, ``jax.devices()`` lists the devices of all hosts, and results are
gathered to every process.
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ..core import validation as V

RUNS = "runs"


def run_mesh(devices=None) -> Mesh | None:
    """A 1-D mesh over ``devices`` (default: every device of every process); None for one device."""
    devices = jax.devices() if devices is None else list(devices)
    if not devices:
        raise ValueError("devices=[] is invalid: give at least one device")
    return None if len(devices) == 1 else Mesh(np.asarray(devices), (RUNS,))


def local_cpu_devices(mesh: Mesh | None) -> int:
    """How many CPU devices of this process run the sweep's runs (``mesh`` None: the default device). They
    share one intra-op thread pool (see ``jaxbandit.core.batching.lapack``)."""
    if mesh is None:
        return int(jax.default_backend() == "cpu")
    local = [d for d in mesh.devices.flat if d.process_index == jax.process_index()]
    return sum(d.platform == "cpu" for d in local)


def padded_size(num_runs: int, mesh: Mesh | None, groups: int = 1) -> int:
    """``num_runs`` rounded up to a multiple of the mesh size, or without a mesh of ``groups`` (the
    sweep's groups of streams on a CPU's cores; an integer ≥ 1)."""
    groups = V.check_int("groups", groups)
    n = groups if mesh is None else mesh.size
    return -(-num_runs // n) * n


def shard_runs(tree, mesh: Mesh | None):
    """Place every leaf's leading (run) axis across the mesh; identity on one device.

    Every process holds the same full arrays (the sweep computes them identically everywhere); each
    contributes the slices its own devices hold, so this works on one host or many.
    """
    if mesh is None:
        return tree
    sharding = NamedSharding(mesh, PartitionSpec(RUNS))
    if jax.process_count() == 1:
        return jax.device_put(tree, sharding)

    def place(leaf):
        if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            data = place(jax.random.key_data(leaf))
            return jax.random.wrap_key_data(data, impl=jax.random.key_impl(leaf))
        arr = np.asarray(leaf)
        return jax.make_array_from_callback(arr.shape, sharding, lambda index: arr[index])

    return jax.tree_util.tree_map(place, tree)


def to_host(x) -> np.ndarray:
    """A (possibly sharded, possibly multi-host) array as a NumPy array on this process."""
    if jax.process_count() > 1 and not getattr(x, "is_fully_addressable", True):
        from jax.experimental import multihost_utils

        return np.asarray(multihost_utils.process_allgather(x, tiled=True))
    return np.asarray(x)
