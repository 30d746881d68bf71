"""Every (algorithm × grid point × seed) run in one jitted, vmapped call per algorithm.

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
"""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..core import validation as V
from ..core.dtypes import float_dtype
from ..core.types import Algorithm, Environment
from ..report.results import SweepResult
from . import accumulate, distributed
from . import checkpoint as checkpoint_lib
from .simulate import Carry, as_key, check_pair, init_carry, round_step

Array = jax.Array

#: Above this many grid points, validation calls the factories on the grid's corners and on each
#: axis's values instead of on every point (every check in jaxbandit is an interval, so monotone).
FULL_VALIDATION_LIMIT = 4096


class _RunCarry(NamedTuple):
    sim: Carry
    cum_regret: accumulate.RunningSum
    spent: accumulate.RunningSum


def _as_factory(obj, what: str) -> Callable:
    if isinstance(obj, (Algorithm, Environment)):
        return _Constant(obj)
    if callable(obj):
        return obj
    kind = "jb.Algorithm" if what == "algorithm" else "jb.Environment"
    raise ValueError(f"{what}={obj!r} is invalid: it must be a factory params -> {kind}, or a {kind}")


class _Constant:
    """A factory ignoring its parameters; hashable by its value so compiled code is reused."""

    def __init__(self, value):
        self.value = value

    def __call__(self, params):
        return self.value

    def __hash__(self):
        return hash(self.value)

    def __eq__(self, other):
        return isinstance(other, _Constant) and other.value is self.value


def _grid_arrays(grid: Mapping[str, Sequence[float]] | None):
    if grid is None:
        return (), (), {}
    if not isinstance(grid, Mapping):
        raise ValueError(f"grid={grid!r} is invalid: it must be a dict name -> 1-D list of numbers")
    names, axes = [], []
    for name, values in grid.items():
        if not isinstance(name, str) or not name.isidentifier() or name in ("seed", "round", "algorithm"):
            raise ValueError(
                f"grid name {name!r} is invalid: use an identifier other than 'seed', 'round' and 'algorithm'"
            )
        arr = V._as_float_array(f"grid[{name!r}]", values, "a non-empty 1-D list of numbers")
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError(f"grid[{name!r}] has shape {arr.shape}: expected a non-empty 1-D list")
        if np.any(np.isnan(arr)):
            raise ValueError(f"grid[{name!r}] contains NaN: every grid value must be a number")
        with np.errstate(over="ignore"):
            overflow = np.isfinite(arr) & ~np.isfinite(arr.astype(float_dtype()))
        if np.any(overflow):
            raise ValueError(
                f"grid[{name!r}] contains {arr[overflow][0]!r}, which overflows "
                f"{np.dtype(float_dtype()).name} (the dtype the runs use): use inf or a "
                "smaller number"
            )
        names.append(name)
        axes.append(arr)
    mesh = np.meshgrid(*axes, indexing="ij")
    flat = {n: m.ravel() for n, m in zip(names, mesh)}
    return tuple(names), tuple(axes), flat


def _validation_points(axes) -> list[tuple[int, ...]]:
    shape = tuple(a.size for a in axes)
    total = int(np.prod(shape)) if shape else 1
    if total <= FULL_VALIDATION_LIMIT:
        return list(itertools.product(*[range(n) for n in shape]))
    extremes = [sorted({int(np.argmin(a)), int(np.argmax(a))}) for a in axes]
    points = set(itertools.product(*extremes))
    for i, a in enumerate(axes):
        base = [e[0] for e in extremes]
        for j in range(a.size):
            points.add(tuple(base[:i] + [j] + base[i + 1 :]))
    return sorted(points)


def validate_grid(make_algs: Mapping[str, Callable], make_env: Callable, names, axes, horizon):
    """Call every factory on concrete grid points; re-raise a ``ValueError`` naming the point."""
    # The runs see the grid as ``float_dtype()`` scalars, so validate exactly those values (a float64
    # value can round to an invalid float32 one, e.g. delta = 1 - 1e-9 becomes 1).
    dtype = float_dtype()
    for idx in _validation_points(axes):
        point = {n: float(np.asarray(a[i], dtype=dtype)) for n, a, i in zip(names, axes, idx)}
        for alg_name, make_alg in make_algs.items():
            where = ", ".join(f"{k}={v:g}" for k, v in point.items())
            label = f"algorithm {alg_name!r}" if alg_name else "the sweep"
            try:
                check_pair(make_alg(point), make_env(point), horizon)
            except ValueError as err:
                raise ValueError(f"{label} at grid point ({where}): {err}") from None
            except KeyError as err:
                raise ValueError(
                    f"{label} at grid point ({where}): a factory asked for the grid parameter "
                    f"{err.args[0]!r}, which the grid does not define (it has "
                    f"{list(names)})"
                ) from None


