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
chunk's rounds drawn ahead in blocks, see ``runner.plan.Plan.rounds_ahead``). The algorithms of a
dict run in lockstep in that scan (each lane carries one state per algorithm), so one draw serves them
all (``lockstep=False``: one program per algorithm). On one CPU device the streams run in equal groups, one
per core, the chunk's one program called from a thread per group at once (``ExecutionOptions.cpu_workers``). A
run's numbers are bitwise those of the same run alone (``jb.simulate``), in any batch, chunking, device count,
group count or lockstep.

How it runs — chunks, drawing ahead, layouts, CPU workers, straggler rules, peeled loops — is
``options=jb.ExecutionOptions(...)``, every field ``None`` for the backend's default, resolved once into
the plan (``runner.plan``), which lays out the traced programs (``runner.program``) that the driver
(``runner.driver``) starts, collects, stores and checkpoints chunk by chunk.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import overload

import jax
import numpy as np

from ..core import validation as V
from ..core.dtypes import float_dtype
from ..core.lowering.options import ExecutionOptions, as_options
from ..core.types import Algorithm, Environment
from ..report.results import SweepResult
from . import driver, memory, sharing
from . import fingerprint as fingerprint_lib
from . import store as store_lib
from .grid import as_factory, grid_arrays, validate_grid
from .output import SweepOutput
from .plan import Plan, record_rounds, seed_ids
from .program import LAYOUT, Layout
from .simulate import as_key

Array = jax.Array

__all__ = ["ExecutionOptions", "record_rounds", "sweep"]


@overload
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
    options: ExecutionOptions | None = None,
    grids: None = None,
) -> SweepResult: ...


