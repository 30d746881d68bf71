"""Every (algorithm × grid point × seed) run in one jitted, vmapped call, each seed's stream drawn once for
every grid point and every algorithm that shares it.

The grid's numeric values are traced arguments of the compiled function — a new grid of the same size
never recompiles — and the factories receive them as traced scalars::

    def make_alg(p):   # p: {"C": traced scalar, "beta_scale": traced scalar}
        return jb.cr_hvt_ucb(T, 10, eps=1.0, nu=3 ** 0.5, corruption=p["C"], beta_scale=p["beta_scale"])

    def make_env(p):
        return jb.envs.linear(10, 20, noise=jb.noise.student_t(3.0), corruption=jb.corruption.flip(p["C"]))

    res = jb.sweep(make_alg, make_env, {"C": [0, 100], "beta_scale": [0.01, 0.1]}, horizon=T, seeds=10)
    res.dims                      # ("C", "beta_scale", "seed", "round")
    res.cumulative_regret.shape   # (2, 2, 10, T)

Define the factories once (module level or a notebook cell run once): compiled code is cached per
factory object. Seed s of every grid point and every algorithm uses the key ``fold_in(key, s)``, so all
of them face the same θ*, contexts and noise (common random numbers).

Shared streams. The grid axes that can change the environment's stream (θ*, contexts, η_t, ν_t: a noise
parameter, S, L, ...) are found by tracing it (``runner.sharing``); the others (the adversary's and the
algorithm's) cannot. The runs are laid out as streams × lanes: one stream per (seed, value of the stream
axes), drawn once per round, and one lane per value of the other axes, all fed that draw — a
``vmap`` over streams of a ``vmap`` over lanes inside one ``lax.scan`` over rounds (on a GPU, each
chunk's rounds drawn ahead in blocks, see :func:`_rounds_ahead`). The algorithms of a
dict run in lockstep in that scan (each lane carries one state per algorithm), so one draw serves them
all (``lockstep=False``: one program per algorithm). On one CPU device the streams run in equal groups,
one per core, the chunk's one program called from a thread per group at once (``CPU_WORKERS``). A
run's numbers are bitwise those of the same run alone (``jb.simulate``), in any batch, chunking, device
count, group count or lockstep.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import functools
import itertools
import os
import re
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..core import batching
from ..core import validation as V
from ..core.dtypes import float_dtype
from ..core.types import Algorithm, Environment, EnvState, Round
from ..report.results import SweepResult, remove_leftovers
from . import accumulate, distributed, sharing
from . import checkpoint as checkpoint_lib
from . import fingerprint as fingerprint_lib
from . import lock as lock_lib
from . import store as store_lib
from .grid import as_factory, grid_arrays, validate_grid
from .simulate import AGENT_KEY, agent_keys, as_key, respond_and_learn
from .xla_options import _remembered, library_jit

Array = jax.Array

#: Changes whenever the carry a checkpoint holds changes shape, so that an old checkpoint is not resumed.
LAYOUT = "streams-x-lanes/2"


class _Layout(NamedTuple):
    """The grid's axes split into those that change the stream and the others (static)."""

    stream_names: tuple[str, ...]
    agent_names: tuple[str, ...]


class _Lane(NamedTuple):
    """What one run carries besides its stream: the algorithm, the adversary, the running sums."""

    alg_state: Any
    adversary: Any
    cum_regret: accumulate.RunningSum
    spent: accumulate.RunningSum


class _StreamCarry(NamedTuple):
    """One stream (a seed at one value of the stream axes) and its lanes `[G]`, one ``_Lane`` per algorithm
    that the stream serves (several when they run in lockstep)."""

    round_key: Array
    agent_key: Array
    theta_star: Array
    lanes: tuple[_Lane, ...]


def _point(layout: _Layout, stream_values: Array, agent_values: Array) -> dict:
    point = {n: stream_values[i] for i, n in enumerate(layout.stream_names)}
    point.update({n: agent_values[i] for i, n in enumerate(layout.agent_names)})
    return point


@library_jit(static_argnums=(0, 1, 2), beside=True)
def _init_streams(make_algs, make_env, layout: _Layout, stream_params, agent_params, base_key, stream_seeds):
    """θ*, the keys and every lane's initial state, per stream `[S]` and lane `[S, G]`; stream s runs
    with ``fold_in(base_key, stream_seeds[s])`` (folded here: an eager fold_in is one more compilation)."""

    def per_stream(sp, seed):
        key = jax.random.fold_in(base_key, seed)
        # The stream does not depend on the lanes' axes, so any lane's values build it.
        stream = make_env(_point(layout, sp, agent_params[0])).stream
        key_env, key_rounds = jax.random.split(key)

        def per_lane(ap):
            point = _point(layout, sp, ap)
            zero = accumulate.zero(float_dtype())
            adversary = make_env(point).adversary
            return tuple(_Lane(make(point).init(), adversary.init(), zero, zero) for make in make_algs)

        return _StreamCarry(
            key_rounds,
            jax.random.fold_in(key, AGENT_KEY),
            stream.init(key_env),
            jax.vmap(per_lane)(agent_params),
        )

    return jax.vmap(per_stream)(stream_params, stream_seeds)