def _build(make_alg, make_env, names, params):
    point = {n: params[i] for i, n in enumerate(names)}
    return make_alg(point), make_env(point)


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def _init_runs(make_alg, make_env, names, params, keys):
    def one(p, k):
        alg, env = _build(make_alg, make_env, names, p)
        zero = accumulate.zero(float_dtype())
        return _RunCarry(init_carry(alg, env, k), zero, zero)

    return jax.vmap(one)(params, keys)


@functools.partial(jax.jit, static_argnums=(0, 1, 2, 3, 4))
def _run_chunk(make_alg, make_env, names, horizon, per_round, params, carry, rounds):
    """Rounds ``rounds`` `[n]` of every run. The last chunk is padded past the horizon so that every
    chunk has one shape (one compilation); padded rounds add nothing to the recorded sums, and the
    state they leave behind is never used."""

    def one(p, c: _RunCarry):
        step = round_step(*_build(make_alg, make_env, names, p))

        def body(c: _RunCarry, t):
            sim, traj = step(c.sim, t)
            active = t < horizon
            cum = accumulate.add(c.cum_regret, jnp.where(active, traj.regret, 0.0))
            spent = accumulate.add(c.spent, jnp.where(active, jnp.abs(traj.corruption), 0.0))
            out = {"cumulative_regret": cum.shown, "corruption_spent": spent.shown}
            if per_round:
                out.update(regret=traj.regret, action=traj.action, corruption=traj.corruption)
            return _RunCarry(sim, cum, spent), out

        return jax.lax.scan(body, c, rounds)

    return jax.vmap(one)(params, carry)


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