@overload
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
    options: ExecutionOptions | None = None,
    grids: Mapping[str, Mapping[str, Sequence[float]]],
) -> dict[str, SweepResult]: ...


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
    options: ExecutionOptions | None = None,
    grids: Mapping[str, Mapping[str, Sequence[float]]] | None = None,
) -> SweepResult | dict[str, SweepResult]:
    """Run every (algorithm × grid point × seed) and return a :class:`SweepResult` with named axes (with
    ``grids``: one per algorithm).

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
        within ``options.chunk_outputs`` = 2^24 outputs a field).
      progress: show a progress bar: "compiling" until the first chunk is done, then agent-rounds per
        second, advancing chunk by chunk (see ``chunk_size``).
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
        sweep's lifetime (``jaxbandit.persist.lock``): a second writer is refused, naming the first.
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
      options: how the sweep executes, a :class:`jb.ExecutionOptions` (chunk budget, CPU workers, rounds
        drawn ahead, layouts, straggler rules, LAPACK calls, peeled loops); ``None`` or a field left
        ``None``: the backend's default. No option changes a result.
      grids: ``{algorithm name: {name: values}}``, each algorithm's own axes (its hyperparameters), run
        only for that algorithm: ``grid`` holds the axes every algorithm and the environment share (the
        scenario: C, ε, ...), and algorithm ``name``'s factory gets ``grid``'s values and its own. Returns
        ``{name: SweepResult}``, each with the dims ``grid``'s axes, its own axes, seed, round, and bitwise
        what a sweep of that algorithm alone over ``{**grid, **grids[name]}`` gives; an algorithm without
        an entry runs ``grid`` alone. The algorithms with the same own grid run together (in lockstep,
        unless ``lockstep=False``), one program per such group, each on the same streams (the same seeds
        and keys); with ``checkpoint``, each group checkpoints in a subdirectory ``grid-<i>``. Not with
        ``out`` (stream each algorithm into a store of its own with a sweep each). An own axis that the
        algorithm's factory never reads (found by tracing it, ``runner.sharing``) is refused.

    An algorithm choosing an arm outside [0, K) is refused with a ``ValueError`` after the run (its round's
    regret is NaN, never a clamped arm's; checked on results held in memory, not on an ``out`` store).

    Raises ``ValueError`` before anything runs for a bad argument, an invalid value at any grid point,
    a grid axis that a factory reads in Python control flow (it cannot be traced), an ``out`` that
    is not a ``.zarr`` path or that holds something other than this sweep's store, a checkpoint of
    another sweep or a damaged one, or an ``out``/``checkpoint`` another process is writing.
    """
    if grids is not None:
        return _sweep_own_grids(
            algorithm,
            environment,
            grid,
            grids,
            out=out,
            checkpoint=checkpoint,
            horizon=horizon,
            seeds=seeds,
            key=key,
            record=record,
            chunk_size=chunk_size,
            progress=progress,
            devices=devices,
            lockstep=lockstep,
            overwrite=overwrite,
            options=options,
        )
    horizon = V.check_int("horizon", horizon)
    lockstep = V.check_flag("lockstep", lockstep)
    overwrite = V.check_flag("overwrite", overwrite)
    out_path = None if out is None else store_lib.check_out(out)
    ckpt_dir = None if checkpoint is None else Path(checkpoint)
    algs = dict(algorithm) if isinstance(algorithm, Mapping) else {"": algorithm}
    if not algs:
        raise ValueError("algorithm={} is invalid: give at least one algorithm")
    make_algs = {name: as_factory(a, "algorithm") for name, a in algs.items()}
    make_env = as_factory(environment, "environment")
    if checkpoint is not None and ckpt_dir is not None and ckpt_dir.exists() and not ckpt_dir.is_dir():
        raise ValueError(
            f"checkpoint={str(checkpoint)!r} is invalid: it is a file; give a directory (one that does not "
            "exist is created)"
        )
    memory.check_fits(  # before the seeds, the rounds or anything else is allocated
        algorithms=len(make_algs),
        points=grid_points(grid),
        seeds=seeds,
        horizon=horizon,
        record=record,
        streamed=out_path is not None,
        itemsize=np.dtype(float_dtype()).itemsize,
    )
    names, axes = grid_arrays(grid)
    seeds_run = seed_ids(seeds)
    execution = as_options(options)
    rounds_kept = record_rounds(record, horizon)
    per_round = isinstance(record, str)
    if chunk_size is not None:
        V.check_int("chunk_size", chunk_size)
    base_key = as_key(key)
    validate_grid(make_algs, make_env, names, axes, horizon)
    layout = _layout(make_algs, make_env, names, axes)
    groups = lockstep_groups(len(make_algs), lockstep)
    per_program = max(len(group) for group in groups)
    plan = Plan.make(
        layout, names, axes, seeds_run, base_key, devices, horizon, chunk_size, per_program, execution
    )
    lead = ("algorithm",) if isinstance(algorithm, Mapping) else ()
    dims = lead + tuple(names) + ("seed", "round")
    coords = {**({"algorithm": np.asarray(list(algs))} if lead else {}), **dict(zip(names, axes))}
    coords.update(seed=seeds_run, round=rounds_kept)
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
            seeds_run,
            base_key,
            horizon,
            rounds_kept,
            per_round,
            chunk_size,
            (LAYOUT, list(layout.stream_names)),
            bool(lead),
            with_store=out_path is not None,
        )
    names_in_order = list(make_algs)
    with SweepOutput.open(
        out=out_path,
        checkpoint=ckpt_dir,
        fingers=fingers,
        groups=groups,
        names=names_in_order,
        overwrite=overwrite,
        dims=dims,
        coords=coords,
        meta=meta,
        plan=plan,
        rounds_kept=rounds_kept,
    ) as output:
        per_alg = []
        for i, indices in enumerate(groups):
            group = [names_in_order[j] for j in indices]
            kept = driver.run_algorithms(
                tuple(make_algs[n] for n in group),
                make_env,
                plan,
                horizon,
                per_round,
                rounds_kept,
                progress,
                " + ".join(group),
                output.checkpoint(i),
                output.finger(i),
                output.sink(i, bool(lead), plan, rounds_kept),
                output.reach,
            )
            per_alg += [{field: plan.to_grid_order(value) for field, value in k.items()} for k in kept]
        if out_path is not None:
            return output.finish()
    data = {field: np.stack([d[field] for d in per_alg]) for field in per_alg[0]}
    if not lead:
        data = {field: arr[0] for field, arr in data.items()}
    _refuse_invalid_actions(data, dims, coords)
    return SweepResult(dims=dims, coords=coords, data=data, meta=meta)


def _refuse_invalid_actions(data: Mapping[str, np.ndarray], dims, coords) -> None:
    """``ValueError`` naming the first run in which an algorithm chose an arm outside [0, K): the runner
    makes that round's regret NaN (``simulate.respond_and_learn``) rather than play a clamped arm."""
    field = "cumulative_regret" if "cumulative_regret" in data else "regret"
    if field not in data:
        return
    bad = np.argwhere(np.isnan(data[field]))
    if not bad.size:
        return
    where = {dim: coords[dim][i] for dim, i in zip(dims, bad[0]) if dim in coords}
    said = ", ".join(f"{dim}={np.asarray(v).item()!r}" for dim, v in where.items() if dim != "round")
    runs = len({tuple(i[:-1]) for i in bad})
    by_round = np.asarray(where.get("round", -1)).item()
    raise ValueError(
        f"an algorithm chose an arm outside [0, K) (or the stream drew a non-finite mean) in {runs} run(s), "
        f"first at {said or 'the run'}, by round {by_round}: the round's regret is NaN instead of a "
        "clamped arm's; jb.testing.check_algorithm(factory, params, dim=, num_arms=, "
        "horizon=) finds such a select (property 'action_dtype')"
    )