@library_jit(static_argnums=(0, 1, 2, 3, 4, 5, 6, 7, 8, 9))
def _run_chunk(
    make_algs,
    make_env,
    layout: _Layout,
    horizon: int,
    per_round: bool,
    ahead: int,
    runs_minor: bool,
    by_component: bool,
    lapack_per_matrix: bool,
    stragglers_one_by_one: bool,
    stream_params,
    agent_params,
    carry,
    rounds,
):
    """Rounds ``rounds`` `[n]` of every run of the algorithms ``make_algs`` (all fed each round's one
    draw); outputs `[S, n, G, algorithms]`. The last chunk is padded past the horizon so that every chunk
    has one shape (one compilation); padded rounds add nothing to the recorded sums, and the state they
    leave behind is never used.

    ``ahead`` > 0 (a divisor of n): the rounds run in blocks of ``ahead``, each block's draws made at once
    (a ``vmap`` over its rounds) before its rounds run, so that the stream's loops (a sampler's rejection
    loop) run once a block instead of once a round, and the lanes read the draws from memory. ``ahead`` =
    0: each round draws in its own step, the draw :func:`_computed_once` per stream before the lanes read
    it (left to itself, XLA fuses the contexts' arithmetic into every lane's UCB sums, each lane computing
    it again: a 16-point grid ran 1.5× slower so). ``runs_minor``: the rounds carry the lanes' states
    `[..., S, G]` (see ``RUNS_MINOR``). ``by_component``: each stream's contexts are materialised
    components first (see ``CONTEXTS_BY_COMPONENT``). ``lapack_per_matrix``: the algorithms' LAPACK calls
    run one matrix per call (``batching.lapack_per_matrix``; set where several could run at once on a
    CPU's thread pool: several CPU devices, or several algorithms in lockstep). ``stragglers_one_by_one``:
    the algorithms' solver loops (``batching.while_loop``) run their last lanes still going one by one
    (set on one CPU device). The same values every way."""

    def draw(sp, round_key, theta_star, t) -> Round:
        stream = make_env(_point(layout, sp, agent_params[0])).stream
        return stream.draw(jax.random.fold_in(round_key, t), theta_star, t)

    def play(sp, c: _StreamCarry, t, rnd: Round):
        """Round ``t`` of one stream's lanes, fed its draw ``rnd``."""
        keys = agent_keys(c.agent_key, t)

        def per_lane(ap, lanes: tuple[_Lane, ...]):
            point = _point(layout, sp, ap)
            env = make_env(point)
            active = t < horizon
            new_lanes, outs = [], []
            for make_alg, lane in zip(make_algs, lanes):
                env_state = EnvState(c.theta_star, lane.adversary)
                alg_state, env_state, traj = respond_and_learn(
                    make_alg(point), env, lane.alg_state, env_state, rnd, t, keys
                )
                cum = accumulate.add(lane.cum_regret, jnp.where(active, traj.regret, 0.0))
                spent = accumulate.add(lane.spent, jnp.where(active, jnp.abs(traj.corruption), 0.0))
                out = {"cumulative_regret": cum.shown, "corruption_spent": spent.shown}
                if per_round:
                    out.update(regret=traj.regret, action=traj.action, corruption=traj.corruption)
                new_lanes.append(_Lane(alg_state, env_state.adversary, cum, spent))
                outs.append(out)
            return tuple(new_lanes), {f: jnp.stack([o[f] for o in outs]) for f in outs[0]}

        # the algorithms are traced here
        with (
            batching.lapack_per_matrix(lapack_per_matrix),
            batching.stragglers_one_by_one(stragglers_one_by_one),
        ):
            lanes, out = jax.vmap(per_lane)(agent_params, c.lanes)
        return c._replace(lanes=lanes), out

    def play_all(c: _StreamCarry, t, rnds: Round):
        c = _lanes_as(c, runs_minor, False)
        c, out = jax.vmap(play, in_axes=(0, 0, None, 0))(stream_params, c, t, rnds)
        return _lanes_as(c, False, runs_minor), out

    c = _lanes_as(carry, False, runs_minor)
    swap = functools.partial(_contexts_swapped, swapped=by_component)
    if not ahead:

        def step(c: _StreamCarry, t):
            # materialised components first, if so, and handed on as a transposed view
            per_stream = lambda sp, k, th: swap(_computed_once(swap(draw(sp, k, th, t)), t))
            rnds = jax.vmap(per_stream)(stream_params, c.round_key, c.theta_star)
            return play_all(c, t, rnds)

        c, out = jax.lax.scan(step, c, rounds)
    else:

        def block(c: _StreamCarry, ts):
            per_stream = lambda sp, k, th: jax.vmap(lambda t: draw(sp, k, th, t))(ts)
            # [ahead, S, ...]: the scan below takes them round by round
            rnds = jax.vmap(per_stream, out_axes=1)(stream_params, c.round_key, c.theta_star)
            # the block's contexts materialised [ahead, S, d, K] if so (they are the inner scan's input)
            return jax.lax.scan(lambda c, tr: play_all(c, tr[0], swap(tr[1])), c, (ts, swap(rnds)))

        c, out = jax.lax.scan(block, c, rounds.reshape(-1, ahead))
        out = jax.tree.map(lambda v: v.reshape(-1, *v.shape[2:]), out)
    # [n, S, G, algorithms] -> [S, n, G, algorithms]
    return _lanes_as(c, runs_minor, False), jax.tree.map(lambda v: jnp.moveaxis(v, 0, 1), out)


def _lanes_as(c: _StreamCarry, from_minor: bool, to_minor: bool) -> _StreamCarry:
    """``c``, whose lanes' arrays are `[..., S, G]` if ``from_minor`` else `[S, G, ...]`, with them moved to
    `[..., S, G]` (runs on the minor axes) if ``to_minor`` else `[S, G, ...]`."""
    if from_minor == to_minor:
        return c
    src, dst = ((0, 1), (-2, -1)) if to_minor else ((-2, -1), (0, 1))
    return c._replace(lanes=jax.tree.map(lambda v: jnp.moveaxis(v, src, dst), c.lanes))


#: Whether a chunk carries the lanes' states with the runs on the minor axes (`[..., S, G]`); None: the
#: backend's default (a GPU: yes; a CPU: no). The same values either way. The axes move in the program
#: only: XLA picks the loop carry's memory layout and keeps the runs major in memory either way (seen in
#: the optimised program), so what changes is how XLA fuses the round. H100: Figure 1's tuning grid and
#: independent runs 1.13× as fast, the 16-point grid 1.01× (``benchmarks/chunk_layout.py``); 2-core CPU:
#: 0.74–0.97×.
RUNS_MINOR: bool | None = None


def _runs_minor() -> bool:
    """Whether the next chunk carries the runs on the minor axes: ``RUNS_MINOR``, or the backend's default."""
    return jax.default_backend() == "gpu" if RUNS_MINOR is None else V.check_flag("RUNS_MINOR", RUNS_MINOR)


