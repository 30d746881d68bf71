"""A sweep's driver: each chunk of each compiled program started, its kept rounds collected, written into
the store and checkpointed, with progress — the host's side of ``jb.sweep``, around the traced programs
of ``runner.program`` laid out by ``runner.plan``.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import functools
import re
import time
import warnings
from collections.abc import Callable

import jax
import numpy as np

from ..core.lowering.xla_options import remembered
from ..report.results import SweepResult
from . import checkpoint as checkpoint_lib
from . import distributed
from . import store as store_lib
from .plan import Plan
from .program import Statics, init_streams, run_chunk

Array = jax.Array


def open_store(path, dims, coords, meta, finger, resume, plan, rounds_kept, overwrite=False, durable=False):
    """``(writer, store id)``, before anything runs: every process checks ``path``, process 0 creates or
    reopens the store (the others' writer is None; ``durable``: a checkpointed sweep's, see
    :meth:`~jaxbandit.runner.store.StoreWriter.sync`) and they all read its id."""
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
            durable=durable,
        )
    if multi:
        multihost_utils.sync_global_devices("jaxbandit.sweep out opened")
    attrs = store_lib.read_attrs(path) if writer is None else None
    return writer, writer.store_id if writer is not None else (attrs or {}).get(store_lib.STORE_ID_ATTR)


def write_chunks(writer, plan, rounds_kept, leads, t0: int, kept: list[dict]) -> None:
    """Write one chunk's kept rounds (per algorithm, fields `[S_padded, G, k]`, rounds from ``t0`` on) into
    the store, algorithm i at the leading index ``leads[i]``; a durable writer's (a checkpointed sweep's,
    whose checkpoint comes next) flushed to the disk, so that no power loss leaves a checkpoint ahead."""
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
    if writer.durable:
        writer.sync()


def finish_store(writer, path) -> SweepResult:
    """Mark the store complete (process 0), then read it back lazily in every process."""
    if writer is not None:
        writer.finish()
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices("jaxbandit.sweep out")
    return SweepResult.load(path, lazy=True, verify=False)  # its manifest was made from it just now


def run_algorithms(
    make_algs,
    make_env,
    plan: Plan,
    horizon,
    per_round,
    rounds_kept,
    progress,
    label,
    ckpt_path,
    finger,
    sink=None,
    reach=None,
) -> list[dict]:
    """Every chunk of the runs of the algorithms ``make_algs`` (in lockstep when several), checkpointed; per
    algorithm, the kept fields as `[S_padded, G, rounds]`, or with ``sink``, ``sink(t0, fields)`` called
    with each chunk's (a list per algorithm, rounds from ``t0`` on) and empty dicts returned; ``reach()``:
    how far the store reaches, recorded in each checkpoint."""
    lanes = plan.agent_params.shape[0] * len(make_algs)
    num_runs = plan.num_streams * lanes
    # shown from the start: compiling takes seconds to minutes before the first chunk can advance it
    bar = progress_bar(progress, horizon, num_runs, label)
    try:
        program = plan.program(make_env, horizon, len(make_algs))
        chunk_statics = Statics(make_algs, make_env, plan.layout, horizon, per_round, program)
        carries = initial_carries(plan, chunk_statics)
        kept: dict = {}
        start_round = 0
        if ckpt_path is not None:
            restored = checkpoint_lib.load(ckpt_path, template=carries, finger=finger)
            if restored is not None:
                carries, kept, start_round = restored
                check_restored(
                    ckpt_path, kept, start_round, rounds_kept, plan.chunk, horizon, sink is not None
                )
                carries = [distributed.shard_runs(c, plan.mesh) for c in carries]
                if bar is not None:
                    bar.update(start_round)
    except BaseException:  # the bar's line ends before the error is printed
        if bar is not None:
            bar.close()
        raise
    keep_idx = rounds_kept - 1
    start = time.perf_counter()
    first: list = []  # when the first chunk finished, and its last round

    def finish(t0: int, chunk_carries: list, collect) -> None:
        """The chunk from round ``t0``: its kept rounds to the host (``collect``), then the checkpoint."""
        nonlocal kept
        stacked = collect()  # [S, G, algorithms, kept]; only kept rounds leave the device
        if sink is not None:
            sink(t0, per_algorithm(stacked, len(make_algs)))  # before the checkpoint: never behind it
        else:
            for field, value in stacked.items():
                kept.setdefault(field, []).append(value)
        done = min(t0 + plan.chunk, horizon)
        if ckpt_path is not None:
            kept = {f: [np.concatenate(p, axis=-1)] for f, p in kept.items()}
            carry_arrays = checkpoint_lib.gather(chunk_carries, distributed.to_host)  # every process
            if jax.process_index() == 0:
                checkpoint_lib.save(
                    ckpt_path,
                    carry_arrays=carry_arrays,
                    kept=kept,
                    next_round=done,
                    finger=finger,
                    reach=None if reach is None else reach(),
                )
        if bar is not None:
            bar.update(done - bar.n)
            now = time.perf_counter()
            if not first:  # its time holds the compilation: the rate is measured from the next chunk on
                first.extend((now, done))
                bar.set_postfix_str(f"compiled and ran the first chunk in {now - start:.1f} s")
            elif done > first[1]:
                rate = num_runs * (done - first[1]) / max(now - first[0], 1e-9)
                bar.set_postfix_str(f"{rate:.3g} agent-rounds/s")

    with contextlib.ExitStack() as stack:
        pool = None  # the groups one after another, here
        if plan.workers > 1 and may_run_at_once(chunk_statics, plan, carries[0]):
            pool = stack.enter_context(concurrent.futures.ThreadPoolExecutor(plan.workers, "jaxbandit"))
        pending = None  # the chunk started last: (its first round, its carries, its outputs' collector)
        for t0 in range(start_round, horizon, plan.chunk):
            rounds = np.arange(t0, t0 + plan.chunk, dtype=np.int32)
            sel = keep_idx[(keep_idx >= t0) & (keep_idx < t0 + plan.chunk)] - t0
            try:
                carries, collect = start_groups(pool, chunk_statics, plan, carries, rounds, sel)
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
    return per_algorithm(final, len(make_algs))


def check_restored(path, kept: dict, start_round: int, rounds_kept, chunk: int, horizon: int, streamed: bool):
    """``ValueError`` naming the checkpoint ``path`` unless what it restored fits the sweep: its next
    round a chunk's first (or the horizon), and its kept rounds (none when streamed into a store) those
    recorded before it. A checkpoint that passes its fingerprint but not this was edited or damaged; run,
    it failed at the end ("cannot reshape ...") after every chunk had run."""
    expected = 0 if streamed else int(np.count_nonzero(rounds_kept - 1 < start_round))
    found = {
        field: int(np.shape(parts[-1])[-1]) if parts and np.ndim(parts[-1]) else 0
        for field, parts in kept.items()
    }
    aligned = 0 <= start_round <= horizon and (start_round % chunk == 0 or start_round == horizon)
    if aligned and all(n == expected for n in found.values()) and (streamed or expected == 0 or found):
        return
    raise ValueError(
        f"checkpoint={str(path.parent)!r} holds {path.name}, which is damaged or not a jaxbandit checkpoint "
        f"(its next round {start_round} and kept rounds {found or '{}'} do not fit this sweep's chunks of "
        f"{chunk} rounds and {expected} rounds recorded before it); to start over, pass overwrite=True to "
        "jb.sweep or delete it"
    )


def start_groups(
    pool, chunk_statics: Statics, plan: Plan, carries: list, rounds, sel
) -> tuple[list, Callable]:
    """Starts one chunk (``rounds``) of every group of streams: the groups' carries after it, and a function
    that returns the kept rounds ``sel`` of each output field, `[S_padded, G, algorithms, kept]` on the
    host.

    With one group the chunk's program is only dispatched: the caller finishes the previous chunk (its
    kept rounds to the host, the checkpoint) while this one runs, and on an accelerator this chunk's kept
    rounds start their copy to the host as soon as it is done (:func:`kept_rounds`), the next chunk
    already queued behind it. With several groups (``pool``: a thread each), the chunk's program is
    compiled here, on the calling thread, whose JAX settings (x64, ...) its tracing reads, and the threads
    run it to the end: two programs called from two threads run at once, one on each core."""
    later = lambda out: {f: kept_rounds(v, sel) for f, v in out.items()}
    here = lambda fetch: {f: np.moveaxis(get(), 1, -1) for f, get in fetch.items()}
    if plan.workers == 1:
        ((stream_params, _),) = plan.groups
        carry, out = run_chunk(*chunk_statics, stream_params, plan.agent_params, carries[0], rounds)
        fetch = later(out)
        return [carry], lambda: here(fetch)
    program = run_chunk.compiled(*chunk_statics, plan.groups[0][0], plan.agent_params, carries[0], rounds)

    def run(g: int):
        carry, out = program(plan.groups[g][0], plan.agent_params, carries[g], rounds)
        return carry, here(later(out))

    done = [run(g) for g in range(plan.workers)] if pool is None else list(pool.map(run, range(plan.workers)))
    stacked = {f: np.concatenate([o[f] for _, o in done]) for f in done[0][1]}
    return [c for c, _ in done], lambda: stacked


#: Whether each chunk program's copies may run at once (:func:`_may_run_at_once`), the least recently
#: used dropped (``xla_options.remembered``).
_AT_ONCE: collections.OrderedDict = collections.OrderedDict()


def may_run_at_once(chunk_statics: Statics, plan: Plan, carry) -> bool:
    """Whether the groups' copies of the chunk's program may run at once: not if it makes a batched LAPACK
    call (an algorithm that calls ``jnp.linalg`` itself, not through ``batching.lapack``, which a sweep
    of several programs at once traces one matrix a call). jaxlib 0.10 splits a large batch over the
    CPU's thread pool and blocks a pool thread until it is done: as many such calls at once as the pool
    has threads never finish. Then the groups run one after another, with a warning."""
    args = (plan.groups[0][0], plan.agent_params, carry, np.arange(plan.chunk, dtype=np.int32))
    leaves, tree = jax.tree.flatten(args)
    key = (chunk_statics, tree, tuple(map(jax.typeof, leaves)))
    at_once = remembered(_AT_ONCE, key)
    if at_once is None:  # reading the program's text takes ~10 ms: once per program
        text = run_chunk.compiled(*chunk_statics, *args).as_text() or ""
        batched = re.findall(r'custom_call_target="lapack_[^"]*"[^\n]*?num_batch_dims="(\d+)"', text)
        at_once = remembered(_AT_ONCE, key, not any(int(b) for b in batched))
    if at_once:
        return True
    warnings.warn(
        "jb.sweep runs its groups of streams one after another, not on every core (cpu_workers): an "
        "algorithm makes a batched LAPACK call (jnp.linalg), which could hang several programs at once; "
        "call it through jaxbandit.core.batching.lapack",
        stacklevel=4,
    )
    return False


def initial_carries(plan: Plan, chunk_statics: Statics) -> list:
    """Each group's initial carry (``init_streams``: the groups' shapes are equal, one program), its
    program compiled on a second thread while this one traces and lowers the first chunk (``run_chunk``
    with ``chunk_statics``) for the carry's types (a sweep on one device; a sharded carry's programs are
    made one after the other).

    Compiling a new sweep is tracing and lowering (Python: one core) and XLA's compilation (both cores)
    of its two programs; one after the other, a core idles through the Python. The initial states'
    program compiled beside the chunk's tracing, its LLVM code generated on one thread
    (``library_jit(..., beside=True)``), leaves that a core and hides the initial states' compilation
    (0.3–0.5 s of a small CR-Hvt-UCB sweep on the 2-core CPU; ``benchmarks/compile_time.py``). The same
    programs.
    """
    make_algs, make_env, trace = chunk_statics.make_algs, chunk_statics.make_env, chunk_statics.program.trace
    init = functools.partial(init_streams, make_algs, make_env, plan.layout, trace)
    every = [(params, plan.agent_params, plan.base_key, seeds) for params, seeds in plan.groups]
    if plan.mesh is not None:
        return [init(*args) for args in every]
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        compile_init = init_streams.compile_later(make_algs, make_env, plan.layout, trace, *every[0])
        compiling = pool.submit(compile_init)
        # eval_shape, unlike a Lowered's out_info, keeps the carry's weak types (part of the trace's key)
        placed = lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, weak_type=x.weak_type)
        carry = jax.tree.map(placed, jax.eval_shape(init, *every[0]))
        rounds = np.arange(plan.chunk, dtype=np.int32)
        run_chunk.lower_ahead(*chunk_statics, plan.groups[0][0], plan.agent_params, carry, rounds)
        compiling.result()
    return [init(*args) for args in every]  # the program just compiled


def kept_rounds(value: Array, sel: np.ndarray) -> Callable[[], np.ndarray]:
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


def per_algorithm(fields: dict, count: int) -> list[dict]:
    """Fields `[S, G, algorithms, k]` as one dict of `[S, G, k]` per algorithm."""
    return [{field: value[:, :, i] for field, value in fields.items()} for i in range(count)]


def progress_bar(progress, horizon, num_runs, label, initial=0):
    if not progress:
        return None
    from . import progress as progress_lib

    desc = f"{label} ({num_runs} runs)" if label else f"{num_runs} runs"
    bar = progress_lib.bar(total=horizon, initial=initial, desc=desc, unit="round")
    bar.set_postfix_str("compiling (the first chunk's rounds wait for it)")
    return bar