def grid_points(grid) -> int:
    """How many points ``grid`` has (the product of its axes' lengths), read without converting it."""
    if not isinstance(grid, Mapping):
        return 1
    sizes = [len(v) if hasattr(v, "__len__") else 1 for v in grid.values()]
    return int(np.prod(sizes, dtype=np.int64))


def _layout(make_algs: Mapping, make_env, names, axes) -> Layout:
    """The grid's axes split into those the environment's stream reads (found by tracing it,
    ``runner.sharing``) and the others; ``ValueError`` for an axis a factory reads in Python control
    flow (it cannot be traced)."""
    first = {n: float(np.asarray(a[0], float_dtype())) for n, a in zip(names, axes)}
    sharing.check_traceable(
        {
            **{f"algorithm {k!r}" if k else "the algorithm": f for k, f in make_algs.items()},
            "the environment": make_env,
        },
        first,
    )
    stream_names = sharing.stream_axes(make_env, first)
    return Layout(
        tuple(n for n in names if n in stream_names), tuple(n for n in names if n not in stream_names)
    )


def _check_read(name: str, algorithm, environment, grid, own: Mapping[str, np.ndarray]) -> None:
    """``ValueError`` for an own axis of algorithm ``name`` that its factory never reads (a typo): every
    value along it would run the same algorithm again."""
    if not own:
        return
    shared_names, shared_axes = grid_arrays(grid)
    point = {n: float(np.asarray(a[0], float_dtype())) for n, a in zip(shared_names, shared_axes)}
    point.update({n: float(np.asarray(a[0], float_dtype())) for n, a in own.items()})
    env = as_factory(environment, "environment")(point)
    if not isinstance(env, Environment):
        return  # the sweep itself refuses it, saying so
    read = sharing.algorithm_axes(as_factory(algorithm, "algorithm"), point, env.dim, env.num_arms)
    unread = [axis for axis in own if axis not in read]
    if unread:
        raise ValueError(
            f"grids[{name!r}] is invalid: its axis {unread[0]!r} is never read by the factory of algorithm "
            f"{name!r} (a typo? every value along it would repeat the same runs); the axes it reads are "
            f"{[axis for axis in point if axis in read]}"
        )


def lockstep_groups(count: int, lockstep: bool) -> list[tuple[int, ...]]:
    """The indices of the algorithms each compiled program runs: all together in lockstep, or one each."""
    return [tuple(range(count))] if lockstep else [(i,) for i in range(count)]


def _sweep_own_grids(algorithm, environment, grid, grids, *, out, checkpoint, **kw) -> dict[str, SweepResult]:
    """:func:`sweep` with per-algorithm ``grids``: one sweep for each group of algorithms sharing an own
    grid, over ``grid``'s axes and theirs, split into one result per algorithm (in ``algorithm``'s
    order)."""
    if not isinstance(algorithm, Mapping):
        raise ValueError(
            f"grids={grids!r} is invalid with one algorithm: give a dict of algorithms "
            "{name: factory}, or put the algorithm's axes in grid"
        )
    if not isinstance(grids, Mapping):
        raise ValueError(f"grids={grids!r} is invalid: give {{algorithm name: {{name: values}}}}")
    unknown = [name for name in grids if name not in algorithm]
    if unknown:
        raise ValueError(
            f"grids[{unknown[0]!r}] is invalid: {unknown[0]!r} is not one of the algorithms {list(algorithm)}"
        )
    if out is not None:
        raise ValueError(
            f"out={str(out)!r} is invalid with grids: the algorithms' results have different dims; "
            "stream each into a store of its own (a sweep per algorithm, each with its own grid)"
        )
    shared, _ = grid_arrays(grid)
    groups: dict[tuple, list[str]] = {}
    for name in algorithm:
        own = grids.get(name) or {}
        if not isinstance(own, Mapping):
            raise ValueError(f"grids[{name!r}]={own!r} is invalid: give {{name: values}}")
        clash = [axis for axis in own if axis in shared]
        if clash:
            raise ValueError(
                f"grids[{name!r}] is invalid: its axis {clash[0]!r} is also an axis of grid (an axis is "
                "either shared by every algorithm or its own)"
            )
        own_names, own_axes = grid_arrays(own)
        _check_read(name, algorithm[name], environment, grid, dict(zip(own_names, own_axes)))
        key = tuple((n, tuple(a.tolist())) for n, a in zip(own_names, own_axes))
        groups.setdefault(key, []).append(name)
    results: dict[str, SweepResult] = {}
    for i, (own, names) in enumerate(groups.items()):
        ckpt = None if checkpoint is None else Path(checkpoint) / f"grid-{i}"
        both = {**(grid or {}), **{n: list(values) for n, values in own}}
        res = sweep({n: algorithm[n] for n in names}, environment, both, checkpoint=ckpt, **kw)
        results.update({n: res.sel(algorithm=n) for n in names})
    return {name: results[name] for name in algorithm}