#: Whether a chunk materialises each stream's contexts components first (`[d, K]`, handed to the lanes as
#: a transposed view `[K, d]`); None: the default (a CPU, where several lanes read each stream: yes;
#: otherwise no). The agents' sums run over the components (``linalg.dot``, ``linalg.ellipsoid_norm``:
#: one `[K]` slab per component), so XLA cancels the two transposes and each lane reads a component's K
#: values contiguously, where from `[K, d]` it read them at stride d. The same values either way. 2-core
#: CPU (``benchmarks/chunk_layout.py``, grid_sweep.py): the 16-point grid 1.00–1.16× as fast (drawn ahead
#: 1.02×), Figure 1's CR tuning grid 1.03–1.07× (drawn ahead 1.05×); 400 independent runs, one lane a
#: stream, 0.96× (the transposed write cost more than it saved); not measured on a GPU.
CONTEXTS_BY_COMPONENT: bool | None = None


def _contexts_by_component(lanes: int) -> bool:
    """Whether the next chunk, of ``lanes`` lanes a stream, materialises the contexts components first:
    ``CONTEXTS_BY_COMPONENT``, or the default."""
    if CONTEXTS_BY_COMPONENT is None:
        return lanes >= 2 and jax.default_backend() != "gpu"
    return V.check_flag("CONTEXTS_BY_COMPONENT", CONTEXTS_BY_COMPONENT)


#: How many programs run a sweep's chunks at once on a CPU of one device, each on its own thread over an
#: equal group of the streams (padded to a multiple, like the streams over devices); None: the default,
#: the cores this process may use (its CPU affinity, capped by a cgroup CPU quota such as a container's;
#: at most the streams). XLA runs most of a program's round on one core (a GAdaOFUL sweep's process used
#: 0.95 cores; it spreads only large fusions, such as a history pass, over its pool), and two programs
#: called from two threads run at once; the groups share one compiled program. 1: one program, as on a
#: GPU or over several devices (always one there). The same values every way. 2-core CPU: see
#: docs/performance.md ("Every core").
CPU_WORKERS: int | None = None

#: Where the cgroup file system is mounted (read for a CPU quota: cgroup v2's ``cpu.max``, v1's
#: ``cpu/cpu.cfs_quota_us`` over ``cpu/cpu.cfs_period_us``).
CGROUP = Path("/sys/fs/cgroup")


