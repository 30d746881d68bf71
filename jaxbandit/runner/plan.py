"""A sweep's plan: its runs laid out as streams × lanes, placed on the devices and split into the CPU's
groups and the horizon's chunks, and how each chunk's program is traced — every
:class:`~jaxbandit.core.lowering.options.ExecutionOptions` field resolved once, here, for the backend.

Each default below is a way to run the same computation (tested bitwise), chosen by where it was measured
to pay (docs/performance.md).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..core import validation as V
from ..core.dtypes import float_dtype
from ..core.lowering.options import ExecutionOptions, TraceOptions
from . import distributed
from .program import Layout, ProgramOptions, point

Array = jax.Array

#: The default of ``ExecutionOptions.chunk_outputs``: the most numbers of each output field a chunk holds
#: on the device (its rounds × runs).
CHUNK_OUTPUTS = 1 << 24

#: The default of ``ExecutionOptions.ahead_bytes``: the most bytes a block of rounds drawn ahead may take,
#: every stream's of one program together.
AHEAD_BYTES = 1 << 30


class CpuAhead(NamedTuple):
    """A CPU's default for drawing ahead: blocks of up to ``rounds`` rounds whose draws fit in ``bytes``
    (a core's cache, not its memory), for a sweep of at least ``min_work`` agent-rounds whose streams each
    serve several lanes (where one call pays back the block's extra compilation)."""

    rounds: int = 16
    bytes: int = 1 << 19
    min_work: int = 1 << 22


#: Where the cgroup file system is mounted (read for a CPU quota: cgroup v2's ``cpu.max``, v1's
#: ``cpu/cpu.cfs_quota_us`` over ``cpu/cpu.cfs_period_us``).
CGROUP = Path("/sys/fs/cgroup")


def record_rounds(record, horizon: int) -> np.ndarray:
    """The 1-based rounds whose cumulative values are kept.

    ``record``: ``"all"`` (every round, plus per-round regret/action/corruption), an int k (every k-th
    round and the last), ``("log", n)`` (about n log-spaced rounds and the last), or a list of rounds.
    """
    if isinstance(record, str):
        if record != "all":
            raise ValueError(f"record={record!r} is invalid: use 'all', an int k, ('log', n) or a list")
        return np.arange(1, horizon + 1)
    if isinstance(record, tuple) and len(record) == 2 and record[0] == "log":
        n = V.check_int("record[1]", record[1], low=2)
        pts = np.unique(np.round(np.logspace(0, np.log10(horizon), n)).astype(int))
        return np.union1d(pts, [horizon])
    if isinstance(record, (int, np.integer)) and not isinstance(record, bool):
        k = V.check_int("record", record)
        return np.union1d(np.arange(k, horizon + 1, k), [horizon])
    pts = np.asarray(record)
    if pts.ndim != 1 or pts.size == 0 or not np.issubdtype(pts.dtype, np.integer):
        raise ValueError(f"record={record!r} is invalid: a list of rounds must be 1-D integers")
    if pts.min() < 1 or pts.max() > horizon:
        raise ValueError(f"record rounds must lie in [1, {horizon}], got [{pts.min()}, {pts.max()}]")
    return np.unique(pts)


def seed_ids(seeds) -> np.ndarray:
    """A count n (seeds 0..n−1) or explicit non-negative seeds, as a 1-D integer array."""
    ids = np.arange(V.check_int("seeds", seeds)) if np.ndim(seeds) == 0 else np.asarray(seeds)
    if ids.ndim != 1 or ids.size == 0 or not np.issubdtype(ids.dtype, np.integer) or np.any(ids < 0):
        raise ValueError(f"seeds={seeds!r} is invalid: give a count >= 1 or non-negative integer seeds")
    seen, counts = np.unique(ids, return_counts=True)
    if np.any(counts > 1):
        twice, times = seen[counts > 1][0], counts[counts > 1][0]
        raise ValueError(
            f"seeds={seeds!r} is invalid: seed {twice} is given {times} times (its runs would be identical "
            "copies); give distinct seeds"
        )
    return ids


def product(axes: Sequence[np.ndarray]) -> np.ndarray:
    """Every combination of the axes' values, the last axis fastest: `[points, len(axes)]`."""
    combos = list(itertools.product(*axes))
    return np.asarray(combos, dtype=np.float64).reshape(len(combos), len(axes))


def default_chunk(num_runs: int, horizon: int, chunk_outputs: int = CHUNK_OUTPUTS) -> int:
    """Rounds a chunk runs by default: the horizon in as few chunks as ``chunk_outputs`` outputs a field
    allow (each at least 64 rounds), of equal length, a multiple of 4 (so that blocks of rounds drawn ahead
    divide it), or the whole horizon. The last chunk is padded past the horizon by fewer than 4 rounds a
    chunk (chunks as long as allowed padded it by up to a chunk: 10⁴ runs × 2000 rounds ran 3328)."""
    longest = max(64, chunk_outputs // max(num_runs, 1)) // 16 * 16
    chunks = -(-horizon // longest)
    return int(min(horizon, (-(-horizon // chunks) + 3) // 4 * 4))


def cpu_quota(cgroup: Path = CGROUP) -> int | None:
    """The whole CPUs a cgroup CPU quota gives this process, rounded up (a quota of 1.5 CPUs: 2); None
    without a quota or where none can be read."""
    try:
        quota, period = (cgroup / "cpu.max").read_text().split()[:2]
    except (OSError, ValueError):
        try:
            quota = (cgroup / "cpu" / "cpu.cfs_quota_us").read_text().strip()
            period = (cgroup / "cpu" / "cpu.cfs_period_us").read_text().strip()
        except OSError:
            return None
    try:
        q, p = int(quota), int(period)
    except ValueError:  # "max": no quota
        return None
    return -(-q // p) if q > 0 and p > 0 else None  # v1's -1: no quota


def cpu_workers(options: ExecutionOptions, num_streams: int, mesh, cgroup: Path = CGROUP) -> int:
    """How many groups of streams a sweep of ``num_streams`` streams runs at once: ``options.cpu_workers``
    (default: the cores this process may use, its CPU affinity within a cgroup CPU quota) on one CPU
    device, at most one group a stream; 1 on an accelerator or over a mesh.

    XLA runs most of a program's round on one core (it spreads only large fusions over its pool), and two
    programs called from two threads run at once: the groups share one compiled program."""
    if mesh is not None or jax.default_backend() != "cpu":
        return 1
    if options.cpu_workers is not None:  # the user's: no need to read the affinity or the quota
        return min(num_streams, options.cpu_workers)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    quota = cpu_quota(cgroup)
    return min(num_streams, cores if quota is None else min(cores, quota))


class Plan(NamedTuple):
    """How the runs are laid out: streams (stream-axis values × seeds, padded to the device count or to
    the workers' count) and lanes (values of the other axes), with their parameters and keys placed on
    the devices; the streams in ``workers`` equal groups, one program each; the chunk's rounds; the
    execution options the programs are resolved from."""

    layout: Layout
    grid_shape: tuple[int, ...]  # sizes of the grid axes, in grid order
    order: tuple[int, ...]  # grid-order position of each stream axis, then each lane axis
    num_seeds: int
    num_streams: int
    padded: int
    #: per group of streams (one, unless the CPU's workers split them): its parameters `[S_g, stream
    #: axes]` and seeds `[S_g]` (stream s runs with fold_in(base_key, seed s))
    groups: tuple[tuple[Array, Array], ...]
    agent_params: Array  # [G, lane axes]
    base_key: Array
    mesh: Any
    chunk: int
    options: ExecutionOptions

    @property
    def workers(self) -> int:
        return len(self.groups)

    @classmethod
    def make(
        cls,
        layout: Layout,
        names,
        axes,
        seeds: np.ndarray,
        base_key,
        devices,
        horizon: int,
        chunk_size: int | None,
        per_program: int,
        options: ExecutionOptions | None = None,
    ) -> Plan:
        """The plan of a sweep of the grid ``names``/``axes`` over ``seeds``, ``per_program`` algorithms a
        compiled program, with the (validated) execution ``options``."""
        options = ExecutionOptions() if options is None else options
        by_name = dict(zip(names, axes))
        stream_points = product([by_name[n] for n in layout.stream_names])
        agent_points = product([by_name[n] for n in layout.agent_names])
        num_streams = stream_points.shape[0] * seeds.size
        mesh = distributed.run_mesh(devices)
        workers = cpu_workers(options, num_streams, mesh)
        padded = distributed.padded_size(num_streams, mesh, workers)
        # stream s = (stream point s // seeds, seed s % seeds); padding repeats the last stream
        params = np.repeat(stream_points, seeds.size, axis=0)
        stream_seeds = np.tile(seeds, stream_points.shape[0])
        pad = padded - num_streams
        params = np.concatenate([params, np.repeat(params[-1:], pad, axis=0)])
        stream_seeds = np.concatenate([stream_seeds, np.repeat(stream_seeds[-1:], pad)])
        # converted on the host: a conversion (or a slice) on the device is one more compiled program
        params = np.asarray(params, float_dtype())
        size = padded // workers
        groups = tuple(
            (
                distributed.shard_runs(jax.device_put(params[g * size : (g + 1) * size]), mesh),
                distributed.shard_runs(jax.device_put(stream_seeds[g * size : (g + 1) * size]), mesh),
            )
            for g in range(workers)
        )
        runs = padded * agent_points.shape[0] * per_program  # outputs per round, every program's
        outputs = CHUNK_OUTPUTS if options.chunk_outputs is None else options.chunk_outputs
        chunk = min(default_chunk(runs, horizon, outputs) if chunk_size is None else chunk_size, horizon)
        order = tuple(names.index(n) for n in layout.stream_names + layout.agent_names)
        return cls(
            layout,
            tuple(a.size for a in axes),
            order,
            seeds.size,
            num_streams,
            padded,
            groups,
            jax.device_put(np.asarray(agent_points, float_dtype())),
            base_key,
            mesh,
            chunk,
            options,
        )

    def to_grid_order(self, kept: np.ndarray) -> np.ndarray:
        """A field kept as `[S_padded, G, rounds]` as `[*grid, seed, rounds]`."""
        sizes = [self.grid_shape[i] for i in self.order]
        ns = len(self.layout.stream_names)
        arr = kept[: self.num_streams].reshape(sizes[:ns] + [self.num_seeds] + sizes[ns:] + [kept.shape[-1]])
        # axes now: stream axes, seed, lane axes, round -> grid order, seed, round
        src = {grid_pos: k if k < ns else k + 1 for k, grid_pos in enumerate(self.order)}
        perm = [src[i] for i in range(len(self.grid_shape))] + [ns, arr.ndim - 1]
        return np.transpose(arr, perm)

    def program(self, make_env, horizon: int, algorithms: int) -> ProgramOptions:
        """How the chunk program of ``algorithms`` algorithms in lockstep is traced: each option the user
        left ``None`` by the backend's default.

        - Runs minor (`[..., S, G]`): a GPU, where it fuses the round better (XLA keeps the runs major in
          memory either way); a CPU loses by it.
        - Contexts components first: a CPU whose streams serve several lanes (the agents' sums then read
          a component's K values contiguously); not measured on a GPU.
        - Stragglers one by one: one CPU device (a lane alone costs about its share of a batched
          iteration there; a GPU would idle through it, and a batch sharded over devices would gather each
          lane across them).
        - LAPACK one matrix per call: wherever several batched calls could run at once on a CPU's thread
          pool (several CPU devices, worker groups or algorithms in lockstep), where they can hang.
        - Rounds drawn ahead: :meth:`rounds_ahead`."""
        opts = self.options
        gpu = jax.default_backend() == "gpu"
        lanes = self.agent_params.shape[0] * algorithms
        contention = distributed.local_cpu_devices(self.mesh) * self.workers * algorithms > 1
        trace = TraceOptions.resolve(
            opts,
            one_by_one=self.mesh is None and distributed.local_cpu_devices(None) == 1,
            per_matrix=contention,
        )
        return ProgramOptions(
            ahead=self.rounds_ahead(make_env, lanes, horizon),
            runs_minor=gpu if opts.runs_minor is None else opts.runs_minor,
            by_component=(lanes >= 2 and not gpu)
            if opts.contexts_by_component is None
            else opts.contexts_by_component,
            trace=trace,
        )

    def rounds_ahead(self, make_env, lanes: int, horizon: int, cpu: CpuAhead | None = None) -> int:
        """How many rounds a chunk of ``lanes`` lanes a stream and ``horizon`` rounds draws at once (0:
        each round draws in its own step): the largest divisor of the chunk up to ``options.draw_ahead``
        whose draws, every stream's of one program, fit in ``options.ahead_bytes``; by default on a CPU,
        ``cpu``'s rule (:class:`CpuAhead`), blocks of 2 or more.

        On a GPU each iteration of a loop in a round (the sampler's rejection loop) is kernels and a
        condition, so a block's draws made at once pay; on a CPU a block pays only where its draws stay in
        a core's cache and the sweep is large enough to pay back its compilation (docs/performance.md, *On
        a GPU* and *Grid sweeps with shared streams*)."""
        opts, cpu = self.options, CpuAhead() if cpu is None else cpu
        cpu_default = opts.draw_ahead is None and jax.default_backend() != "gpu"
        limit: int | None  # None: the whole chunk
        if cpu_default:
            large = lanes >= 2 and self.padded * lanes * horizon >= cpu.min_work
            limit = cpu.rounds if large else 0
            max_bytes = cpu.bytes
        else:
            limit = opts.draw_ahead
            max_bytes = AHEAD_BYTES if opts.ahead_bytes is None else opts.ahead_bytes
        if limit == 0:
            return 0

        def one_round(stream_values, agent_values, key):
            stream = make_env(point(self.layout, stream_values, agent_values)).stream
            return stream.draw(key, stream.init(key), jnp.int32(0))

        shapes = jax.eval_shape(
            one_round,
            jax.ShapeDtypeStruct(self.groups[0][0].shape[1:], self.groups[0][0].dtype),
            jax.ShapeDtypeStruct(self.agent_params.shape[1:], self.agent_params.dtype),
            self.base_key,
        )
        # the draws of one program's streams (each group's program runs on a core of its own)
        streams = self.padded // self.workers
        per_round = streams * sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(shapes))
        cap = max(1, max_bytes // max(per_round, 1))
        cap = min(cap, self.chunk if limit is None else limit)
        block = max(b for b in range(1, cap + 1) if self.chunk % b == 0)
        return 0 if cpu_default and block < 2 else block