def _default_chunk(num_runs: int, horizon: int) -> int:
    # Keep the per-chunk outputs near 2^24 numbers per field, at least 64 rounds per chunk.
    return int(min(horizon, max(64, (1 << 24) // max(num_runs, 1))))


def sweep(
    algorithm,
    environment,
    grid: Mapping[str, Sequence[float]] | None = None,
    *,
    horizon: int,
    seeds: int | Sequence[int] | np.ndarray = 1,
    key=0,
    record="all",
    chunk_size: int | None = None,
    progress: bool = False,
    devices=None,
    checkpoint=None,
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
      chunk_size: rounds per compiled chunk (default: about 2^24 outputs per chunk).
      progress: show a progress bar with agent-rounds per second.
      devices: devices to shard the runs over (default: all of ``jax.devices()``, every host's).
      checkpoint: a directory; after every chunk the sweep saves its state there atomically, and a
        sweep started again with the same settings resumes from it (see ``jaxbandit.checkpoint``).
    """
    horizon = V.check_int("horizon", horizon)
    algs = dict(algorithm) if isinstance(algorithm, Mapping) else {"": algorithm}
    if not algs:
        raise ValueError("algorithm={} is invalid: give at least one algorithm")
    make_algs = {name: _as_factory(a, "algorithm") for name, a in algs.items()}
    make_env = _as_factory(environment, "environment")
    names, axes, flat = _grid_arrays(grid)
    seed_ids = np.arange(V.check_int("seeds", seeds)) if np.ndim(seeds) == 0 else np.asarray(seeds)
    if (
        seed_ids.ndim != 1
        or seed_ids.size == 0
        or not np.issubdtype(seed_ids.dtype, np.integer)
        or np.any(seed_ids < 0)
    ):
        raise ValueError(f"seeds={seeds!r} is invalid: give a count >= 1 or non-negative integer seeds")
    rounds_kept = record_rounds(record, horizon)
    per_round = isinstance(record, str)
    if chunk_size is not None:
        V.check_int("chunk_size", chunk_size)
    as_key(key)
    validate_grid(make_algs, make_env, names, axes, horizon)

    num_points = int(np.prod([a.size for a in axes])) if axes else 1
    num_seeds = seed_ids.size
    num_runs = num_points * num_seeds
    mesh = distributed.run_mesh(devices)
    padded = distributed.padded_size(num_runs, mesh)
    run_params = (
        np.stack([np.repeat(flat[n], num_seeds) for n in names], axis=-1)
        if names
        else np.zeros((num_runs, 0))
    )
    run_seeds = np.tile(seed_ids, num_points)
    # Pad the run axis to a multiple of the device count with copies of the last run (dropped later).
    pad = padded - num_runs
    run_params = np.concatenate([run_params, np.repeat(run_params[-1:], pad, axis=0)])
    run_seeds = np.concatenate([run_seeds, np.repeat(run_seeds[-1:], pad)])
    base_key = as_key(key)
    keys = jax.vmap(lambda s: jax.random.fold_in(base_key, s))(jnp.asarray(run_seeds))
    params = distributed.shard_runs(jnp.asarray(run_params, dtype=float_dtype()), mesh)
    keys = distributed.shard_runs(keys, mesh)
    chunk = min(_default_chunk(padded, horizon) if chunk_size is None else chunk_size, horizon)

    ckpt_dir = None if checkpoint is None else Path(checkpoint)
    settings = dict(
        horizon=horizon,
        grid={n: a for n, a in zip(names, axes)},
        seeds=seed_ids,
        key=np.asarray(jax.random.key_data(base_key)),
        record=rounds_kept.tolist(),
        per_round=per_round,
        chunk=chunk,
        dtype=str(float_dtype()),
        runs=padded,
    )
    per_alg = []
    for index, (alg_name, make_alg) in enumerate(make_algs.items()):
        finger = checkpoint_lib.fingerprint(
            dict(
                settings,
                algorithm=alg_name,
                index=index,
                factory=_describe(make_alg),
                env=_describe(make_env),
            )
        )
        path = None if ckpt_dir is None else ckpt_dir / f"algorithm-{index}.npz"
        kept = _run_algorithm(
            make_alg,
            make_env,
            names,
            horizon,
            per_round,
            params,
            keys,
            chunk,
            rounds_kept,
            progress,
            alg_name,
            mesh,
            path,
            finger,
        )
        per_alg.append({field: value[:num_runs] for field, value in kept.items()})
    data = {field: np.stack([d[field] for d in per_alg]) for field in per_alg[0]}
    lead = ("algorithm",) if isinstance(algorithm, Mapping) else ()
    grid_shape = tuple(a.size for a in axes)
    for field, arr in data.items():
        arr = arr.reshape((len(per_alg),) + grid_shape + (num_seeds, arr.shape[-1]))
        data[field] = arr if lead else arr[0]
    coords = {n: a for n, a in zip(names, axes)}
    coords.update(seed=seed_ids, round=rounds_kept)
    if lead:
        coords = {"algorithm": np.asarray(list(algs)), **coords}
    return SweepResult(
        dims=lead + tuple(names) + ("seed", "round"),
        coords=coords,
        data=data,
        meta={
            "horizon": horizon,
            "record": "all" if per_round else "checkpoints",
            "devices": 1 if mesh is None else mesh.size,
        },
    )


def _describe(factory) -> str:
    target = factory.value if isinstance(factory, _Constant) else factory
    return f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', type(target).__name__)}"


def _run_algorithm(
    make_alg,
    make_env,
    names,
    horizon,
    per_round,
    params,
    keys,
    chunk,
    rounds_kept,
    progress,
    label,
    mesh,
    ckpt_path,
    finger,
):
    carry = _init_runs(make_alg, make_env, names, params, keys)
    kept: dict = {}
    start_round = 0
    if ckpt_path is not None:
        restored = checkpoint_lib.load(ckpt_path, template=carry, finger=finger)
        if restored is not None:
            carry, kept, start_round = restored
            carry = distributed.shard_runs(carry, mesh)
    num_runs = params.shape[0]
    keep_idx = rounds_kept - 1
    bar = _progress_bar(progress, horizon, num_runs, label, start_round)
    start = time.perf_counter()
    for t0 in range(start_round, horizon, chunk):
        rounds = jnp.arange(t0, t0 + chunk, dtype=jnp.int32)
        carry, out = _run_chunk(make_alg, make_env, names, horizon, per_round, params, carry, rounds)
        sel = keep_idx[(keep_idx >= t0) & (keep_idx < t0 + chunk)] - t0
        for field, value in out.items():
            kept.setdefault(field, []).append(distributed.to_host(value)[:, sel])
        done = min(t0 + chunk, horizon)
        if ckpt_path is not None:
            kept = {f: [np.concatenate(p, axis=-1)] for f, p in kept.items()}
            carry_arrays = checkpoint_lib.gather(carry, distributed.to_host)  # every process
            if jax.process_index() == 0:
                checkpoint_lib.save(
                    ckpt_path, carry_arrays=carry_arrays, kept=kept, next_round=done, finger=finger
                )
        if bar is not None:
            bar.update(done - bar.n)
            rate = num_runs * (done - start_round) / max(time.perf_counter() - start, 1e-9)
            bar.set_postfix_str(f"{rate:.3g} agent-rounds/s")
    if bar is not None:
        bar.close()
    return {field: np.concatenate(parts, axis=-1) for field, parts in kept.items()}


def _progress_bar(progress, horizon, num_runs, label, initial=0):
    if not progress:
        return None
    from tqdm.auto import tqdm

    desc = f"{label} ({num_runs} runs)" if label else f"{num_runs} runs"
    return tqdm(total=horizon, initial=initial, desc=desc, unit="round")