def _cpu_quota() -> int | None:
    """The whole CPUs a cgroup CPU quota gives this process, rounded up (a quota of 1.5 CPUs: 2); None
    without a quota or where none can be read."""
    try:
        quota, period = (CGROUP / "cpu.max").read_text().split()[:2]
    except (OSError, ValueError):
        try:
            quota = (CGROUP / "cpu" / "cpu.cfs_quota_us").read_text().strip()
            period = (CGROUP / "cpu" / "cpu.cfs_period_us").read_text().strip()
        except OSError:
            return None
    try:
        q, p = int(quota), int(period)
    except ValueError:  # "max": no quota
        return None
    return -(-q // p) if q > 0 and p > 0 else None  # v1's -1: no quota


def _cpu_workers(num_streams: int, mesh) -> int:
    """How many groups of streams a sweep of ``num_streams`` streams runs at once: ``CPU_WORKERS`` (or the
    cores, within a cgroup CPU quota) on one CPU device, at most one group a stream; 1 on an accelerator
    or over a mesh."""
    if CPU_WORKERS is not None:
        V.check_int("CPU_WORKERS", CPU_WORKERS)
    if mesh is not None or jax.default_backend() != "cpu":
        return 1
    if CPU_WORKERS is not None:  # the user's: no need to read the affinity or the quota
        return min(num_streams, CPU_WORKERS)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    quota = _cpu_quota()
    return min(num_streams, cores if quota is None else min(cores, quota))


#: Whether a chunk's solver loops (``batching.while_loop``: GAdaOFUL's and Heavy-OFUL's refits, CR-Hvt-UCB's
#: and OMD-GLB's projection) run their last lanes still going apart from the batch (one by one, or in
#: small groups); None: the default (one CPU device: yes; a GPU or several devices: no). The same values
#: either way. 2-core CPU: GAdaOFUL's Figure 1 tuning sweep (500 runs × T = 1000) 1.13–1.18× as fast, the
#: CR-Hvt-UCB 16-point grid 1.17–1.31× (``benchmarks/stragglers.py``, ``benchmarks/grid_sweep.py``).
STRAGGLERS_ONE_BY_ONE: bool | None = None


def _stragglers_one_by_one(mesh) -> bool:
    """Whether the next chunk runs its stragglers one by one: ``STRAGGLERS_ONE_BY_ONE``, or the default. A
    lane alone costs about its share of a batched iteration on a CPU; a GPU would idle through it, and
    a batch sharded over devices would gather each lane across them."""
    if STRAGGLERS_ONE_BY_ONE is None:
        return mesh is None and distributed.local_cpu_devices(None) == 1
    return V.check_flag("STRAGGLERS_ONE_BY_ONE", STRAGGLERS_ONE_BY_ONE)


#: The most rounds a stream draws ahead of running them (see :func:`_rounds_ahead`); None: the backend's
#: default (a GPU: as many as memory allows; a CPU: ``CPU_AHEAD`` for a large grid, else none).
DRAW_AHEAD: int | None = None

#: The most bytes the draws of one block of rounds may take, every stream's together (each of these
#: module constants is checked when a sweep reads it: a ValueError names a bad value).
AHEAD_BYTES = 1 << 30

#: A CPU's default for a sweep of at least ``CPU_AHEAD_MIN_WORK`` agent-rounds whose streams each serve
#: several lanes: blocks of up to ``CPU_AHEAD`` rounds whose draws fit in ``CPU_AHEAD_BYTES`` (a core's
#: cache, not its memory: 400 independent streams' blocks out of cache ran 0.66–0.97× as fast). The
#: work is where one call pays back the extra compilation (see :func:`_rounds_ahead`).
CPU_AHEAD, CPU_AHEAD_BYTES, CPU_AHEAD_MIN_WORK = 16, 1 << 19, 1 << 22


def _rounds_ahead(make_env, layout: _Layout, plan: _Plan, lanes: int, horizon: int) -> int:
    """How many rounds a chunk of a sweep of ``lanes`` lanes a stream and ``horizon`` rounds draws at once
    (0: each round draws in its own step): the largest divisor of the chunk up to ``DRAW_AHEAD`` whose
    draws, every stream's of one program, fit in ``AHEAD_BYTES`` (on a CPU by default: ``CPU_AHEAD``,
    ``CPU_AHEAD_BYTES``, blocks of 2 or more, for a large sweep).

    On a GPU, each iteration of a loop in a round is kernels and a condition: drawing the chunk's rounds
    ahead made the 16-point grid 1.17× and Figure 1's tuning grid 1.40× as fast, independent runs 1.03×
    (H100, ``benchmarks/chunk_layout.py``). On the 2-core CPU, blocks of 16 rounds made the 16-point grid
    (16 β × 25 seeds × 2000) 1.13–1.19× as fast and compiled it 0.2 s longer (the Threefry loops of a
    block's keys), so it pays back its compilation in one call from about 3·10⁶ agent-rounds; independent
    runs 0.66–1.16× (a block's draws of 400 streams leave the cache). So a CPU draws ahead by default only
    for a sweep of ``CPU_AHEAD_MIN_WORK`` agent-rounds or more whose streams serve several lanes, in
    blocks that fit ``CPU_AHEAD_BYTES`` (docs/performance.md). (Since the library's programs lower the
    hash unrolled, ``runner.threefry``, a block no longer compiles longer, but gains less and not on every
    grid: the 16-point grid 1.09–1.10×, Figure 1's CR tuning grid 0.95–0.96×; the rule is kept.)"""
    cpu_default = DRAW_AHEAD is None and jax.default_backend() != "gpu"
    limit: int | None  # None: the whole chunk
    if cpu_default:
        min_work = V.check_int("CPU_AHEAD_MIN_WORK", CPU_AHEAD_MIN_WORK, low=0)
        large = lanes >= 2 and plan.padded * lanes * horizon >= min_work
        limit = V.check_int("CPU_AHEAD", CPU_AHEAD, low=0) if large else 0
        max_bytes = V.check_int("CPU_AHEAD_BYTES", CPU_AHEAD_BYTES)
    else:
        limit = None if DRAW_AHEAD is None else V.check_int("DRAW_AHEAD", DRAW_AHEAD, low=0)
        max_bytes = V.check_int("AHEAD_BYTES", AHEAD_BYTES)
    if limit == 0:
        return 0

    def one_round(stream_values, agent_values, key):
        stream = make_env(_point(layout, stream_values, agent_values)).stream
        return stream.draw(key, stream.init(key), jnp.int32(0))

    shapes = jax.eval_shape(
        one_round,
        jax.ShapeDtypeStruct(plan.groups[0][0].shape[1:], plan.groups[0][0].dtype),
        jax.ShapeDtypeStruct(plan.agent_params.shape[1:], plan.agent_params.dtype),
        plan.base_key,
    )
    # the draws of one program's streams (each group's program runs on a core of its own)
    streams = plan.padded // plan.workers
    per_round = streams * sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(shapes))
    cap = max(1, max_bytes // max(per_round, 1))
    cap = min(cap, plan.chunk if limit is None else limit)
    block = max(b for b in range(1, cap + 1) if plan.chunk % b == 0)
    return 0 if cpu_default and block < 2 else block


def _computed_once(tree: Round, t) -> Round:
    """``tree``, materialised: the output of a loop of one trip that XLA cannot count (``t`` ≥ 0 is
    traced), so its consumers read it instead of fusing its arithmetic into themselves. (XLA's CPU
    compiler drops ``optimization_barrier`` before fusing; drawing a round ahead and carrying it works
    too, but compiles the draw twice: +2–3 s.)"""
    trips = (t >= 0).astype(jnp.int32)

    def trip(carry):
        i, values = carry  # a select XLA cannot resolve: the values pass unchanged, bit for bit
        return i + 1, jax.tree.map(lambda v: jnp.where(i < 0, jnp.zeros_like(v), v), values)

    return jax.lax.while_loop(lambda carry: carry[0] < trips, trip, (jnp.int32(0), tree))[1]


def _contexts_swapped(rnd: Round, swapped: bool) -> Round:
    """``rnd`` with its contexts' last two axes swapped if ``swapped`` (`[..., K, d]` ↔ `[..., d, K]`;
    its own inverse), else ``rnd``: a draw is materialised swapped and handed on swapped back (see
    ``CONTEXTS_BY_COMPONENT``)."""
    return rnd._replace(contexts=jnp.swapaxes(rnd.contexts, -1, -2)) if swapped else rnd


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


#: The most numbers of each output field a chunk of a sweep holds on the device (its rounds × runs): the
#: default chunks are as few as this allows (each at least 64 rounds), of equal length.
CHUNK_OUTPUTS = 1 << 24


def _default_chunk(num_runs: int, horizon: int) -> int:
    """Rounds a chunk runs by default: the horizon in as few chunks as ``CHUNK_OUTPUTS`` allows, of equal
    length, a multiple of 4 (so that blocks of rounds drawn ahead divide it), or the whole horizon. The
    last chunk is padded past the horizon, by fewer than 4 rounds a chunk (before, chunks as long as
    allowed padded the last one by up to a chunk: 10⁵ runs × 1000 rounds ran 1120 rounds, 10⁴ runs × 2000
    ran 3328, 1.6·10⁵ × 500 ran 576)."""
    budget = V.check_int("CHUNK_OUTPUTS", CHUNK_OUTPUTS)
    longest = max(64, budget // max(num_runs, 1)) // 16 * 16
    chunks = -(-horizon // longest)
    return int(min(horizon, (-(-horizon // chunks) + 3) // 4 * 4))


def _seed_ids(seeds) -> np.ndarray:
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


def _product(axes: Sequence[np.ndarray]) -> np.ndarray:
    """Every combination of the axes' values, the last axis fastest: `[points, len(axes)]`."""
    combos = list(itertools.product(*axes))
    return np.asarray(combos, dtype=np.float64).reshape(len(combos), len(axes))


def sweep(
    algorithm: Algorithm | Callable[..., Algorithm] | Mapping[str, Algorithm | Callable[..., Algorithm]],
    environment: Environment | Callable[..., Environment],
    grid: Mapping[str, Sequence[float]] | None = None,
    *,
    horizon: int,
    seeds: int | Sequence[int] | np.ndarray = 1,
    key: int | Array = 0,
    record: str | int | tuple[str, int] | Sequence[int] = "all",
    chunk_size: int | None = None,
    progress: bool = False,
    devices: Sequence[jax.Device] | None = None,
    checkpoint: str | os.PathLike | None = None,
    out: str | os.PathLike | None = None,
    lockstep: bool = True,
    overwrite: bool = False,
) -> SweepResult:
    """Run every (algorithm × grid point × seed) and return a :class:`SweepResult` with named axes.

    Args:
      algorithm: a factory ``params -> Algorithm`` (``params`` maps each grid name to a traced scalar),
        an ``Algorithm``, or a dict ``name -> either`` to compare several on the same streams (adds a
        leading ``"algorithm"`` axis).
      environment: a factory ``params -> Environment`` or an ``Environment``.
      grid: ``{name: values}``; the sweep runs their Cartesian product, axes in this order.
      horizon: T, rounds per run (static).
      seeds: a count n (seeds 0..n−1) or explicit seed numbers (e.g. ``range(100, 110)`` to tune on
        seeds disjoint from the reported ones).
      key: an int or a PRNG key; seed s runs with ``fold_in(key, s)``.
      record: which rounds to keep, see :func:`record_rounds`; anything but ``"all"`` keeps memory at
        O(runs × recorded rounds).
      chunk_size: rounds per compiled chunk (default: the horizon in as few equal chunks as keep each
        within ``CHUNK_OUTPUTS`` = 2^24 outputs a field).
      progress: show a progress bar with agent-rounds per second.
      devices: devices to shard the streams over (default: all of ``jax.devices()``, every host's).
      checkpoint: a directory; after every chunk the sweep saves its state there atomically, and a
        sweep started again with the same settings resumes from it, with any device or worker count
        (see ``jaxbandit.runner.checkpoint``); a checkpoint of a sweep that would compute something else
        (``jaxbandit.runner.fingerprint``) is refused, saying what differs.
      out: a zarr store path (``"….zarr"``) to stream the results into for sweeps larger than memory:
        each chunk's kept rounds are written to the store when the chunk finishes, and the result
        returned reads its arrays from the store on access (:class:`~jaxbandit.report.results.LazyArray`;
        ``SweepResult.load(out)`` reads it again). The store is marked complete only at the end. A
        store this same sweep left is resumed with ``checkpoint=`` (and rewritten without); see
        ``jaxbandit.runner.store``. Needs ``pip install "jaxbandit[xarray]"``. With several processes,
        process 0 writes it, on a file system they share. ``out`` and ``checkpoint`` are locked for the
        sweep's lifetime (``jaxbandit.runner.lock``): a second writer is refused, naming the first.
      lockstep: run every algorithm of a dict in one compiled program, all fed each round's one draw of
        the stream (default); ``False`` compiles one program per algorithm, each drawing the stream
        again. Bitwise the same results. Lockstep pays most where a stream serves few lanes (the draw —
        contexts, noise and the random bits under them — is then most of a round) and compiles faster
        (one program's fixed costs, not one per algorithm): 2.0× the throughput for four algorithms on
        independent seeds, 1.25× on a 16-point grid, half the compilation (2-core CPU,
        ``benchmarks/lockstep.py``). Its checkpoint is one file for all the algorithms. It holds every
        algorithm's state at once: with algorithms that keep their history (GAdaOFUL, Heavy-OFUL, TOFU:
        O(T·d) per run) on very many runs, ``lockstep=False`` holds one algorithm's at a time.

      overwrite: start over: the checkpoint files in ``checkpoint`` are removed and the store at
        ``out`` is replaced, whatever sweep wrote them (``out`` must still be a store jb.sweep wrote).

    Raises ``ValueError`` before anything runs for a bad argument, an invalid value at any grid point,
    a grid axis that a factory reads in Python control flow (it cannot be traced), an ``out`` that
    is not a ``.zarr`` path or that holds something other than this sweep's store, a checkpoint of
    another sweep or a damaged one, or an ``out``/``checkpoint`` another process is writing.
    """
    horizon = V.check_int("horizon", horizon)
    lockstep = V.check_flag("lockstep", lockstep)
    overwrite = V.check_flag("overwrite", overwrite)
    out_path = None if out is None else store_lib.check_out(out)
    algs = dict(algorithm) if isinstance(algorithm, Mapping) else {"": algorithm}
    if not algs:
        raise ValueError("algorithm={} is invalid: give at least one algorithm")
    make_algs = {name: as_factory(a, "algorithm") for name, a in algs.items()}
    make_env = as_factory(environment, "environment")
    names, axes = grid_arrays(grid)
    seed_ids = _seed_ids(seeds)
    rounds_kept = record_rounds(record, horizon)
    per_round = isinstance(record, str)
    if chunk_size is not None:
        V.check_int("chunk_size", chunk_size)
    base_key = as_key(key)
    validate_grid(make_algs, make_env, names, axes, horizon)
    first = {n: float(np.asarray(a[0], float_dtype())) for n, a in zip(names, axes)}
    sharing.check_traceable(
        {
            **{f"algorithm {k!r}" if k else "the algorithm": f for k, f in make_algs.items()},
            "the environment": make_env,
        },
        first,
    )
    stream_names = sharing.stream_axes(make_env, first)
    layout = _Layout(
        tuple(n for n in names if n in stream_names), tuple(n for n in names if n not in stream_names)
    )
    names_in_order = list(make_algs)
    groups = _groups(len(names_in_order), lockstep)
    per_program = max(len(group) for group in groups)
    plan = _Plan.make(layout, names, axes, seed_ids, base_key, devices, horizon, chunk_size, per_program)

    ckpt_dir = None if checkpoint is None else Path(checkpoint)
    lead = ("algorithm",) if isinstance(algorithm, Mapping) else ()
    dims = lead + tuple(names) + ("seed", "round")
    coords = dict(zip(names, axes))
    coords.update(seed=seed_ids, round=rounds_kept)
    if lead:
        coords = {"algorithm": np.asarray(list(algs)), **coords}
    meta = {
        "horizon": horizon,
        "record": "all" if per_round else "checkpoints",
        "devices": 1 if plan.mesh is None else plan.mesh.size,
        "stream_axes": list(layout.stream_names),
        "streams": plan.num_streams,
    }
    fingers = None
    if out_path is not None or ckpt_dir is not None:
        fingers = fingerprint_lib.Sweep.of(
            make_algs,
            make_env,
            names,
            axes,
            seed_ids,
            base_key,
            horizon,
            rounds_kept,
            per_round,
            chunk_size,
            (LAYOUT, list(layout.stream_names)),
            bool(lead),
            with_store=out_path is not None,
        )
    files = [f"algorithm-{i[0]}.npz" if len(i) == 1 else f"algorithms-{i[0]}-{i[-1]}.npz" for i in groups]
    writers = {"out=": out_path, "checkpoint=": ckpt_dir} if jax.process_index() == 0 else {}
    with lock_lib.holding_all(writers, on_acquire=remove_leftovers):
        if overwrite and ckpt_dir is not None:
            checkpoint_lib.remove(ckpt_dir)
        writer, store_id = None, None
        if fingers is not None:  # refused before anything is written or run, the checkpoints untouched
            resume = ckpt_dir is not None and not overwrite
            if out_path is not None:
                store_id = store_lib.resumable(out_path, fingers.store, resume=resume, overwrite=overwrite)
            for indices, name in zip(groups, files):
                if ckpt_dir is not None:
                    checkpoint_lib.check(ckpt_dir / name, fingers.group(names_in_order, indices, store_id))
            if out_path is not None:
                writer, store_id = _open_store(
                    out_path,
                    dims,
                    coords,
                    meta,
                    fingers.store,
                    store_id is not None,
                    plan,
                    rounds_kept,
                    overwrite,
                )
        per_alg = []
        for indices, name in zip(groups, files):
            group = [names_in_order[i] for i in indices]
            finger = None if fingers is None else fingers.group(names_in_order, indices, store_id)
            path = None if ckpt_dir is None else ckpt_dir / name
            sink = None
            if out_path is not None:
                leads = [(index,) if lead else () for index in indices]
                sink = functools.partial(_write_chunks, writer, plan, rounds_kept, leads)
            kept = _run_algorithms(
                tuple(make_algs[name] for name in group),
                make_env,
                plan,
                horizon,
                per_round,
                rounds_kept,
                progress,
                " + ".join(group),
                path,
                finger,
                sink,
            )
            per_alg += [{field: plan.to_grid_order(value) for field, value in k.items()} for k in kept]
        if out_path is not None:
            return _finish_store(writer, out_path)
    data = {field: np.stack([d[field] for d in per_alg]) for field in per_alg[0]}
    if not lead:
        data = {field: arr[0] for field, arr in data.items()}
    return SweepResult(dims=dims, coords=coords, data=data, meta=meta)


def _open_store(path, dims, coords, meta, finger, resume, plan, rounds_kept, overwrite=False):
    """``(writer, store id)``, before anything runs: every process checks ``path``, process 0 creates or
    reopens the store (the others' writer is None) and they all read its id."""
    store_lib.check_existing(path, finger, overwrite=overwrite)
    multi = jax.process_count() > 1
    if multi:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices("jaxbandit.sweep out checked")
    writer = None
    if jax.process_index() == 0:
        per_chunk = np.bincount((rounds_kept - 1) // plan.chunk).max()  # most rounds one chunk keeps
        writer = store_lib.StoreWriter.open(
            path,
            dims=dims,
            coords=coords,
            meta=meta,
            finger=finger,
            resume=resume,
            round_chunk=int(per_chunk),
            overwrite=overwrite,
        )
    if multi:
        multihost_utils.sync_global_devices("jaxbandit.sweep out opened")
    attrs = store_lib.read_attrs(path) if writer is None else None
    return writer, writer.store_id if writer is not None else (attrs or {}).get(store_lib.STORE_ID_ATTR)


def _write_chunks(writer, plan, rounds_kept, leads, t0: int, kept: list[dict]) -> None:
    """Write one chunk's kept rounds (per algorithm, fields `[S_padded, G, k]`, rounds from ``t0`` on) into
    the store, algorithm i at the leading index ``leads[i]``."""
    if writer is None:
        return
    first = int(np.searchsorted(rounds_kept - 1, t0))
    for lead_index, fields in zip(leads, kept):
        for field, value in fields.items():
            if value.shape[-1] == 0:
                continue
            arr = plan.to_grid_order(value)  # [*grid, seed, k]
            region = lead_index + (slice(None),) * (arr.ndim - 1) + (slice(first, first + arr.shape[-1]),)
            writer.write(field, region, arr)


def _finish_store(writer, path) -> SweepResult:
    """Mark the store complete (process 0), then read it back lazily in every process."""
    if writer is not None:
        writer.finish()
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices("jaxbandit.sweep out")
    return SweepResult.load(path, lazy=True, verify=False)  # its manifest was made from it just now


class _Plan(NamedTuple):
    """How the runs are laid out: streams (stream-axis values × seeds, padded to the device count or to
    the workers' count) and lanes (values of the other axes), with their parameters and keys placed on
    the devices; the streams in ``workers`` equal groups, one program each (see ``CPU_WORKERS``)."""

    layout: _Layout
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

    @property
    def workers(self) -> int:
        return len(self.groups)

    @classmethod
    def make(
        cls, layout, names, axes, seed_ids, base_key, devices, horizon, chunk_size, per_program
    ) -> _Plan:
        by_name = dict(zip(names, axes))
        stream_points = _product([by_name[n] for n in layout.stream_names])
        agent_points = _product([by_name[n] for n in layout.agent_names])
        num_streams = stream_points.shape[0] * seed_ids.size
        mesh = distributed.run_mesh(devices)
        workers = _cpu_workers(num_streams, mesh)
        padded = distributed.padded_size(num_streams, mesh, workers)
        # stream s = (stream point s // seeds, seed s % seeds); padding repeats the last stream
        params = np.repeat(stream_points, seed_ids.size, axis=0)
        stream_seeds = np.tile(seed_ids, stream_points.shape[0])
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
        chunk = min(_default_chunk(runs, horizon) if chunk_size is None else chunk_size, horizon)
        order = tuple(names.index(n) for n in layout.stream_names + layout.agent_names)
        return cls(
            layout,
            tuple(a.size for a in axes),
            order,
            seed_ids.size,
            num_streams,
            padded,
            groups,
            jax.device_put(np.asarray(agent_points, float_dtype())),
            base_key,
            mesh,
            chunk,
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


def _groups(count: int, lockstep: bool) -> list[tuple[int, ...]]:
    """The indices of the algorithms each compiled program runs: all together in lockstep, or one each."""
    return [tuple(range(count))] if lockstep else [(i,) for i in range(count)]


def _run_algorithms(
    make_algs,
    make_env,
    plan: _Plan,
    horizon,
    per_round,
    rounds_kept,
    progress,
    label,
    ckpt_path,
    finger,
    sink=None,
) -> list[dict]:
    """Every chunk of the runs of the algorithms ``make_algs`` (in lockstep when several), checkpointed; per
    algorithm, the kept fields as `[S_padded, G, rounds]`, or with ``sink``, ``sink(t0, fields)`` called
    with each chunk's (a list per algorithm, rounds from ``t0`` on) and empty dicts returned."""
    lanes = plan.agent_params.shape[0] * len(make_algs)
    ahead, runs_minor = _rounds_ahead(make_env, plan.layout, plan, lanes, horizon), _runs_minor()
    by_component = _contexts_by_component(lanes)
    # several batched LAPACK calls at once (devices, workers, or algorithms in lockstep) could take every
    # thread of the pool
    per_matrix = distributed.local_cpu_devices(plan.mesh) * plan.workers * len(make_algs) > 1
    one_by_one = _stragglers_one_by_one(plan.mesh)
    chunk_statics = (
        make_algs,
        make_env,
        plan.layout,
        horizon,
        per_round,
        ahead,
        runs_minor,
        by_component,
        per_matrix,
        one_by_one,
    )
    carries = _initial_carries(make_algs, make_env, plan, chunk_statics)
    kept: dict = {}
    start_round = 0
    if ckpt_path is not None:
        restored = checkpoint_lib.load(ckpt_path, template=carries, finger=finger)
        if restored is not None:
            carries, kept, start_round = restored
            carries = [distributed.shard_runs(c, plan.mesh) for c in carries]
    num_runs = plan.num_streams * lanes
    keep_idx = rounds_kept - 1
    bar = _progress_bar(progress, horizon, num_runs, label, start_round)
    start = time.perf_counter()

    def finish(t0: int, chunk_carries: list, collect) -> None:
        """The chunk from round ``t0``: its kept rounds to the host (``collect``), then the checkpoint."""
        nonlocal kept
        stacked = collect()  # [S, G, algorithms, kept]; only kept rounds leave the device
        if sink is not None:
            sink(t0, _per_algorithm(stacked, len(make_algs)))  # before the checkpoint: never behind it
        else:
            for field, value in stacked.items():
                kept.setdefault(field, []).append(value)
        done = min(t0 + plan.chunk, horizon)
        if ckpt_path is not None:
            kept = {f: [np.concatenate(p, axis=-1)] for f, p in kept.items()}
            carry_arrays = checkpoint_lib.gather(chunk_carries, distributed.to_host)  # every process
            if jax.process_index() == 0:
                checkpoint_lib.save(
                    ckpt_path, carry_arrays=carry_arrays, kept=kept, next_round=done, finger=finger
                )
        if bar is not None:
            bar.update(done - bar.n)
            rate = num_runs * (done - start_round) / max(time.perf_counter() - start, 1e-9)
            bar.set_postfix_str(f"{rate:.3g} agent-rounds/s")

    with contextlib.ExitStack() as stack:
        pool = None  # the groups one after another, here
        if plan.workers > 1 and _may_run_at_once(chunk_statics, plan, carries[0]):
            pool = stack.enter_context(concurrent.futures.ThreadPoolExecutor(plan.workers, "jaxbandit"))
        pending = None  # the chunk started last: (its first round, its carries, its outputs' collector)
        for t0 in range(start_round, horizon, plan.chunk):
            rounds = np.arange(t0, t0 + plan.chunk, dtype=np.int32)
            sel = keep_idx[(keep_idx >= t0) & (keep_idx < t0 + plan.chunk)] - t0
            try:
                carries, collect = _start_groups(pool, chunk_statics, plan, carries, rounds, sel)
            except BaseException:
                if pending is not None:  # nothing lost: the last chunk run is kept and checkpointed
                    finish(*pending)
                raise
            # the chunk before this one is finished while this one runs
            if pending is not None:
                finish(*pending)
            pending = (t0, carries, collect)
        if pending is not None:
            finish(*pending)
    if bar is not None:
        bar.close()
    final = {field: np.concatenate(parts, axis=-1) for field, parts in kept.items()}
    return _per_algorithm(final, len(make_algs))


def _start_groups(
    pool, chunk_statics: tuple, plan: _Plan, carries: list, rounds, sel
) -> tuple[list, Callable]:
    """Starts one chunk (``rounds``) of every group of streams: the groups' carries after it, and a function
    that returns the kept rounds ``sel`` of each output field, `[S_padded, G, algorithms, kept]` on the
    host.

    With one group the chunk's program is only dispatched: the caller finishes the previous chunk (its
    kept rounds to the host, the checkpoint) while this one runs, and on an accelerator this chunk's kept
    rounds start their copy to the host as soon as it is done (:func:`_kept_rounds`), the next chunk
    already queued behind it. With several groups (``pool``: a thread each), the chunk's program is
    compiled here, on the calling thread, whose JAX settings (x64, ...) its tracing reads, and the threads
    run it to the end: two programs called from two threads run at once, one on each core."""
    later = lambda out: {f: _kept_rounds(v, sel) for f, v in out.items()}
    here = lambda fetch: {f: np.moveaxis(get(), 1, -1) for f, get in fetch.items()}
    if plan.workers == 1:
        ((stream_params, _),) = plan.groups
        carry, out = _run_chunk(*chunk_statics, stream_params, plan.agent_params, carries[0], rounds)
        fetch = later(out)
        return [carry], lambda: here(fetch)
    program = _run_chunk.compiled(*chunk_statics, plan.groups[0][0], plan.agent_params, carries[0], rounds)

    def run(g: int):
        carry, out = program(plan.groups[g][0], plan.agent_params, carries[g], rounds)
        return carry, here(later(out))

    done = [run(g) for g in range(plan.workers)] if pool is None else list(pool.map(run, range(plan.workers)))
    stacked = {f: np.concatenate([o[f] for _, o in done]) for f in done[0][1]}
    return [c for c, _ in done], lambda: stacked


#: Whether each chunk program's copies may run at once (:func:`_may_run_at_once`), the least recently
#: used dropped (``xla_options._remembered``).
_AT_ONCE: collections.OrderedDict = collections.OrderedDict()


def _may_run_at_once(chunk_statics: tuple, plan: _Plan, carry) -> bool:
    """Whether the groups' copies of the chunk's program may run at once: not if it makes a batched LAPACK
    call (an algorithm that calls ``jnp.linalg`` itself, not through ``batching.lapack``, which a sweep
    of several programs at once traces one matrix a call). jaxlib 0.10 splits a large batch over the
    CPU's thread pool and blocks a pool thread until it is done: as many such calls at once as the pool
    has threads never finish. Then the groups run one after another, with a warning."""
    args = (plan.groups[0][0], plan.agent_params, carry, np.arange(plan.chunk, dtype=np.int32))
    leaves, tree = jax.tree.flatten(args)
    key = (chunk_statics, tree, tuple(map(jax.typeof, leaves)))
    at_once = _remembered(_AT_ONCE, key)
    if at_once is None:  # reading the program's text takes ~10 ms: once per program
        text = _run_chunk.compiled(*chunk_statics, *args).as_text() or ""
        batched = re.findall(r'custom_call_target="lapack_[^"]*"[^\n]*?num_batch_dims="(\d+)"', text)
        at_once = _remembered(_AT_ONCE, key, not any(int(b) for b in batched))
    if at_once:
        return True
    warnings.warn(
        "jb.sweep runs its groups of streams one after another, not on every core (CPU_WORKERS): an "
        "algorithm makes a batched LAPACK call (jnp.linalg), which could hang several programs at once; "
        "call it through jaxbandit.core.batching.lapack",
        stacklevel=4,
    )
    return False


def _initial_carries(make_algs, make_env, plan: _Plan, chunk_statics: tuple) -> list:
    """Each group's initial carry (``_init_streams``: the groups' shapes are equal, one program), its
    program compiled on a second thread while this one traces and lowers the first chunk (``_run_chunk``
    with ``chunk_statics``) for the carry's types (a sweep on one device; a sharded carry's programs are
    made one after the other).

    Compiling a new sweep is tracing and lowering (Python: one core) and XLA's compilation (both cores)
    of its two programs; one after the other, a core idles through the Python. The initial states'
    program compiled beside the chunk's tracing, its LLVM code generated on one thread
    (``library_jit(..., beside=True)``), leaves that a core and hides the initial states' compilation
    (0.3–0.5 s of a small CR-Hvt-UCB sweep on the 2-core CPU; ``benchmarks/compile_time.py``). The same
    programs.
    """
    init = functools.partial(_init_streams, make_algs, make_env, plan.layout)
    every = [(params, plan.agent_params, plan.base_key, seeds) for params, seeds in plan.groups]
    if plan.mesh is not None:
        return [init(*args) for args in every]
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        compiling = pool.submit(_init_streams.compile_later(make_algs, make_env, plan.layout, *every[0]))
        # eval_shape, unlike a Lowered's out_info, keeps the carry's weak types (part of the trace's key)
        placed = lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, weak_type=x.weak_type)
        carry = jax.tree.map(placed, jax.eval_shape(init, *every[0]))
        rounds = np.arange(plan.chunk, dtype=np.int32)
        _run_chunk.lower_ahead(*chunk_statics, plan.groups[0][0], plan.agent_params, carry, rounds)
        compiling.result()
    return [init(*args) for args in every]  # the program just compiled


def _kept_rounds(value: Array, sel: np.ndarray) -> Callable[[], np.ndarray]:
    """A function returning rounds ``sel`` of a chunk's output `[S, n, ...]` on the host. On an accelerator
    they are selected on the device, so only they cross to the host, and their copy starts at once (when
    the chunk is done, beside the next one's rounds); on a CPU the host already holds the array, and
    selecting there compiles nothing (indexing on the device compiles a handful of one-op programs per
    shape)."""
    if all(getattr(d, "platform", None) == "cpu" for d in value.sharding.device_set):
        return lambda: distributed.to_host(value)[:, sel]
    kept = value[:, sel]
    if kept.is_fully_addressable:
        kept.copy_to_host_async()
    return lambda: distributed.to_host(kept)


def _per_algorithm(fields: dict, count: int) -> list[dict]:
    """Fields `[S, G, algorithms, k]` as one dict of `[S, G, k]` per algorithm."""
    return [{field: value[:, :, i] for field, value in fields.items()} for i in range(count)]


def _progress_bar(progress, horizon, num_runs, label, initial=0):
    if not progress:
        return None
    from tqdm.auto import tqdm

    desc = f"{label} ({num_runs} runs)" if label else f"{num_runs} runs"
    return tqdm(total=horizon, initial=initial, desc=desc, unit="round")
